"""What every part of `offsetkeeper demo` shares: the demo topic and its seeding, the runner that
prints and runs each command as a user would type it, and the context handed to each part."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from offsetkeeper import devbroker

TOPIC = "orders"
PARTITIONS = 3
PER_PARTITION = 120


def seed(bootstrap: str) -> None:
    """A topic whose records span the last two hours, and two idle consumer groups."""
    from confluent_kafka import TopicPartition as CkTP
    from confluent_kafka.admin import NewTopic

    from offsetkeeper.kafka import clients

    cluster = {"bootstrap.servers": bootstrap}
    admin = clients.admin_client(cluster)
    # replication factor -1: the cluster's default (1 on one node, 3 on three)
    for f in admin.create_topics([NewTopic(TOPIC, PARTITIONS, -1, config={"retention.ms": "-1"})]).values():
        f.result(30)
    time.sleep(0.5)
    now = int(time.time() * 1000)
    p = clients.producer(cluster, {"linger.ms": 10})
    for part in range(PARTITIONS):
        for i in range(PER_PARTITION):
            ts = now - (PER_PARTITION - i) * 60_000  # one record a minute, up to now
            p.produce(TOPIC, key=f"order-{part}-{i}".encode(), value=f'{{"amount": {i}}}'.encode(),
                      partition=part, timestamp=ts, headers=[("source", b"demo")])
    p.flush(30)
    for group, offset in (("payments", PER_PARTITION * 3 // 4), ("analytics", PER_PARTITION)):
        c = clients.consumer(cluster, {"group.id": group, "enable.auto.commit": False})
        c.commit(offsets=[CkTP(TOPIC, part, offset) for part in range(PARTITIONS)], asynchronous=False)
        c.close()


def wait_until(ctx: DemoContext, what: str, check, *, logs: tuple[Path, ...] = (),
               idle: float = 120.0, cap: float = 900.0) -> bool:
    """Poll `check()` until it returns True. No fixed clock: the wait lasts while something
    makes progress (a log in `logs` grows, or `check()` returns another not-yet answer) and
    gives up after `idle` seconds without any, or after `cap` seconds in all (a chatty log
    must not keep a wait alive for ever); then the demo fails naming the logs to read."""
    last: object = None
    start = since = time.monotonic()
    while True:
        got = check()
        if got is True:
            return True
        sizes = tuple(p.stat().st_size if p.exists() else -1 for p in logs)
        seen = (sizes, got)
        if seen != last:
            last, since = seen, time.monotonic()
        elif time.monotonic() - since > idle or time.monotonic() - start > cap:
            where = ", ".join(str(p) for p in logs) or "the command output above"
            ctx.run.fail(f"{what}: not reached after {time.monotonic() - start:.0f}s, the last "
                         f"{time.monotonic() - since:.0f}s without progress (see {where}; the "
                         f"last answer: {got!r})")
            return False
        time.sleep(0.3)


class Runner:
    def __init__(self, console: Console, env: dict[str, str]) -> None:
        self.console = console
        self.env = env
        self.failures: list[str] = []

    def __call__(self, title: str, args: list[str], *, expect: int = 0) -> None:
        self.console.rule(f"[bold]{title}")
        self.console.print(f"[green]$ offsetkeeper {shlex.join(args)}", highlight=False)
        code = subprocess.call([sys.executable, "-m", "offsetkeeper.cli.main", *args], env=self.env)
        self._check(args, code, expect)

    def capture(self, title: str, args: list[str], *, expect: int = 0) -> str:
        """Like a call, but also return what the command printed on stdout (shown as well)."""
        self.console.rule(f"[bold]{title}")
        self.console.print(f"[green]$ offsetkeeper {shlex.join(args)}", highlight=False)
        r = subprocess.run([sys.executable, "-m", "offsetkeeper.cli.main", *args], env=self.env,
                           stdout=subprocess.PIPE, text=True, check=False)
        sys.stdout.write(r.stdout)
        sys.stdout.flush()
        self._check(args, r.returncode, expect)
        return r.stdout

    def fail(self, what: str) -> None:
        self.failures.append(what)
        self.console.print(f"[bold red]{what}", highlight=False)

    def _check(self, args: list[str], code: int, expect: int) -> None:
        if code != expect:
            self.failures.append(f"'offsetkeeper {shlex.join(args)}' exited {code}, expected {expect}")
            self.console.print(f"[bold red]unexpected exit code {code} (expected {expect})")


@dataclass
class DemoContext:
    """What every demo part gets: the runner, the 'prod' broker, a work directory, and a way to
    start more brokers (stopped at the end unless --keep)."""

    run: Runner
    console: Console
    prod: str
    work: Path
    env: dict[str, str]
    spark: bool
    keep: bool
    stack: ExitStack
    topic: str = TOPIC
    partitions: int = PARTITIONS
    _brokers: dict[str, str] = field(default_factory=dict)

    def broker(self, name: str) -> str:
        """Bootstrap address of a second local broker called `name` (started on first use)."""
        if name not in self._brokers:
            st = devbroker.start(devbroker.free_port(), self.work / name, tied=not self.keep)
            if not self.keep:
                self.stack.callback(devbroker.stop, st.data_dir)
            self.console.print(f"started a local broker '{name}' at {st.bootstrap}")
            self._brokers[name] = st.bootstrap or ""
        return self._brokers[name]
