"""Time lag: exact and interpolated, 0 when caught up, never negative, never NaN."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from offsetkeeper.history.timelag import LogEndTable, exact_ms, interpolated_ms
from offsetkeeper.models import TopicPartition

TP = TopicPartition("t", 0)


def test_exact():
    assert exact_ms(10_000, 5, 5, None) == 0            # caught up
    assert exact_ms(10_000, 5, 9, 4_000) == 6_000
    assert exact_ms(10_000, 5, 9, None) is None         # unknown, not NaN
    assert exact_ms(10_000, 5, 9, 12_000) == 0          # producer clock ahead: clamp


def test_interpolated_between_points():
    pts = [(0, 0), (10_000, 100), (20_000, 200)]
    # offset 150 was appended half-way between 10 s and 20 s
    assert interpolated_ms(pts, 150, 30_000) == 15_000
    assert interpolated_ms(pts, 100, 30_000) == 20_000
    assert interpolated_ms(pts, 200, 30_000) == 0      # caught up


def test_interpolated_before_the_table_extrapolates_at_the_produce_rate():
    pts = [(10_000, 100), (20_000, 200)]                # 10 records/s
    assert interpolated_ms(pts, 50, 20_000) == 15_000   # 50 was appended at 5 s


def test_interpolated_with_too_few_points_is_a_lower_bound_not_nan():
    """Invariant (kafka-lag-exporter #111/#265): a table without a produce rate yields a finite
    number (the age of the oldest point), never NaN; a single point says "unknown" (None), and
    the exported value then falls back to the exact time lag or 0."""
    assert interpolated_ms([(10_000, 100)], 50, 25_000) is None
    assert interpolated_ms([(10_000, 100)], 100, 25_000) == 0
    assert interpolated_ms([(10_000, 100), (20_000, 100)], 50, 25_000) == 15_000
    assert interpolated_ms([], 50, 25_000) == 0


def test_table_is_bounded_and_keeps_the_last_move_of_idle_partitions():
    t = LogEndTable(points=5)
    for i in range(100):
        t.add(TP, i * 1000, i)
    assert len(t._t[TP]) == 5
    t2 = LogEndTable(points=5)
    t2.add(TP, 0, 0)
    t2.add(TP, 1000, 10)
    for i in range(2, 50):
        t2.add(TP, i * 1000, 10)  # idle for a long time
    # the point where the log end reached 10 is still known: offset 5 was appended at ~0.5 s
    assert t2.estimate_ms(TP, 5, 60_000) == 59_500
    t2.retain([])
    assert len(t2) == 0


@given(st.lists(st.tuples(st.integers(0, 10**9), st.integers(0, 10**6)), max_size=30),
       st.integers(0, 10**6), st.integers(0, 2 * 10**9))
def test_interpolated_is_finite_and_non_negative(raw, committed, now):
    pts, last_end = [], 0
    for ts, inc in sorted(raw):
        last_end += inc % 1000
        if not pts or ts > pts[-1][0]:
            pts.append((ts, last_end))
    v = interpolated_ms(pts, committed, now)
    if not pts or committed >= pts[-1][1]:
        assert v == 0
    elif len(pts) == 1:
        assert v is None
    else:
        assert isinstance(v, int) and v >= 0 and not math.isnan(v)
