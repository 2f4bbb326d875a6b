"""`offsetkeeper groups list|describe|delete`."""

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
from offsetkeeper.errors import UsageError
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.ops.groups import (
    GROUP_TYPES,
    consumer_group_details,
    describe_offsets,
    describe_states,
    list_typed_groups,
    resolve_group_ids,
    rows_as_dicts,
)

app = typer.Typer(help="List, describe and delete consumer groups.", no_args_is_help=True)

STATES = ["stable", "empty", "dead", "preparingrebalance", "completingrebalance", "assigning",
          "reconciling", "notready", "unknown"]
OFFSET_COLUMNS = ["group", "topic", "partition", "current_offset", "log_start_offset",
                  "log_end_offset", "lag", "lag_raw", "consumer_id", "host", "client_id",
                  "metadata"]
TXN_COLUMNS = ["last_stable_offset", "open_transaction_since"]  # JSON and CSV only
# kafka-consumer-groups.sh --describe prints these even when empty: so does the table here.
KAFKA_TOOL_COLUMNS = ["group", "topic", "partition", "current_offset", "log_end_offset", "lag",
                      "consumer_id", "host", "client_id"]


@app.command("list")
def list_cmd(
    state: Annotated[str | None, typer.Option("--state", help="Only groups in these states, "
                                              "comma-separated: " + ",".join(STATES))] = None,
    group_type: Annotated[str | None, typer.Option(
        "--type", metavar="TYPE[,TYPE...]", help="Only groups of these types, comma-separated: "
        + ",".join(GROUP_TYPES))] = None,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """List groups of every type with state, type and protocol (like kafka-groups.sh --list).

    Types and protocols, and the Assigning/Reconciling states of consumer-protocol groups,
    come from Kafka's Java admin client (the JVM helper); without it the list still works,
    with a note, and PROTOCOL shows '-'.

    Example: offsetkeeper groups list --type consumer,share --state stable,empty -o json
    """
    states = _names(state, STATES, "--state", "a group state")
    types = _names(group_type, list(GROUP_TYPES), "--type", "a group type")
    with KafkaAdmin(connection(bootstrap, command_config, cluster, config)) as admin:
        groups, note = list_typed_groups(admin, types=types, states=states)
    render_rows([g.__dict__ for g in groups], ["group_id", "state", "group_type", "protocol"],
                output)
    if note and output is OutputFormat.table:
        say(note, style="yellow", prefix="note:")


def _names(text: str | None, allowed: list[str], flag: str, what: str) -> set[str] | None:
    if not text:
        return None
    names = {s.strip().lower().replace("_", "") for s in text.split(",") if s.strip()}
    bad = sorted(names - set(allowed))
    if bad:
        raise UsageError(f"{flag} '{bad[0]}' is not {what} (expected {', '.join(allowed)})")
    return names


@app.command("describe")
def describe(
    groups: Annotated[list[str] | None, typer.Argument(help="Group ids.", show_default=False)] = None,
    all_groups: Annotated[bool, typer.Option("--all-groups", help="Describe every group.")] = False,
    offsets: Annotated[bool, typer.Option("--offsets", help="Committed offsets, log start/end and "
                                          "lag per partition (default).")] = False,
    members: Annotated[bool, typer.Option("--members", help="Members and their assignments.")] = False,
    state: Annotated[bool, typer.Option("--state", help="State, group type (classic or consumer: the "
                                        "protocol), coordinator, assignor, member count.")] = False,
    epochs: Annotated[bool, typer.Option(
        "--epochs", help="With --state or --members: Kafka's real state names (Assigning, "
        "Reconciling) and the KIP-1099 epochs and target assignments, as "
        "kafka-consumer-groups.sh --verbose shows them (needs the JVM admin helper).")] = False,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Describe groups like kafka-consumer-groups.sh --describe (plus LOG-START-OFFSET).

    Example: offsetkeeper groups describe payments --members
    """
    views = sum([offsets, members, state])
    if views > 1:
        raise UsageError("choose one of --offsets, --members, --state")
    if epochs and not (members or state):
        raise UsageError("--epochs goes with --state or --members")
    denied: dict[str, str] = {}  # groups the principal may not describe (ACLs): reported, exit 1
    with KafkaAdmin(connection(bootstrap, command_config, cluster, config)) as admin:
        ids = resolve_group_ids(admin, group_ids(groups, option="GROUP"), all_groups)
        if epochs:
            details = consumer_group_details(admin, ids)
        elif members or state:
            infos = describe_states(admin, ids, denied=denied)
        else:
            offset_rows = describe_offsets(admin, ids, denied=denied)
    if denied and len(denied) == len(ids):  # nothing to show: the error lines only
        for g, message in denied.items():
            say(f"group {g}: {message}", style="bold red", prefix="error:")
        raise typer.Exit(1)
    if epochs:
        _render_epochs(details, members=members, output=output)
    elif members:
        rows = [{"group": i.group_id, "consumer_id": m.member_id, "host": m.host,
                 "client_id": m.client_id, "group_instance_id": m.group_instance_id,
                 "partitions": len(m.assignment),
                 "assignment": [str(tp) for tp in m.assignment]}
                for i in infos for m in i.members]
        render_rows(rows, ["group", "consumer_id", "host", "client_id", "group_instance_id",
                           "partitions", "assignment"], output)
        for i in infos:
            if not i.members and output is OutputFormat.table:
                say(f"group {i.group_id} has no active members (state {i.state})")
    elif state:
        rows = [{"group": i.group_id, "coordinator": i.coordinator, "assignment_strategy": i.assignor,
                 "state": i.state, "group_type": i.group_type or None, "members": len(i.members)}
                for i in infos]
        render_rows(rows, ["group", "coordinator", "assignment_strategy", "state", "group_type",
                           "members"], output)
    else:
        render_rows(rows_as_dicts(offset_rows), OFFSET_COLUMNS + (
            TXN_COLUMNS if output is not OutputFormat.table else []), output,
            time_columns=["open_transaction_since"], always=KAFKA_TOOL_COLUMNS)
        for r in offset_rows:
            if r.note:
                say(f"group {r.group} {r.topic}:{r.partition}: {r.note}", style="yellow",
                    prefix="note:")
    for g, message in denied.items():
        say(f"group {g}: {message}", style="bold red", prefix="error:")
    if denied:
        raise typer.Exit(1)


def _render_epochs(details, *, members: bool, output: OutputFormat) -> None:
    def tps(v):
        return None if v is None else [str(tp) for tp in v]

    if members:
        rows = [{"group": d.group_id, "consumer_id": m.member_id, "host": m.host,
                 "client_id": m.client_id, "group_instance_id": m.group_instance_id,
                 "current_epoch": m.member_epoch, "current_assignment": tps(m.assignment),
                 "target_epoch": d.target_assignment_epoch,
                 "target_assignment": tps(m.target_assignment), "upgraded": m.upgraded}
                for d in details for m in d.members]
        render_rows(rows, ["group", "consumer_id", "host", "client_id", "group_instance_id",
                           "current_epoch", "current_assignment", "target_epoch",
                           "target_assignment", "upgraded"], output)
        for d in details:
            if not d.members and output is OutputFormat.table:
                say(f"group {d.group_id} has no active members (state {(d.state or 'unknown').lower()})")
        return
    rows = [{"group": d.group_id, "coordinator": d.coordinator, "assignment_strategy": d.assignor,
             "state": (d.state or "unknown").lower(), "group_type": d.group_type or None,
             "group_epoch": d.group_epoch,
             "target_assignment_epoch": d.target_assignment_epoch, "members": len(d.members)}
            for d in details]
    render_rows(rows, ["group", "coordinator", "assignment_strategy", "state", "group_type",
                       "group_epoch", "target_assignment_epoch", "members"], output)


@app.command("delete")
def delete(
    groups: Annotated[list[str], typer.Argument(help="Group ids to delete.", show_default=False)],
    execute: Annotated[bool, typer.Option("--execute", help="Delete (default: dry run).")] = False,
    no_snapshot: Annotated[bool, typer.Option("--no-snapshot", help="Do not snapshot the groups "
                                              "before --execute.")] = False,
    snapshot_store: Annotated[str | None, typer.Option("--snapshot-store", help="Snapshot store path "
                                                       "or fsspec URL.")] = None,
    allow_unknown_state: Annotated[bool, typer.Option(
        "--allow-unknown-state", help="Treat member-less groups in state 'unknown' as inactive "
        "(for brokers that never report group states).")] = False,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Delete consumer groups through the same plan, safety checks, snapshot (their offsets can
    be restored with `snapshots rollback`) and executor as a reset. Refused for groups with
    active members; a group that does not exist is an error (exit 2).

    Example: offsetkeeper groups delete old-reporting --execute
    """
    from offsetkeeper.cli.progress import progress_bar
    from offsetkeeper.cli.reset_render import render_outcome
    from offsetkeeper.ops import DeleteRequest, ExecuteOptions
    from offsetkeeper.ops import delete as ops_delete
    from offsetkeeper.reset.plan import ResetScope

    req = DeleteRequest(ResetScope(groups=tuple(group_ids(groups, option="GROUP"))),
                        whole_groups=True, execute=execute,
                        options=ExecuteOptions(snapshot=not no_snapshot, snapshot_store=snapshot_store,
                                               config_path=config,
                                               allow_unknown_state=allow_unknown_state))
    with KafkaAdmin(connection(bootstrap, command_config, cluster, config)) as admin, \
            progress_bar(output) as progress:
        outcome = ops_delete(admin, req, progress=progress)
    render_outcome(outcome, output)
