"""Time lag: how long ago the next record a group will read was produced. Pure, never NaN.

Two methods (docs/history.md):

- exact: `now - timestamp of the record at the committed offset` (one fetch per lagging
  partition, cached by offset by the sampler);
- interpolated (kafka-lag-exporter's method): from sampled `(time, log end)` points of the
  partition, estimate when the log end passed the committed offset, and take `now - that time`.
  Cheap (no fetch), but only as good as the sampling: between points it is linear, before the
  first point it extrapolates at the observed produce rate, and with no usable rate it returns
  the age of the oldest point (a lower bound); with a single point it is unknown (None).

Both return 0 when the group is caught up, are never negative, and never NaN or infinite
(kafka-lag-exporter #111, #265 reported NaN when its table had too few points).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Hashable, Iterable, Sequence

DEFAULT_POINTS = 60  # kafka-lag-exporter keeps 60 points per partition


def exact_ms(now: int, committed: int, log_end: int, next_ts: int | None) -> int | None:
    """Exact time lag in ms; 0 when caught up, None when the next record's time is unknown."""
    if committed >= log_end:
        return 0
    if next_ts is None or next_ts < 0:
        return None
    return max(0, now - next_ts)


def interpolated_ms(points: Sequence[tuple[int, int]], committed: int, now: int) -> int | None:
    """Interpolated time lag in ms from `(ts, log_end)` points sorted by time (oldest first).

    The record at offset `committed` was appended while the log end moved from <= committed to
    > committed; that moment is interpolated linearly between the two points around it.
    None only when a lagging partition has a single point (nothing to interpolate from yet).
    """
    if not points:
        return 0
    last_ts, last_end = points[-1]
    if committed >= last_end:
        return 0
    if len(points) == 1:
        return None
    # The latest point at which the record at `committed` did not exist yet.
    before = None
    for i in range(len(points) - 1, -1, -1):
        if points[i][1] <= committed:
            before = i
            break
    if before is not None:
        t_a, e_a = points[before]
        t_b, e_b = points[before + 1]  # exists: the last point's end is > committed
        span = e_b - e_a
        at = t_a + (t_b - t_a) * ((committed - e_a) / span) if span > 0 else t_b
        return max(0, int(now - at))
    # Older than every point: extrapolate back at the produce rate seen across the table.
    t0, e0 = points[0]
    if last_ts > t0 and last_end > e0:
        rate = (last_end - e0) / (last_ts - t0)  # records per ms
        at = t0 - (e0 - committed) / rate
        return max(0, int(now - at))
    return max(0, now - t0)  # no rate known: at least as old as the oldest point


class LogEndTable:
    """Recent `(ts, log end)` points per partition, at most `points` each (bounded memory).

    Keys are any hashable partition id (the sampler uses `(topic, partition)` tuples).
    """

    def __init__(self, points: int = DEFAULT_POINTS) -> None:
        self.points = points
        self._t: dict[Hashable, deque[tuple[int, int]]] = {}

    def add(self, tp: Hashable, ts: int, log_end: int) -> None:
        d = self._t.get(tp)
        if d is None:
            d = self._t[tp] = deque(maxlen=self.points)
        if d and d[-1][0] >= ts:
            return  # keep the table ordered by time
        if d and d[-1][1] == log_end and len(d) >= 2 and d[-2][1] == log_end:
            # An idle partition: keep the first and the latest point of a flat run only, so the
            # table keeps a useful history of when the log end last moved.
            d[-1] = (ts, log_end)
            return
        d.append((ts, log_end))

    def seed(self, tp: Hashable, points: Iterable[tuple[int, int]]) -> None:
        for ts, end in sorted(points):
            self.add(tp, ts, end)

    def estimate_ms(self, tp: Hashable, committed: int, now: int) -> int | None:
        d = self._t.get(tp)
        if not d or committed >= d[-1][1]:
            return 0
        return interpolated_ms(d, committed, now)

    def retain(self, tps: Collection[Hashable]) -> None:
        """Forget partitions not in `tps` (keeps memory flat when groups come and go)."""
        if len(self._t) <= len(tps) and all(tp in self._t for tp in tps):
            return  # nothing stale: every known partition was just sampled
        keep = tps if isinstance(tps, (set, frozenset, dict)) else set(tps)
        for tp in [t for t in self._t if t not in keep]:
            del self._t[tp]

    def __len__(self) -> int:
        return len(self._t)
