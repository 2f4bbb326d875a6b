"""Which partitions to read and which offset ranges: pure planning plus one cluster read.

Ranges end at positions: a task reads until it sees an offset >= its end or reaches the end of
the partition, so compacted topics and transaction markers (which occupy offsets) are handled.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from offsetkeeper.errors import UsageError
from offsetkeeper.kafka.ports import AdminPort
from offsetkeeper.records.ranges import OffsetRange, split_ranges
from offsetkeeper.spark.kafka.options import (
    EARLIEST,
    LATEST,
    SourceOptions,
    connection,
)

Key = tuple[str, int]


def select_topics(opts: SourceOptions, available: Mapping[str, Sequence[int]]) -> dict[str, list[int]]:
    """Topics and partitions to read, from subscribe / subscribePattern / assign."""
    if opts.assign is not None:
        out = {}
        for t, ps in opts.assign.items():
            if t not in available:
                raise UsageError(f"option assign: unknown topic '{t}'")
            missing = sorted(set(ps) - set(available[t]))
            if missing:
                raise UsageError(f"option assign: topic '{t}' has no partition {missing[0]}")
            out[t] = list(ps)
        return out
    if opts.subscribe_pattern is not None:
        rx = re.compile(opts.subscribe_pattern)
        return {t: list(ps) for t, ps in sorted(available.items()) if rx.fullmatch(t)}
    out = {}
    for t in opts.subscribe:
        if t not in available:
            raise UsageError(f"option subscribe: unknown topic '{t}'")
        out[t] = list(available[t])
    return out


def resolve_ranges(
    partitions: Mapping[str, Sequence[int]],
    *,
    low: Mapping[tuple[str, int], int],
    high: Mapping[tuple[str, int], int],
    starting: int | Mapping[str, Mapping[int, int]],
    ending: int | Mapping[str, Mapping[int, int]],
    start_overrides: Mapping[tuple[str, int], int] | None = None,
) -> list[OffsetRange]:
    """Offset ranges per partition, clamped to [log start, log end]; `start_overrides` (from
    timestamps) win over `starting`. A start below the log start is kept (the reader reports
    the missing offsets as a gap)."""
    out = []
    for t, ps in sorted(partitions.items()):
        for p in sorted(ps):
            lo, hi = low[(t, p)], high[(t, p)]

            s = _pick(starting, t, p, EARLIEST)
            if start_overrides and (t, p) in start_overrides:
                s = start_overrides[(t, p)]
            s = lo if s == EARLIEST else hi if s == LATEST else s
            e = _pick(ending, t, p, LATEST)
            e = hi if e == LATEST else e
            e = min(e, hi)
            s = min(s, e)
            out.append(OffsetRange(t, p, s, e))
    return out


def _pick(spec: int | Mapping[str, Mapping[int, int]], t: str, p: int, default: int) -> int:
    if isinstance(spec, int):
        return spec
    return spec.get(t, {}).get(p, default)


# -- the cluster read --------------------------------------------------------------------------
@dataclass(frozen=True)
class ClusterView:
    """What planning needs from the cluster: the selected partitions, their log start and
    (read_committed: stable) end offsets, and start overrides from timestamps or a group."""

    partitions: dict[str, list[int]]
    low: dict[Key, int]
    high: dict[Key, int]
    overrides: dict[Key, int] = field(default_factory=dict)
    notes: dict[Key, str] = field(default_factory=dict)


def read_cluster(opts: SourceOptions, *, with_overrides: bool = True, admin: AdminPort | None=None) -> ClusterView:
    """Read topics, partitions, watermarks and the start overrides that `opts` asks for
    (with `admin` when given, e.g. the streaming reader's long-lived one).

    Unknown topics or partitions raise UnknownTopicError (a usage error); an unreachable or
    failing cluster raises KafkaOperationError (a failure, exit 1) — they are not confused.
    """
    from offsetkeeper.kafka.admin import KafkaAdmin

    if admin is None:
        with KafkaAdmin(connection(opts)) as own:
            return _read_cluster(opts, own, with_overrides)
    return _read_cluster(opts, admin, with_overrides)


def _read_cluster(opts: SourceOptions, admin: AdminPort, with_overrides: bool) -> ClusterView:
    from offsetkeeper.models import TopicPartition

    wanted = None if (opts.subscribe_pattern is not None) else (
        list(opts.assign) if opts.assign is not None else list(opts.subscribe))
    available = admin.topic_partitions(wanted)
    parts = select_topics(opts, available)
    tps = [TopicPartition(t, p) for t, ps in parts.items() for p in ps]
    wm = admin.watermarks(tps)
    ends = admin.end_offsets(tps, read_committed=opts.read_committed)
    low = {(tp.topic, tp.partition): wm[tp].low for tp in tps}
    high = {(tp.topic, tp.partition): ends[tp] for tp in tps}
    overrides: dict[Key, int] = {}
    notes: dict[Key, str] = {}
    if not with_overrides:
        return ClusterView(parts, low, high)
    if opts.starting_timestamp is not None:
        found = admin.offsets_for_time(tps, opts.starting_timestamp)
        overrides = {(tp.topic, tp.partition): (o if o is not None else LATEST)
                     for tp, o in found.items()}
    if opts.starting_by_timestamp:
        for t, ps in opts.starting_by_timestamp.items():
            for p, ts in ps.items():
                tp = TopicPartition(t, p)
                o = admin.offsets_for_time([tp], ts)[tp]
                overrides[(t, p)] = o if o is not None else LATEST
    if opts.starting_group:
        committed = admin.committed_offsets(opts.starting_group)
        for tp in tps:
            c = committed.get(tp)
            if c is None:
                overrides[(tp.topic, tp.partition)] = opts.starting_fallback
                notes[(tp.topic, tp.partition)] = (
                    f"group {opts.starting_group} has no commit; startingOffsetsFallback")
            else:
                overrides[(tp.topic, tp.partition)] = c.offset
    return ClusterView(parts, low, high, overrides, notes)


def plan(opts: SourceOptions) -> list[OffsetRange]:
    """Ask the cluster for topics and offsets and compute the (split) ranges to read."""
    view = read_cluster(opts)
    ranges = resolve_ranges(view.partitions, low=view.low, high=view.high, starting=opts.starting,
                            ending=opts.ending, start_overrides=view.overrides)
    return split_ranges(ranges, min_partitions=opts.min_partitions,
                        max_records=opts.max_records_per_partition)
