"""`offsetkeeper streaming show|lag|reset|rollback|commit-to-group`: Spark Structured
Streaming checkpoints with Kafka offsets, managed like a consumer group's offsets."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from offsetkeeper.cli.common import (
    BootstrapOpt,
    ByDurationOpt,
    ClusterOpt,
    CommandConfigOpt,
    ConfigOpt,
    OutputOpt,
    ToDatetimeOpt,
    ToEarliestOpt,
    ToLatestOpt,
    ToOffsetOpt,
    connection,
    duration_option,
)
from offsetkeeper.cli.output import (
    OutputFormat,
    render_json,
    render_rows,
    say,
    table_cell,
)
from offsetkeeper.errors import require_extra
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.ops import streaming as ops
from offsetkeeper.ops.targets import TargetKind, target_from_flags
from offsetkeeper.reset.parse import parse_topic_spec
from offsetkeeper.reset.plan import TopicSpec

app = typer.Typer(help="Spark streaming checkpoints with Kafka offsets: show, lag, reset "
                  "(dry run by default), roll back, commit to a consumer group.",
                  no_args_is_help=True)

CheckpointArg = Annotated[str, typer.Argument(metavar="CHECKPOINT",
                                              help="Checkpoint location: a path or an fsspec URL.")]
SourceOpt = Annotated[int | None, typer.Option("--source", min=0, help="Index of the query's Kafka "
                                               "source (needed only when it has several).")]
AliveOpt = Annotated[float, duration_option("--alive-window", help="Treat the query as running "
                                            "when a batch file was written this recently (a bare "
                                            "number: seconds).", seconds=True, minimum_s=0)]
ForceOpt = Annotated[bool, typer.Option("--force", help="Change the checkpoint even though the "
                                        "query looks alive or is stateful.")]

POSITION_COLUMNS = ["topic", "partition", "committed_offset", "pending_offset"]
LAG_COLUMNS = ["topic", "partition", "position", "log_end", "lag", "time_lag_s", "pending_offset"]
PLAN_COLUMNS = ["topic", "partition", "current", "target", "log_start", "log_end", "note"]


def _warn(text: str, label: str = "warning") -> None:
    say(text, style="bold yellow", prefix=f"{label}:")


@app.command("show")
def show(checkpoint: CheckpointArg, source: SourceOpt = None,
         output: OutputOpt = OutputFormat.table) -> None:
    """The query id, the last committed batch and its Kafka end offsets per partition, and a
    planned-but-uncommitted batch (works on checkpoints of Spark's JVM Kafka source too).

    Example: offsetkeeper streaming show /data/checkpoints/orders-to-parquet
    """
    view = ops.load_view(checkpoint, source=source)
    summary = view.summary()
    if output is OutputFormat.json:
        render_json({**summary, "partitions": view.rows()})
        return
    if output is OutputFormat.table:
        for k, v in summary.items():
            if not k.endswith("_iso"):
                say(f"{k.replace('_', ' ')}: {table_cell(k, v, ['last_change'])}")
    render_rows(view.rows(), POSITION_COLUMNS, output)


@app.command("lag")
def lag(checkpoint: CheckpointArg, source: SourceOpt = None,
        no_time_lag: Annotated[bool, typer.Option("--no-time-lag", help="Skip reading the first "
                                                  "unread record of each partition.")] = False,
        bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
        cluster: ClusterOpt = None, config: ConfigOpt = None,
        output: OutputOpt = OutputFormat.table) -> None:
    """The query's lag per partition: log end minus the end of its last committed batch, and
    the time lag (age of the first record it has not processed).

    Example: offsetkeeper streaming lag /data/checkpoints/orders-to-parquet -b localhost:9092
    """
    with KafkaAdmin(connection(bootstrap, command_config, cluster, config)) as admin:
        _view, rows = ops.checkpoint_lag(admin, checkpoint, source=source, time_lag=not no_time_lag)
    render_rows([r.__dict__ for r in rows], LAG_COLUMNS, output)


@app.command("reset")
def reset(
    checkpoint: CheckpointArg,
    to_earliest: ToEarliestOpt = False,
    to_latest: ToLatestOpt = False,
    to_current: Annotated[bool, typer.Option("--to-current", help="The checkpoint's position, "
                                             "clamped into the log.")] = False,
    to_offset: ToOffsetOpt = None,
    shift_by: Annotated[int | None, typer.Option("--shift-by", help="Move the position by ±N.")] = None,
    to_datetime: ToDatetimeOpt = None,
    by_duration: ByDurationOpt = None,
    from_file: Annotated[Path | None, typer.Option("--from-file", help="CSV topic,partition,offset "
                                                   "(no header).")] = None,
    from_group: Annotated[str | None, typer.Option("--from-group", metavar="GROUP",
                                                   help="A consumer group's committed offsets.")] = None,
    topic: Annotated[list[str] | None, typer.Option("--topic", "-t", metavar="TOPIC[:P,...]",
                                                    help="Only these partitions (default: every "
                                                    "partition in the checkpoint).")] = None,
    source: SourceOpt = None,
    execute: Annotated[bool, typer.Option("--execute", help="Rewrite the checkpoint (default: "
                                          "dry run).")] = False,
    force: ForceOpt = False,
    alive_window: AliveOpt = ops.DEFAULT_ALIVE_WINDOW_S,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Plan (and with --execute write) new offsets for a stopped query, so that Spark resumes
    from them on restart. Every file changed is copied first: undo with `streaming rollback`.

    Example: offsetkeeper streaming reset /data/ck/orders --to-datetime 2026-11-20T09:40:00Z -b localhost:9092 --execute
    """
    target = target_from_flags({
        TargetKind.TO_EARLIEST: to_earliest, TargetKind.TO_LATEST: to_latest,
        TargetKind.TO_CURRENT: to_current, TargetKind.TO_OFFSET: to_offset,
        TargetKind.SHIFT_BY: None if shift_by is None else str(shift_by),
        TargetKind.TO_DATETIME: to_datetime, TargetKind.BY_DURATION: by_duration,
        TargetKind.FROM_FILE: None if from_file is None else str(from_file),
        TargetKind.FROM_GROUP: from_group})
    req = ops.CheckpointResetRequest(
        ops.CheckpointScope(checkpoint, topics=tuple(TopicSpec(*parse_topic_spec(t))
                                                     for t in topic or ()),
                            source=source, force=force, alive_window_s=alive_window),
        target=target, execute=execute)
    with KafkaAdmin(connection(bootstrap, command_config, cluster, config)) as admin:
        outcome = ops.reset_checkpoint(admin, req)
    plan, record = outcome.plan, outcome.record
    title = (f"Checkpoint reset ({plan.target}) — written" if record else
             f"Checkpoint reset plan ({plan.target}) — dry run, nothing changed; add --execute")
    payload = {**plan.to_dict(), "executed": record is not None,
               "reset_id": record.reset_id if record else None}
    render_rows(plan.rows(), PLAN_COLUMNS, output, title=title, json_payload=payload)
    for w in plan.warnings:
        _warn(w, "note")
    if record is None:
        for r in plan.refusals:
            _warn(f"--execute would refuse: {r}")
    else:
        if plan.refusals:
            _warn("forced: " + "; ".join(plan.refusals))
        if output is OutputFormat.table:
            say(
                f"rewrote {', '.join(f'offsets/{b}' for b in plan.batches)}; copies kept as reset "
                f"{record.reset_id} (undo: offsetkeeper streaming rollback "
                f"{shlex.quote(checkpoint)} {record.reset_id} --execute)")
        say("a consumer group the query commits to (commitToGroup, or the listener) keeps its "
            "old offsets until the query's next batch; to move it now: offsetkeeper streaming "
            f"commit-to-group {shlex.quote(checkpoint)} --group GROUP --execute", prefix="note:")
    if plan.has_errors:
        for p in plan.partitions:
            if p.error:
                say(f"{p.topic}:{p.partition}: {p.error}", style="bold red", prefix="error:")
        raise typer.Exit(1)


@app.command("rollback")
def rollback(
    checkpoint: CheckpointArg,
    reset_id: Annotated[str, typer.Argument(help="Reset id, or latest.")] = "latest",
    execute: Annotated[bool, typer.Option("--execute", help="Restore the files (default: dry run).")] = False,
    force: ForceOpt = False,
    alive_window: AliveOpt = ops.DEFAULT_ALIVE_WINDOW_S,
    output: OutputOpt = OutputFormat.table,
) -> None:
    """Undo a `streaming reset --execute`: put back every checkpoint file it changed.

    Example: offsetkeeper streaming rollback /data/ck/orders latest --execute
    """
    res = ops.roll_back_checkpoint(ops.CheckpointRollbackRequest(
        checkpoint, reset_id, execute=execute, force=force, alive_window_s=alive_window))
    rows = [{"reset_id": res.record.reset_id, "file": f, "target": res.record.target,
             "restored": res.executed} for f in res.files]
    title = None if execute else "Rollback plan — dry run, nothing changed; add --execute"
    render_rows(rows, ["reset_id", "file", "target", "restored"], output, title=title)
    for r in res.refusals:
        _warn(("forced: " if execute else "--execute would refuse: ") + r)


@app.command("commit-to-group")
def commit_to_group(
    checkpoint: CheckpointArg,
    group: Annotated[str, typer.Option("--group", "-g", help="Consumer group to commit to.")],
    source: SourceOpt = None,
    execute: Annotated[bool, typer.Option("--execute", help="Commit (default: dry run).")] = False,
    no_snapshot: Annotated[bool, typer.Option("--no-snapshot", help="Do not snapshot the group "
                                              "before --execute.")] = False,
    snapshot_store: Annotated[str | None, typer.Option("--snapshot-store", help="Snapshot store "
                                                       "path or fsspec URL.")] = None,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Commit the checkpoint's position (end of the last committed batch) to a consumer group,
    through the reset executor (inactive groups only, snapshot first, read back).

    Example: offsetkeeper streaming commit-to-group /data/ck/orders --group orders-etl -b localhost:9092 --execute
    """
    require_extra("spark", "streaming commit-to-group")
    from offsetkeeper.cli.reset_render import render_outcome
    from offsetkeeper.ops.reset import ExecuteOptions

    req = ops.CommitToGroupRequest(
        checkpoint, group, source=source, execute=execute,
        options=ExecuteOptions(snapshot=not no_snapshot, snapshot_store=snapshot_store,
                               config_path=config))
    with KafkaAdmin(connection(bootstrap, command_config, cluster, config)) as admin:
        outcome = ops.commit_to_group(admin, req)
    render_outcome(outcome, output)


@app.command("connector-jars")
def connector_jars() -> None:
    """Print the jars of Spark's own Kafka connector (spark-sql-kafka-0-10 of the installed
    pyspark's version, fetched by scripts/setup.sh) as a comma-separated list, for
    ``spark.jars`` or ``spark-submit --jars``. Exit 2 with how to install it when it is not.

    Example: spark-submit --jars "$(offsetkeeper streaming connector-jars)" orders_query.py
    """
    require_extra("spark", "streaming connector-jars")
    typer.echo(ops.connector_jars())
