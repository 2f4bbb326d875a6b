"""Rendering and executing reset plans for every command that changes offsets.

`offsets reset`, `snapshots rollback` and restore translation all print plans and reports the
same way and run the same executor, with a progress bar on a terminal.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from offsetkeeper.cli.output import (
    OutputFormat,
    render_json,
    render_rows,
    safe,
    say,
    stderr_console,
)
from offsetkeeper.errors import StoreError, UsageError
from offsetkeeper.reset.apply import ApplyOptions, ApplyReport, apply_plan
from offsetkeeper.reset.parse import show
from offsetkeeper.reset.plan import ResetPlan
from offsetkeeper.storage import write_text_atomic

PLAN_COLUMNS = ["group", "topic", "partition", "current", "target", "log_start", "log_end", "note"]
REPORT_COLUMNS = ["group", "status", "partitions_changed", "attempts", "latency_ms", "error"]


def plan_rows(plan: ResetPlan) -> list[dict]:
    rows = []
    for g in plan.groups:
        if g.refused:
            rows.append({"group": g.group, "note": f"REFUSED: {g.refused}"})
            continue
        for p in g.partitions:
            rows.append({
                "group": p.group, "topic": p.topic, "partition": p.partition,
                "current": p.current, "target": p.target,
                "log_start": p.log_start if p.log_start >= 0 else None,
                "log_end": p.log_end if p.log_end >= 0 else None,
                "note": f"ERROR: {p.error}" if p.error else (p.note or None),
            })
    return rows


def show_plan(plan: ResetPlan, fmt: OutputFormat, *, executed: bool = False) -> None:
    """Print a plan (data only, to stdout)."""
    title = None if executed else f"Reset plan ({plan.target}) — dry run, nothing changed; add --execute to apply"
    render_rows(plan_rows(plan), PLAN_COLUMNS, fmt, title=title, json_payload=plan.to_dict())


def print_problems(plan: ResetPlan, report: ApplyReport | None = None) -> None:
    """One line on stderr per refused group, failed group or failed partition (any format)."""
    err = stderr_console()
    reported = set()
    for g in plan.refused:
        err.print(f"[bold red]refused:[/] {safe(g.refused or '')}", highlight=False)
        reported.add(g.group)
    for p in plan.partitions():
        if p.error:
            err.print(f"[bold red]error:[/] group {safe(p.group)} {safe(str(p.tp))}: {safe(p.error)}",
                      highlight=False)
            reported.add(p.group)
    for r in report.results if report else ():
        if r.status in ("failed", "refused") and r.group not in reported:
            detail = "; ".join(f"{k}: {v}" for k, v in sorted(r.partition_errors.items()))
            err.print(f"[bold red]{r.status}:[/] group {safe(r.group)}: {safe(r.error or '')}"
                      + (f" ({safe(detail)})" if detail else ""), highlight=False)


def show_report(report: ApplyReport, fmt: OutputFormat) -> None:
    """Print the execution report: a summary and one line per group that did not succeed."""
    if fmt is OutputFormat.json:
        render_json(report.to_dict())
        return
    rows = [{**r.__dict__, "latency_ms": round(r.latency_s * 1000, 1),
             "error": r.error if not r.partition_errors else
             f"{r.error}: " + "; ".join(f"{k} {v}" for k, v in sorted(r.partition_errors.items()))}
            for r in report.results]
    render_rows(rows, REPORT_COLUMNS, fmt, title="Execution report")
    s = report.summary()
    if fmt is OutputFormat.table:
        out = stderr_console()
        out.print(
            f"{s['status']}: {s['groups_succeeded']}/{s['groups_total']} groups, "
            f"{s['partitions_changed']} partitions changed in {s['elapsed_s']}s "
            f"({s['offsets_per_s']} offsets/s; latency p50 {s['latency_p50_ms']} ms, "
            f"p99 {s['latency_p99_ms']} ms, max {s['latency_max_ms']} ms)", highlight=False)


def show_outcome(plan: ResetPlan, report: ApplyReport | None, fmt: OutputFormat) -> None:
    """Print the plan (and the execution report when executed) and any problems on stderr.

    The undo snapshot id comes first, before anything that could fail to render: whoever
    changed offsets must always learn how to undo it.
    """
    if report is not None and report.snapshot_id:
        say(f"snapshot taken before the change: {report.snapshot_id} "
            f"(undo: offsetkeeper snapshots rollback {report.snapshot_id} --execute)")
    if fmt is OutputFormat.json and report is not None:
        render_json({"plan": plan.to_dict(), "report": report.to_dict()})
    else:
        show_plan(plan, fmt, executed=report is not None)
        if report is not None:
            show_report(report, fmt)
    print_problems(plan, report)


def execute_plan(admin, plan: ResetPlan, opts: ApplyOptions, fmt: OutputFormat) -> ApplyReport:
    """Run the executor with a Rich progress bar on a terminal (none for json/csv or pipes)."""
    console = stderr_console()
    if fmt is not OutputFormat.table or not console.is_terminal or os.environ.get("CI"):
        return apply_plan(admin, plan, opts)
    with Progress(TextColumn("resetting"), BarColumn(), MofNCompleteColumn(), TextColumn("groups"),
                  TimeElapsedColumn(), console=console, transient=True) as progress:
        task = progress.add_task("reset", total=len(plan.groups))
        opts = ApplyOptions(**{**opts.__dict__, "on_group_done": lambda _r: progress.advance(task)})
        return apply_plan(admin, plan, opts)


def write_atomic(path: Path, text: str, *, what: str = "--export", mode: int | None = None) -> Path:
    """Write a file the user named via temp file + rename, so a crash never leaves half a file.

    The directory must exist (as for shell redirection): a typo in it is bad input, exit 2,
    and nothing is written. A write that fails (read-only, full disk) leaves no temporary file
    behind and is reported as one line naming the option and the file.
    """
    p = path.expanduser()
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        why = "is not a directory" if parent.exists() else "does not exist"
        raise UsageError(f"{what} {show(str(path))}: directory {show(str(parent))} {why}")
    if p.is_dir():
        raise UsageError(f"{what} {show(str(path))} is a directory; give a file name")
    try:
        write_text_atomic(str(p.absolute()), text, mode=mode, what=f"{what} file")
    except StoreError as exc:
        raise UsageError(exc.message) from None
    return p


def finish(plan: ResetPlan, report: ApplyReport | None) -> None:
    """Exit non-zero when anything was refused or failed."""
    if report is not None:
        if report.status != "SUCCESS":
            raise typer.Exit(1)
    elif plan.has_errors:
        raise typer.Exit(1)
