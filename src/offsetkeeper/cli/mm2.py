"""`offsetkeeper mm2 status`: what a failover to MirrorMaker 2's target cluster would do to each
group (docs/connect.md, "MirrorMaker 2")."""

from __future__ import annotations

from typing import Annotated

import typer

from offsetkeeper.cli.common import (
    BootstrapOpt,
    ClusterOpt,
    CommandConfigOpt,
    ConfigOpt,
    OutputOpt,
    connection,
    group_ids,
)
from offsetkeeper.cli.output import OutputFormat, render_rows, say
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.ops import mm2 as ops

app = typer.Typer(help="MirrorMaker 2: its checkpoints as a failover would use them.",
                  no_args_is_help=True)

COLUMNS = ["group", "topic", "partition", "checkpoint_source_offset", "translated",
           "checkpoint_age_s", "target_committed", "target_log_end", "source_committed",
           "reread_past_checkpoint", "sync_upstream", "sync_downstream", "sync_age_s", "note"]


@app.command("status")
def status(
    source_alias: Annotated[str, typer.Option("--source-alias", metavar="ALIAS",
                                              help="The source cluster's alias in MM2's "
                                              "configuration.")],
    group: Annotated[list[str] | None, typer.Option("--group", "-g", help="Only these groups "
                                                    "(repeatable).")] = None,
    source_bootstrap: Annotated[str | None, typer.Option(
        "--source-bootstrap", metavar="HOST:PORT[,...]", help="The source cluster: adds the "
        "groups' source offsets, what a failover would re-read, and MM2's latest offset sync "
        "of each partition.")] = None,
    target_alias: Annotated[str | None, typer.Option(
        "--target-alias", metavar="ALIAS", help="The target cluster's alias in MM2's "
        "configuration (names mm2-offset-syncs.ALIAS.internal; found by name when there is "
        "one).")] = None,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Per group and partition on the TARGET cluster (-b): MM2's translated offset, the
    checkpoint's age, the group's committed offset and the log end there, and with
    --source-bootstrap its source offset, how far it moved past the checkpoint, and MM2's
    latest offset sync of the partition (source offset -> target offset) and its age.

    Example: offsetkeeper mm2 status --source-alias A -b dr-kafka:9092 --source-bootstrap kafka:9092
    """
    groups = tuple(group_ids(group))
    with KafkaAdmin(connection(bootstrap, command_config, cluster, config)) as target:
        if source_bootstrap:
            with KafkaAdmin(connection(source_bootstrap, None, None, None)) as source:
                report = ops.mm2_status(target, source_alias, source_admin=source, groups=groups,
                                        target_alias=target_alias)
        else:
            report = ops.mm2_status(target, source_alias, groups=groups)
    rows = [r.as_dict() for r in report.rows]
    for r in rows:
        for age in ("checkpoint_age_s", "sync_age_s"):
            if r[age] is not None:
                r[age] = round(r[age], 1)
    render_rows(rows, COLUMNS, output)
    if report.skipped_records:
        say(f"{report.skipped_records} malformed records in {source_alias}.checkpoints.internal "
            "were skipped")
    if report.skipped_sync_records:
        say(f"{report.skipped_sync_records} malformed records in {report.offset_syncs_topic} "
            "were skipped")
    for note in report.notes:
        say(note)
    if any(r.note.startswith("no MM2 checkpoint") for r in report.rows):
        raise typer.Exit(1)
