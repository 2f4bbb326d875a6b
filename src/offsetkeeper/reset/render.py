"""Plans as files: CSV usable by --from-file, and an equivalent kafka-consumer-groups.sh script.

The script is meant to be reviewed and run elsewhere, so every byte of it is safe to hand to a
shell whatever the group, topic or file names hold: names are quoted with `shlex.quote`, text
in comments has its control characters escaped (a newline in a name can never start a new
command), and each group's offsets travel as CSV in a quoted here-document (no expansion) to
one `kafka-consumer-groups.sh --reset-offsets --from-file` call per group — one JVM per group
instead of one per partition.

A share group's plan (start offsets) becomes a kafka-share-groups.sh script. That tool (Kafka
4.4) resets to the earliest, the latest, a time, an offset, the current offsets or a CSV file,
and deletes start offsets per whole topic: a plan to --to-earliest / --to-latest uses it as
is, deletes use `--delete-offsets`, and exact offsets (every other target, or a rollback) go
through its `--reset-offsets --from-file` with the same here-document CSV.
"""

from __future__ import annotations

import hashlib
import shlex

from offsetkeeper.models import GroupType
from offsetkeeper.reset.parse import csv_line
from offsetkeeper.reset.plan import ResetPlan
from offsetkeeper.times import iso_now


def plan_csv(plan: ResetPlan) -> str:
    """The planned offsets as --from-file CSV (no header, RFC 4180 quoting).

    One group: `topic,partition,offset`; several: `group,topic,partition,offset` (a reset plan
    says which: `ResetPlan.group_column`). Refused groups and partitions with errors are left
    out, so the file holds only what would be committed.
    """
    groups = [g for g in plan.groups if not g.refused]
    several = len(plan.groups) > 1 if plan.group_column is None else plan.group_column
    lines = []
    for g in groups:
        for tp, offset in sorted(g.offsets.items()):
            row = [tp.topic, str(tp.partition), str(offset)]
            lines.append(csv_line(([g.group] if several else []) + row))
    return "\n".join(lines) + ("\n" if lines else "")


def comment_text(text: str) -> str:
    """Text safe inside a one-line shell comment: every non-printable character escaped."""
    out = []
    for ch in str(text):
        if ch.isprintable() and ch != "\\":
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape").decode("ascii") if ch != "\\" else "\\\\")
    return "".join(out)


def _delimiter(body: str) -> str:
    """A here-document delimiter that no line of `body` equals."""
    lines = set(body.splitlines())
    salt = 0
    while True:
        tag = hashlib.sha256(f"{salt}:{body}".encode()).hexdigest()[:12]
        delim = f"OFFSETKEEPER_CSV_{tag}"
        if delim not in lines:
            return delim
        salt += 1


def _skipped(g, offsets, deletes, *, what: str, nothing: str) -> str | None:
    """The script's comment for a group it cannot act on (refused, nothing to do, or a name
    no shell word can hold: a NUL byte), or None."""
    why = None
    if g.refused:
        why = comment_text(g.refused)
    elif not offsets and not deletes:
        why = nothing
    elif "\x00" in g.group or any("\x00" in tp.topic for tp in [*dict(offsets), *deletes]):
        why = "a name holds a NUL byte, which no shell can pass to a command"
    return None if why is None else f"# SKIPPED {what} {comment_text(g.group)}: {why}"


