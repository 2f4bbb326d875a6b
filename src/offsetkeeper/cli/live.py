"""`offsets reset --live --execute` rendering, and `offsetkeeper live-key` (the signing keys)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from offsetkeeper.cli.common import OutputOpt
from offsetkeeper.cli.output import OutputFormat, render_json, render_rows, say
from offsetkeeper.cli.reset_render import print_problems, show_plan

LIVE_COLUMNS = ["group", "topic", "partition", "target", "status", "member", "error"]

app = typer.Typer(help="Signing keys for live resets (offsets reset --live).", no_args_is_help=True)


def live_rows(plan, report) -> list[dict]:
    """One row per planned partition: applied (confirmed by read-back) or why not."""
    by_group = {r.group: r for r in report.results}
    rows = []
    for g in plan.groups:
        r = by_group.get(g.group)
        for p in g.partitions:
            key = str(p.tp)
            err = (r.partition_errors.get(key) if r else None) or p.error or \
                (r.error if r is not None and r.status.value == "refused" else None)
            applied = r is not None and key in r.applied_by
            rows.append({"group": g.group, "topic": p.topic, "partition": p.partition,
                         "target": p.target, "status": "applied" if applied else
                         ("refused" if r is not None and r.status.value == "refused" else "failed"),
                         "member": r.applied_by.get(key, "") if r else "", "error": err or ""})
    return rows


def render_live(outcome, output: OutputFormat, *, undo_args: str = "") -> None:
    """Print a live reset's plan and per-partition report; exit 1 unless every partition was
    applied by a current member and read back at its target."""
    plan, report = outcome.plan, outcome.report
    if report.snapshot_id:
        say(f"snapshot taken before the change: {report.snapshot_id} (undo while running: "
            f"offsetkeeper offsets reset --from-snapshot {report.snapshot_id} --all-topics "
            f"--live --execute{undo_args})")
    for note in outcome.notes:
        say(note, prefix="note:")
    rows = live_rows(plan, report)
    if output is OutputFormat.json:
        render_json({"plan": plan.to_dict(), "report": report.to_dict(), "partitions": rows})
    else:
        show_plan(plan, output, executed=True)
        render_rows(rows, LIVE_COLUMNS, output, title="Live reset report")
    print_problems(plan, report)
    if output is OutputFormat.table:
        ok = sum(r["status"] == "applied" for r in rows)
        say(f"{report.status}: {ok}/{len(rows)} partitions applied by the group's members and "
            f"read back in {report.elapsed_s:.1f}s")
    if report.status.value != "SUCCESS":
        raise typer.Exit(1)


def undo_arguments(bootstrap: str, command_config, signing_key) -> str:
    """The connection and key options the printed undo command needs (shell-quoted)."""
    parts = ["-b", bootstrap]
    if command_config:
        parts += ["--command-config", str(command_config)]
    if signing_key:
        parts += ["--signing-key", str(signing_key)]
    return " " + " ".join(shlex.quote(p) for p in parts)


@app.command("generate")
def generate(
    out: Annotated[Path, typer.Option("--out", help="Where to write the private key (PEM, mode "
                                      "600; an existing file is never overwritten).")],
    output: OutputOpt = OutputFormat.table,
) -> None:
    """Make an operator's signing key for live resets; prints the public key line the
    application's consumers trust (OffsetConsumer(live_reset_keys=[...])).

    Example: offsetkeeper live-key generate --out ~/.config/offsetkeeper/live-reset.key
    """
    from offsetkeeper.ops.live import generate_live_key, live_public_key

    line = generate_live_key(out)
    _show(line, live_public_key(out)[1], out, output)


@app.command("public")
def public(
    key: Annotated[Path, typer.Argument(help="The private key file (from `live-key generate`).")],
    output: OutputOpt = OutputFormat.table,
) -> None:
    """Print the public key line of a signing key (for the consumers' live_reset_keys).

    Example: offsetkeeper live-key public ~/.config/offsetkeeper/live-reset.key
    """
    from offsetkeeper.ops.live import live_public_key

    line, kid = live_public_key(key)
    _show(line, kid, key, output)


def _show(line: str, kid: str, path: Path, output: OutputFormat) -> None:
    if output is OutputFormat.table:
        typer.echo(line)  # bare, so `$(offsetkeeper live-key public FILE)` is the key
        say(f"key id {kid}, private key in {path}")
    else:
        render_rows([{"public_key": line, "key_id": kid, "private_key_file": str(path)}],
                    ["public_key", "key_id", "private_key_file"], output)
