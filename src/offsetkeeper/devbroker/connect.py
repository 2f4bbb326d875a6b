"""Kafka Connect and MirrorMaker 2 run locally beside a development cluster.

`scripts/setup.sh` fetches Connect (``connect-runtime``), the FileStream connectors
(``connect-file``) and MirrorMaker 2 (``connect-mirror``) with Maven from
`jvm/connect-dist/pom.xml` into ``~/.cache/offsetkeeper/connect-<version>/libs``;
``OFFSETKEEPER_CONNECT_LIBS`` points at another directory of the same jars.

- `start_worker` runs a distributed Connect worker (``ConnectDistributed``) against a cluster,
  on a free REST port, with its own internal topics, data directory and log; the FileStream
  connectors are on its plugin path (not its class path), as a user installs a connector.
- `start_mm2` runs MirrorMaker 2 in dedicated mode (``MirrorMaker``) from a source cluster
  (alias ``A``) to a target (alias ``B``) with checkpoints and offset syncs emitted every second,
  so a failover can be planned from them in a test or a demo.

What runs where is in ``DATA_DIR/offsetkeeper-connect.json`` / ``offsetkeeper-mm2.json``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from platformdirs import user_cache_dir, user_data_dir

from offsetkeeper.devbroker import dist
from offsetkeeper.devbroker.cluster import (
    _die_with_parent,
    _signal_node,
    _wait_gone,
    free_port,
)
from offsetkeeper.errors import OffsetkeeperError, UsageError
from offsetkeeper.procs import pid_alive
from offsetkeeper.storage import write_text_atomic

CONNECT_VERSION = "4.3.1"
LIBS_ENV = "OFFSETKEEPER_CONNECT_LIBS"
WORKER_STATE = "offsetkeeper-connect.json"
MM2_STATE = "offsetkeeper-mm2.json"
HEAP = "384m"
WORKER_MAIN = "org.apache.kafka.connect.cli.ConnectDistributed"
MM2_MAIN = "org.apache.kafka.connect.mirror.MirrorMaker"


@dataclass(frozen=True)
class WorkerStatus:
    """Where a development Connect worker runs and whether its REST API answers."""

    running: bool
    pid: int | None
    url: str | None
    data_dir: str
    bootstrap: str | None = None
    group_id: str | None = None
    offsets_topic: str | None = None


@dataclass(frozen=True)
class MirrorStatus:
    """Where a development MirrorMaker 2 runs (dedicated mode, alias A -> alias B)."""

    running: bool
    pid: int | None
    data_dir: str
    source_bootstrap: str | None = None
    target_bootstrap: str | None = None
    source_alias: str = "A"
    target_alias: str = "B"


def libs_dir() -> Path:
    """Directory holding Connect's, the FileStream connectors' and MirrorMaker 2's jars."""
    given = os.environ.get(LIBS_ENV)
    if given:
        return Path(given).expanduser()
    return Path(user_cache_dir("offsetkeeper")) / f"connect-{CONNECT_VERSION}" / "libs"


def _jars() -> tuple[list[Path], Path]:
    """(class path jars, the connect-file jar); one line naming the fix when not installed."""
    libs = libs_dir()
    jars = sorted(libs.glob("*.jar"))
    files = [j for j in jars if j.name.startswith("connect-file-")]
    if not files or not any(j.name.startswith("connect-runtime-") for j in jars):
        raise OffsetkeeperError(
            f"Kafka Connect {CONNECT_VERSION} is not installed in {libs}; run scripts/setup.sh "
            f"(it fetches it with Maven from jvm/connect-dist/pom.xml)")
    return [j for j in jars if j not in files], files[0]


def default_data_dir(what: str = "connect") -> Path:
    return Path(user_data_dir("offsetkeeper")) / f"dev-{what}"


_LOG4J = """\
status = error
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = {level}
rootLogger.appenderRef.file.ref = FILE
logger.reflections.name = org.reflections
logger.reflections.level = ERROR
"""


