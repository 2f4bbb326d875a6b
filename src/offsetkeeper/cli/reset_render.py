"""Rendering plans, execution reports and outcomes of every command that changes offsets.

`offsets reset|delete`, `groups delete`, `snapshots rollback` and restore translation all print
plans and reports the same way (the operations layer runs the one executor).
"""

from __future__ import annotations

import typer

from offsetkeeper.cli.output import (
    OutputFormat,
    plural,
    render_json,
    render_rows,
    say,
)
from offsetkeeper.reset.apply import ApplyReport, GroupStatus, ReportStatus
from offsetkeeper.reset.plan import PlanKind, ResetPlan

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


SUMMARY_COLUMNS = ["group", "state", "partitions", "changing", "moved_back", "moved_forward",
                   "records_rewound", "records_skipped", "note"]
# A table longer than this on a terminal suggests --summary (3,000 rows scroll the verdict away).
LONG_PLAN_ROWS = 200


def plan_summary_rows(plan: ResetPlan) -> list[dict]:
    """One row per group: how many partitions change, in which direction, by how many records."""
    rows = []
    for g in plan.groups:
        if g.refused:
            rows.append({"group": g.group, "state": g.state, "note": f"REFUSED: {g.refused}"})
            continue
        back = [p for p in g.partitions if p.changes and p.current is not None
                and p.target is not None and p.target < p.current]
        fwd = [p for p in g.partitions if p.changes and p.current is not None
               and p.target is not None and p.target > p.current]
        errors = sum(1 for p in g.partitions if p.error)
        rows.append({
            "group": g.group, "state": g.state, "partitions": len(g.partitions),
            "changing": sum(1 for p in g.partitions if p.changes),
            "moved_back": len(back), "moved_forward": len(fwd),
            "records_rewound": sum(p.current - p.target for p in back),
            "records_skipped": sum(p.target - p.current for p in fwd),
            "note": f"{errors} partition error(s)" if errors else ("new group" if g.new_group else None),
        })
    return rows


def show_plan(plan: ResetPlan, fmt: OutputFormat, *, executed: bool = False,
              summary: bool = False) -> None:
    """Print a plan (data only, to stdout); `summary`: one row per group (JSON keeps every
    partition)."""
    what = "Reset plan" if plan.kind is PlanKind.RESET else "Delete plan"
    title = None if executed else f"{what} ({plan.target}) — dry run, nothing changed; add --execute to apply"
    if summary and fmt is not OutputFormat.json:
        render_rows(plan_summary_rows(plan), SUMMARY_COLUMNS, fmt, title=title)
        return
    rows = plan_rows(plan)
    render_rows(rows, PLAN_COLUMNS, fmt, title=title,
                json_payload=plan.to_dict() if fmt is OutputFormat.json else None)
    if fmt is OutputFormat.table and len(rows) > LONG_PLAN_ROWS:
        say(f"{len(rows)} rows for {len(plan.groups)} groups; --summary shows one row per group",
            prefix="note:")


def print_problems(plan: ResetPlan, report: ApplyReport | None = None) -> None:
    """One line on stderr per refused group, failed group or failed partition (any format)."""
    reported = set()
    for g in plan.refused:
        say(str(g.refused), style="bold red", prefix="refused:")
        reported.add(g.group)
    for p in plan.partitions():
        if p.error:
            say(f"group {p.group} {p.tp}: {p.error}", style="bold red", prefix="error:")
            reported.add(p.group)
    for r in report.results if report else ():
        if r.status in (GroupStatus.FAILED, GroupStatus.REFUSED, GroupStatus.UNKNOWN) \
                and r.group not in reported:
            detail = "; ".join(f"{k}: {v}" for k, v in sorted(r.partition_errors.items()))
            say(f"group {r.group}: {r.error or ''}" + (f" ({detail})" if detail else ""),
                style="bold red", prefix=f"{r.status}:")


