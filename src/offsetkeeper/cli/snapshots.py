"""`offsetkeeper snapshots create|list|show|diff|verify|rollback|delete`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from offsetkeeper.cli.common import (
    BootstrapOpt,
    ClusterOpt,
    CommandConfigOpt,
    ConfigOpt,
    OutputOpt,
    connection,
    group_ids,
    remember_hint_option,
)
from offsetkeeper.cli.output import (
    OutputFormat,
    printable,
    render_json,
    render_rows,
    say,
    stdout_console,
    with_iso,
)
from offsetkeeper.errors import UsageError
from offsetkeeper.ops import snapshots as ops
from offsetkeeper.times import ms_of_iso

app = typer.Typer(help="Offset snapshots: create, list, show, diff, verify, rollback, delete.",
                  no_args_is_help=True)

StoreOpt = Annotated[
    str | None,
    typer.Option("--store", help="Snapshot store: a directory or fsspec URL (s3://, gs://, ...) "
                 "[default: $OFFSETKEEPER_SNAPSHOT_STORE, config snapshots.store, "
                 "else ~/.local/share/offsetkeeper/snapshots].", show_default=False),
]
IdArg = Annotated[str, typer.Argument(metavar="ID", help="Snapshot id, or 'latest': the newest "
                                      "snapshot of the cluster the command talks to that is not "
                                      "an automatic pre-rollback snapshot.", show_default=False)]

LIST_COLUMNS = ["id", "created_at", "cluster_id", "bootstrap_servers", "origin", "groups",
                "partitions", "description"]
SHOW_COLUMNS = ["group", "state", "topic", "partition", "offset", "metadata",
                "log_start", "log_end", "lag"]


def _note(text: str) -> None:
    say(text, style="yellow", prefix="note:")


def _say(text: str, fmt: OutputFormat) -> None:
    """A sentence for people: shown with table output, left out of JSON and CSV."""
    if fmt is OutputFormat.table:
        stdout_console().print(Text(printable(text)))


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _render_diffs(result: ops.SnapshotDiff | ops.LiveDiff, fmt: OutputFormat, title: str) -> None:
    if result.diffs or fmt is not OutputFormat.table:
        render_rows(result.rows(), result.columns, fmt, title=title)


@app.command("create")
def create(
    group: Annotated[list[str] | None, typer.Option(
        "--group", "-g", help="Group to include (repeatable; a comma is part of the name, "
        "as Kafka allows).", show_default=False)] = None,
    all_groups: Annotated[bool, typer.Option("--all-groups", help="Include every group.")] = False,
    description: Annotated[str, typer.Option("--description",
                                             help="Free text stored with the snapshot.")] = "",
    store: StoreOpt = None,
    bootstrap: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None,
    config: ConfigOpt = None,
    output: OutputOpt = OutputFormat.table,
) -> None:
    """Save the committed offsets (with metadata) of groups, the log start/end of their
    partitions, the cluster id and the time. Changes nothing on the cluster.

    Example: offsetkeeper snapshots create -g payments -g billing --description "before migration"
    """
    groups = group_ids(group)
    if bool(groups) == all_groups:
        raise UsageError("give either --group G (one or more) or --all-groups")
    from offsetkeeper.kafka.admin import KafkaAdmin

    req = ops.CreateSnapshotRequest(None if all_groups else tuple(groups), description, store,
                                    config)
    with KafkaAdmin(connection(bootstrap, command_config, cluster, config)) as admin:
        saved = ops.save_snapshot(admin, req)
    for g, state in saved.empty_groups:
        _note(f"group {g} has no committed offsets (state {state}); recorded as empty")
    snap = saved.snapshot
    row = _row(snap.summary().as_row()) | {"path": saved.path}
    row.pop("error")
    if output is OutputFormat.table:
        _say(f"snapshot {snap.id} saved: {_n(row['groups'], 'group')}, "
             f"{_n(row['partitions'], 'partition')} -> {row['path']}", output)
    else:
        render_rows([row], [*LIST_COLUMNS, "path"], output, json_payload=with_iso(row, ["created_at"]))



def _row(d: dict) -> dict:
    """A snapshot's listing or document as output: created_at in epoch ms (JSON adds the ISO)."""
    return d | {"created_at": ms_of_iso(d.get("created_at")) or d.get("created_at")}

@app.command("list")
def list_(store: StoreOpt = None, config: ConfigOpt = None,
          output: OutputOpt = OutputFormat.table) -> None:
    """List the stored snapshots, newest first.

    Example: offsetkeeper snapshots list --store s3://ops-bucket/offset-snapshots
    """
    listing = ops.snapshot_listing(store=store, config_path=config)
    rows = [_row(s.as_row()) for s in listing.snapshots]
    columns = LIST_COLUMNS + (["error"] if any(r["error"] for r in rows) else [])
    if not rows:
        _say(f"no snapshots in {listing.store}", output)
        if output is OutputFormat.table:
            return
    render_rows(rows, columns, output, title=f"Snapshots in {listing.store}")


@app.command("show")
def show(snapshot_id: IdArg, store: StoreOpt = None, config: ConfigOpt = None,
         output: OutputOpt = OutputFormat.table) -> None:
    """Show one snapshot: per group and partition the offset, metadata, log start/end and lag.

    Example: offsetkeeper snapshots show snap-20261121T194501.123Z-1a2b -o json
    """
    snap = ops.load_snapshot(snapshot_id, store=store, config_path=config)
    if output is OutputFormat.json:
        render_json(_row(snap.to_dict()), time_keys=["created_at"])
        return
    title = (f"{snap.id}  created {snap.created_at}  cluster {snap.cluster_id or '?'} "
             f"({snap.bootstrap_servers})" + (f"  — {snap.description}" if snap.description
                                              else ""))
    render_rows(snap.rows(), SHOW_COLUMNS, output, title=title)
    if output is OutputFormat.table:
        say(snap.lag_note())


