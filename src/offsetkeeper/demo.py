"""`offsetkeeper demo`: the main job end to end against brokers it starts itself.

It runs the real command line (each step printed as the command a user would type) against a
local "prod" broker — and, for the Spark part, a second "dr" broker:
inspect -> rewind a group in time -> verify/rollback from the automatic snapshot ->
back the topic up on local Spark -> three-phase restore into DR with the groups translated.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from offsetkeeper import devbroker
from offsetkeeper.consumer.demo import part as _consumer_part
from offsetkeeper.errors import OffsetkeeperError
from offsetkeeper.offsetlog import demo as offsetlog_demo
from offsetkeeper.snapshots import demo as snapshots_demo
from offsetkeeper.streaming import demo as streaming_demo

TOPIC = "orders"
PARTITIONS = 3
PER_PARTITION = 120


def _seed(bootstrap: str) -> None:
    """A topic whose records span the last two hours, and two idle consumer groups."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka import TopicPartition as CkTP
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    # replication factor -1: the cluster's default (1 on one node, 3 on three)
    for f in admin.create_topics([NewTopic(TOPIC, PARTITIONS, -1, config={"retention.ms": "-1"})]).values():
        f.result(30)
    time.sleep(0.5)
    now = int(time.time() * 1000)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 10})
    for part in range(PARTITIONS):
        for i in range(PER_PARTITION):
            ts = now - (PER_PARTITION - i) * 60_000  # one record a minute, up to now
            p.produce(TOPIC, key=f"order-{part}-{i}".encode(), value=f'{{"amount": {i}}}'.encode(),
                      partition=part, timestamp=ts, headers=[("source", b"demo")])
    p.flush(30)
    for group, offset in (("payments", PER_PARTITION * 3 // 4), ("analytics", PER_PARTITION)):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        c.commit(offsets=[CkTP(TOPIC, part, offset) for part in range(PARTITIONS)], asynchronous=False)
        c.close()


class _Runner:
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

    run: _Runner
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


def _part_offsets(ctx: DemoContext) -> None:
    run, b = ctx.run, ["-b", ctx.prod]
    run("Consumer groups", ["groups", "list", *b])
    run("Where are they?", ["groups", "describe", "payments", "analytics", *b])
    run("Plan: rewind payments by 90 minutes (dry run)",
        ["offsets", "reset", "-g", "payments", "-t", TOPIC, "--by-duration", "PT90M", *b])
    run("Apply it (a snapshot is taken first)",
        ["offsets", "reset", "-g", "payments", "-t", TOPIC, "--by-duration", "PT90M", "--execute", *b])
    run("Did anything change since the snapshot? (yes: exit 1)",
        ["snapshots", "verify", "latest", *b], expect=1)
    run("Undo: roll back to the snapshot", ["snapshots", "rollback", "latest", "--execute", *b])
    run("Back where it was", ["groups", "describe", "payments", *b])


def _csv_plan(text: str) -> set[tuple[str, str, str]]:
    """(topic, partition, offset) of a plan: offsetkeeper's CSV (with a header row naming its
    columns) or kafka-consumer-groups' --export (topic,partition,offset, no header)."""
    import csv

    rows = [r for r in csv.reader(text.splitlines()) if r]
    if rows and rows[0][:3] == ["group", "topic", "partition"]:
        cols = rows[0]
        return {(r[cols.index("topic")], r[cols.index("partition")], r[cols.index("target")])
                for r in rows[1:]}
    return {(r[0], r[1], r[2]) for r in rows if len(r) == 3}


def _part_apache_kafka(ctx: DemoContext) -> None:
    """Three real Kafka nodes; Kafka's own kafka-consumer-groups agrees with the plan; a reset
    goes through while a node is down."""
    run = ctx.run
    k3 = ctx.work / "k3"
    run("Start a three-node Apache Kafka cluster (replication 3, min.insync.replicas 2)",
        ["dev-broker", "start", "--brokers", "3", "--port", str(devbroker.free_port()),
         "--data-dir", str(k3)])
    if not ctx.keep:
        ctx.stack.callback(devbroker.stop, k3)
    st = devbroker.status(k3)
    if not st.running:
        ctx.run.fail("the three-node cluster did not start: the rest of this part is skipped")
        return
    b3 = st.bootstrap or ""
    _seed(b3)
    run("Kafka's own kafka-consumer-groups describes payments ...",
        ["dev-broker", "kafka-tool", "kafka-consumer-groups", "--bootstrap-server", b3,
         "--describe", "--group", "payments"])
    run("... and offsetkeeper shows the same numbers", ["groups", "describe", "payments", "-b", b3])
    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 45 * 60))
    ours = ctx.run.capture("offsetkeeper's plan: payments to 45 minutes ago, as CSV",
                           ["offsets", "reset", "-g", "payments", "-t", TOPIC, "--to-datetime",
                            when, "-o", "csv", "-b", b3])
    theirs = ctx.run.capture("kafka-consumer-groups' plan for the same reset (--dry-run --export)",
                             ["dev-broker", "kafka-tool", "kafka-consumer-groups",
                              "--bootstrap-server", b3, "--reset-offsets", "--group", "payments",
                              "--topic", TOPIC, "--to-datetime", when + ".000", "--dry-run",
                              "--export"])
    if _csv_plan(ours) and _csv_plan(ours) == _csv_plan(theirs):
        ctx.console.print(f"[bold green]the two plans agree on all {len(_csv_plan(ours))} partitions")
    else:
        ctx.run.fail("offsetkeeper's plan and kafka-consumer-groups' plan differ")
    ctx.console.rule("[bold]SIGKILL node 3 (a crash), then reset while it is down")
    devbroker.kill_node(k3, 3)
    run("Apply the reset with a node down (the executor re-checks and reads back)",
        ["offsets", "reset", "-g", "payments", "-t", TOPIC, "--to-datetime", when, "--execute",
         "-b", b3])
    devbroker.restart_node(k3, 3)
    run("Node 3 is back; payments is where the plan said",
        ["groups", "describe", "payments", "-b", b3])
    run("Stop the cluster (a controlled shutdown of every node)",
        ["dev-broker", "stop", "--data-dir", str(k3)])


