"""The tests' own Java clients (tests/jvm/test-apps, never shipped; scripts/setup.sh builds it):
`share-consume` (a KafkaShareConsumer) and `streams-app` (a Kafka Streams application with
group.protocol=streams), run until `stop()`; and `mm2_translation`, MirrorMaker 2's own
`RemoteClusterUtils.translateOffsets` (the oracle of `--from-mm2`). Same line protocol as the
admin helper: one JSON request on stdin.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from offsetkeeper.errors import KafkaOperationError
from offsetkeeper.kafka.jvm import item_error, java_properties, parse_answer, unwrap
from offsetkeeper.models import TopicPartition

POM = Path(__file__).resolve().parent / "jvm" / "test-apps" / "pom.xml"
#: a build elsewhere (a directory holding test-apps.jar and lib/) wins over the cache
APPS_ENV = "OFFSETKEEPER_TEST_APPS"
MAIN_CLASS = "io.offsetkeeper.testapps.Main"


def apps_dir() -> Path:
    """Where scripts/setup.sh put the test apps: ``$OFFSETKEEPER_TEST_APPS``, else the user
    cache's ``test-apps-<version of the pom>``."""
    given = os.environ.get(APPS_ENV)
    if given:
        return Path(given).expanduser()
    from platformdirs import user_cache_dir

    version = re.search(r"^  <version>(.+)</version>", POM.read_text(), re.M).group(1)
    return Path(user_cache_dir("offsetkeeper")) / f"test-apps-{version}"


def apps_command() -> list[str]:
    d = apps_dir()
    jar = d / "test-apps.jar"
    if not jar.is_file():
        raise RuntimeError(f"the tests' Java clients are not built in {d}: run scripts/setup.sh "
                           "(it builds tests/jvm/test-apps with Maven)")
    java = Path(os.environ["JAVA_HOME"]) / "bin" / "java" if os.environ.get("JAVA_HOME") else None
    java = str(java) if java and java.is_file() else shutil.which("java") or "java"
    return [java, "-Xmx256m", "-XX:+UseSerialGC", "-cp", f"{jar}{os.pathsep}{d / 'lib' / '*'}",
            MAIN_CLASS]


def _request(conf: Mapping[str, Any], op: str, args: Mapping[str, Any]) -> str:
    return json.dumps({"op": op, "config": java_properties(conf), "args": dict(args)}) + "\n"


class JvmApp:
    """A Java client run until `stop()`: `share-consume` (a KafkaShareConsumer) or `streams-app`
    (a Kafka Streams application with group.protocol=streams). Its stdout is a stream of JSON
    events ({"event": ..., "count": ...})."""

    def __init__(self, conf: Mapping[str, Any], op: str, args: Mapping[str, Any]) -> None:
        self.proc = subprocess.Popen(apps_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdin is not None
        self.proc.stdin.write(_request(conf, op, args))
        self.proc.stdin.flush()

    def events(self) -> Iterator[dict]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.strip()
            if line.startswith("{"):
                yield json.loads(line)

    def wait_for(self, event: str, *, count: int = 0) -> dict:
        """Block until an event named `event` (with at least `count`) arrives."""
        for e in self.events():
            if e.get("ok") is False:
                raise item_error(e.get("error") or {}, action=event)
            if e.get("event") == event and int(e.get("count") or 0) >= count:
                return e
        raise KafkaOperationError(f"the Java client exited before '{event}'", code="_HELPER_FAILED")

    def stop(self, timeout: float = 30.0) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def mm2_translation(conf: Mapping[str, Any], source_alias: str, groups: tuple[str, ...], *,
                    timeout_s: float = 15.0) -> dict[str, dict[TopicPartition, int]]:
    """MirrorMaker 2's own translation (`RemoteClusterUtils.translateOffsets`) of each group's
    offsets onto the target cluster `conf` names."""
    r = subprocess.run(apps_command(), input=_request(conf, "mm2-translate", {
        "source_alias": source_alias, "groups": list(groups), "timeout_ms": int(timeout_s * 1000)}),
        capture_output=True, text=True, timeout=timeout_s * (len(groups) + 1) + 30)
    answer = unwrap(parse_answer(r.stdout, stderr=r.stderr, returncode=r.returncode),
                    action="mm2-translate")
    return {g: {TopicPartition(e["topic"], int(e["partition"])): int(e["offset"])
                for e in entries} for g, entries in answer.items()}