def show_report(report: ApplyReport, fmt: OutputFormat) -> None:
    """Print the execution report: a summary and one line per group that did not succeed."""
    if fmt is OutputFormat.json:
        render_json(report.to_dict())
        return
    rows = [{**r.__dict__, "status": str(r.status), "latency_ms": round(r.latency_s * 1000, 1),
             "error": r.error if not r.partition_errors else
             f"{r.error}: " + "; ".join(f"{k} {v}" for k, v in sorted(r.partition_errors.items()))}
            for r in report.results]
    render_rows(rows, REPORT_COLUMNS, fmt, title="Execution report")


def verdict(plan: ResetPlan, report: ApplyReport | None) -> str:
    """The one line that says what happened, printed last (after tables and problems)."""
    if report is not None:
        s = report.summary()
        unknown = (f" ({plural(s['groups_unknown'], 'group')} with an unknown outcome: look "
                   "at them before running again)") if s.get("groups_unknown") else ""
        return (f"{s['status']}: {s['groups_succeeded']}/{s['groups_total']} groups, "
                f"{plural(s['partitions_changed'], 'partition')} changed{unknown} in "
                f"{s['elapsed_s']}s "
                f"({s['offsets_per_s']} offsets/s; latency p50 {s['latency_p50_ms']} ms, "
                f"p99 {s['latency_p99_ms']} ms, max {s['latency_max_ms']} ms)")
    # a refused group changes nothing, so its partitions are not counted as "would change"
    changing = sum(1 for g in plan.groups if not g.refused
                   for p in g.partitions if p.changes and not p.error)
    refused = len(plan.refused)
    return (f"dry run: {plural(changing, 'partition')} would change"
            + (f", {plural(refused, 'group')} refused" if refused else "")
            + "; nothing changed (add --execute to apply)")


def show_outcome(plan: ResetPlan, report: ApplyReport | None, fmt: OutputFormat,
                 notes: tuple[str, ...] = (), files: tuple[str, ...] = (), *,
                 summary: bool = False) -> None:
    """Print notes, the plan (and the execution report when executed), any problems, and in
    tables the verdict last, where it is not scrolled away.

    The undo snapshot id is printed first: it must reach the user even if rendering a table
    fails later.
    """
    if report is not None and report.snapshot_id:
        from offsetkeeper.cli.common import hint_options

        say(f"snapshot taken before the change: {report.snapshot_id} "
            f"(undo: offsetkeeper snapshots rollback {report.snapshot_id} --execute"
            f"{hint_options()})")
    for note in notes:
        if "snapshots rollback " in note and " --execute)" in note:  # a hint: runs as pasted
            from offsetkeeper.cli.common import hint_options

            note = note.replace(" --execute)", f" --execute{hint_options()})")
        if note.startswith("warning:"):
            say(note.removeprefix("warning:").strip(), style="bold yellow", prefix="warning:")
        else:
            say(note, prefix="note:")
    if fmt is OutputFormat.json and report is not None:
        render_json({"plan": plan.to_dict(), "report": report.to_dict()})
    else:
        show_plan(plan, fmt, executed=report is not None, summary=summary)
        if report is not None:
            show_report(report, fmt)
    print_problems(plan, report)
    for path in files:  # on stderr, so it never mixes with JSON/CSV on stdout
        say(f"plan written to {path}")
    if fmt is OutputFormat.table:
        say(verdict(plan, report))


def render_outcome(outcome, fmt: OutputFormat, *, summary: bool = False) -> None:
    """Print an `ops.Outcome` (plan, report, notes, files written) and exit 1 unless it is ok."""
    show_outcome(outcome.plan, outcome.report, fmt, outcome.notes, tuple(outcome.files),
                 summary=summary)
    if getattr(outcome, "error", None) is not None:
        raise outcome.error
    if not outcome.ok:
        raise typer.Exit(1)


def finish(plan: ResetPlan, report: ApplyReport | None) -> None:
    """Exit non-zero when anything was refused or failed."""
    if report is not None:
        if report.status is not ReportStatus.SUCCESS:
            raise typer.Exit(1)
    elif plan.has_errors:
        raise typer.Exit(1)
