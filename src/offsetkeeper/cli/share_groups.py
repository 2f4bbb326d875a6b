"""`offsetkeeper share-groups list|describe|reset-offsets|delete-offsets` (KIP-932 share groups,
through Kafka's Java admin client)."""

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
)
from offsetkeeper.cli.output import OutputFormat, render_rows, say
from offsetkeeper.cli.typed_groups import (
    AllGroupsOpt,
    ExecuteOpt,
    ExportOpt,
    FromFileOpt,
    GroupOpt,
    GroupsArg,
    MembersOpt,
    NoSnapshotOpt,
    ShiftByOpt,
    StateViewOpt,
    ToCurrentOpt,
    TopicsOpt,
    connect,
    describe_ids,
    parse_states,
    states_option,
)
from offsetkeeper.errors import UsageError
from offsetkeeper.ops.groups import describe_share_groups, list_typed_groups

app = typer.Typer(help="List, describe and reset share groups (KIP-932; needs Java).",
                  no_args_is_help=True)

SHARE_STATES = ["stable", "empty", "dead", "unknown"]
OFFSET_COLUMNS = ["group", "topic", "partition", "start_offset", "lag", "log_start_offset",
                  "log_end_offset", "leader_epoch"]
MEMBER_COLUMNS = ["group", "consumer_id", "host", "client_id", "member_epoch", "partitions",
                  "assignment"]
STATE_COLUMNS = ["group", "coordinator", "state", "group_epoch", "assignment_epoch", "members"]