def _java(d: Path, classpath: list[Path], main: str, *args: str, tied: bool,
          name: str) -> subprocess.Popen:
    log4j = d / "log4j2.properties"
    log4j.write_text(_LOG4J.format(log=d / f"{name}.log",
                                   level=os.environ.get("OFFSETKEEPER_CONNECT_LOG_LEVEL", "INFO")))
    cmd = [dist.java_executable(), f"-Xmx{HEAP}", "-Xms64m", "-XX:+UseSerialGC",
           "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
           f"-Dlog4j2.configurationFile={log4j}",
           "-cp", os.pathsep.join(str(j) for j in classpath), main, *args]
    out = open(d / f"{name}.stdout.log", "ab")  # noqa: SIM115 - handed to the child
    try:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=_die_with_parent if tied else None)
    finally:
        out.close()


def _props(values: dict) -> str:
    return "".join(f"{k}={v}\n" for k, v in values.items())


def _read_json(path: Path) -> dict | None:
    try:
        info = json.loads(path.read_text())
        return info if isinstance(info, dict) and isinstance(info.get("pid"), int) else None
    except (OSError, ValueError):
        return None


def _rest_answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/", timeout=2) as r:  # our own worker
            return r.status == 200
    except (OSError, urllib.error.URLError, ValueError):
        return False


def _group_joined(bootstrap: str, group: str) -> bool:
    """The worker's group exists on the cluster (the worker has joined it): what a tool
    listing the cluster's groups sees. Its REST API answers before that."""
    import warnings

    from offsetkeeper.kafka import clients

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            # librdkafka's typed listing leaves out groups of protocol type `connect`
            found = clients.admin_client({"bootstrap.servers": bootstrap}).list_groups(timeout=5)
    except Exception:  # not yet: keep waiting while the worker makes progress
        return False
    return any(g.id == group for g in found)


def _log_size(d: Path, name: str) -> int:
    total = 0
    for p in (d / f"{name}.log", d / f"{name}.stdout.log"):
        with contextlib.suppress(OSError):
            total += p.stat().st_size
    return total


def _wait_progress(d: Path, proc: subprocess.Popen, name: str, ready, *, idle: float) -> None:
    """Wait until `ready()`; give up only when the JVM died or its logs stood still `idle` s."""
    last, since = -1, time.monotonic()
    while not ready():
        if proc.poll() is not None:
            raise OffsetkeeperError(f"{name} exited with code {proc.returncode}; see "
                                    f"{d / (name + '.log')}")
        size = _log_size(d, name)
        if size != last:
            last, since = size, time.monotonic()
        elif time.monotonic() - since > idle:
            raise OffsetkeeperError(f"{name} made no progress for {idle:.0f}s; see "
                                    f"{d / (name + '.log')}")
        time.sleep(0.3)


def worker_status(data_dir: str | Path | None = None) -> WorkerStatus:
    """Whether the worker of `data_dir` runs and its REST API answers."""
    d = Path(data_dir or default_data_dir()).expanduser()
    info = _read_json(d / WORKER_STATE)
    if info is None:
        return WorkerStatus(False, None, None, str(d))
    url = info.get("url")
    running = pid_alive(info["pid"]) and isinstance(url, str) and _rest_answers(url)
    return WorkerStatus(running, info["pid"], url, str(d), info.get("bootstrap"),
                        info.get("group_id"), info.get("offsets_topic"))


