"""`offsetkeeper dev-broker start|stop|status` and `offsetkeeper demo`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from offsetkeeper import devbroker
from offsetkeeper.cli.common import OutputOpt
from offsetkeeper.cli.output import OutputFormat, render_json, render_rows, say
from offsetkeeper.devbroker import connect as side

app = typer.Typer(help="Run a local Apache Kafka cluster (KRaft) for development and demos.",
                  no_args_is_help=True)

PortOpt = Annotated[int, typer.Option("--port", help="Client port of the first node.")]
BrokersOpt = Annotated[int, typer.Option("--brokers", help="Nodes: 1, or 3 (replication 3, "
                                         "min.insync.replicas 2).")]
SecureOpt = Annotated[bool, typer.Option("--secure", help="SASL_SSL (SCRAM-SHA-512, a CA made "
                                         "for it) with ACLs; prints the admin's client "
                                         "properties file.")]
DataDirOpt = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Where the broker keeps its data "
                 "[default: ~/.local/share/offsetkeeper/dev-broker].", show_default=False),
]


def _show(st: devbroker.BrokerStatus, fmt: OutputFormat) -> None:
    if fmt is OutputFormat.json:
        render_json(devbroker.as_dict(st))
    else:
        row = devbroker.as_dict(st)
        row["nodes"] = len(st.nodes)
        cols = ["running", "bootstrap", "nodes", "cluster_id", "data_dir"]
        if st.command_config:
            cols.append("command_config")
        render_rows([row], cols, fmt)


@app.command("start")
def start(port: PortOpt = devbroker.DEFAULT_PORT, data_dir: DataDirOpt = None,
          brokers: BrokersOpt = 1, secure: SecureOpt = False,
          output: OutputOpt = OutputFormat.table) -> None:
    """Start Apache Kafka (KRaft, broker+controller per node) in the background; wait until
    every node serves. The data is kept across stop/start.

    Example: offsetkeeper dev-broker start --port 9092 --brokers 3
    """
    _show(devbroker.start(port, data_dir, brokers=brokers, secure=secure), output)


@app.command("stop")
def stop(data_dir: DataDirOpt = None, output: OutputOpt = OutputFormat.table) -> None:
    """Stop every node cleanly (SIGTERM, a controlled shutdown; SIGKILL after 30 s); the data
    is kept.

    Example: offsetkeeper dev-broker stop
    """
    st = devbroker.stop(data_dir)
    _show(st, output)
    if data_dir is None and not st.nodes:
        _elsewhere(st, "nothing to stop")


def _elsewhere(st: devbroker.BrokerStatus, what: str) -> None:
    """Without --data-dir: say where it looked, and list dev-brokers running elsewhere."""
    others = devbroker.running_elsewhere(st.data_dir)
    if not others:
        say(f"no dev-broker runs in {st.data_dir} (the default --data-dir), and no other "
            f"dev-broker process was found: {what}")
        return
    say(f"no dev-broker runs in {st.data_dir} (the default --data-dir); "
        f"{len(others)} run elsewhere — pass --data-dir DIR:")
    for o in others:
        say(f"  {o.data_dir}  bootstrap {o.bootstrap}  ({len(o.nodes)} node(s))")


@app.command("status")
def status(data_dir: DataDirOpt = None, output: OutputOpt = OutputFormat.table) -> None:
    """Show whether the broker runs and its bootstrap address; exit 1 when it is not running.

    Example: offsetkeeper dev-broker status -o json
    """
    st = devbroker.status(data_dir)
    _show(st, output)
    if not st.running:
        if data_dir is None:
            _elsewhere(st, "nothing is running")
        raise typer.Exit(1)


def register_demo(root: typer.Typer) -> None:
    @root.command("demo")
    def demo(
        port: Annotated[int, typer.Option("--port", help="Port for the demo broker (0 = any free).")] = 0,
        keep: Annotated[bool, typer.Option("--keep", help="Leave the broker running afterwards.")] = False,
        spark: Annotated[bool, typer.Option("--spark/--no-spark",
                                            help="Include the Spark backup/restore part.")] = True,
    ) -> None:
        """Start a local broker, create data and groups, and walk through inspection, reset,
        rollback, backup and restore.

        Example: offsetkeeper demo
        """
        from offsetkeeper.errors import require_extra

        # its parts show the dashboard and ZooKeeper-era offsets too; Spark only with --spark
        require_extra("demo", "demo")
        if spark:
            require_extra("spark", "demo (its backup/restore part; --no-spark leaves it out)")
        from offsetkeeper.demo import run_demo

        run_demo(port=port or None, keep=keep, spark=spark)


@app.command("kafka-tool", context_settings={"allow_extra_args": True,
                                             "ignore_unknown_options": True})
def kafka_tool(
    ctx: typer.Context,
    tool: Annotated[str, typer.Argument(help="kafka-topics, kafka-console-producer, "
                                        "kafka-console-consumer, kafka-consumer-groups, "
                                        "kafka-share-groups, kafka-streams-groups, kafka-groups, "
                                        "kafka-acls, kafka-configs")],
) -> None:
    """Run one of Apache Kafka's own command-line tools from the release set-up fetched, with
    the arguments that follow (what bin/TOOL.sh runs); its exit code is this command's.

    Example: offsetkeeper dev-broker kafka-tool kafka-consumer-groups --bootstrap-server 127.0.0.1:9092 --describe --group payments
    """
    raise typer.Exit(devbroker.run_kafka_tool(tool, list(ctx.args)))


connect_app = typer.Typer(help="A local Kafka Connect worker (distributed mode, FileStream "
                          "connectors on its plugin path) beside a dev-broker cluster.",
                          no_args_is_help=True)
mm2_app = typer.Typer(help="A local MirrorMaker 2 (dedicated mode, clusters A -> B, checkpoints "
                      "and offset syncs every second) between two dev-broker clusters.",
                      no_args_is_help=True)
app.add_typer(connect_app, name="connect")
app.add_typer(mm2_app, name="mm2")

WorkerDirOpt = Annotated[
    Path | None,
    typer.Option("--data-dir", help="The worker's directory (config, log) "
                 "[default: ~/.local/share/offsetkeeper/dev-connect].", show_default=False),
]
MirrorDirOpt = Annotated[
    Path | None,
    typer.Option("--data-dir", help="MirrorMaker 2's directory (mm2.properties, log) "
                 "[default: ~/.local/share/offsetkeeper/dev-mm2].", show_default=False),
]


def _show_side(st, fmt: OutputFormat, cols: list[str]) -> None:
    row = side.as_dict(st)
    if fmt is OutputFormat.json:
        render_json(row)
    else:
        render_rows([row], cols, fmt)


_WORKER_COLS = ["running", "url", "bootstrap", "offsets_topic", "data_dir"]
_MM2_COLS = ["running", "source_bootstrap", "target_bootstrap", "data_dir"]


@connect_app.command("start")
def connect_start(
    bootstrap_server: Annotated[str, typer.Option("--bootstrap-server", "-b",
                                                  help="The cluster the worker uses.")],
    port: Annotated[int, typer.Option("--port", help="REST port (0 = any free).")] = 0,
    data_dir: WorkerDirOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Start a distributed Connect worker in the background; wait while it starts, until its
    REST API answers and it has joined its group. Prints its REST URL.

    Example: offsetkeeper dev-broker connect start -b 127.0.0.1:9092
    """
    _show_side(side.start_worker(bootstrap_server, data_dir, port=port), output,
               _WORKER_COLS)


