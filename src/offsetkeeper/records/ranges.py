"""Offset ranges of one partition: the unit every reader of Kafka records works in (the data
source's tasks, backup tasks, restore validation), how large ones are split, and what counts as
offsets lost to retention.

Ranges end at positions: a reader reads until it sees an offset >= its end or reaches the end of
the partition, so compacted topics and transaction markers (which occupy offsets) are handled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class OffsetRange:
    """Offsets ``[start, end)`` of one partition (positions, not counts)."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def split_ranges(
    ranges: Sequence[OffsetRange],
    *,
    min_partitions: int | None = None,
    max_records: int | None = None,
) -> list[OffsetRange]:
    """Split large ranges so that there are at least `min_partitions` pieces (by size, as
    Spark's Kafka source does) and no piece spans more than `max_records` offsets.
    Empty ranges are kept (they still verify the partition) but never split."""
    out: list[OffsetRange] = []
    total = sum(r.size for r in ranges)
    target = None
    if min_partitions and min_partitions > len(ranges) and total > 0:
        target = total / min_partitions
    for r in ranges:
        parts = 1
        if target and r.size > target:
            parts = math.ceil(r.size / target)
        if max_records and r.size > max_records:
            parts = max(parts, math.ceil(r.size / max_records))
        parts = max(1, min(parts, r.size or 1))
        step = r.size / parts
        bounds = [r.start + round(i * step) for i in range(parts)] + [r.end]
        out.extend(OffsetRange(r.topic, r.partition, bounds[i], bounds[i + 1]) for i in range(parts))
    return out


def detect_gap(start: int, end: int, first_seen: int | None, log_start: int) -> tuple[int, int] | None:
    """The offsets ``[start, x)`` of a range lost to retention, or None.

    Offsets skipped because of compaction or transaction markers are not gaps: only offsets
    below the current log start are. `first_seen` is the first offset read (None if none).
    """
    upto = end if first_seen is None else min(first_seen, end)
    if log_start > start and upto > start:
        return (start, min(log_start, upto))
    return None
