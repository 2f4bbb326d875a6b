"""`offsetkeeper streams-groups list|describe` (KIP-1071 streams groups, through Kafka's Java
admin client)."""

from __future__ import annotations

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
    GroupOpt,
    GroupsArg,
    NoSnapshotOpt,
    ShiftByOpt,
    StateViewOpt,
    TopicsOpt,
    connect,
    describe_ids,
    parse_states,
    states_option,
)
from offsetkeeper.errors import UsageError
from offsetkeeper.ops.groups import describe_streams_groups, list_streams_groups

app = typer.Typer(help="List and describe streams groups (KIP-1071; needs Java).",
                  no_args_is_help=True)

STREAMS_STATES = ["stable", "empty", "dead", "assigning", "reconciling", "notready", "unknown"]


def _tasks(kind) -> str:
    return "; ".join(f"{sub}:[{','.join(str(p) for p in ps)}]" for sub, ps in kind) or "-"


@app.command("list")
def list_cmd(
    state: states_option(STREAMS_STATES) = None,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """List streams groups (Kafka Streams applications with group.protocol=streams).

    Example: offsetkeeper streams-groups list --state notready
    """
    states = parse_states(state, STREAMS_STATES, "streams")
    with connect(bootstrap, command_config, cluster, config) as admin:
        rows = list_streams_groups(admin, states=states)
    render_rows([{"group_id": r.group_id, "state": r.state} for r in rows],
                ["group_id", "state"], output)


@app.command("describe")
def describe(
    groups: GroupsArg = None,
    all_groups: AllGroupsOpt = False,
    members: Annotated[bool, typer.Option("--members", help="Members: process, client, epochs, "
                                          "active/standby/warm-up tasks and target tasks.")] = False,
    state: StateViewOpt = False,
    topology: Annotated[bool, typer.Option("--topology", help="Subtopologies and their topics.")] = False,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Describe streams groups like kafka-streams-groups.sh --describe: per input partition the
    committed offset, log end and lag (default); or --members, --state, --topology.

    Example: offsetkeeper streams-groups describe word-count --members -o json
    """
    if sum([members, state, topology]) > 1:
        raise UsageError("choose one of --members, --state, --topology")
    with connect(bootstrap, command_config, cluster, config) as admin:
        ids = describe_ids(groups, all_groups, "streams",
                           lambda: [r.group_id for r in list_streams_groups(admin)])
        views = describe_streams_groups(admin, ids)
    if members:
        rows = [{"group": v.detail.group_id, "member_id": m.member_id, "process_id": m.process_id,
                 "client_id": m.client_id, "host": m.host, "member_epoch": m.member_epoch,
                 "member_protocol": "classic" if m.is_classic else "streams",
                 "active_tasks": _tasks(m.assignment.active),
                 "standby_tasks": _tasks(m.assignment.standby),
                 "warmup_tasks": _tasks(m.assignment.warmup),
                 "target_active_tasks": _tasks(m.target_assignment.active)}
                for v in views for m in v.detail.members]
        render_rows(rows, ["group", "member_id", "process_id", "client_id", "host", "member_epoch",
                           "member_protocol", "active_tasks", "standby_tasks", "warmup_tasks",
                           "target_active_tasks"], output)
        for v in views:
            if not v.detail.members and output is OutputFormat.table:
                say(f"streams group {v.detail.group_id} has no active members "
                    f"(state {(v.detail.state or 'unknown').lower()})")
    elif state:
        rows = [{"group": v.detail.group_id, "coordinator": v.detail.coordinator,
                 "state": (v.detail.state or "unknown").lower(), "group_epoch": v.detail.group_epoch,
                 "target_assignment_epoch": v.detail.target_assignment_epoch,
                 "topology_epoch": v.detail.topology_epoch,
                 "processes": len({m.process_id for m in v.detail.members}),
                 "members": len(v.detail.members)} for v in views]
        render_rows(rows, ["group", "coordinator", "state", "group_epoch", "target_assignment_epoch",
                           "topology_epoch", "processes", "members"], output)
    elif topology:
        rows = [{"group": v.detail.group_id, "subtopology": s.subtopology_id,
                 "source_topics": list(s.source_topics),
                 "repartition_sink_topics": list(s.repartition_sink_topics),
                 "state_changelog_topics": list(s.state_changelog_topics)}
                for v in views for s in v.detail.subtopologies]
        render_rows(rows, ["group", "subtopology", "source_topics", "repartition_sink_topics",
                           "state_changelog_topics"], output)
    else:
        render_rows([r.__dict__ for v in views for r in v.offsets],
                    ["group", "topic", "partition", "current_offset", "log_end_offset", "lag"],
                    output)


@app.command("reset-offsets")
def reset_offsets(
    group: GroupOpt,
    topic: TopicsOpt = None,
    all_input_topics: Annotated[bool, typer.Option(
        "--all-input-topics", help="Every input topic of the group's topology.")] = False,
    to_earliest: ToEarliestOpt = False,
    to_latest: ToLatestOpt = False,
    to_offset: ToOffsetOpt = None,
    shift_by: ShiftByOpt = None,
    to_datetime: ToDatetimeOpt = None,
    by_duration: ByDurationOpt = None,
    execute: ExecuteOpt = False,
    no_snapshot: NoSnapshotOpt = False,
    clear_metadata: Annotated[bool, typer.Option(
        "--clear-metadata", help="Commit without commit metadata, as kafka-consumer-groups.sh "
        "does [default: each partition keeps the metadata it has].")] = False,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Reset a streams group's committed offsets on its input topics, through the same plan,
    snapshot and executor as `offsets reset`. Refused unless the group is empty (stop the
    application first). Internal (repartition, changelog) topics and local state are not
    touched: reset those with Kafka's application reset tool if the topology needs it.

    Example: offsetkeeper streams-groups reset-offsets -g word-count --all-input-topics --to-earliest --execute
    """
    from offsetkeeper.cli.progress import progress_bar
    from offsetkeeper.cli.reset_render import render_outcome
    from offsetkeeper.ops import ExecuteOptions, ResetRequest
    from offsetkeeper.ops.streams_reset import reset_streams_group
    from offsetkeeper.ops.targets import TargetKind, target_from_flags
    from offsetkeeper.reset.parse import parse_topic_spec
    from offsetkeeper.reset.plan import ResetScope, TopicSpec

    target = target_from_flags({
        TargetKind.TO_EARLIEST: to_earliest, TargetKind.TO_LATEST: to_latest,
        TargetKind.TO_OFFSET: to_offset,
        TargetKind.SHIFT_BY: None if shift_by is None else str(shift_by),
        TargetKind.TO_DATETIME: to_datetime, TargetKind.BY_DURATION: by_duration})
    if not group:
        raise UsageError("--group must not be empty")
    req = ResetRequest(target=target,
                       scope=ResetScope(groups=(group,), topics=tuple(
                           TopicSpec(*parse_topic_spec(t)) for t in topic or ()),
                           clear_metadata=clear_metadata),
                       execute=execute, options=ExecuteOptions(snapshot=not no_snapshot,
                                                               config_path=config))
    with connect(bootstrap, command_config, cluster, config) as admin, \
            progress_bar(output) as progress:
        outcome = reset_streams_group(admin, req, all_input_topics=all_input_topics,
                                      progress=progress)
    render_outcome(outcome, output)
