"""In-process history store (`memory://`): the exporter without a store, and tests.

Keeps at most `max_cycles` cycles per group (default 10: the exporter needs only the latest
cycles; the sampler keeps its own status window), so memory stays bounded; groups that stop
being sampled are dropped by `prune`.
"""

from __future__ import annotations

import threading
from collections import defaultdict, deque
from collections.abc import Sequence

from offsetkeeper.history.model import Cycle, Gap, Position, Sample
from offsetkeeper.history.store.base import (
    SCHEMA_VERSION,
    GroupSummary,
    HistoryStore,
    PruneResult,
    RetentionPolicy,
)
from offsetkeeper.models import TopicPartition


class MemoryStore(HistoryStore):
    def __init__(self, url: str = "memory://", *, max_cycles: int = 10) -> None:
        self.url = url
        self._lock = threading.Lock()
        self._g: dict[str, deque[tuple[int, tuple[Sample, ...]]]] = defaultdict(
            lambda: deque(maxlen=max_cycles))
        self._cycles: deque[Cycle] = deque(maxlen=max_cycles)
        self._gaps: deque[Gap] = deque(maxlen=max_cycles)
        # the last `max_cycles` reads of source-connector positions
        self._positions: deque[tuple[int, tuple[Position, ...]]] = deque(maxlen=max_cycles)

    def check(self) -> None:
        pass

    def schema_version(self) -> int:
        return SCHEMA_VERSION

    def close(self) -> None:
        pass

    def write(self, samples: Sequence[Sample], cycle: Cycle | None = None) -> None:
        by: dict[tuple[str, int], list[Sample]] = defaultdict(list)
        for s in samples:
            by[(s.group, s.ts)].append(s)
        with self._lock:
            for (g, ts), ss in sorted(by.items(), key=lambda kv: kv[0][1]):
                d = self._g[g]
                if any(t == ts for t, _ in d):
                    continue
                d.append((ts, tuple(ss)))
                if len(d) > 1 and d[-2][0] > ts:  # a late (buffered) cycle: keep time order
                    self._g[g] = deque(sorted(d, key=lambda x: x[0]), maxlen=d.maxlen)
            if cycle is not None and all(c.ts != cycle.ts for c in self._cycles):
                self._cycles.append(cycle)

    keeps_positions = True

    def write_positions(self, positions: Sequence[Position]) -> None:
        by: dict[int, list[Position]] = defaultdict(list)
        for p in positions:
            by[p.ts].append(p)
        with self._lock:
            for ts, ps in sorted(by.items()):
                if all(t != ts for t, _ in self._positions):
                    self._positions.append((ts, tuple(ps)))

    def positions(self, connector: str | None = None, since: int | None = None,
                  until: int | None = None) -> list[Position]:
        lo = since if since is not None else -(2**62)
        hi = until if until is not None else 2**62
        with self._lock:
            out = [p for _, ps in self._positions for p in ps
                   if lo <= p.ts <= hi and (connector is None or p.connector == connector)]
        return sorted(out, key=lambda p: (p.ts, p.worker, p.connector, p.partition))

    def write_gap(self, gap: Gap) -> None:
        with self._lock:
            self._gaps.append(gap)

    def prune(self, policy: RetentionPolicy, now: int) -> PruneResult:
        deleted = 0
        if policy.retain_ms is not None:
            cut = now - policy.retain_ms
            with self._lock:
                for g, d in list(self._g.items()):
                    keep = [x for x in d if x[0] >= cut]
                    deleted += sum(len(x[1]) for x in d if x[0] < cut)
                    if keep:
                        self._g[g] = deque(keep, maxlen=d.maxlen)
                    else:
                        del self._g[g]
        return PruneResult(deleted, 0)

    def _cycles_of(self, group: str) -> list[tuple[int, tuple[Sample, ...]]]:
        with self._lock:
            return list(self._g.get(group, ()))

    def groups(self) -> list[GroupSummary]:
        with self._lock:
            out = [GroupSummary(g, d[0][0], d[-1][0]) for g, d in self._g.items() if d]
        return sorted(out, key=lambda x: (-x.last_ts, x.group))

    def at(self, group: str, ts: int) -> list[Sample]:
        best = [ss for t, ss in self._cycles_of(group) if t <= ts]
        return list(best[-1]) if best else []

    def recent(self, group: str, cycles: int) -> list[Sample]:
        return [s for _, ss in self._cycles_of(group)[-cycles:] for s in ss]

    def series(self, group: str, topic: str | None = None, since: int | None = None,
               until: int | None = None) -> list[Sample]:
        lo, hi = since if since is not None else -(2**62), until if until is not None else 2**62
        return [s for t, ss in self._cycles_of(group) if lo <= t <= hi for s in ss
                if topic is None or s.topic == topic]

    def cycles(self, since: int | None = None, until: int | None = None) -> list[Cycle]:
        lo, hi = since if since is not None else -(2**62), until if until is not None else 2**62
        with self._lock:
            return [c for c in self._cycles if lo <= c.ts <= hi]

    def gaps(self, since: int | None = None, until: int | None = None) -> list[Gap]:
        lo, hi = since if since is not None else -(2**62), until if until is not None else 2**62
        with self._lock:
            return [g for g in self._gaps if g.end >= lo and g.start <= hi]

    def log_end_points(self, since: int) -> dict[TopicPartition, list[tuple[int, int]]]:
        pts: dict[TopicPartition, set[tuple[int, int]]] = defaultdict(set)
        with self._lock:
            for d in self._g.values():
                for t, ss in d:
                    if t >= since:
                        for s in ss:
                            pts[s.tp].add((t, s.log_end))
        return {tp: sorted(v) for tp, v in pts.items()}
