"""The delivery lab: measure a commit policy's guarantee by killing its consumer on purpose.

A producer writes records numbered 0..N-1 to a fresh topic. A consumer process using
OffsetConsumer with the chosen policy (`lab_child`) is SIGKILLed at random points of its
progress — while fetching, processing, or between processing and committing — and started
again, N times; then a last process runs to the end of the topic and exits cleanly. The ledger
(what the application processed: a file of numbers, or for `store` a table written in the same
transaction as the offsets) is read independently at the end:

    lost       = records never processed
    duplicated = processings beyond the first

With `rebalance`, a second consumer joins and leaves the group again and again during the run.

`protocol` is the group protocol of every consumer process: `classic` (JoinGroup/SyncGroup, eager
range assignment) or `consumer` (KIP-848: `group.protocol=consumer`, the broker assigns
incrementally). Under `classic` the crashing consumer uses static membership
(group.instance.id) so a restart takes its place at once instead of waiting out the session
timeout of the killed process. Under `consumer` a restarted static member is refused
(UNRELEASED_INSTANCE_ID) until the killed one's session expires, so the consumers are dynamic
and the lab sets the group's `consumer.session.timeout.ms` to 6 s (a group config; the client may
not set session or heartbeat times under this protocol) where the cluster allows it.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from offsetkeeper.consumer.lab_child import LAB_POLICIES
from offsetkeeper.errors import ConsumerConfigError, OffsetkeeperError
from offsetkeeper.progress import ProgressEvent, ProgressFn

log = logging.getLogger("offsetkeeper.consumer.lab")

EXACTLY_ONCE, AT_LEAST_ONCE, AT_MOST_ONCE = "exactly-once", "at-least-once", "at-most-once"
PROTOCOLS = ("classic", "consumer")
# The consumer-protocol group's session timeout (the classic consumers set 6 s client-side).
CONSUMER_SESSION_TIMEOUT_MS = 6000


def expected_guarantee(policy: str) -> str:
    """What a policy promises (and the lab checks)."""
    if policy == "store":
        return EXACTLY_ONCE
    if policy == "before_processing":
        return AT_MOST_ONCE
    return AT_LEAST_ONCE


@dataclass(frozen=True)
class LabConfig:
    """One lab run."""

    policy: str
    crashes: int = 20
    records: int = 300
    partitions: int = 3
    asynchronous: bool = False
    store_url: str | None = None  # store policy: default a SQLite file in the work directory
    rebalance: bool = False
    seed: int | None = None
    work_ms: float = 1.0
    protocol: str = "classic"  # group.protocol of the consumers: classic or consumer (KIP-848)

    def __post_init__(self) -> None:
        p = self.policy.replace("-", "_").lower()
        if p not in LAB_POLICIES:
            raise ConsumerConfigError(f"unknown lab policy {self.policy!r}; expected one of "
                                      f"{', '.join(sorted(LAB_POLICIES))}")
        object.__setattr__(self, "policy", p)
        proto = str(self.protocol).lower()
        if proto not in PROTOCOLS:
            raise ConsumerConfigError(f"unknown group protocol {self.protocol!r}; expected classic or consumer")
        object.__setattr__(self, "protocol", proto)
        for name, value, low in (("crashes", self.crashes, 0), ("records", self.records, 1),
                                 ("partitions", self.partitions, 1)):
            if value < low:
                raise ConsumerConfigError(f"{name}={value} is invalid; expected an integer >= {low}")
        if self.store_url and p != "store":
            raise ConsumerConfigError("a store URL applies to the 'store' policy only")
        if self.asynchronous and p in ("auto", "before_processing", "store"):
            raise ConsumerConfigError(f"asynchronous commits do not apply to the {p} policy")


@dataclass(frozen=True)
class LabResult:
    """What the ledger says after the run."""

    policy: str
    guarantee: str
    records: int
    crashes: int
    processed: int
    lost: int
    duplicated: int
    rebalance: bool
    asynchronous: bool
    elapsed_s: float
    protocol: str = "classic"

    @property
    def holds(self) -> bool:
        if self.guarantee == EXACTLY_ONCE:
            return self.lost == 0 and self.duplicated == 0
        if self.guarantee == AT_LEAST_ONCE:
            return self.lost == 0
        return self.duplicated == 0

    def to_dict(self) -> dict:
        return {**asdict(self), "holds": self.holds}


class _Lab:
    def __init__(self, bootstrap: str, cfg: LabConfig, work: Path, progress: ProgressFn | None) -> None:
        self.bootstrap, self.cfg, self.work, self.progress = bootstrap, cfg, work, progress
        tag = uuid.uuid4().hex[:8]
        self.topic = f"lab-{cfg.policy.replace('_', '-')}-{tag}"
        self.group = f"lab-{cfg.policy.replace('_', '-')}-{tag}"
        self.table = f"lab_ledger_{tag}"
        self.ledger = work / "ledger.txt"
        self.rng = random.Random(cfg.seed)
        self.store = cfg.store_url or (str(work / "store.db") if cfg.policy == "store" else None)
        self.children: list[subprocess.Popen] = []

    def _child(self, name: str, *extra: str) -> tuple[subprocess.Popen, Path]:
        trace = self.work / f"trace-{name}-{len(self.children)}"
        trace.touch()
        args = [sys.executable, "-m", "offsetkeeper.consumer.lab_child", "--bootstrap", self.bootstrap,
                "--topic", self.topic, "--group", self.group, "--policy", self.cfg.policy,
                "--ledger", str(self.ledger), "--trace", str(trace), "--table", self.table,
                "--work-ms", str(self.cfg.work_ms), "--protocol", self.cfg.protocol, *extra]
        if self.cfg.asynchronous:
            args.append("--asynchronous")
        if self.store:
            args += ["--store", self.store]
        # stderr to a file: a pipe nobody reads would block a chatty child.
        with open(self.work / f"stderr-{name}-{len(self.children)}", "wb") as err:
            p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, env=os.environ.copy())
        p.errfile = err.name  # type: ignore[attr-defined]
        self.children.append(p)
        return p, trace

    def setup(self) -> None:
        from offsetkeeper.config import Connection
        from offsetkeeper.kafka import clients
        from offsetkeeper.kafka.admin import KafkaAdmin

        with KafkaAdmin(Connection(bootstrap_servers=self.bootstrap)) as admin:
            admin.create_topic(self.topic, self.cfg.partitions, configs={"retention.ms": "-1"})
        if self.cfg.protocol == "consumer":
            self._set_session_timeout()
        p = clients.producer({"bootstrap.servers": self.bootstrap}, {"linger.ms": 5, "log_level": 3})
        for i in range(self.cfg.records):
            p.produce(self.topic, value=str(i).encode(), partition=i % self.cfg.partitions)
        if p.flush(30) != 0:
            raise OffsetkeeperError(f"could not produce the lab records to {self.topic}")
        if self.store:
            self._ledger_sql(f"CREATE TABLE IF NOT EXISTS {self.table} (n INTEGER NOT NULL)")

    def _set_session_timeout(self) -> None:
        """A killed consumer-protocol member keeps its partitions until its session expires; the
        broker's default (45 s) would make every crash cost 45 s. Best effort: a cluster whose
        group.consumer.min.session.timeout.ms is higher keeps its own."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import (
            AlterConfigOpType,
            ConfigEntry,
            ConfigResource,
            ResourceType,
        )

        res = ConfigResource(ResourceType.GROUP, self.group, incremental_configs=[ConfigEntry(
            "consumer.session.timeout.ms", str(CONSUMER_SESSION_TIMEOUT_MS),
            incremental_operation=AlterConfigOpType.SET)])
        from offsetkeeper.kafka import clients

        client = clients.admin_client({"bootstrap.servers": self.bootstrap}, {"log_level": 3})
        try:
            for f in client.incremental_alter_configs([res]).values():
                f.result(15)
        except KafkaException as exc:  # the run still works, only slower
            log.warning("could not set consumer.session.timeout.ms of the lab group %s: %s",
                        self.group, exc)

    def _main_args(self, *extra: str) -> tuple[str, ...]:
        """The crashing (and final) consumer: static under classic, dynamic under consumer."""
        return (*extra, "--instance", "lab-main") if self.cfg.protocol == "classic" else extra

    def _ledger_sql(self, sql: str) -> list:
        if self.store and self.store.startswith(("postgres://", "postgresql://")):
            import psycopg

            with psycopg.connect(self.store, autocommit=True) as conn:
                cur = conn.execute(sql)
                return cur.fetchall() if cur.description else []
        path = self.store[len("sqlite:///"):] if self.store.startswith("sqlite:///") else self.store
        conn = sqlite3.connect(path, timeout=30)
        try:
            rows = conn.execute(sql).fetchall()
            conn.commit()
            return rows
        finally:
            conn.close()

    def crash_loop(self) -> None:
        mean = max(1, self.cfg.records // (self.cfg.crashes + 2))
        for i in range(self.cfg.crashes):
            p, trace = self._child("main", *self._main_args())
            target = self.rng.randint(0, 2 * mean)
            ready = Path(str(trace) + ".ready")
            started = time.monotonic()
            if target == 0:  # kill while starting or joining the group
                time.sleep(self.rng.uniform(0, 0.6))
            else:
                # Wait for the assignment, then for `target` records of progress; a child that
                # stalls (nothing left to read) is killed after 0.3 s without progress.
                last_size, last_change = 0, None
                while p.poll() is None and time.monotonic() - started < 10:
                    size, now = trace.stat().st_size, time.monotonic()
                    if size >= target:
                        break
                    if last_change is None and ready.exists():
                        last_change = now
                    if size != last_size:
                        last_size, last_change = size, now
                    if last_change is not None and now - last_change > 0.3:
                        break
                    time.sleep(0.002)
            time.sleep(self.rng.uniform(0, 0.02))  # land anywhere between process and commit
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
            p.wait()
            if self.progress:
                self.progress(ProgressEvent(task="crashes", done=i + 1, total=self.cfg.crashes,
                                            unit="crashes"))

    def joiner_loop(self, stop: threading.Event) -> None:
        while not stop.is_set():
            p, _ = self._child("joiner", "--duration", f"{self.rng.uniform(0.5, 1.5):.2f}")
            while p.poll() is None and not stop.is_set():
                time.sleep(0.05)
            if p.poll() is None:
                p.wait(30)
            stop.wait(self.rng.uniform(0.1, 0.5))

    def final_run(self) -> None:
        p, _ = self._child("final", *self._main_args("--until-end"))
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            tail = Path(p.errfile).read_text(errors="replace").strip().splitlines()[-3:]
            raise OffsetkeeperError("the lab's final consumer did not reach the end of the topic "
                                    f"within 60 s ({' | '.join(tail)})") from None
        if p.returncode != 0:
            err = Path(p.errfile).read_text(errors="replace").strip().splitlines()
            raise OffsetkeeperError(f"the lab's final consumer failed: {err[-1] if err else p.returncode}")

    def read_ledger(self) -> list[int]:
        if self.cfg.policy == "store":
            return [r[0] for r in self._ledger_sql(f"SELECT n FROM {self.table}")]
        if not self.ledger.exists():
            return []
        return [int(x) for x in self.ledger.read_text().split()]

    def cleanup(self) -> None:
        for p in self.children:
            if p.poll() is None:
                p.kill()
                p.wait()


def run_delivery_lab(bootstrap: str, cfg: LabConfig, *, progress: ProgressFn | None = None) -> LabResult:
    """Run one lab (see the module docstring) against the cluster at `bootstrap`."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="offsetkeeper-lab-") as tmp:
        lab = _Lab(bootstrap, cfg, Path(tmp), progress)
        stop = threading.Event()
        joiner = None
        try:
            lab.setup()
            if cfg.rebalance:
                joiner = threading.Thread(target=lab.joiner_loop, args=(stop,), daemon=True)
                joiner.start()
            lab.crash_loop()
            stop.set()
            if joiner:
                joiner.join(60)
            lab.final_run()
            seen = lab.read_ledger()
        finally:
            stop.set()
            lab.cleanup()
    counts = Counter(seen)
    expected = set(range(cfg.records))
    return LabResult(policy=cfg.policy, guarantee=expected_guarantee(cfg.policy), records=cfg.records,
                     crashes=cfg.crashes, processed=len(seen), lost=len(expected - counts.keys()),
                     duplicated=sum(n - 1 for n in counts.values()), rebalance=cfg.rebalance,
                     asynchronous=cfg.asynchronous, elapsed_s=round(time.monotonic() - start, 2),
                     protocol=cfg.protocol)
