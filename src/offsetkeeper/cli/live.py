"""Rendering of `offsets reset --live --execute` (the logic is offsetkeeper.consumer.live)."""

from __future__ import annotations

import typer

from offsetkeeper.cli.output import OutputFormat, render_json, render_rows, say
from offsetkeeper.cli.reset_render import print_problems, show_plan

LIVE_COLUMNS = ["group", "topic", "partition", "target", "status", "member", "elapsed_ms", "error"]


def render_live(outcome, output: OutputFormat) -> None:
    """Print a live reset's plan and per-partition report; exit 1 unless every partition was
    applied by the group's running members."""
    plan, report = outcome.plan, outcome.live
    for note in outcome.notes:
        say(note, prefix="note:")
    if output is OutputFormat.json:
        render_json({"plan": plan.to_dict(), "live_report": report.to_dict()})
    else:
        show_plan(plan, output, executed=True)
        rows = [{**p.__dict__, "status": p.status.value} for p in report.partitions]
        render_rows(rows, LIVE_COLUMNS, output, title="Live reset report")
    print_problems(plan)
    if output is OutputFormat.table:
        ok = sum(p.status.value == "applied" for p in report.partitions)
        say(f"{report.status}: {ok}/{len(report.partitions)} partitions acknowledged by the "
            f"group's members in {report.elapsed_s:.1f}s")
        if report.snapshot_id:
            say(f"snapshot taken before the change: {report.snapshot_id} (undo while running: "
                f"offsetkeeper offsets reset --from-snapshot {report.snapshot_id} --live --execute ...)")
    if report.status != "SUCCESS":
        raise typer.Exit(1)