def start_worker(bootstrap: str, data_dir: str | Path | None = None, *, port: int = 0,
                 idle: float = 120.0, tied: bool = False) -> WorkerStatus:
    """Start a distributed Connect worker against `bootstrap`; wait until its REST API answers
    and it has joined its group.

    Its internal topics are named after a group id made for this data directory, so several
    workers (tests, the demo) share one cluster without meeting. `port` 0 takes a free port.
    The wait lasts while the worker makes progress (its log grows) and ends when it stood still
    for `idle` seconds. `tied`: killed when the caller's thread dies (see cluster.start).
    """
    if not bootstrap or not bootstrap.strip():
        raise UsageError("--bootstrap-server is empty (expected host:port of the cluster)")
    if not 0 <= port < 65536:
        raise UsageError(f"--port {port} is not a TCP port (expected 0-65535)")
    d = Path(data_dir or default_data_dir()).expanduser()
    current = worker_status(d)
    if current.running:
        if current.bootstrap != bootstrap:
            raise UsageError(f"a Connect worker already runs from {d} for {current.bootstrap}; "
                             f"stop it first or choose another --data-dir")
        return current
    if current.pid:
        stop_worker(d)
    classpath, file_jar = _jars()
    d.mkdir(parents=True, exist_ok=True)
    plugins = d / "plugins" / "connect-file"
    plugins.mkdir(parents=True, exist_ok=True)
    target = plugins / file_jar.name
    if not target.exists():
        target.symlink_to(file_jar)
    ident = d / "worker-id"
    if not ident.exists():
        ident.write_text(f"offsetkeeper-connect-{uuid.uuid4().hex[:8]}")
    group = ident.read_text().strip()
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    props = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "offset.storage.topic": f"{group}-offsets",
        "offset.storage.replication.factor": 1,
        "offset.storage.partitions": 5,
        "config.storage.topic": f"{group}-configs",
        "config.storage.replication.factor": 1,
        "status.storage.topic": f"{group}-status",
        "status.storage.replication.factor": 1,
        "status.storage.partitions": 1,
        # positions are flushed every second, so a test or a demo sees them quickly
        "offset.flush.interval.ms": 1000,
        "listeners": url,
        "rest.advertised.host.name": "127.0.0.1",
        "rest.advertised.port": port,
        "plugin.path": d / "plugins",
        # one worker: no reason to wait for a departed one before reassigning its tasks
        "scheduled.rebalance.max.delay.ms": 0,
    }
    (d / "worker.properties").write_text(_props(props))
    proc = _java(d, classpath, WORKER_MAIN, str(d / "worker.properties"), tied=tied,
                 name="connect")
    write_text_atomic(str(d / WORKER_STATE), json.dumps(
        {"pid": proc.pid, "url": url, "bootstrap": bootstrap, "group_id": group,
         "offsets_topic": f"{group}-offsets", "tied": tied}))
    try:
        _wait_progress(d, proc, "connect",
                       lambda: _rest_answers(url) and _group_joined(bootstrap, group), idle=idle)
    except BaseException:
        stop_worker(d)
        raise
    return worker_status(d)


def _stop(d: Path, state: str, timeout: float) -> int | None:
    info = _read_json(d / state)
    pid = info["pid"] if info else None
    if pid and pid_alive(pid):
        _signal_node(pid, signal.SIGTERM)
        for left in _wait_gone([pid], timeout):
            _signal_node(left, signal.SIGKILL)
        _wait_gone([pid], 5)
    with contextlib.suppress(FileNotFoundError):
        (d / state).unlink()
    return pid


def stop_worker(data_dir: str | Path | None = None, *, timeout: float = 30.0) -> WorkerStatus:
    """Stop the worker (SIGTERM, SIGKILL after `timeout`); its topics keep the connectors."""
    d = Path(data_dir or default_data_dir()).expanduser()
    st = worker_status(d)
    _stop(d, WORKER_STATE, timeout)
    return WorkerStatus(False, None, st.url, str(d), st.bootstrap, st.group_id, st.offsets_topic)


def mm2_status(data_dir: str | Path | None = None) -> MirrorStatus:
    """Whether the MirrorMaker 2 of `data_dir` runs."""
    d = Path(data_dir or default_data_dir("mm2")).expanduser()
    info = _read_json(d / MM2_STATE)
    if info is None:
        return MirrorStatus(False, None, str(d))
    return MirrorStatus(pid_alive(info["pid"]), info["pid"], str(d),
                        info.get("source_bootstrap"), info.get("target_bootstrap"))


