"""`offsetkeeper offsets show|reset|delete`."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
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
from offsetkeeper.cli.output import OutputFormat, render_rows, stderr_console
from offsetkeeper.cli.reset_render import execute_plan, finish, show_outcome, write_atomic
from offsetkeeper.errors import UsageError
from offsetkeeper.inspect import rows_as_dicts, show_offsets
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.reset import sources
from offsetkeeper.reset.apply import ApplyOptions
from offsetkeeper.reset.parse import parse_datetime, parse_duration, parse_offset, parse_topic_spec
from offsetkeeper.reset.plan import ResetScope, TopicSpec, build_plan
from offsetkeeper.reset.render import plan_csv, plan_script
from offsetkeeper.reset.targets import (
    ShiftBy,
    ToCurrent,
    ToDatetime,
    ToEarliest,
    ToLatest,
    ToOffset,
)

app = typer.Typer(help="Show log offsets; reset or delete committed offsets (dry run by default).",
                  no_args_is_help=True)

TopicOpt = Annotated[list[str], typer.Option("--topic", "-t", metavar="TOPIC[:P,...]", help="TOPIC or TOPIC:P[,P...] (repeatable).")]
GroupOpt = Annotated[list[str], typer.Option("--group", "-g", metavar="GROUP", help="Consumer group (repeatable).")]


@app.command("show")
def show(
    topic: TopicOpt,
    at: Annotated[str | None, typer.Option("--at", help="Also show the first offset at/after this "
                                          "ISO-8601 time (UTC when no zone).")] = None,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Log start and log end offset of each partition, and the offset for a time.

    Example: offsetkeeper offsets show --topic orders --at 2026-11-20T09:40:00Z
    """
    if not topic:
        raise UsageError("no topic given: use --topic TOPIC[:P,...]")
    specs = [parse_topic_spec(t) for t in topic]
    at_ms = parse_datetime(at) if at else None
    with KafkaAdmin(connection(bootstrap, command_config, cluster, config)) as admin:
        rows = rows_as_dicts(show_offsets(admin, specs, at_ms))
    cols = ["topic", "partition", "log_start_offset", "log_end_offset"]
    render_rows(rows, cols + (["offset_at_time"] if at else []), output)


def _target(*, to_earliest, to_latest, to_current, to_offset, shift_by, to_datetime, by_duration,
            from_file, from_snapshot, from_mapping, snapshot_store, allow_cluster_mismatch, config,
            to_commit_time=None, commit_history=None, from_zookeeper=None, groups=()):
    given = [name for name, v in [
        ("--to-earliest", to_earliest), ("--to-latest", to_latest), ("--to-current", to_current),
        ("--to-offset", to_offset is not None), ("--shift-by", shift_by is not None),
        ("--to-datetime", to_datetime is not None), ("--by-duration", by_duration is not None),
        ("--from-file", from_file is not None), ("--from-snapshot", from_snapshot is not None),
        ("--from-mapping", from_mapping is not None), ("--to-commit-time", to_commit_time is not None),
        ("--from-zookeeper", from_zookeeper is not None)] if v]
    if not given:
        raise UsageError("missing reset target: use one of --to-earliest, --to-latest, --to-current, "
                         "--to-offset, --shift-by, --to-datetime, --by-duration, --from-file, "
                         "--from-snapshot, --from-mapping, --to-commit-time, --from-zookeeper")
    if len(given) > 1:
        raise UsageError(f"conflicting reset targets: {' and '.join(given)} (give exactly one)")
    if to_earliest:
        return ToEarliest(), "--to-earliest"
    if to_latest:
        return ToLatest(), "--to-latest"
    if to_current:
        return ToCurrent(), "--to-current"
    if to_offset is not None:
        n = parse_offset(to_offset)
        return ToOffset(n), f"--to-offset {n}"
    if shift_by is not None:
        return ShiftBy(shift_by), f"--shift-by {shift_by}"
    if to_datetime is not None:
        return ToDatetime(parse_datetime(to_datetime), to_datetime), f"--to-datetime {to_datetime}"
    if by_duration is not None:
        delta = parse_duration(by_duration)
        ts = int((datetime.now(UTC) - delta).timestamp() * 1000)
        return ToDatetime(ts, by_duration), f"--by-duration {by_duration}"
    if from_file is not None:
        return sources.from_file(from_file), f"--from-file {from_file}"
    if to_commit_time is not None:
        from offsetkeeper.offsetlog.target import commit_time_target
        return commit_time_target(commit_history, to_commit_time, groups), f"--to-commit-time {to_commit_time}"
    if from_zookeeper is not None:
        from offsetkeeper.zk.offsets import from_zookeeper as zk_target
        return zk_target(from_zookeeper, groups), f"--from-zookeeper {from_zookeeper}"
    if from_snapshot is not None:
        return (sources.from_snapshot(from_snapshot, store=snapshot_store, config=config),
                f"--from-snapshot {from_snapshot}")
    return sources.from_mapping(from_mapping), f"--from-mapping {from_mapping}"