def _part_backup_restore(ctx: DemoContext) -> None:
    run, b = ctx.run, ["-b", ctx.prod]
    dr = ctx.broker("dr")
    dest = str(ctx.work / "backups")
    run("Back the topic up on local Spark (Parquet + manifest + group offsets)",
        ["backup", "run", "-t", TOPIC, "--dest", dest, "--id", "nightly", *b])
    run("What the backup holds", ["backups", "describe", "nightly", "--dest", dest])
    run("Restore into DR, translate the groups exactly, validate",
        ["restore", "three-phase", f"{dest}/nightly", "-b", dr, "--restore-id", "dr-1"])
    run("Groups on DR resume at the same logical records",
        ["groups", "describe", "payments", "analytics", "-b", dr])
    run("The offset mapping", ["mapping", "show", f"{dest}/nightly", "--restore", "dr-1"])


# The demo's parts in order: (title, function, needs Spark). Each capability adds its own part.
PARTS: list[tuple[str, Callable[[DemoContext], None], bool]] = [
    ("offsets: inspect, reset, snapshot, rollback", _part_offsets, False),
    ("Apache Kafka: three nodes, Kafka's own tool agrees, a reset with a node down",
     _part_apache_kafka, False),
    ("history: lag over time, status, plot, reset to a past moment", lambda ctx: __import__("offsetkeeper.history.demo", fromlist=["part"]).part(ctx), False),
    ("backup and restore with an exact offset mapping", _part_backup_restore, True),
    ("plans as files, rollback twice", snapshots_demo.part, False),
    ("dashboard: groups page and a plan preview over HTTP", lambda ctx: __import__("offsetkeeper.web.demo", fromlist=["part"]).part(ctx), False),
    ("spark streaming: a query's offsets as a group, reset in time, rolled back", streaming_demo.part, True),
    ("dashboard: the streaming query's checkpoint and its lag", lambda ctx: __import__("offsetkeeper.web.demo", fromlist=["checkpoints_part"]).checkpoints_part(ctx), True),
    ("consumer: delivery guarantees measured, live reset of a running app", _consumer_part, False),
    ("__consumer_offsets decoded on Spark; ZooKeeper-era offsets", offsetlog_demo.part, True),
]


def run_demo(*, port: int | None = None, keep: bool = False, spark: bool = True) -> None:
    """Run the demo; raises OffsetkeeperError when a step does not behave as shown."""
    console = Console()
    work = Path(tempfile.mkdtemp(prefix="offsetkeeper-demo-"))
    passed = False
    try:
        _run_parts(console, work, port=port, keep=keep, spark=spark)
        passed = True
    finally:
        if passed and not keep:
            shutil.rmtree(work, ignore_errors=True)
        elif not passed:
            # the logs of the failed part must outlive the run that names them
            console.print(f"[bold red]the demo failed; its data and logs are kept in {work} "
                          f"(broker logs: {work}/<cluster>/node-*/server.log; remove the "
                          "directory when done)")


def _run_parts(console: Console, work: Path, *, port: int | None, keep: bool, spark: bool) -> None:
    with ExitStack() as stack:
        prod = devbroker.start(port or devbroker.free_port(), work / "prod", tied=not keep)
        if not keep:
            stack.callback(devbroker.stop, prod.data_dir)
        console.print(f"started a local broker 'prod' at {prod.bootstrap} (data in {prod.data_dir})")
        _seed(prod.bootstrap)
        env = {**os.environ, "OFFSETKEEPER_SNAPSHOT_STORE": str(work / "snapshots"),
               "PYSPARK_PYTHON": sys.executable, "OFFSETKEEPER_CONFIG": str(work / "none.yaml")}
        (work / "none.yaml").write_text("{}\n")
        run = _Runner(console, env)
        ctx = DemoContext(run=run, console=console, prod=prod.bootstrap or "", work=work, env=env,
                          spark=spark, keep=keep, stack=stack)
        for title, part, needs_spark in PARTS:
            if needs_spark and not spark:
                continue
            console.rule(f"[bold cyan]{title}")
            part(ctx)
        if keep:
            console.print(f"brokers left running; data under {work}. Stop them with "
                          f"'offsetkeeper dev-broker stop --data-dir DIR'.")
        if run.failures:
            raise OffsetkeeperError("demo failed: " + "; ".join(run.failures))
        console.rule("[bold green]demo finished")