def plan_script(plan: ResetPlan, *, bootstrap_servers: str, command_config: str | None = None) -> str:
    """A reviewable shell script of kafka-consumer-groups.sh commands equivalent to the plan
    (kafka-share-groups.sh for a share group's plan: `share_script`)."""
    if plan.group_type is GroupType.SHARE:
        return share_script(plan, bootstrap_servers=bootstrap_servers, command_config=command_config)
    now = iso_now()
    out = [
        "#!/usr/bin/env bash",
        f"# offsetkeeper reset plan ({comment_text(plan.target)}), generated {now}",
        "# Stop the consumers of these groups before running this script.",
        "# One kafka-consumer-groups.sh --from-file call per group; the offsets are the CSV",
        "# in the quoted here-document before each call.",
        "set -euo pipefail",
        f"BOOTSTRAP={shlex.quote(bootstrap_servers)}",
        'PLAN_FILE="$(mktemp)"',
        "trap 'rm -f \"$PLAN_FILE\"' EXIT",
        "",
    ]
    cc = f" --command-config {shlex.quote(command_config)}" if command_config else ""
    for g in plan.groups:
        offsets = sorted(g.offsets.items())
        deletes = sorted(g.deletes)
        skipped = _skipped(g, offsets, deletes, what="group", nothing="nothing to commit")
        if skipped:
            out.append(skipped)
            continue
        for topic in sorted({tp.topic for tp in deletes}):
            parts = ",".join(str(tp.partition) for tp in deletes if tp.topic == topic)
            out.append(f"# group {comment_text(g.group)}: no committed offset before; delete it")
            out.append(
                f'kafka-consumer-groups.sh --bootstrap-server "$BOOTSTRAP"{cc} '
                f"--group {shlex.quote(g.group)} --delete-offsets "
                f"--topic {shlex.quote(f'{topic}:{parts}')}")
        if not offsets:
            out.append("")
            continue
        body = "\n".join(csv_line([tp.topic, str(tp.partition), str(o)]) for tp, o in offsets)
        delim = _delimiter(body)
        out.append(f"# group {comment_text(g.group)}: {len(offsets)} partition(s)")
        out.append(f"cat > \"$PLAN_FILE\" <<'{delim}'")
        out.append(body)
        out.append(delim)
        out.append(
            f'kafka-consumer-groups.sh --bootstrap-server "$BOOTSTRAP"{cc} '
            f"--group {shlex.quote(g.group)} --reset-offsets --from-file \"$PLAN_FILE\" --execute")
        out.append("")
    return "\n".join(out) + "\n"


# The targets the script names to kafka-share-groups.sh as they are; every other plan is written
# as exact offsets (a CSV for its --from-file, Kafka 4.4).
_SHARE_TOOL_TARGETS = {"--to-earliest", "--to-latest"}


def share_script(plan: ResetPlan, *, bootstrap_servers: str, command_config: str | None = None) -> str:
    """A reviewable script for a share group's plan, run with kafka-share-groups.sh (Kafka
    4.4): --to-earliest / --to-latest as they are, --delete-offsets of whole topics, and the
    exact start offsets of every other plan through its --from-file."""
    now = iso_now()
    out = [
        "#!/usr/bin/env bash",
        f"# offsetkeeper share group plan ({comment_text(plan.target)}), generated {now}",
        "# Stop the share consumers of this group before running this script.",
        "# kafka-share-groups.sh (Kafka 4.4) sets exact start offsets from a CSV file",
        "# (--from-file) and deletes start offsets per whole topic.",
        "set -euo pipefail",
        f"BOOTSTRAP={shlex.quote(bootstrap_servers)}",
        'PLAN_FILE="$(mktemp)"',
        "trap 'rm -f \"$PLAN_FILE\"' EXIT",
        "",
    ]
    cc = f" --command-config {shlex.quote(command_config)}" if command_config else ""
    tool = f'kafka-share-groups.sh --bootstrap-server "$BOOTSTRAP"{cc}'
    exact_by_tool = plan.target in _SHARE_TOOL_TARGETS and not any(
        "clamped" in p.note for p in plan.partitions())
    for g in plan.groups:
        name = comment_text(g.group)
        offsets = sorted(g.offsets.items())
        deletes = sorted(g.deletes) if plan.kind.value == "reset" else \
            sorted(p.tp for p in g.partitions if p.changes)
        skipped = _skipped(g, offsets, deletes, what="share group", nothing="nothing to change")
        if skipped:
            out.append(skipped)
            continue
        for topic in sorted({tp.topic for tp in deletes}):
            out.append(f"# share group {name}: delete the start offsets of topic "
                       f"{comment_text(topic)} (the broker deletes whole topics; partitions set "
                       "below get theirs again)")
            out.append(f"{tool} --group {shlex.quote(g.group)} --delete-offsets "
                       f"--topic {shlex.quote(topic)}")
        if not offsets:
            out.append("")
            continue
        if exact_by_tool:
            for topic in sorted({tp.topic for tp, _ in offsets}):
                parts = ",".join(str(tp.partition) for tp, _ in offsets if tp.topic == topic)
                out.append(f"{tool} --group {shlex.quote(g.group)} --reset-offsets "
                           f"{plan.target} --topic {shlex.quote(f'{topic}:{parts}')} --execute")
            out.append("")
            continue
        body = "\n".join(csv_line([tp.topic, str(tp.partition), str(o)]) for tp, o in offsets)
        delim = _delimiter(body)
        out.append(f"# share group {name}: {len(offsets)} exact start offset(s)")
        out.append(f"cat > \"$PLAN_FILE\" <<'{delim}'")
        out.append(body)
        out.append(delim)
        out.append(f'{tool} --group {shlex.quote(g.group)} --reset-offsets --from-file '
                   '"$PLAN_FILE" --execute')
        out.append("")
    return "\n".join(out) + "\n"
