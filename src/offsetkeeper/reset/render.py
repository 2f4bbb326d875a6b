"""Plans as files: CSV usable by --from-file, and an equivalent kafka-consumer-groups.sh script."""

from __future__ import annotations

import shlex
from datetime import UTC, datetime

from offsetkeeper.reset.plan import ResetPlan


def plan_csv(plan: ResetPlan) -> str:
    """The planned offsets as --from-file CSV (no header).

    One group: `topic,partition,offset`; several: `group,topic,partition,offset`. Refused groups
    and partitions with errors are left out, so the file holds only what would be committed.
    """
    groups = [g for g in plan.groups if not g.refused]
    several = len(plan.groups) > 1
    lines = []
    for g in groups:
        for tp, offset in sorted(g.offsets.items()):
            row = [tp.topic, str(tp.partition), str(offset)]
            lines.append(",".join(([g.group] if several else []) + row))
    return "\n".join(lines) + ("\n" if lines else "")


def plan_script(plan: ResetPlan, *, bootstrap_servers: str, command_config: str | None = None) -> str:
    """A reviewable shell script of kafka-consumer-groups.sh commands equivalent to the plan."""
    now = datetime.now(UTC).isoformat(timespec="seconds")
    out = [
        "#!/usr/bin/env bash",
        f"# offsetkeeper reset plan ({plan.target}), generated {now}",
        "# Stop the consumers of these groups before running this script.",
        "set -euo pipefail",
        f"BOOTSTRAP={shlex.quote(bootstrap_servers)}",
        "",
    ]
    cc = f" --command-config {shlex.quote(command_config)}" if command_config else ""
    for g in plan.groups:
        if g.refused:
            out.append(f"# SKIPPED {g.group}: {g.refused}")
            continue
        for tp, offset in sorted(g.offsets.items()):
            out.append(
                f'kafka-consumer-groups.sh --bootstrap-server "$BOOTSTRAP"{cc} '
                f"--group {shlex.quote(g.group)} --topic {shlex.quote(f'{tp.topic}:{tp.partition}')} "
                f"--reset-offsets --to-offset {offset} --execute"
            )
    return "\n".join(out) + "\n"
