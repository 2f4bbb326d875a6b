"""`offsetkeeper offsets show|reset|delete`."""

from __future__ import annotations

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
    group_ids,
    remember_hint_option,
)
from offsetkeeper.cli.output import OutputFormat, render_rows
from offsetkeeper.cli.progress import progress_bar
from offsetkeeper.cli.reset_render import render_outcome
from offsetkeeper.errors import UsageError
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.ops import (
    DeleteRequest,
    ExecuteOptions,
    PlanFiles,
    ResetRequest,
    TargetKind,
    reset_offsets,
    target_from_flags,
)
from offsetkeeper.ops import delete as ops_delete
from offsetkeeper.ops.targets import mm2_alias
from offsetkeeper.reset.parse import parse_topic_spec
from offsetkeeper.reset.plan import ResetScope, TopicSpec
from offsetkeeper.times import parse_time

app = typer.Typer(help="Show log offsets; reset or delete committed offsets (dry run by default).",
                  no_args_is_help=True)

TopicOpt = Annotated[list[str], typer.Option("--topic", "-t", metavar="TOPIC[:P,...]", help="TOPIC or TOPIC:P[,P...] (repeatable).")]
GroupOpt = Annotated[list[str], typer.Option("--group", "-g", metavar="GROUP", help="Consumer group (repeatable).")]
CreateGroupsOpt = Annotated[bool, typer.Option(
    "--create-groups", help="Allow --execute to create groups that do not exist yet (groups "
    "named by --from-file, --from-snapshot or --from-mapping are allowed anyway).")]
UnknownStateOpt = Annotated[bool, typer.Option(
    "--allow-unknown-state", help="Treat member-less groups in state 'unknown' as inactive "
    "(for brokers that never report group states).")]
DeadlineOpt = Annotated[float, duration_option(
    "--deadline", help="Give up on groups not done after this long (a bare number: seconds).",
    seconds=True, minimum_s=1)]


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
    # here, not at the top: `offsets reset` does not need the group views (~15 ms to import)
    from offsetkeeper.ops.groups import rows_as_dicts, show_offsets

    if not topic:
        raise UsageError("no topic given: use --topic TOPIC[:P,...]")
    specs = [parse_topic_spec(t) for t in topic]
    at_ms = parse_time(at, what="--at") if at else None
    with KafkaAdmin(connection(bootstrap, command_config, cluster, config)) as admin:
        rows = rows_as_dicts(show_offsets(admin, specs, at_ms))
    cols = ["topic", "partition", "log_start_offset", "log_end_offset"]
    render_rows(rows, cols + (["offset_at_time"] if at else []), output)


