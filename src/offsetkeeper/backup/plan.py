"""Planning a backup run (pure): which offsets of which partitions this run reads.

Snapshot semantics: the end of every partition is its log end (last stable offset, since the
backup reads committed records) fixed when the run starts. A first run starts at the log start;
a later run of the same backup id starts where the previous run ended (incremental).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from offsetkeeper.backup.manifest import Manifest
from offsetkeeper.errors import StoreError


@dataclass(frozen=True)
class PartitionPlan:
    topic: str
    partition: int
    start: int  # first offset to read (may be below the log start: the reader reports a gap)
    end: int  # the log end fixed at the start of the run (exclusive)
    log_start: int

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class RunPlan:
    run: int
    partitions: tuple[PartitionPlan, ...]

    @property
    def to_read(self) -> list[PartitionPlan]:
        return [p for p in self.partitions if p.size > 0]

    @property
    def offsets(self) -> int:
        return sum(p.size for p in self.partitions)


def plan_run(
    previous: Manifest | None,
    partitions: Mapping[str, Sequence[int]],
    *,
    log_start: Mapping[tuple[str, int], int],
    log_end: Mapping[tuple[str, int], int],
) -> RunPlan:
    """Ranges for the next run of a backup given the previous manifest and the cluster's offsets."""
    prev_end = previous.end_offsets() if previous else {}
    out = []
    for t in sorted(partitions):
        for p in sorted(partitions[t]):
            lo, hi = log_start[(t, p)], log_end[(t, p)]
            start = prev_end.get((t, p), lo)
            if start > hi:
                raise StoreError(
                    f"{t}:{p}: the log end {hi} is below the end {start} of the previous run of "
                    f"this backup (was the topic recreated?); use a new backup id",
                    topic=t, partition=p)
            out.append(PartitionPlan(t, p, start, hi, lo))
    run = (previous.last_run if previous else 0) + 1
    return RunPlan(run, tuple(out))


def cap_plan(plan: RunPlan, max_offsets: int | None) -> RunPlan:
    """The plan with at most `max_offsets` offsets in all, shared max-min fairly: every partition
    behind gets the same share (a partition needing less gives the rest to the others), so one
    busy partition cannot starve the rest. Each range still starts where the previous run ended,
    so the part left out is simply read by the next increment. None: the plan unchanged."""
    if max_offsets is None or plan.offsets <= max_offsets:
        return plan
    if max_offsets < 1:
        raise ValueError(f"max_offsets {max_offsets} is below 1")
    behind = sorted((p for p in plan.partitions if p.size > 0),
                    key=lambda p: (p.size, p.topic, p.partition))
    grant: dict[tuple[str, int], int] = {}
    left, waiting = max_offsets, len(behind)
    for p in behind:  # smallest first: what a small partition does not need goes to the rest
        # floor: the remainder of an uneven split passes on to the partitions furthest behind
        share = left // waiting
        take = min(p.size, share)
        grant[(p.topic, p.partition)] = take
        left -= take
        waiting -= 1
    out = tuple(PartitionPlan(p.topic, p.partition, p.start,
                              p.start + grant.get((p.topic, p.partition), 0), p.log_start)
                for p in plan.partitions)
    return RunPlan(plan.run, out)


def backup_lag(
    backed_up: Mapping[tuple[str, int], int],
    *,
    log_start: Mapping[tuple[str, int], int],
    log_end: Mapping[tuple[str, int], int],
) -> dict[tuple[str, int], int]:
    """Offsets each partition's log end is ahead of the backup (records still to back up; on
    compacted or transactional topics an upper bound). A partition the backup does not have yet
    is behind by its whole log; never negative (a log end below the backup is a recreated topic,
    which the next increment reports)."""
    return {tp: max(0, end - backed_up.get(tp, log_start.get(tp, 0)))
            for tp, end in log_end.items()}
