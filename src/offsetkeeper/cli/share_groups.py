"""`offsetkeeper share-groups list|describe|reset-offsets|delete-offsets` (KIP-932 share groups,
through Kafka's Java admin client)."""

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
from offsetkeeper.cli.output import OutputFormat, render_json, render_rows, say
from offsetkeeper.errors import PartialFailure, UsageError
from offsetkeeper.groups import (
    ShareTarget,
    apply_share_plan,
    describe_share_groups,
    list_typed_groups,
    plan_share_delete,
    plan_share_reset,
)
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.kafka.jvm import helper_command
from offsetkeeper.reset.parse import parse_time, parse_topic_spec

app = typer.Typer(help="List, describe and reset share groups (KIP-932; needs Java).",
                  no_args_is_help=True)

SHARE_STATES = ["stable", "empty", "dead", "unknown"]
OFFSET_COLUMNS = ["group", "topic", "partition", "start_offset", "lag", "log_start_offset",
                  "log_end_offset", "leader_epoch"]
MEMBER_COLUMNS = ["group", "consumer_id", "host", "client_id", "member_epoch", "partitions",
                  "assignment"]
STATE_COLUMNS = ["group", "coordinator", "state", "group_epoch", "assignment_epoch", "members"]
PLAN_COLUMNS = ["group", "topic", "partition", "current_start_offset", "log_start_offset",
                "log_end_offset", "new_start_offset", "note"]

TopicOpt = Annotated[list[str] | None, typer.Option(
    "--topic", "-t", metavar="TOPIC[:P,...]", help="TOPIC or TOPIC:P[,P...] (repeatable).")]


def _connect(bootstrap, command_config, cluster, config) -> KafkaAdmin:
    helper_command()  # Java or the helper missing: one line, exit 1, before anything else
    return KafkaAdmin(connection(bootstrap, command_config, cluster, config))


