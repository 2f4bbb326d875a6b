"""Status that holds its verdicts (issue 32, goal 4): the scenarios Burrow and `lag status` were
compared on, through the same evaluator `lag status`, the exporter and the dashboard use
(the last `window` samples judged, the longer look-back read for rewinds)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetkeeper.history.model import Sample
from offsetkeeper.history.status import (
    RewindMark,
    Status,
    advance_peak,
    evaluate_status,
    falling_behind,
    rewind_mark,
    rewind_marks,
)

WINDOW = 10


def series(commits, ends, *, owner="member-1", step=30_000):
    return [Sample(ts=i * step, group="g", topic="t", partition=0, committed=c, log_start=0,
                   log_end=e, consumer_id=owner, state="stable" if owner else "empty",
                   members=1 if owner else 0)
            for i, (c, e) in enumerate(zip(commits, ends, strict=True))]


def judge(samples):
    """What `lag status` does: the window's samples judged, all of them as the look-back."""
    points = {("t", 0): [(s.ts, s.committed) for s in samples]}
    return evaluate_status(samples[-WINDOW:], window=WINDOW, group="g",
                           rewinds=rewind_marks(points)).partitions[0]


REWOUND = [100 * i for i in range(11)] + [200 + 50 * i for i in range(14)]   # 1000 -> 200, +50
REWOUND_ENDS = [1000 + 10 * i for i in range(25)]


@pytest.mark.parametrize(("name", "commits", "ends", "owner", "expected"), [
    ("healthy", [100 * i for i in range(15)], [100 * i + (7 if i % 2 else 3) for i in range(15)],
     "m", Status.OK),
    ("falling behind", [10 * i for i in range(15)], [30 * i + 5 for i in range(15)], "m",
     Status.WARN),
    ("closed: no member, the producer goes on", [500] * 15, [500 + 20 * i for i in range(15)],
     "", Status.STOP),
    ("alive but not committing", [500] * 15, [600 + 20 * i for i in range(15)], "m",
     Status.STALL),
    ("re-committing the same offset", [500] * 15, [510 + i for i in range(15)], "m",
     Status.STALL),
    ("rewound and re-reading, 14 samples after the rewind", REWOUND, REWOUND_ENDS, "m",
     Status.REWIND),
    ("rewound, passed its old offset", [*REWOUND, 1100, 1250], [*REWOUND_ENDS, 1300, 1300], "m",
     Status.OK),
    ("idle: caught up, nothing produced", [700] * 15, [700] * 15, "", Status.OK),
    ("small bounded lag (2-3, 50 records a sample)", [50 * i for i in range(15)],
     [50 * i + (2 if i < 7 else 3) for i in range(15)], "m", Status.OK),
    ("steady lag, not growing", [100 * i for i in range(15)], [100 * i + 400 for i in range(15)],
     "m", Status.OK),
])
def test_scenarios(name, commits, ends, owner, expected):
    assert judge(series(commits, ends, owner=owner)).status is expected, name


def test_rewind_holds_past_the_window_and_shows_the_progress_back():
    """Invariant: REWIND stays while the committed offset is below the offset it had before
    the rewind, however many windows the re-reading takes (Burrow held it for 165 s where
    `lag status` dropped it after one window and said STALL), and the reason says how far back
    it has come."""
    p = judge(series(REWOUND, REWOUND_ENDS))
    assert p.status is Status.REWIND
    assert "went back from 1000 to 200" in p.reason
    assert "re-reading: 650 of 800 back (81%)" in p.reason
    assert "REWIND until it passes 1000" in p.reason


def test_bounded_small_lag_is_not_warn():
    """Invariant: a consumer whose lag stays small and bounded (2-3 records for ten samples
    while producers write 50 between samples) is OK; Burrow's rule alone called it WARN."""
    s = series([50 * i for i in range(10)], [50 * i + (2 if i < 4 else 3) for i in range(10)])
    assert judge(s).status is Status.OK
    # the same lag shape with no production between samples is a backlog growing: WARN
    assert falling_behind(series([0] * 10, [2 + i for i in range(10)]))


def test_window_only_callers_keep_burrows_rewind_rule():
    s = series([10, 20, 5] + [6] * 7, [30] * 10)
    assert evaluate_status(s, window=WINDOW).partitions[0].status is Status.REWIND


@pytest.mark.parametrize(("points", "expected"), [
    ([], None),
    ([(1, 5), (2, 7), (3, 9)], None),
    ([(1, 10), (2, 4)], RewindMark(10, 1, 4, 2)),
    ([(1, 10), (2, 4), (3, 8)], RewindMark(10, 1, 4, 2)),
    ([(1, 10), (2, 4), (3, 10)], None),                      # back at its old offset
    ([(1, 10), (2, 10), (3, 4), (4, 2), (5, 6)], RewindMark(10, 2, 2, 3)),  # rewound twice
])
def test_rewind_mark(points, expected):
    assert rewind_mark(points) == expected


@given(st.lists(st.integers(0, 50), min_size=1, max_size=30), st.data())
def test_folding_again_or_twice_changes_nothing(offsets, data):
    """The exporter folds each cycle's offsets as it sees them, sometimes a cycle twice: the
    mark equals the look-back's."""
    points = [(i, c) for i, c in enumerate(offsets)]
    state = None
    for ts, c in points:
        state = advance_peak(state, ts, c)
        if data.draw(st.booleans()):
            state = advance_peak(state, ts, c)
        if data.draw(st.booleans()) and ts > 0:
            state = advance_peak(state, *points[data.draw(st.integers(0, ts))])
    assert state.mark() == rewind_mark(points)


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_store_look_back_reads(kind, tmp_path):
    """The look-back reads of `lag status` agree between the SQL aggregate and the generic
    one: per partition the (ts, committed) points of the last N cycles and their maximum."""
    from offsetkeeper.history.model import Cycle
    from offsetkeeper.history.store import open_store

    url = str(tmp_path / "h.db") if kind == "sqlite" else "memory://"
    offsets = [5, 9, 3, 4, 8]
    with open_store(url) as store:
        for i, c in enumerate(offsets):
            store.write([Sample(ts=i, group=g, topic="t", partition=p, committed=c + p,
                                log_start=0, log_end=20) for g in ("a", "b") for p in (0, 1)],
                        Cycle(i, 1, 2, 4, 1))
        points = store.committed_points_many(["a", "b", "nope"], 3)
        peaks = store.committed_peaks_many(["a", "b", "nope"], 3)
    assert set(points) == set(peaks) == {"a", "b"}
    assert points["a"][("t", 1)] == [(2, 4), (3, 5), (4, 9)]
    assert peaks["b"] == {("t", 0): 8, ("t", 1): 9}
