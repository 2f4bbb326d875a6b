"""`offsetkeeper connect list|show|offsets export|offsets import|reset|rollback`: Kafka Connect
connectors' offsets through the worker's REST API (docs/connect.md)."""

from __future__ import annotations

import json
import sys
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
)
from offsetkeeper.cli.output import OutputFormat, render_json, render_rows, say
from offsetkeeper.cli.typed_groups import (
    ExecuteOpt,
    NoSnapshotOpt,
    ShiftByOpt,
    ToCurrentOpt,
    TopicsOpt,
)
from offsetkeeper.ops import connect as ops

app = typer.Typer(help="Kafka Connect connectors' offsets: list, show, export/import, reset "
                  "(dry run by default), roll back.", no_args_is_help=True)
offsets_app = typer.Typer(help="Export or import one connector's offsets as a JSON file "
                          "(Connect's own GET /connectors/NAME/offsets shape).",
                          no_args_is_help=True)
app.add_typer(offsets_app, name="offsets")

UrlOpt = Annotated[str, typer.Option(
    "--connect-url", envvar="OFFSETKEEPER_CONNECT_URL", metavar="URL",
    help="The worker's REST API, http[s]://[user:password@]host:port "
         "[env OFFSETKEEPER_CONNECT_URL].")]
UserOpt = Annotated[str | None, typer.Option("--connect-user", envvar="OFFSETKEEPER_CONNECT_USER",
                                             metavar="USER", help="Basic auth user.")]
PasswordOpt = Annotated[str | None, typer.Option(
    "--connect-password", envvar="OFFSETKEEPER_CONNECT_PASSWORD", metavar="PASSWORD",
    help="Basic auth password (prefer the env var OFFSETKEEPER_CONNECT_PASSWORD).")]
CaOpt = Annotated[Path | None, typer.Option("--connect-ca", metavar="FILE",
                                            help="CA certificates (PEM) for an https worker.")]
InsecureOpt = Annotated[bool, typer.Option("--connect-insecure",
                                           help="Do not verify the worker's TLS certificate.")]
OffsetsTopicOpt = Annotated[str | None, typer.Option(
    "--offsets-topic", metavar="TOPIC", help="The worker's offset.storage.topic: source "
    "changes are also read back from it, independently of the worker (needs -b).")]
StoreOpt = Annotated[str | None, typer.Option(
    "--store", metavar="PATH|URL", help="Snapshot store (as for `snapshots`).")]
PatternOpt = Annotated[list[str] | None, typer.Option(
    "--pattern", metavar="GLOB", help="Connectors whose names match (shell pattern, repeatable).")]


def _client(url, user, password, ca, insecure):
    return ops.connect_client(ops.connect_target(url, username=user, password=password,
                                                 ca_file=str(ca) if ca else None,
                                                 verify=not insecure))


def _admin(bootstrap, command_config, cluster, config):
    """The Kafka cluster, when one is named (lag of sink connectors, offsets-topic read-back)."""
    if not (bootstrap or cluster or config):
        return None
    from offsetkeeper.kafka.admin import KafkaAdmin

    return KafkaAdmin(connection(bootstrap, command_config, cluster, config))


LIST_COLUMNS = ["connector", "type", "state", "tasks", "partition", "offset", "log_end", "lag"]


def _rows(views) -> list[dict]:
    rows = []
    for v in views:
        base = {"connector": v.name, "type": v.type, "state": v.state,
                "tasks": ",".join(v.tasks)}
        if v.error:
            rows.append(base | {"partition": "", "offset": v.error})
        elif v.type == "sink" and v.sink:
            rows += [base | {"partition": f"{p.topic}:{p.partition}", "offset": p.offset,
                             "log_end": p.log_end, "lag": p.lag} for p in v.sink]
        elif v.offsets:
            rows += [base | {"partition": e.describe_partition(), "offset": e.describe_offset()}
                     for e in v.offsets]
        else:
            rows.append(base)
    return rows