@app.command("list")
def list_cmd(
    state: states_option(SHARE_STATES) = None,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """List share groups with their state.

    Example: offsetkeeper share-groups list --state stable -o json
    """
    states = parse_states(state, SHARE_STATES, "share")
    with connect(bootstrap, command_config, cluster, config) as admin:
        rows, _ = list_typed_groups(admin, types={"share"}, states=states, strict=True)
    render_rows([{"group_id": r.group_id, "state": r.state} for r in rows],
                ["group_id", "state"], output)


@app.command("describe")
def describe(
    groups: GroupsArg = None,
    all_groups: AllGroupsOpt = False,
    members: MembersOpt = False,
    state: StateViewOpt = False,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Describe share groups like kafka-share-groups.sh --describe: per partition the start
    offset and lag (KIP-1226, as the broker reports it) plus the log start and end; or
    --members, or --state.

    Example: offsetkeeper share-groups describe orders-workers --members
    """
    if members and state:
        raise UsageError("choose one of --members, --state")
    with connect(bootstrap, command_config, cluster, config) as admin:
        ids = describe_ids(groups, all_groups, "share", lambda: [
            r.group_id for r in list_typed_groups(admin, types={"share"}, strict=True)[0]])
        views = describe_share_groups(admin, ids)
    if members:
        rows = [{"group": v.detail.group_id, "consumer_id": m.member_id, "host": m.host,
                 "client_id": m.client_id, "member_epoch": m.member_epoch,
                 "partitions": len(m.assignment), "assignment": [str(tp) for tp in m.assignment]}
                for v in views for m in v.detail.members]
        render_rows(rows, MEMBER_COLUMNS, output)
        for v in views:
            if not v.detail.members and output is OutputFormat.table:
                say(f"share group {v.detail.group_id} has no active members "
                    f"(state {(v.detail.state or 'unknown').lower()})")
    elif state:
        rows = [{"group": v.detail.group_id, "coordinator": v.detail.coordinator,
                 "state": (v.detail.state or "unknown").lower(), "group_epoch": v.detail.group_epoch,
                 "assignment_epoch": v.detail.target_assignment_epoch,
                 "members": len(v.detail.members)} for v in views]
        render_rows(rows, STATE_COLUMNS, output)
    else:
        render_rows([r.__dict__ for v in views for r in v.offsets], OFFSET_COLUMNS, output)


@app.command("reset-offsets")
def reset_offsets(
    group: GroupOpt,
    topic: TopicsOpt = None,
    to_earliest: ToEarliestOpt = False,
    to_latest: ToLatestOpt = False,
    to_current: ToCurrentOpt = False,
    to_offset: ToOffsetOpt = None,
    shift_by: ShiftByOpt = None,
    to_datetime: ToDatetimeOpt = None,
    by_duration: ByDurationOpt = None,
    from_file: FromFileOpt = None,
    execute: ExecuteOpt = False,
    no_snapshot: NoSnapshotOpt = False,
    export: ExportOpt = None,
    script: Annotated[Path | None, typer.Option("--script", help="Write an equivalent "
                                                "kafka-share-groups.sh script.")] = None,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Move a share group's start offsets (kafka-share-groups.sh --reset-offsets) through the
    same plan, snapshot and executor as `offsets reset`. Refused while the group has members.
    Without --topic: every partition the group has a start offset for. CURRENT is the start
    offset; `snapshots rollback` restores it.

    Example: offsetkeeper share-groups reset-offsets -g orders-workers -t orders --to-earliest --execute
    """
    from offsetkeeper.cli.progress import progress_bar
    from offsetkeeper.cli.reset_render import render_outcome
    from offsetkeeper.ops import ExecuteOptions, PlanFiles, ResetRequest
    from offsetkeeper.ops.share_reset import reset_share_group
    from offsetkeeper.ops.targets import TargetKind, target_from_flags
    from offsetkeeper.reset.parse import parse_topic_spec
    from offsetkeeper.reset.plan import ResetScope, TopicSpec

    target = target_from_flags({
        TargetKind.TO_EARLIEST: to_earliest, TargetKind.TO_LATEST: to_latest,
        TargetKind.TO_CURRENT: to_current, TargetKind.TO_OFFSET: to_offset,
        TargetKind.SHIFT_BY: None if shift_by is None else str(shift_by),
        TargetKind.TO_DATETIME: to_datetime, TargetKind.BY_DURATION: by_duration,
        TargetKind.FROM_FILE: None if from_file is None else str(from_file)})
    with connect(bootstrap, command_config, cluster, config) as admin, \
            progress_bar(output) as progress:
        req = ResetRequest(target=target,
                           scope=ResetScope(groups=(group,), topics=tuple(
                               TopicSpec(*parse_topic_spec(t)) for t in topic or ())),
                           execute=execute,
                           files=PlanFiles(export_csv=export, script=script,
                                           script_bootstrap=admin.bootstrap_servers,
                                           script_command_config=str(command_config)
                                           if command_config else None),
                           options=ExecuteOptions(snapshot=not no_snapshot, config_path=config))
        outcome = reset_share_group(admin, req, progress=progress)
    render_outcome(outcome, output)


@app.command("delete-offsets")
def delete_offsets(
    group: GroupOpt,
    topic: Annotated[list[str], typer.Option("--topic", "-t", help="Topic (repeatable; whole "
                                             "topics only, as the broker deletes them).")],
    execute: ExecuteOpt = False,
    no_snapshot: NoSnapshotOpt = False,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Delete a share group's start offsets for whole topics (kafka-share-groups.sh
    --delete-offsets) through the executor, with a snapshot first; the group then starts again
    by its share.auto.offset.reset. Refused while the group has members.

    Example: offsetkeeper share-groups delete-offsets -g orders-workers -t orders --execute
    """
    from offsetkeeper.cli.progress import progress_bar
    from offsetkeeper.cli.reset_render import render_outcome
    from offsetkeeper.ops import DeleteRequest, ExecuteOptions
    from offsetkeeper.ops.share_reset import delete_share_offsets
    from offsetkeeper.reset.parse import parse_topic_spec
    from offsetkeeper.reset.plan import ResetScope, TopicSpec

    if any(":" in t for t in topic):
        raise UsageError("--topic takes whole topics here (no :PARTITIONS): the broker deletes "
                         "a share group's start offsets per topic")
    req = DeleteRequest(ResetScope(groups=(group,), topics=tuple(
                            TopicSpec(*parse_topic_spec(t)) for t in dict.fromkeys(topic))),
                        execute=execute,
                        options=ExecuteOptions(snapshot=not no_snapshot, config_path=config))
    with connect(bootstrap, command_config, cluster, config) as admin, \
            progress_bar(output) as progress:
        outcome = delete_share_offsets(admin, req, progress=progress)
    render_outcome(outcome, output)
