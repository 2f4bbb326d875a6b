"""Demo part: back the topic up on local Spark, restore it into a second cluster with the groups
translated exactly, and show the offset mapping."""

from __future__ import annotations

from offsetkeeper.demo.context import TOPIC, DemoContext


def part(ctx: DemoContext) -> None:
    run, b = ctx.run, ["-b", ctx.prod]
    dr = ctx.broker("dr")
    dest = str(ctx.work / "backups")
    run("Back the topic up on local Spark (Parquet + manifest + group offsets)",
        ["backup", "run", "-t", TOPIC, "--dest", dest, "--id", "nightly", *b])
    run("What the backup holds", ["backups", "describe", "nightly", "--dest", dest])
    run("Restore into DR, translate the groups exactly, validate",
        ["restore", "three-phase", f"{dest}/nightly", "-b", dr, "--restore-id", "dr-1"])
    run("Groups on DR resume at the same logical records",
        ["groups", "describe", "payments", "analytics", "-b", dr])
    run("The offset mapping", ["mapping", "show", f"{dest}/nightly", "--restore", "dr-1"])