@app.command("reset")
def reset(
    group: GroupOpt = None,
    all_groups: Annotated[bool, typer.Option("--all-groups", help="Every group of the cluster.")] = False,
    topic: TopicOpt = None,
    all_topics: Annotated[bool, typer.Option("--all-topics", help="Every partition the group has "
                                             "committed offsets for.")] = False,
    to_earliest: ToEarliestOpt = False,
    to_latest: ToLatestOpt = False,
    to_current: Annotated[bool, typer.Option("--to-current", help="Committed offset "
                                             "(log end when none); clamps out-of-range commits.")] = False,
    to_offset: ToOffsetOpt = None,
    shift_by: Annotated[int | None, typer.Option("--shift-by", help="Move committed offset by ±N.")] = None,
    to_datetime: ToDatetimeOpt = None,
    by_duration: ByDurationOpt = None,
    from_file: Annotated[Path | None, typer.Option("--from-file", help="CSV topic,partition,offset or "
                                                   "group,topic,partition,offset (no header).")] = None,
    from_snapshot: Annotated[str | None, typer.Option("--from-snapshot", help="Snapshot id (rollback).")] = None,
    from_mapping: Annotated[str | None, typer.Option("--from-mapping", help="BACKUP_DIR[:RESTORE_ID]: "
                                                     "translate the backup's group offsets through "
                                                     "the restore's offset mapping.")] = None,
    from_group: Annotated[str | None, typer.Option("--from-group", metavar="GROUP",
                                                   help="Copy the committed offsets of another "
                                                   "group.")] = None,
    to_history: Annotated[str | None, typer.Option("--to-history", help="Where the group was at this "
                                                   "time (ISO-8601 or a duration ago), from the "
                                                   "offset history store.")] = None,
    history_store: Annotated[str | None, typer.Option("--history-store", envvar="OFFSETKEEPER_HISTORY_STORE",
                                                      help="History store URL for --to-history.")] = None,
    to_commit_time: Annotated[str | None, typer.Option("--to-commit-time", help="ISO-8601 time: the offsets "
                                                       "committed as of then, from --commit-history.")] = None,
    commit_history: Annotated[str | None, typer.Option("--commit-history", metavar="DIR", help="Commit "
                                                       "history from 'commits scan'.")] = None,
    from_zookeeper: Annotated[str | None, typer.Option("--from-zookeeper", metavar="HOST:PORT[/chroot]",
                                                       help="Migrate ZooKeeper-era offsets of --group.")] = None,
    from_mm2: Annotated[bool, typer.Option("--from-mm2", help="Where MirrorMaker 2 translated the "
                                           "groups' source offsets (its checkpoints on this, the "
                                           "target cluster); needs --source-alias.")] = False,
    source_alias: Annotated[str | None, typer.Option("--source-alias", metavar="ALIAS",
                                                     help="The source cluster's alias in MM2's "
                                                     "configuration (--from-mm2).")] = None,
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
    create_groups: CreateGroupsOpt = False,
    allow_unknown_state: UnknownStateOpt = False,
    deadline: DeadlineOpt = 300.0,
    group_pattern: Annotated[list[str] | None, typer.Option(
        "--group-pattern", metavar="GLOB|~REGEX", help="Groups whose id matches (repeatable; "
        "a glob such as 'migr-svc-*' or ~REGEX), besides any --group.",
        show_default=False)] = None,
    summary: Annotated[bool, typer.Option("--summary", help="One table row per group instead "
                                          "of per partition (JSON keeps every partition).")] = False,
    live: Annotated[bool, typer.Option("--live", help="Reset a RUNNING group whose consumers use "
                                       "offsetkeeper.consumer: they apply it at their next poll.")] = False,
    live_timeout: Annotated[float, duration_option("--live-timeout", help="How long to wait for "
                                                   "every partition's acknowledgement (--live; a "
                                                   "bare number: seconds).", seconds=True,
                                                   minimum_s=1, maximum_s=3600)] = 60.0,
    signing_key: Annotated[Path | None, typer.Option(
        "--signing-key", envvar="OFFSETKEEPER_LIVE_SIGNING_KEY", metavar="FILE",
        help="The operator's live reset key (`live-key generate`); --live --execute signs with "
             "it and the group's consumers apply only requests signed by a key they trust.",
        show_default=False)] = None,
    clear_metadata: Annotated[bool, typer.Option(
        "--clear-metadata", help="Commit without commit metadata, as kafka-consumer-groups.sh "
        "does [default: each partition keeps the metadata it has].")] = False,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Plan (and with --execute apply) a reset of committed offsets, like
    kafka-consumer-groups.sh --reset-offsets, for one, several or all groups.

    Example: offsetkeeper offsets reset --group payments --topic orders --to-datetime 2026-11-20T09:40:00Z --execute
    """
    if execute and dry_run:
        raise UsageError("--execute and --dry-run are mutually exclusive")
    target = target_from_flags({
        TargetKind.TO_EARLIEST: to_earliest, TargetKind.TO_LATEST: to_latest,
        TargetKind.TO_CURRENT: to_current, TargetKind.TO_OFFSET: to_offset,
        TargetKind.SHIFT_BY: None if shift_by is None else str(shift_by),
        TargetKind.TO_DATETIME: to_datetime, TargetKind.BY_DURATION: by_duration,
        TargetKind.FROM_FILE: None if from_file is None else str(from_file),
        TargetKind.FROM_SNAPSHOT: from_snapshot, TargetKind.FROM_MAPPING: from_mapping,
        TargetKind.FROM_GROUP: from_group, TargetKind.TO_HISTORY: to_history,
        TargetKind.TO_COMMIT_TIME: to_commit_time, TargetKind.FROM_ZOOKEEPER: from_zookeeper,
        TargetKind.FROM_MM2: mm2_alias(from_mm2, source_alias)},
        {k: v for k, v in (("history_store", history_store), ("commit_history", commit_history)) if v})
    conn = connection(bootstrap, command_config, cluster, config)
    remember_hint_option("--store", snapshot_store)
    req = ResetRequest(
        target=target,
        scope=ResetScope(groups=tuple(group_ids(group)), all_groups=all_groups,
                         group_patterns=tuple(group_pattern or ()),
                         topics=tuple(TopicSpec(*parse_topic_spec(t)) for t in topic or ()),
                         all_topics=all_topics, live=live, clear_metadata=clear_metadata,
                         create_groups=create_groups),
        execute=execute, allow_cluster_mismatch=allow_cluster_mismatch,
        files=PlanFiles(export_csv=export, script=script, script_bootstrap=conn.bootstrap_servers,
                        script_command_config=str(command_config) if command_config else None),
        live_timeout_s=live_timeout, live_signing_key=signing_key,
        options=ExecuteOptions(max_concurrent=max_concurrent, retries=retries, deadline_s=deadline,
                               snapshot=not no_snapshot, snapshot_store=snapshot_store,
                               config_path=config, allow_unknown_state=allow_unknown_state))
    with KafkaAdmin(conn) as admin, progress_bar(output) as progress:
        outcome = reset_offsets(admin, req, progress=progress)
    if outcome.live:
        from offsetkeeper.cli.live import render_live, undo_arguments

        render_live(outcome, output,
                    undo_args=undo_arguments(conn.bootstrap_servers, command_config, signing_key))
    else:
        render_outcome(outcome, output, summary=summary)


@app.command("delete")
def delete(
    group: GroupOpt,
    topic: TopicOpt,
    execute: Annotated[bool, typer.Option("--execute", help="Delete (default: dry run).")] = False,
    no_snapshot: Annotated[bool, typer.Option("--no-snapshot", help="Do not snapshot the groups "
                                              "before --execute.")] = False,
    snapshot_store: Annotated[str | None, typer.Option("--snapshot-store", help="Snapshot store path "
                                                       "or fsspec URL.")] = None,
    allow_unknown_state: UnknownStateOpt = False,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Delete committed offsets of a group for topics/partitions (KIP-496), through the same
    plan, safety checks, snapshot and executor as a reset (the group must have no active members).

    Example: offsetkeeper offsets delete --group payments --topic orders:0,1 --execute
    """
    if not group or not topic:
        raise UsageError("offsets delete needs --group GROUP and --topic TOPIC[:P,...]")
    remember_hint_option("--store", snapshot_store)
    req = DeleteRequest(
        ResetScope(groups=tuple(group_ids(group)),
                   topics=tuple(TopicSpec(*parse_topic_spec(t)) for t in topic)),
        execute=execute,
        options=ExecuteOptions(snapshot=not no_snapshot, snapshot_store=snapshot_store,
                               config_path=config, allow_unknown_state=allow_unknown_state))
    with KafkaAdmin(connection(bootstrap, command_config, cluster, config)) as admin, \
            progress_bar(output) as progress:
        outcome = ops_delete(admin, req, progress=progress)
    render_outcome(outcome, output)