@app.command("reset")
def reset(
    group: GroupOpt = None,
    all_groups: Annotated[bool, typer.Option("--all-groups", help="Every group of the cluster.")] = False,
    topic: TopicOpt = None,
    all_topics: Annotated[bool, typer.Option("--all-topics", help="Every partition the group has "
                                             "committed offsets for.")] = False,
    to_earliest: Annotated[bool, typer.Option("--to-earliest", help="Log start.")] = False,
    to_latest: Annotated[bool, typer.Option("--to-latest", help="Log end.")] = False,
    to_current: Annotated[bool, typer.Option("--to-current", help="Committed offset "
                                             "(log end when none); clamps out-of-range commits.")] = False,
    to_offset: Annotated[str | None, typer.Option("--to-offset", help="Absolute offset N.")] = None,
    shift_by: Annotated[int | None, typer.Option("--shift-by", help="Move committed offset by ±N.")] = None,
    to_datetime: Annotated[str | None, typer.Option("--to-datetime", help="ISO-8601 time, UTC when no "
                                                    "zone: first record at/after it.")] = None,
    by_duration: Annotated[str | None, typer.Option("--by-duration", help="ISO-8601 duration back "
                                                    "from now, e.g. PT1H30M.")] = None,
    from_file: Annotated[Path | None, typer.Option("--from-file", help="CSV topic,partition,offset or "
                                                   "group,topic,partition,offset (no header).")] = None,
    from_snapshot: Annotated[str | None, typer.Option("--from-snapshot", help="Snapshot id (rollback).")] = None,
    from_mapping: Annotated[str | None, typer.Option("--from-mapping", help="BACKUP_DIR[:RESTORE_ID]: "
                                                     "translate the backup's group offsets through "
                                                     "the restore's offset mapping.")] = None,
    to_commit_time: Annotated[str | None, typer.Option("--to-commit-time", help="ISO-8601 time: the offsets "
                                                       "committed as of then, from --commit-history.")] = None,
    commit_history: Annotated[str | None, typer.Option("--commit-history", metavar="DIR", help="Commit "
                                                       "history from 'commits scan'.")] = None,
    from_zookeeper: Annotated[str | None, typer.Option("--from-zookeeper", metavar="HOST:PORT[/chroot]",
                                                       help="Migrate ZooKeeper-era offsets of --group.")] = None,
    execute: Annotated[bool, typer.Option("--execute", help="Apply the plan (default: dry run).")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only print the plan (the default).")] = False,
    export: Annotated[Path | None, typer.Option("--export", help="Write the plan as CSV for --from-file.")] = None,
    script: Annotated[Path | None, typer.Option("--script", help="Write an equivalent "
                                                "kafka-consumer-groups.sh script.")] = None,
    max_concurrent: Annotated[int, typer.Option("--max-concurrent", min=1, max=1000,
                                                help="Groups in flight at once.")] = 100,
    retries: Annotated[int, typer.Option("--retries", min=0, max=50,
                                         help="Retries per group for retriable errors.")] = 5,
    no_snapshot: Annotated[bool, typer.Option("--no-snapshot", help="Do not snapshot the groups "
                                              "before --execute.")] = False,
    snapshot_store: Annotated[str | None, typer.Option("--snapshot-store", help="Snapshot store path "
                                                       "or fsspec URL.")] = None,
    allow_cluster_mismatch: Annotated[bool, typer.Option(
        "--allow-cluster-mismatch", help="Allow --from-snapshot of another cluster.")] = False,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Plan (and with --execute apply) a reset of committed offsets, like
    kafka-consumer-groups.sh --reset-offsets, for one, several or all groups.

    Example: offsetkeeper offsets reset --group payments --topic orders --to-datetime 2026-11-20T09:40:00Z --execute
    """
    if execute and dry_run:
        raise UsageError("--execute and --dry-run are mutually exclusive")
    target, label = _target(
        to_earliest=to_earliest, to_latest=to_latest, to_current=to_current, to_offset=to_offset,
        shift_by=shift_by, to_datetime=to_datetime, by_duration=by_duration, from_file=from_file,
        from_snapshot=from_snapshot, from_mapping=from_mapping, snapshot_store=snapshot_store,
        allow_cluster_mismatch=allow_cluster_mismatch, config=config, to_commit_time=to_commit_time,
        commit_history=commit_history, from_zookeeper=from_zookeeper, groups=tuple(group or ()))
    scope = ResetScope(groups=tuple(group or ()), all_groups=all_groups,
                       topics=tuple(TopicSpec(*parse_topic_spec(t)) for t in topic or ()),
                       all_topics=all_topics)
    conn = connection(bootstrap, command_config, cluster, config)
    with KafkaAdmin(conn) as admin:
        if from_snapshot is not None:
            note = sources.check_snapshot_cluster(admin, from_snapshot, snapshot_store, config,
                                                  allow=allow_cluster_mismatch)
            if note:
                stderr_console().print(f"note: {note}", highlight=False)
        plan = build_plan(admin, scope, target, label=label)
        if export:
            write_atomic(export, plan_csv(plan))
        if script:
            write_atomic(script, plan_script(plan, bootstrap_servers=conn.bootstrap_servers,
                                             command_config=str(command_config) if command_config else None))
        report = None
        if execute:
            store = sources.snapshot_store_url(snapshot_store, config)
            opts = ApplyOptions(max_concurrent=max_concurrent, retries=retries,
                                snapshot=not no_snapshot, snapshot_store=store)
            report = execute_plan(admin, plan, opts, output)
    show_outcome(plan, report, output)
    if export and output is OutputFormat.table:
        stderr_console().print(f"plan written to {export} (use with --from-file)", highlight=False)
    finish(plan, report)


@app.command("delete")
def delete(
    group: GroupOpt,
    topic: TopicOpt,
    execute: Annotated[bool, typer.Option("--execute", help="Delete (default: dry run).")] = False,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Delete committed offsets of a group for topics/partitions (group must have no active members).

    Example: offsetkeeper offsets delete --group payments --topic orders:0,1 --execute
    """
    from offsetkeeper.reset.delete import delete_offsets

    if not group or not topic:
        raise UsageError("offsets delete needs --group GROUP and --topic TOPIC[:P,...]")
    specs = [TopicSpec(*parse_topic_spec(t)) for t in topic]
    with KafkaAdmin(connection(bootstrap, command_config, cluster, config)) as admin:
        result = delete_offsets(admin, list(group), specs, execute=execute)
    render_rows(result.rows, ["group", "topic", "partition", "current", "result"], output,
                title=None if execute else "Dry run — nothing deleted; add --execute")
    for msg in result.errors:
        stderr_console().print(f"[bold red]error:[/] {msg}", highlight=False)
    if result.errors:
        raise typer.Exit(1)
