"""Demo part: plans as files and safe repetition — export a plan, review a shell script,
apply the plan from its file, and roll back twice without undoing the rollback."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from offsetkeeper.demo.context import DemoContext


def part(ctx: DemoContext) -> None:
    run, b = ctx.run, ["-b", ctx.prod]
    plan, script = str(ctx.work / "analytics-plan.csv"), str(ctx.work / "analytics-reset.sh")
    run("Plan a replay of analytics; keep it as CSV and as a kafka-consumer-groups.sh script",
        ["offsets", "reset", "-g", "analytics", "-t", ctx.topic, "--shift-by", "-30",
         "--export", plan, "--script", script, *b])
    run("Apply exactly that plan from its file (a snapshot is taken first)",
        ["offsets", "reset", "-g", "analytics", "--from-file", plan, "--execute", *b])
    run("Snapshots, and why each exists", ["snapshots", "list"])
    for attempt in ("Undo it: roll back to the latest snapshot of this cluster",
                    "Run the same rollback again: nothing changes (pre-rollback snapshots are "
                    "never 'latest')"):
        run(attempt, ["snapshots", "rollback", "latest", "--execute", *b])
    run("analytics is back where it was", ["groups", "describe", "analytics", *b])
