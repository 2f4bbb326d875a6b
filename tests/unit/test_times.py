"""The one ISO-time formatter and the one duration grammar (offsetkeeper.times), property-tested."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetkeeper.errors import UsageError
from offsetkeeper.times import (
    MAX_TIME_MS,
    format_duration_ms,
    human_duration_ms,
    iso_datetime,
    iso_ms,
    parse_duration_ms,
)

ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@given(st.integers(0, MAX_TIME_MS))
def test_iso_ms_is_utc_milliseconds_z_and_exact(ms):
    """Invariant: every representable epoch-ms value formats as 24 characters ending in Z that
    parse back to exactly the same millisecond."""
    text = iso_ms(ms)
    assert ISO.fullmatch(text)
    back = datetime.fromisoformat(text.replace("Z", "+00:00"))
    assert (back - EPOCH) // timedelta(milliseconds=1) == ms


@given(st.one_of(st.integers(max_value=-1), st.integers(min_value=MAX_TIME_MS + 1), st.none(),
                 st.booleans(), st.text(max_size=5), st.sampled_from([math.nan, math.inf, -math.inf])))
def test_iso_ms_out_of_range_is_none(value):
    """Invariant: negative (Kafka's -1 'no timestamp'), beyond 9999, non-numbers -> None, never
    an exception or a made-up date."""
    assert iso_ms(value) is None


@given(st.floats(0, MAX_TIME_MS, allow_nan=False))
def test_iso_ms_floors_floats(ms):
    assert iso_ms(ms) == iso_ms(math.floor(ms))


@given(st.datetimes(timezones=st.just(UTC)))
def test_iso_datetime_agrees_with_iso_ms(when):
    """Invariant: datetimes and epoch milliseconds format alike (one formatter)."""
    if when < EPOCH:
        return
    assert iso_datetime(when) == iso_ms((when - EPOCH) // timedelta(milliseconds=1))


@given(st.integers(1, 10**15))
def test_short_form_round_trips(ms):
    """Invariant: the short form written by format_duration_ms parses back exactly."""
    assert parse_duration_ms(format_duration_ms(ms)) == ms


@given(st.integers(0, 10**5), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59),
       st.integers(0, 999))
def test_iso_and_short_forms_agree(d, h, m, s, ms):
    """Invariant: P{d}DT{h}H{m}M{s}S and {d}d{h}h{m}m{s}s mean the same length."""
    if not (d or h or m or s or ms):
        return
    expected = (((d * 24 + h) * 60 + m) * 60 + s) * 1000 + ms
    assert parse_duration_ms(f"P{d}DT{h}H{m}M{s}.{ms:03d}S") == expected
    assert parse_duration_ms(f"{d}d{h}h{m}m{s}s{ms}ms") == expected


@pytest.mark.parametrize("text,ms", [
    ("2h", 7_200_000), ("30s", 30_000), ("1d2h", 93_600_000), ("500ms", 500), ("1.5m", 90_000),
    ("1h30m", 5_400_000), ("2W", 1_209_600_000), ("PT2H", 7_200_000), ("P1DT2H", 93_600_000),
    ("pt0.5s", 500), ("P1,5D", 129_600_000), ("P2W", 1_209_600_000), (" 6h ", 21_600_000),
    ("PT0.0001S", 1),
])
def test_durations(text, ms):
    assert parse_duration_ms(text) == ms


@given(st.text(max_size=12))
def test_bad_input_is_one_line_naming_the_value(text):
    """Invariant: anything the grammar refuses raises UsageError (exit 2) whose message is one
    line naming the option and the value."""
    try:
        parse_duration_ms(text, what="--interval")
    except UsageError as exc:
        assert exc.exit_code == 2 and "\n" not in exc.message
        assert exc.message.startswith(f"--interval {text!r} ")


@pytest.mark.parametrize("text", ["", "h", "2", "2 h", "1m1h", "2h2h", "-PT1H", "+2h", "P", "PT",
                                  "P1DT", "P1Y", "P1M", "PT-1H", "1hour", "PT１H", "２h", "P1W2D"])
def test_refused(text):
    with pytest.raises(UsageError, match="is not a duration"):
        parse_duration_ms(text)


def test_zero_only_where_allowed():
    with pytest.raises(UsageError, match="greater than zero"):
        parse_duration_ms("0s", what="--interval")
    assert parse_duration_ms("PT0S", allow_zero=True) == 0


@pytest.mark.parametrize("ms,text", [(850, "850ms"), (42_000, "42s"), (750_000, "12.5m"),
                                     (18_720_000, "5.2h"), (3_600_000, "1h"), (267_840_000, "3.1d"),
                                     (None, None), (-2000, "-2s")])
def test_human_duration(ms, text):
    assert human_duration_ms(ms) == text
