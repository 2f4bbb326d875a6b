"""Options and helpers every command shares (connection flags, output format, errors)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from offsetkeeper.cli.output import OutputFormat
from offsetkeeper.config import (
    Connection,
    load_config_file,
    resolve_connection,
)

BootstrapOpt = Annotated[
    str | None,
    typer.Option("--bootstrap-server", "-b", envvar="OFFSETKEEPER_BOOTSTRAP_SERVER",
                 help="Kafka bootstrap servers, HOST:PORT[,HOST:PORT].", show_default=False),
]
CommandConfigOpt = Annotated[
    Path | None,
    typer.Option("--command-config", help="Client properties file (SASL, SSL, client.id ...), "
                 "as for kafka-consumer-groups.sh.", show_default=False),
]
ClusterOpt = Annotated[
    str | None,
    typer.Option("--cluster", help="Named cluster from the config file.", show_default=False),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", envvar="OFFSETKEEPER_CONFIG",
                 help="YAML config file [default: ~/.config/offsetkeeper/config.yaml].",
                 show_default=False),
]
# Reset targets that mean the same for a consumer group and a streaming checkpoint.
ToEarliestOpt = Annotated[bool, typer.Option("--to-earliest", help="Log start.")]
ToLatestOpt = Annotated[bool, typer.Option("--to-latest", help="Log end.")]
ToOffsetOpt = Annotated[str | None, typer.Option("--to-offset", help="Absolute offset N.")]
ToDatetimeOpt = Annotated[str | None, typer.Option(
    "--to-datetime", help="ISO-8601 time, UTC when no zone: first record at/after it.")]
ByDurationOpt = Annotated[str | None, typer.Option(
    "--by-duration", help="ISO-8601 duration back from now, e.g. PT1H30M.")]
OutputOpt = Annotated[
    OutputFormat,
    typer.Option("--output", "-o", case_sensitive=False, help="Output format."),
]


def group_ids(values: list[str] | None, *, option: str = "--group") -> list[str]:
    """Group ids as given (never split on commas: Kafka allows them), duplicates dropped;
    an empty id is bad input."""
    from offsetkeeper.errors import UsageError
    from offsetkeeper.models import check_names

    ids = list(dict.fromkeys(values or []))
    if "" in ids:
        raise UsageError(f"{option} '' is empty (expected a consumer group id)")
    check_names(ids, what=f"{option}")
    return ids


def connection(
    bootstrap: str | None, command_config: Path | None, cluster: str | None, config: Path | None
) -> Connection:
    """Resolve the cluster to talk to from the shared connection options."""
    return resolve_connection(
        bootstrap_server=bootstrap,
        command_config=command_config,
        cluster=cluster,
        config=load_config_file(config),
    )
