"""Rendering of `offsets reset --live --execute` (the logic is offsetkeeper.consumer.live)."""

from __future__ import annotations

import typer
from rich.markup import escape

from offsetkeeper.cli.output import OutputFormat, render_json, render_rows, stderr_console
from offsetkeeper.cli.reset_render import print_problems, show_plan
from offsetkeeper.consumer.live import live_reset
from offsetkeeper.reset.plan import ResetPlan

LIVE_COLUMNS = ["group", "topic", "partition", "target", "status", "member", "elapsed_ms", "error"]


def run_live_reset(admin, plan: ResetPlan, *, timeout_s: float, snapshot: bool,
                   snapshot_store: str | None, output: OutputFormat) -> None:
    """Publish the plan to the group's running members, wait, print per partition; exit 1
    unless every partition was applied."""
    report = live_reset(admin, plan, timeout_s=timeout_s, snapshot=snapshot,
                        snapshot_store=snapshot_store)
    if output is OutputFormat.json:
        render_json({"plan": plan.to_dict(), "live_report": report.to_dict()})
    else:
        show_plan(plan, output, executed=True)
        rows = [{**p.__dict__, "status": p.status.value} for p in report.partitions]
        render_rows(rows, LIVE_COLUMNS, output, title="Live reset report")
    print_problems(plan)
    if output is OutputFormat.table:
        err = stderr_console()
        ok = sum(p.status.value == "applied" for p in report.partitions)
        err.print(f"{report.status}: {ok}/{len(report.partitions)} partitions acknowledged by the "
                  f"group's members in {report.elapsed_s:.1f}s", highlight=False)
        if report.snapshot_id:
            err.print(f"snapshot taken before the change: {escape(report.snapshot_id)} (undo while "
                      f"running: offsetkeeper offsets reset --from-snapshot {escape(report.snapshot_id)} "
                      "--live --execute ...)", highlight=False)
    if report.status != "SUCCESS":
        raise typer.Exit(1)