@app.command("list")
def list_(
    pattern: PatternOpt = None,
    connect_url: UrlOpt = "", connect_user: UserOpt = None, connect_password: PasswordOpt = None,
    connect_ca: CaOpt = None, connect_insecure: InsecureOpt = False,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Connectors with type, state and offsets: a source connector's partition/offset maps as
    it defines them; a sink connector's group partitions with log end and lag (with -b).

    Example: offsetkeeper connect list --connect-url http://127.0.0.1:8083 -b 127.0.0.1:9092
    """
    client = _client(connect_url, connect_user, connect_password, connect_ca, connect_insecure)
    admin = _admin(bootstrap, command_config, cluster, config)
    try:
        views = ops.list_connectors(client, admin, patterns=tuple(pattern or ()))
    finally:
        if admin is not None:
            admin.close()
    render_rows(_rows(views), LIST_COLUMNS, output,
                json_payload=[v.as_dict() for v in views])


@app.command("show")
def show(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The connector.")],
    connect_url: UrlOpt = "", connect_user: UserOpt = None, connect_password: PasswordOpt = None,
    connect_ca: CaOpt = None, connect_insecure: InsecureOpt = False,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """One connector: type, state, tasks and offsets (a sink connector's group and lag).

    Example: offsetkeeper connect show my-source --connect-url http://127.0.0.1:8083
    """
    client = _client(connect_url, connect_user, connect_password, connect_ca, connect_insecure)
    admin = _admin(bootstrap, command_config, cluster, config)
    try:
        view = ops.show_connector(client, admin, name)
    finally:
        if admin is not None:
            admin.close()
    render_rows(_rows([view]), LIST_COLUMNS, output, json_payload=view.as_dict())


@offsets_app.command("export")
def export(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The connector.")],
    file: Annotated[Path | None, typer.Option("--file", "-f", metavar="FILE",
                                              help="Write here (default: stdout).")] = None,
    connect_url: UrlOpt = "", connect_user: UserOpt = None, connect_password: PasswordOpt = None,
    connect_ca: CaOpt = None, connect_insecure: InsecureOpt = False,
) -> None:
    """Write a connector's offsets as JSON (what `offsets import` and `reset --to-file` read).

    Example: offsetkeeper connect offsets export my-source -f my-source.json
    """
    client = _client(connect_url, connect_user, connect_password, connect_ca, connect_insecure)
    text = json.dumps(ops.export_offsets(client, name), indent=1) + "\n"
    if file is None:
        sys.stdout.write(text)
    else:
        from offsetkeeper.ops.reset import write_user_file

        say(f"wrote {write_user_file(file, text, what='offsets file')}")


def _show_outcome(outcome, output: OutputFormat) -> None:
    if output is OutputFormat.json:
        render_json(outcome.as_dict())
    else:
        rows = []
        for cp in outcome.plan.connectors:
            base = {"connector": cp.name, "type": cp.type, "state": cp.state,
                    "action": str(cp.action), "refused": cp.refused or ""}
            if not cp.changes:
                rows.append(base)
            for c in cp.changes:
                rows.append(base | {"partition": json.dumps(c.partition, sort_keys=True),
                                    "before": "-" if c.before is None
                                    else json.dumps(c.before, sort_keys=True),
                                    "after": "-" if c.after is None
                                    else json.dumps(c.after, sort_keys=True)})
        render_rows(rows, ["connector", "type", "state", "action", "partition", "before",
                           "after", "refused"], output,
                    title=f"plan: {outcome.plan.target}")
        if outcome.group_outcomes:
            from offsetkeeper.cli.reset_render import show_outcome

            for name, go in outcome.group_outcomes.items():
                say(f"connector {name}: its consumer group")
                show_outcome(go.plan, go.report, output, go.notes, tuple(go.files))
        if outcome.report is not None:
            render_rows([r.as_dict() for r in outcome.report.results],
                        ["connector", "status", "state_before", "state_after", "readback",
                         "message"], output, title="result")
            if outcome.report.snapshot_id:
                say(f"snapshot {outcome.report.snapshot_id} (undo: offsetkeeper connect "
                    f"rollback {outcome.report.snapshot_id} --execute)")
        elif not outcome.group_outcomes:
            say("dry run: nothing changed (add --execute to apply)")
        for note in outcome.notes:
            say(note)
    if not outcome.ok:
        raise typer.Exit(1)


@app.command("reset")
def reset(
    names: Annotated[list[str] | None, typer.Argument(metavar="NAME", help="Connectors.",
                                                      show_default=False)] = None,
    pattern: PatternOpt = None,
    to_file: Annotated[Path | None, typer.Option("--to-file", metavar="FILE", help="Offsets "
                                                 "as `offsets export` writes them.")] = None,
    to_none: Annotated[bool, typer.Option("--to-none", help="Remove every offset (DELETE): a "
                                          "source starts over, a sink's group loses its "
                                          "commits.")] = False,
    topic: TopicsOpt = None,
    to_earliest: ToEarliestOpt = False, to_latest: ToLatestOpt = False,
    to_current: ToCurrentOpt = False, to_offset: ToOffsetOpt = None,
    shift_by: ShiftByOpt = None, to_datetime: ToDatetimeOpt = None,
    by_duration: ByDurationOpt = None,
    execute: ExecuteOpt = False, no_snapshot: NoSnapshotOpt = False, store: StoreOpt = None,
    offsets_topic: OffsetsTopicOpt = None,
    connect_url: UrlOpt = "", connect_user: UserOpt = None, connect_password: PasswordOpt = None,
    connect_ca: CaOpt = None, connect_insecure: InsecureOpt = False,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Move connectors' offsets: a dry-run plan unless --execute; then stop each connector,
    snapshot, change (KIP-875), read back, and resume it if it was running. Sink connectors
    also take consumer-group targets (--to-earliest, --to-offset, --to-datetime, ...; needs -b).

    Example: offsetkeeper connect reset my-source --to-file my-source.json --execute
    """
    from offsetkeeper.ops import ExecuteOptions, ResetRequest
    from offsetkeeper.ops.targets import TargetKind, target_from_flags
    from offsetkeeper.reset.parse import parse_topic_spec
    from offsetkeeper.reset.plan import ResetScope, TopicSpec

    flags = {TargetKind.TO_EARLIEST: to_earliest, TargetKind.TO_LATEST: to_latest,
             TargetKind.TO_CURRENT: to_current, TargetKind.TO_OFFSET: to_offset,
             TargetKind.SHIFT_BY: None if shift_by is None else str(shift_by),
             TargetKind.TO_DATETIME: to_datetime, TargetKind.BY_DURATION: by_duration}
    group_request = None
    if any(v not in (None, False) for v in flags.values()):
        group_request = ResetRequest(
            target=target_from_flags(flags),
            scope=ResetScope(topics=tuple(TopicSpec(*parse_topic_spec(t)) for t in topic or ())))
    client = _client(connect_url, connect_user, connect_password, connect_ca, connect_insecure)
    admin = _admin(bootstrap, command_config, cluster, config)
    try:
        outcome = ops.reset_connectors(client, admin, ops.ConnectResetRequest(
            names=tuple(names or ()), patterns=tuple(pattern or ()), to_file=to_file,
            to_none=to_none, group_request=group_request, execute=execute,
            offsets_topic=offsets_topic,
            options=ExecuteOptions(snapshot=not no_snapshot, snapshot_store=store,
                                   config_path=config)))
    finally:
        if admin is not None:
            admin.close()
    _show_outcome(outcome, output)


@offsets_app.command("import")
def import_(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The connector.")],
    file: Annotated[Path, typer.Argument(metavar="FILE", help="Offsets as `export` writes them.")],
    execute: ExecuteOpt = False, no_snapshot: NoSnapshotOpt = False, store: StoreOpt = None,
    offsets_topic: OffsetsTopicOpt = None,
    connect_url: UrlOpt = "", connect_user: UserOpt = None, connect_password: PasswordOpt = None,
    connect_ca: CaOpt = None, connect_insecure: InsecureOpt = False,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Set a connector's offsets from a file (`connect reset NAME --to-file FILE`): a dry run
    unless --execute.

    Example: offsetkeeper connect offsets import my-source my-source.json --execute
    """
    from offsetkeeper.ops import ExecuteOptions

    client = _client(connect_url, connect_user, connect_password, connect_ca, connect_insecure)
    admin = _admin(bootstrap, command_config, cluster, config)
    try:
        outcome = ops.reset_connectors(client, admin, ops.ConnectResetRequest(
            names=(name,), to_file=file, execute=execute, offsets_topic=offsets_topic,
            options=ExecuteOptions(snapshot=not no_snapshot, snapshot_store=store,
                                   config_path=config)))
    finally:
        if admin is not None:
            admin.close()
    _show_outcome(outcome, output)


@app.command("rollback")
def rollback(
    snapshot: Annotated[str, typer.Argument(metavar="SNAPSHOT", help="A connector snapshot "
                                            "(csnap-...) or a sink reset's group snapshot.")],
    execute: ExecuteOpt = False, store: StoreOpt = None, offsets_topic: OffsetsTopicOpt = None,
    connect_url: UrlOpt = "", connect_user: UserOpt = None, connect_password: PasswordOpt = None,
    connect_ca: CaOpt = None, connect_insecure: InsecureOpt = False,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Put connectors back to a snapshot taken before a change (exactly: offsets not in it are
    removed), stopping and resuming them as a reset does. A dry run unless --execute.

    Example: offsetkeeper connect rollback csnap-20261127T051500.123Z-1a2b --execute
    """
    from offsetkeeper.ops import ExecuteOptions

    client = _client(connect_url, connect_user, connect_password, connect_ca, connect_insecure)
    admin = _admin(bootstrap, command_config, cluster, config)
    try:
        outcome = ops.rollback_connectors(client, admin, ops.ConnectRollbackRequest(
            snapshot, execute=execute, offsets_topic=offsets_topic,
            options=ExecuteOptions(snapshot_store=store, config_path=config)))
    finally:
        if admin is not None:
            admin.close()
    _show_outcome(outcome, output)