def _topic_exists(bootstrap: str, topic: str) -> bool:
    from offsetkeeper.kafka import clients

    try:
        md = clients.admin_client({"bootstrap.servers": bootstrap}).list_topics(topic=topic,
                                                                               timeout=5)
    except Exception:  # not yet: keep waiting while MM2 makes progress
        return False
    t = md.topics.get(topic)
    return t is not None and t.error is None and bool(t.partitions)


def start_mm2(source_bootstrap: str, target_bootstrap: str,
              data_dir: str | Path | None = None, *, topics: str = ".*", groups: str = ".*",
              idle: float = 120.0, tied: bool = False) -> MirrorStatus:
    """Start MirrorMaker 2 in dedicated mode, source alias ``A`` to target alias ``B``.

    Checkpoints are emitted every second and an offset sync for every record
    (``offset.lag.max=0``), so translation is exact for a test; group offsets are not synced to
    the target (``sync.group.offsets.enabled=false``): moving groups is offsetkeeper's job.
    Returns when ``A.checkpoints.internal`` exists on the target (MM2's checkpoint connector
    runs), waiting while MM2 makes progress.
    """
    for opt, value in (("--source-bootstrap", source_bootstrap),
                       ("--target-bootstrap", target_bootstrap)):
        if not value or not value.strip():
            raise UsageError(f"{opt} is empty (expected host:port of a cluster)")
    d = Path(data_dir or default_data_dir("mm2")).expanduser()
    current = mm2_status(d)
    if current.running:
        return current
    classpath, _ = _jars()
    d.mkdir(parents=True, exist_ok=True)
    props = {
        "clusters": "A, B",
        "A.bootstrap.servers": source_bootstrap,
        "B.bootstrap.servers": target_bootstrap,
        "A->B.enabled": "true",
        "A->B.topics": topics,
        "A->B.groups": groups,
        "B->A.enabled": "false",
        "replication.factor": 1,
        "checkpoints.topic.replication.factor": 1,
        "heartbeats.topic.replication.factor": 1,
        "offset-syncs.topic.replication.factor": 1,
        "offset.storage.replication.factor": 1,
        "status.storage.replication.factor": 1,
        "config.storage.replication.factor": 1,
        "emit.checkpoints.enabled": "true",
        "emit.checkpoints.interval.seconds": 1,
        "emit.heartbeats.interval.seconds": 1,
        "sync.group.offsets.enabled": "false",
        "refresh.topics.interval.seconds": 2,
        "refresh.groups.interval.seconds": 2,
        "offset.lag.max": 0,
        "offset.flush.interval.ms": 1000,
        "scheduled.rebalance.max.delay.ms": 0,
    }
    (d / "mm2.properties").write_text(_props(props))
    proc = _java(d, classpath, MM2_MAIN, str(d / "mm2.properties"), tied=tied, name="mm2")
    write_text_atomic(str(d / MM2_STATE), json.dumps(
        {"pid": proc.pid, "source_bootstrap": source_bootstrap,
         "target_bootstrap": target_bootstrap, "tied": tied}))
    try:
        _wait_progress(d, proc, "mm2",
                       lambda: _topic_exists(target_bootstrap, "A.checkpoints.internal"),
                       idle=idle)
    except BaseException:
        stop_mm2(d)
        raise
    return mm2_status(d)


def stop_mm2(data_dir: str | Path | None = None, *, timeout: float = 30.0) -> MirrorStatus:
    """Stop MirrorMaker 2 (SIGTERM, SIGKILL after `timeout`)."""
    d = Path(data_dir or default_data_dir("mm2")).expanduser()
    st = mm2_status(d)
    _stop(d, MM2_STATE, timeout)
    return MirrorStatus(False, None, str(d), st.source_bootstrap, st.target_bootstrap)


def as_dict(st: WorkerStatus | MirrorStatus) -> dict:
    """The status as plain data (for JSON output)."""
    return asdict(st)
