"""`offsetkeeper dev-broker start|stop|status` and `offsetkeeper demo`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from offsetkeeper.cli.common import OutputOpt
from offsetkeeper.cli.output import OutputFormat, render_json, render_rows, say
from offsetkeeper.ops import devbroker

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
