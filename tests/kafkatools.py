"""Small helpers for tests: create topics, produce records, run consumers (plain confluent-kafka)."""

from __future__ import annotations

import time
from collections.abc import Iterable

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as CkTP
from confluent_kafka.admin import AdminClient, NewTopic

# Apache Kafka answers these while a group coordinator loads or moves
COORDINATOR_MOVING = ("NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE")
# and a request sent to a coordinator that was just killed ends in one of these (librdkafka
# does not call a local timeout retriable); the next request finds the new coordinator
NODE_GONE = ("_TIMED_OUT", "_TRANSPORT", "_ALL_BROKERS_DOWN")


def create_topic(bootstrap: str, name: str, partitions: int = 3, config: dict | None = None,
                 replication: int = -1) -> None:
    """Create a topic (replication -1: the cluster default, 1 on one node, 3 on three)."""
    a = AdminClient({"bootstrap.servers": bootstrap})
    fs = a.create_topics([NewTopic(name, partitions, replication, config=config or {})])
    for f in fs.values():
        f.result(15)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        md = a.list_topics(name, timeout=5)
        t = md.topics.get(name)
        if (t is not None and t.error is None and len(t.partitions) == partitions
                and all(m.leader >= 0 for m in t.partitions.values())):
            return
        time.sleep(0.1)


def produce(bootstrap: str, topic: str, records: Iterable[tuple], **conf) -> None:
    """records: (partition, key, value[, headers[, timestamp_ms]]) tuples."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})
    for r in records:
        partition, key, value = r[0], r[1], r[2]
        kw = {}
        if len(r) > 3 and r[3] is not None:
            kw["headers"] = r[3]
        if len(r) > 4 and r[4] is not None:
            kw["timestamp"] = r[4]
        p.produce(topic, key=key, value=value, partition=partition, **kw)
    assert p.flush(30) == 0


def produce_n(bootstrap: str, topic: str, partitions: int, per_partition: int, *, timestamp_ms=None) -> None:
    produce(bootstrap, topic, (
        (p, f"k{p}-{i}".encode(), f"v{p}-{i}".encode(), None,
         None if timestamp_ms is None else timestamp_ms(p, i))
        for p in range(partitions) for i in range(per_partition)))


def commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit offsets for a group without joining it (like an external tool would)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                c.commit(offsets=[CkTP(t, p, o) for (t, p), o in offsets.items()],
                         asynchronous=False)
                return
            except KafkaException as exc:
                if (not exc.args[0].retriable() and exc.args[0].name() not in COORDINATOR_MOVING) \
                        or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        c.close()


# Reads a group's committed offsets once and prints them as JSON (see `committed(isolated=True)`).
_COMMITTED_SCRIPT = """
import json, sys
from confluent_kafka import Consumer, TopicPartition
b, g, t, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
c = Consumer({"bootstrap.servers": b, "group.id": g, "enable.auto.commit": False, "log_level": 0})
try:
    res = c.committed([TopicPartition(t, p) for p in range(n)], timeout=10)
    print(json.dumps({tp.partition: tp.offset for tp in res}))
finally:
    c.close()
"""


def committed(bootstrap: str, group: str, topic: str, partitions: int, *,
              wait: float = 60.0, isolated: bool = False) -> dict[int, int]:
    """Independent read of a group's committed offsets (partition -> offset, -1001 when none).

    While a coordinator loads or moves, Apache Kafka answers NOT_COORDINATOR, and a request to a
    node just killed times out: asked again for up to `wait` seconds. With `isolated` (the fault
    tests, which kill coordinators) each try runs in a process of its own: librdkafka can crash
    the process that reads committed offsets during a coordinator move (#5040; an AdminClient's
    OffsetFetch aborted there too), and that must cost one try, not the test run."""
    import json
    import subprocess
    import sys

    deadline = time.monotonic() + wait
    while True:
        if isolated:
            proc = subprocess.run([sys.executable, "-c", _COMMITTED_SCRIPT, bootstrap, group, topic,
                                   str(partitions)], capture_output=True, text=True, timeout=60)
            if proc.returncode == 0:
                return {int(p): o for p, o in json.loads(proc.stdout).items()}
            if time.monotonic() > deadline:
                raise AssertionError(f"committed offsets of {group} unreadable for {wait:g} s: "
                                     f"{proc.stderr.strip().splitlines()[-1:]}")
        else:
            c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                          "enable.auto.commit": False})
            try:
                res = c.committed([CkTP(topic, p) for p in range(partitions)], timeout=10)
                return {tp.partition: tp.offset for tp in res}
            except KafkaException as exc:
                err = exc.args[0]
                if (not err.retriable() and err.name() not in COORDINATOR_MOVING + NODE_GONE) \
                        or time.monotonic() > deadline:
                    raise
            finally:
                c.close()
        time.sleep(0.2)


class LiveConsumer:
    """A consumer that joins `group` and keeps polling in a thread until stopped."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], *,
                 protocol: str = "classic") -> None:
        import threading

        conf = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                "auto.offset.reset": "earliest"}
        # KIP-848: the session timeout is the group's; librdkafka refuses it client-side
        conf.update({"group.protocol": "consumer"} if protocol == "consumer" else
                    {"session.timeout.ms": 10000})
        self.c = Consumer(conf)
        self.c.subscribe(topics)
        self._stop = threading.Event()
        self._assigned = threading.Event()
        self._calls: list = []
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()
        self._assigned.wait(20)

    def _run(self) -> None:
        # Only this thread touches the consumer while it runs: confluent-kafka serializes calls
        # on one handle, and a call from another thread waits for it (forever, once seen, when
        # this thread had died inside poll). Others read `assigned` / `wait_assigned`.
        try:
            while not self._stop.is_set():
                self.c.poll(0.2)
                if self.c.assignment():
                    self._assigned.set()
                while self._calls:
                    fn, done = self._calls.pop(0)
                    try:
                        done.append(("ok", fn(self.c)))
                    except Exception as exc:
                        done.append(("error", exc))
        except Exception as exc:  # reported by wait_assigned, never a silent dead thread
            self.error = exc

    def call(self, fn, timeout: float = 30.0):
        """Run fn(consumer) on the consumer's own thread (e.g. a commit as the member) and
        return its result."""
        import time

        done: list = []
        self._calls.append((fn, done))
        deadline = time.monotonic() + timeout
        while not done and time.monotonic() < deadline and self.error is None:
            time.sleep(0.05)
        assert done, f"the live consumer did not run the call within {timeout} s ({self.error!r})"
        kind, value = done[0]
        if kind == "error":
            raise value
        return value

    error: Exception | None = None

    def wait_assigned(self, timeout: float) -> bool:
        """True once the group gave this member partitions; raises what killed its thread."""
        got = self._assigned.wait(timeout)
        if self.error is not None:
            raise AssertionError(f"the live consumer's poll thread died: {self.error!r}")
        return got

    def stop(self) -> None:
        self._stop.set()
        self.t.join(10)
        self.c.close()
