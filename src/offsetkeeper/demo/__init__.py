"""`offsetkeeper demo`: the main job end to end against brokers it starts itself.

It runs the real command line (each step printed as the command a user would type) against a
local "prod" broker — and, for the Spark part, a second "dr" broker:
inspect -> rewind a group in time -> verify/rollback from the automatic snapshot ->
back the topic up on local Spark -> three-phase restore into DR with the groups translated;
Kafka Connect connectors' offsets and a MirrorMaker 2 failover (a worker and MM2 it starts).

Every part lives in this package (one module per capability), above the operations layer: it
only drives the command line and seeds its own brokers. It ships in the package because
`offsetkeeper demo` is a command a user runs after `pip install`.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from rich.console import Console

from offsetkeeper import devbroker
from offsetkeeper.demo import (
    backup,
    connect,
    consumer,
    history,
    mm2,
    offsetlog,
    offsets,
    snapshots,
    streaming,
    web,
)
from offsetkeeper.demo.context import DemoContext, Runner, seed
from offsetkeeper.errors import OffsetkeeperError

# The demo's parts in order: (title, function, needs Spark). Each capability adds its own part.
PARTS: list[tuple[str, Callable[[DemoContext], None], bool]] = [
    ("offsets: inspect, reset, snapshot, rollback", offsets.part, False),
    ("Apache Kafka: three nodes, Kafka's own tool agrees, a reset with a node down",
     offsets.apache_kafka_part, False),
    ("history: lag over time, status, plot, reset to a past moment", history.part, False),
    ("backup and restore with an exact offset mapping", backup.part, True),
    ("plans as files, rollback twice", snapshots.part, False),
    ("dashboard: groups page and a plan preview over HTTP", web.part, False),
    ("spark streaming: a query's offsets as a group, reset in time, rolled back", streaming.part,
     True),
    ("dashboard: the streaming query's checkpoint and its lag", web.checkpoints_part, True),
    ("consumer: delivery guarantees measured, live reset of a running app", consumer.part, False),
    ("Kafka Connect: a source rewound, a sink's group reset, a mistake rolled back",
     connect.part, False),
    ("MirrorMaker 2: a group's failover from MM2's checkpoints, rolled back", mm2.part, False),
    ("__consumer_offsets decoded on Spark; ZooKeeper-era offsets", offsetlog.part, True),
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
                          f"(broker logs: {work}/<cluster>/node-*/server.log; Connect's: "
                          f"{work}/connect/connect.log; MirrorMaker 2's: {work}/mm2/mm2.log; "
                          "remove the directory when done)")


def _stop_spark_server(state_dir: Path) -> None:
    if state_dir.is_dir():
        from offsetkeeper.spark.server import stop_background

        stop_background(state_dir)


def _run_parts(console: Console, work: Path, *, port: int | None, keep: bool, spark: bool) -> None:
    with ExitStack() as stack:
        prod = devbroker.start(port or devbroker.free_port(), work / "prod", tied=not keep)
        if not keep:
            stack.callback(devbroker.stop, prod.data_dir)
        console.print(f"started a local broker 'prod' at {prod.bootstrap} (data in {prod.data_dir})")
        seed(prod.bootstrap)
        # the Spark commands use the warm Spark server, as a user's do, but the demo's own:
        # started on first use, stopped when the demo ends (even with --keep)
        spark_server = work / "spark-server"
        stack.callback(_stop_spark_server, spark_server)
        env = {**os.environ, "OFFSETKEEPER_SNAPSHOT_STORE": str(work / "snapshots"),
               "PYSPARK_PYTHON": sys.executable, "OFFSETKEEPER_CONFIG": str(work / "none.yaml"),
               "OFFSETKEEPER_SPARK_SERVER_DIR": str(spark_server)}
        (work / "none.yaml").write_text("{}\n")
        run = Runner(console, env)
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