@connect_app.command("stop")
def connect_stop(data_dir: WorkerDirOpt = None, output: OutputOpt = OutputFormat.table) -> None:
    """Stop the Connect worker; its connectors stay in its topics for the next start.

    Example: offsetkeeper dev-broker connect stop
    """
    _show_side(side.stop_worker(data_dir), output, _WORKER_COLS)


@connect_app.command("status")
def connect_status(data_dir: WorkerDirOpt = None, output: OutputOpt = OutputFormat.table) -> None:
    """Show whether the Connect worker runs and its REST URL; exit 1 when it does not.

    Example: offsetkeeper dev-broker connect status -o json
    """
    st = side.worker_status(data_dir)
    _show_side(st, output, _WORKER_COLS)
    if not st.running:
        raise typer.Exit(1)


@mm2_app.command("start")
def mm2_start(
    source: Annotated[str, typer.Option("--source-bootstrap", help="Cluster A (source).")],
    target: Annotated[str, typer.Option("--target-bootstrap", help="Cluster B (target).")],
    topics: Annotated[str, typer.Option("--topics", help="Topics to mirror (regex).")] = ".*",
    groups: Annotated[str, typer.Option("--groups", help="Groups to checkpoint (regex).")] = ".*",
    data_dir: MirrorDirOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Start MirrorMaker 2 (dedicated mode) mirroring A to B in the background; wait while it
    starts, until its checkpoints topic exists on B.

    Example: offsetkeeper dev-broker mm2 start --source-bootstrap 127.0.0.1:9092 --target-bootstrap 127.0.0.1:9093
    """
    _show_side(side.start_mm2(source, target, data_dir, topics=topics, groups=groups),
               output, _MM2_COLS)


@mm2_app.command("stop")
def mm2_stop(data_dir: MirrorDirOpt = None, output: OutputOpt = OutputFormat.table) -> None:
    """Stop MirrorMaker 2.

    Example: offsetkeeper dev-broker mm2 stop
    """
    _show_side(side.stop_mm2(data_dir), output, _MM2_COLS)
