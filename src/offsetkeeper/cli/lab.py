"""`offsetkeeper lab delivery`: measure a commit policy's delivery guarantee by crashing consumers."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from offsetkeeper.cli.common import (
    BootstrapOpt,
    ClusterOpt,
    CommandConfigOpt,
    ConfigOpt,
    OutputOpt,
    connection,
)
from offsetkeeper.cli.output import OutputFormat, render_rows, say
from offsetkeeper.cli.progress import progress_bar
from offsetkeeper.consumer.lab import LabConfig, run_delivery_lab
from offsetkeeper.consumer.lab_child import LAB_POLICIES


class GroupProtocol(StrEnum):
    classic = "classic"
    consumer = "consumer"


app = typer.Typer(help="Experiments against a real cluster (delivery guarantees).", no_args_is_help=True)

COLUMNS = ["policy", "protocol", "guarantee", "records", "crashes", "rebalance", "processed", "lost",
           "duplicated", "holds", "elapsed_s"]


@app.command("delivery")
def delivery(
    policy: Annotated[str, typer.Option("--policy", "-p", help="One of: " + ", ".join(sorted(LAB_POLICIES))
                                        + " (store = offsets and results in one SQLite/PostgreSQL transaction).")],
    crashes: Annotated[int, typer.Option("--crashes", "-n", min=0, max=10_000,
                                         help="How many times the consumer is SIGKILLed.")] = 20,
    records: Annotated[int, typer.Option("--records", min=1, max=1_000_000, help="Numbered records to produce.")] = 300,
    partitions: Annotated[int, typer.Option("--partitions", min=1, max=100)] = 3,
    asynchronous: Annotated[bool, typer.Option("--async", help="Asynchronous commits.")] = False,
    store: Annotated[str | None, typer.Option("--store", help="Offset store URL for --policy store "
                                              "(default: a SQLite file in a temporary directory).")] = None,
    rebalance: Annotated[bool, typer.Option("--rebalance", help="A second consumer joins and leaves "
                                            "the group again and again during the run.")] = False,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed for the kill points.")] = None,
    protocol: Annotated[GroupProtocol, typer.Option(
        "--protocol", help="group.protocol of the consumers: classic, or consumer (KIP-848, "
        "Kafka 4: the broker assigns partitions incrementally).")] = GroupProtocol.classic,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Produce numbered records, SIGKILL a consumer using the policy at random points, restart
    it, and count from an independent ledger what was lost and what was processed twice.
    Exit 1 when the policy's guarantee (at-most-once / at-least-once / exactly-once) is violated.

    Example: offsetkeeper lab delivery --policy batch --crashes 20 --protocol consumer -b localhost:9092
    """
    cfg = LabConfig(policy=policy, crashes=crashes, records=records, partitions=partitions,
                    asynchronous=asynchronous, store_url=store, rebalance=rebalance, seed=seed,
                    protocol=protocol.value)
    conn = connection(bootstrap, command_config, cluster, config)
    with progress_bar(output) as progress:
        result = run_delivery_lab(conn.bootstrap_servers, cfg, progress=progress)
    render_rows([result.to_dict()], COLUMNS, output)
    if not result.holds:
        say(f"{result.policy} ({result.protocol} protocol) promises {result.guarantee} but lost "
            f"{result.lost} and duplicated {result.duplicated}", style="bold red", prefix="violated:")
        raise typer.Exit(1)
