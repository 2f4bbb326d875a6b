"""A reset target from the commit history: `offsets reset --to-commit-time T --commit-history DIR`.

Each group is reset to the offsets it had committed as of T, replayed from the scanned
`__consumer_offsets` log (offsetlog.commit_history.offsets_at). Partitions the group had not committed
by T, or whose offsets were deleted or expired by T, are left out (and so left unchanged).
"""

from __future__ import annotations

from offsetkeeper.errors import UnknownGroupError, UsageError
from offsetkeeper.models import TopicPartition
from offsetkeeper.offsetlog.commit_history import offsets_at
from offsetkeeper.reset.targets import FromOffsets
from offsetkeeper.times import iso_ms


def from_commit_history(history: str | None, time_ms: int, groups: list[str] | tuple[str, ...]) -> FromOffsets:
    """Offsets per group as of `time_ms` from the commit history in `history`, with a note per
    partition saying which commit it came from."""
    if not history:
        raise UsageError("--to-commit-time needs --commit-history DIR (made by 'offsetkeeper commits scan')")
    if not groups:
        raise UsageError("--to-commit-time needs --group GROUP (repeatable): the history names many groups")
    offsets: dict[str | None, dict[TopicPartition, int]] = {}
    notes: dict[str | None, dict[TopicPartition, str]] = {}
    for group in dict.fromkeys(groups):
        result = offsets_at(history, group, time_ms)
        if not result.offsets:
            raise UnknownGroupError(f"group '{group}' had no committed offsets at {iso_ms(time_ms)} in the "
                                    f"commit history {history}", group=group)
        late = result.summary is not None and time_ms > result.summary.scanned_at_ms
        offsets[group] = {tp: e.offset for tp, e in result.offsets.items()}  # type: ignore[misc]
        notes[group] = {tp: f"commit of {iso_ms(e.time_ms)}"
                        + (f" (history scanned {result.summary.scanned_at}; later commits unseen)"
                           if late and result.summary else "")
                        for tp, e in result.offsets.items()}
    return FromOffsets(offsets=offsets, source=f"commit history {history}", notes=notes)


def commit_time_target(history: str | None, time_text: str, groups) -> FromOffsets:
    """`--to-commit-time T --commit-history DIR` for the given groups."""
    from offsetkeeper.times import parse_time

    return from_commit_history(history, parse_time(time_text, what="--to-commit-time"), list(groups))