@app.command("list")
def list_cmd(
    state: Annotated[str | None, typer.Option("--state", help="Only groups in these states, "
                                              "comma-separated: " + ",".join(SHARE_STATES))] = None,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """List share groups with their state.

    Example: offsetkeeper share-groups list --state stable -o json
    """
    states = None
    if state:
        states = {s.strip().lower() for s in state.split(",") if s.strip()}
        bad = sorted(states - set(SHARE_STATES))
        if bad:
            raise UsageError(f"--state '{bad[0]}' is not a share group state (expected "
                             f"{', '.join(SHARE_STATES)})")
    with _connect(bootstrap, command_config, cluster, config) as admin:
        rows, _ = list_typed_groups(admin, types={"share"}, states=states, strict=True)
    render_rows([{"group_id": r.group_id, "state": r.state} for r in rows],
                ["group_id", "state"], output)


@app.command("describe")
def describe(
    groups: Annotated[list[str] | None, typer.Argument(help="Share group ids.", show_default=False)] = None,
    all_groups: Annotated[bool, typer.Option("--all-groups", help="Describe every share group.")] = False,
    members: Annotated[bool, typer.Option("--members", help="Members and their assignments.")] = False,
    state: Annotated[bool, typer.Option("--state", help="State, coordinator, epochs, member count.")] = False,
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
    ids = group_ids(groups, option="GROUP")
    if all_groups and ids:
        raise UsageError("give GROUP names or --all-groups, not both")
    with _connect(bootstrap, command_config, cluster, config) as admin:
        if all_groups:
            ids = [r.group_id for r in list_typed_groups(admin, types={"share"}, strict=True)[0]]
        elif not ids:
            raise UsageError("no group given: name one or more share groups, or use --all-groups")
        views = describe_share_groups(admin, ids)
    if members:
        rows = [{"group": v.detail.group_id, "consumer_id": m.member_id, "host": m.host,
                 "client_id": m.client_id, "member_epoch": m.member_epoch,
                 "partitions": len(m.assignment), "assignment": [str(tp) for tp in m.assignment]}
                for v in views for m in v.detail.members]
        render_rows(rows, MEMBER_COLUMNS, output)
        for v in views:
            if not v.detail.members and output is OutputFormat.table:
                say(f"share group {v.detail.group_id} has no active members (state {v.detail.state})")
    elif state:
        rows = [{"group": v.detail.group_id, "coordinator": v.detail.coordinator,
                 "state": v.detail.state, "group_epoch": v.detail.group_epoch,
                 "assignment_epoch": v.detail.target_assignment_epoch,
                 "members": len(v.detail.members)} for v in views]
        render_rows(rows, STATE_COLUMNS, output)
    else:
        render_rows([r.__dict__ for v in views for r in v.offsets], OFFSET_COLUMNS, output)


def _target(earliest: bool, latest: bool, datetime_: str | None, offset: int | None) -> ShareTarget:
    given = [k for k, v in (("--to-earliest", earliest), ("--to-latest", latest),
                            ("--to-datetime", datetime_ is not None),
                            ("--to-offset", offset is not None)) if v]
    if len(given) != 1:
        raise UsageError("give exactly one of --to-earliest, --to-latest, --to-datetime, "
                         "--to-offset" + (f" (got {', '.join(given)})" if given else ""))
    if earliest:
        return ShareTarget("earliest")
    if latest:
        return ShareTarget("latest")
    if datetime_ is not None:
        return ShareTarget("datetime", parse_time(datetime_))
    if offset is not None and offset < 0:
        raise UsageError(f"--to-offset {offset} is negative")
    return ShareTarget("offset", offset)


def _render_plan(plan, output: OutputFormat, *, execute: bool, report=None) -> None:
    rows = [{"group": plan.group, "topic": r.topic, "partition": r.partition,
             "current_start_offset": r.current_start_offset,
             "log_start_offset": None if r.log_start_offset < 0 else r.log_start_offset,
             "log_end_offset": None if r.log_end_offset < 0 else r.log_end_offset,
             "new_start_offset": r.target, "note": r.note} for r in plan.rows]
    if output is OutputFormat.json:
        render_json({"group": plan.group, "kind": plan.kind, "target": plan.target,
                     "state": plan.state, "members": plan.members, "topics": list(plan.topics),
                     "refusal": plan.refusal, "executed": execute and report is not None,
                     "errors": dict(report.errors) if report else {}, "partitions": rows})
    else:
        render_rows(rows, PLAN_COLUMNS, output)
    if output is OutputFormat.table and report is None and not plan.refusal:
        say("dry run: nothing changed; add --execute to apply")


def _finish(plan, output: OutputFormat, execute: bool, admin: KafkaAdmin) -> None:
    from offsetkeeper.errors import GroupActiveError

    if plan.refusal:
        _render_plan(plan, output, execute=execute)
        raise GroupActiveError(plan.refusal, group=plan.group)
    report = apply_share_plan(admin, plan) if execute else None
    _render_plan(plan, output, execute=execute, report=report)
    if report is not None and report.errors:
        first = next(iter(report.errors.items()))
        raise PartialFailure(f"share group {plan.group}: {len(report.errors)} failed, first "
                             f"{first[0]}: {first[1]}", report=report, group=plan.group)
    if report is not None and output is OutputFormat.table:
        say(f"share group {plan.group}: {'start offsets set' if plan.kind == 'reset' else 'start offsets deleted'} "
            f"and read back")


@app.command("reset-offsets")
def reset_offsets(
    group: Annotated[str, typer.Option("--group", "-g", help="The share group.")],
    topic: TopicOpt = None,
    to_earliest: Annotated[bool, typer.Option("--to-earliest", help="The log start.")] = False,
    to_latest: Annotated[bool, typer.Option("--to-latest", help="The log end.")] = False,
    to_datetime: Annotated[str | None, typer.Option(
        "--to-datetime", metavar="TIME", help="First record at or after this time (ISO-8601, "
        "UTC when no zone, or epoch ms).")] = None,
    to_offset: Annotated[int | None, typer.Option("--to-offset", help="This offset (clamped to "
                                                  "the log).")] = None,
    execute: Annotated[bool, typer.Option("--execute", help="Change the cluster (default: dry run).")] = False,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Move a share group's start offsets (kafka-share-groups.sh --reset-offsets). Refused
    while the group has members. Without --topic: every partition the group has a start
    offset for.

    Example: offsetkeeper share-groups reset-offsets -g orders-workers -t orders --to-earliest --execute
    """
    target = _target(to_earliest, to_latest, to_datetime, to_offset)
    specs = [parse_topic_spec(t) for t in topic or []]
    if not group:
        raise UsageError("--group must not be empty")
    with _connect(bootstrap, command_config, cluster, config) as admin:
        plan = plan_share_reset(admin, group, target, topics=specs)
        _finish(plan, output, execute, admin)


@app.command("delete-offsets")
def delete_offsets(
    group: Annotated[str, typer.Option("--group", "-g", help="The share group.")],
    topic: Annotated[list[str], typer.Option("--topic", "-t", help="Topic (repeatable; whole "
                                             "topics only, as the broker deletes them).")],
    execute: Annotated[bool, typer.Option("--execute", help="Change the cluster (default: dry run).")] = False,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Delete a share group's start offsets for whole topics (kafka-share-groups.sh
    --delete-offsets); the group then starts again by its share.auto.offset.reset. Refused
    while the group has members.

    Example: offsetkeeper share-groups delete-offsets -g orders-workers -t orders --execute
    """
    if any(":" in t for t in topic):
        raise UsageError("--topic takes whole topics here (no :PARTITIONS): the broker deletes "
                         "a share group's start offsets per topic")
    with _connect(bootstrap, command_config, cluster, config) as admin:
        plan = plan_share_delete(admin, group, list(dict.fromkeys(topic)))
        _finish(plan, output, execute, admin)
