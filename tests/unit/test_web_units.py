"""Pure parts of the dashboard: SVG charts, listen/auth rules, the time picker, filter/sort,
the history adapter on an in-memory store."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetkeeper.errors import UsageError
from offsetkeeper.history.model import Cycle, Sample
from offsetkeeper.history.store import open_store
from offsetkeeper.ops.group_pages import OverviewRow, filter_sort
from offsetkeeper.ops.history_view import HistoryView
from offsetkeeper.web import security as sec
from offsetkeeper.web.svg import downsample, sparkline, time_chart
from offsetkeeper.web.timefield import datetime_local_to_iso


def test_sparkline_escapes_label_and_handles_empty():
    svg = str(sparkline([1, 5, 3], label="<script>x</script>"))
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "<polyline" in svg
    assert "<polyline" not in str(sparkline([]))
    assert "<polyline" in str(sparkline([7]))            # one point: a flat line


@given(st.lists(st.floats(min_value=0, max_value=1e12, allow_nan=False), max_size=300))
def test_sparkline_coordinates_stay_inside(values):
    """Every point lies inside the viewBox, whatever the values (no NaN, no overflow)."""
    svg = str(sparkline(values, width=120, height=24))
    if not values:
        return
    pts = svg.split('points="')[1].split('"')[0].split()
    for p in pts:
        x, y = map(float, p.split(","))
        assert 0 <= x <= 120 and 0 <= y <= 24


def test_downsample_keeps_peaks_and_last():
    pts = [(float(i), 0.0) for i in range(1000)]
    pts[500] = (500.0, 99.0)
    out = downsample(pts, 50)
    assert len(out) == 50 and (500.0, 99.0) in out and out[-1] == pts[-1]
    assert downsample(pts[:10], 50) == pts[:10]


def test_time_chart_range_and_empty():
    svg = str(time_chart([(1000.0, 5.0), (2000.0, 10.0)], title="lag <1h>", since_ms=0,
                         until_ms=3_600_000))
    assert "lag &lt;1h&gt;" in svg and 'class="chart-line"' in svg
    assert "no samples" in str(time_chart([], title="t"))


@pytest.mark.parametrize("value,expected", [
    ("127.0.0.1:8080", ("127.0.0.1", 8080)), ("[::1]:9000", ("::1", 9000)),
    ("0.0.0.0:80", ("0.0.0.0", 80))])
def test_parse_listen(value, expected):
    assert sec.parse_listen(value) == expected


@pytest.mark.parametrize("value", ["8080", "host:", ":80", "h:99999", "h:abc"])
def test_parse_listen_rejects(value):
    with pytest.raises(UsageError, match="HOST:PORT"):
        sec.parse_listen(value)


def test_non_loopback_needs_token():
    sec.check_listen("127.0.0.1", None)
    sec.check_listen("localhost", None)
    sec.check_listen("0.0.0.0", "tok")
    with pytest.raises(UsageError, match="loopback"):
        sec.check_listen("0.0.0.0", None)
    with pytest.raises(UsageError):
        sec.check_listen("10.1.2.3", "")


def test_basic_auth_only_over_tls():
    basic = "Basic " + base64.b64encode(b"ops:tok").decode()
    assert sec.token_from_header(basic, tls=False) is None
    assert sec.token_from_header(basic, tls=True) == "tok"
    assert sec.token_from_header("Bearer tok", tls=False) == "tok"
    assert sec.token_from_header("Basic !!!", tls=True) is None
    assert sec.token_from_header(None, tls=True) is None


def test_csrf_tokens_are_per_session():
    s = sec.Sessions()
    a, b = s.new_id(), s.new_id()
    assert s.csrf_ok(a, s.csrf_token(a))
    assert not s.csrf_ok(b, s.csrf_token(a))
    assert not s.csrf_ok(a, None) and not s.csrf_ok(None, "x")
    assert not sec.Sessions().csrf_ok(a, s.csrf_token(a))     # another process secret


@pytest.mark.parametrize("value,expected", [
    ("2026-11-20T09:40", "2026-11-20T09:40:00Z"),
    ("2026-11-20T09:40:05", "2026-11-20T09:40:05Z"),
    ("2026-11-20T09:40:00+02:00", "2026-11-20T09:40:00+02:00"),
    ("PT1H", "PT1H"), ("", "")])
def test_datetime_local_is_utc(value, expected):
    assert datetime_local_to_iso(value) == expected


def _row(g, lag=None, status=None, state="empty"):
    return OverviewRow(g, state, 0, 1, lag, None, status, "")


def test_filter_sort():
    rows = [_row("b", 5, "OK"), _row("A-pay", None, "ERR", "stable"), _row("c", 20, "WARN")]
    assert [r.group for r in filter_sort(rows, sort="lag", desc=True)] == ["c", "b", "A-pay"]
    assert [r.group for r in filter_sort(rows, q="pay")] == ["A-pay"]
    assert [r.group for r in filter_sort(rows, state="stable")] == ["A-pay"]
    assert [r.group for r in filter_sort(rows, sort="status", desc=True)] == ["A-pay", "c", "b"]
    assert [r.group for r in filter_sort(rows, sort="nonsense")] == ["A-pay", "b", "c"]


def test_history_view_status_series_and_cache(tmp_path):
    url = str(tmp_path / "h.db")
    now = 10_000_000
    with open_store(url) as s:
        for c in range(12):
            ts = now - (11 - c) * 60_000
            # committed never moves, lag grows: STALL/STOP territory for partition 0
            s.write([Sample(ts=ts, group="g", topic="t", partition=0, committed=5,
                            log_start=0, log_end=10 + c, members=1, consumer_id="m",
                            time_lag_ms=1000 * c)], Cycle(ts, 60_000, 1, 1, 1))
    h = HistoryView(url)
    g = h.group("g", partitions=True)
    assert g.status in ("ERR", "WARN") and g.reason
    assert g.spark[-1] == 16 and g.time_lag_s == 11.0
    assert g.partitions[0].status in ("STALL", "STOP", "WARN")
    series = h.series("g", "1h", now_ms=now)
    assert len(series.lag) == 12 and series.since_ms == now - 3600_000
    assert h.groups(["g", "unknown"])["unknown"].status is None
    assert h.groups(["g"])["g"] is h.groups(["g"])["g"]        # cached until a new cycle
    h.close()


def test_history_warmer_recomputes_shown_groups(tmp_path):
    """The warmer reads every stored group at start, then refreshes groups a page showed (or
    that were there at start) when a new cycle lands — not groups nobody asked for."""
    import time

    url = str(tmp_path / "h.db")

    def cycle(ts, lag, groups):
        with open_store(url) as s:
            s.write([Sample(ts=ts, group=g, topic="t", partition=0, committed=5, log_start=0,
                            log_end=5 + lag) for g in groups], Cycle(ts, 1000, 2, 2, 1))

    def wait(group, ts):
        deadline = time.monotonic() + 10
        while h._cache.get(group, (0,))[0] != ts:
            assert time.monotonic() < deadline, f"the warmer did not refresh {group}"
            time.sleep(0.02)

    cycle(1000, 1, ["shown"])
    h = HistoryView(url)
    try:
        h.start_warming(every_s=0.05)
        wait("shown", 1000)                                   # pre-warmed at start
        assert h.groups(["shown"])["shown"].spark == (1,)
        cycle(2000, 7, ["shown", "late"])
        wait("shown", 2000)
        assert h._cache["shown"][1].spark == (1, 7)
        assert "late" not in h._cache
    finally:
        h.close()


def test_backup_destination_passwords_hidden():
    from offsetkeeper.web.backups import shown

    assert shown("s3://key:s3cret@bucket/backups") == "s3://key:******@bucket/backups"
    assert shown("/backups") == "/backups"


def test_groups_page_history_batched_equals_per_group(tmp_path):
    """Invariant: the groups page's batch read (one recent_many call) gives every group the
    same status, reason, time lag and sparkline as reading each group alone; a new cycle of
    one group re-reads only that group."""
    url = str(tmp_path / "h.db")
    names = ["a", "we'ird\n<script>", "short"]
    with open_store(url) as s:
        for c in range(25):
            ts = 1_000_000 + c * 60_000
            s.write([Sample(ts=ts, group=g, topic="t", partition=p, committed=5 + (c if k else 0),
                            log_start=0, log_end=10 + c * (k + 1), time_lag_ms=100 * c)
                     for k, g in enumerate(names) if g != "short" or c > 21 for p in range(2)],
                    Cycle(ts, 60_000, 3, 6, 1))
    batched, single = HistoryView(url), HistoryView(url)
    single.batched = False
    try:
        many = batched.groups([*names, "unknown"])
        alone = single.groups([*names, "unknown"])
        assert many == alone and many["unknown"].status is None
        assert len(many["a"].spark) == 20 and len(many["short"].spark) == 3
        assert all(many[g] == batched.group(g) for g in names)
        with open_store(url) as s:
            s.write([Sample(ts=9_000_000, group="a", topic="t", partition=0, committed=5,
                            log_start=0, log_end=99)], Cycle(9_000_000, 60_000, 1, 1, 1))
        again = batched.groups(names)
        assert again["a"].last_sample_ms == 9_000_000 and again["short"] is many["short"]
    finally:
        batched.close()
        single.close()
