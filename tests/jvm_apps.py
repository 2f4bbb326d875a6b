"""Long-running Java clients for tests and benchmarks, run by the admin helper until `stop()`:
`share-consume` (a KafkaShareConsumer) and `streams-app` (a Kafka Streams application with
group.protocol=streams). The product never runs them, so they live here, not in kafka/jvm.py.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping
from typing import Any

from offsetkeeper.errors import KafkaOperationError
from offsetkeeper.kafka.jvm import helper_command, item_error, java_properties


class JvmApp:
    """A Java client run by the helper until `stop()`: `share-consume` (a KafkaShareConsumer)
    or `streams-app` (a Kafka Streams application with group.protocol=streams). Its stdout is
    a stream of JSON events ({"event": ..., "count": ...})."""

    def __init__(self, conf: Mapping[str, Any], op: str, args: Mapping[str, Any]) -> None:
        self.proc = subprocess.Popen(helper_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, "config": java_properties(conf),
                                          "args": dict(args)}) + "\n")
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