@app.command("diff")
def diff_cmd(
    snapshot_id: IdArg,
    other: Annotated[str | None, typer.Argument(
        metavar="ID2", help="Second snapshot id; without it the live cluster is compared.",
        show_default=False)] = None,
    live: Annotated[bool, typer.Option("--live", help="Compare with the live cluster "
                                       "(the default when no second id is given).")] = False,
    store: StoreOpt = None,
    bootstrap: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None,
    config: ConfigOpt = None,
    output: OutputOpt = OutputFormat.table,
) -> None:
    """Show the committed offsets that differ between two snapshots, or between a snapshot and
    the live cluster (BEFORE = first snapshot, AFTER = second / live). Exit 0 either way.

    Example: offsetkeeper snapshots diff snap-20261121T194501.123Z-1a2b --live
    """
    if other and live:
        raise UsageError("give either a second snapshot id or --live, not both")
    result: ops.SnapshotDiff | ops.LiveDiff
    if other:
        result = ops.compare_snapshots(snapshot_id, other, store=store, config_path=config)
        a, against = result.before, result.after.id
    else:
        result = _live(snapshot_id, store, bootstrap, command_config, cluster, config)
        a, against = result.snapshot, "live"
    for note in result.notes:
        _note(note)
    _render_diffs(result, output, f"{a.id} -> {against}")
    if not result.diffs:
        _say(f"no differences between {a.id} and {against}", output)


def _live(ref: str, store, bootstrap, command_config, cluster, config) -> ops.LiveDiff:
    """`ref` (``latest`` among this cluster's snapshots) against the cluster."""
    from offsetkeeper.kafka.admin import KafkaAdmin

    with KafkaAdmin(connection(bootstrap, command_config, cluster, config)) as admin:
        return ops.compare_with_live(admin, ref, store=store, config_path=config)


@app.command("verify")
def verify_cmd(
    snapshot_id: IdArg,
    store: StoreOpt = None,
    bootstrap: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None,
    config: ConfigOpt = None,
    output: OutputOpt = OutputFormat.table,
) -> None:
    """Check that the live committed offsets of the snapshot's groups equal the snapshot.
    Exit 0 when they all match, 1 (listing the differences) otherwise.

    Example: offsetkeeper snapshots verify latest
    """
    result = _live(snapshot_id, store, bootstrap, command_config, cluster, config)
    snap = result.snapshot
    for note in result.notes:
        _note(note)
    _render_diffs(result, output, f"{snap.id} -> live")
    if not result.ok:
        say(f"{len(result.diffs)} partition offset(s) differ from snapshot {snap.id}",
            style="bold red", prefix="error:")
        raise typer.Exit(1)
    _say(f"ok: the committed offsets of {_n(len(snap.groups), 'group')} "
         f"({_n(snap.partition_count(), 'partition')}) match snapshot {snap.id}", output)


@app.command("delete")
def delete(
    snapshot_ids: Annotated[list[str], typer.Argument(metavar="ID", help="Snapshot id(s) to delete.",
                                                      show_default=False)],
    store: StoreOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Delete stored snapshots (the cluster is not touched).

    Example: offsetkeeper snapshots delete snap-20261121T194501.123Z-1a2b
    """
    for sid in snapshot_ids:
        _say(f"deleted {ops.delete_snapshot(sid, store=store, config_path=config)}",
             OutputFormat.table)


@app.command("rollback")
def rollback(
    snapshot_id: IdArg,
    execute: Annotated[bool, typer.Option("--execute", help="Apply the plan (default: dry run).")] = False,
    allow_cluster_mismatch: Annotated[bool, typer.Option(
        "--allow-cluster-mismatch", help="Allow a snapshot taken on another cluster "
        "(different cluster id).")] = False,
    no_snapshot: Annotated[bool, typer.Option(
        "--no-snapshot", help="Do not snapshot the groups before --execute.")] = False,
    max_concurrent: Annotated[int, typer.Option("--max-concurrent", min=1, max=1000,
                                                help="Groups in flight at once (as offsets "
                                                "reset).")] = 100,
    retries: Annotated[int, typer.Option("--retries", min=0, max=50,
                                         help="Retries per group for retriable errors.")] = 5,
    store: StoreOpt = None,
    bootstrap: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None,
    config: ConfigOpt = None,
    output: OutputOpt = OutputFormat.table,
) -> None:
    """Put the snapshot's groups back to its committed offsets: a reset --from-snapshot with
    the same plan, safety checks (no active members, clamping) and executor. Dry run unless
    --execute; with --execute the groups are snapshotted first, so a rollback can be undone.

    Example: offsetkeeper snapshots rollback snap-20261121T194501.123Z-1a2b --execute
    """
    from offsetkeeper.cli.progress import progress_bar
    from offsetkeeper.cli.reset_render import render_outcome
    from offsetkeeper.kafka.admin import KafkaAdmin
    from offsetkeeper.ops.reset import ExecuteOptions, RollbackRequest
    from offsetkeeper.ops.reset import rollback as ops_rollback

    remember_hint_option("--store", store)
    req = RollbackRequest(
        snapshot_id=snapshot_id, execute=execute, allow_cluster_mismatch=allow_cluster_mismatch,
        options=ExecuteOptions(max_concurrent=max_concurrent, retries=retries,
                               snapshot=not no_snapshot, snapshot_store=store, config_path=config))
    with KafkaAdmin(connection(bootstrap, command_config, cluster, config)) as admin, \
            progress_bar(output) as progress:
        outcome = ops_rollback(admin, req, progress=progress)
    render_outcome(outcome, output)
