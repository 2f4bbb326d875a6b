"""Times and durations as people read and write them: the one formatter and the one grammar.

Formatting (`iso_ms`): epoch milliseconds -> ISO-8601 UTC with milliseconds and a `Z`
(`2026-11-20T09:40:00.250Z`), always 24 characters. Defined on every input: `None`, a bool, a
non-number, NaN/infinity, a negative number (Kafka's -1 "no timestamp") and anything after
9999-12-31T23:59:59.999Z give `None` (shown as `-` in tables, `null` in JSON). Floats are floored
to the millisecond. `iso_datetime` formats an aware `datetime` the same way.

Ids (`id_stamp`): the time part of every id offsetkeeper makes (snapshots `snap-<stamp>-xxxx`,
restores `restore-<stamp>`, streaming resets `<stamp>-xxxxxx`): `20261121T194501.123Z`, UTC to the
millisecond, fixed width, so ids sort by time as plain text. Ids are names, never parsed back:
ids of older releases (`restore-20261121T194501123`, `20261121T194501Z-1a2b3c`) stay valid.

Durations (`parse_duration_ms`): one grammar for every option that takes one (`--by-duration`,
`--since 6h`, `--interval`, `--retain`, `--deadline` ...), in either form:
- short: one or more `<number><unit>` with units `w d h m s ms`, largest first, each at most once:
  `2h`, `30s`, `1d2h`, `1h30m`, `500ms`, `1.5m` (case-insensitive);
- ISO-8601: `P[nW]` or `P[nD][T[nH][nM][nS]]`: `PT2H`, `P1DT2H`, `PT0.5S`, `P2W` (`,` or `.`
  before a fraction; years and months are refused: they have no fixed length).
Sub-millisecond remainders round up. No sign: a duration is a length. Bad input is one
`UsageError` (exit 2) naming the option, the value and the forms expected.

Points in time (`parse_time`): the one parser of every option that takes a time
(`--to-datetime`, `offsets show --at`, restore's `--from-time`/`--to-time`, `commits show
--since`): the documented forms only (`TIME_FORMS`), ISO-8601 (UTC when no zone) or 13-digit
epoch milliseconds. Python's fromisoformat also reads any separator (2023-11-14x22:13:20), week
dates (2023-W46-2) and basic forms (20231114T2213): a typo would be applied as a time instead of
refused. Sub-millisecond digits round UP (a record stamped `.250` is not "at or after" `.2504`).
Times before 1970-01-01T00:00:00Z are refused: Kafka reads a negative timestamp as
"latest"/"earliest", never as a time. `parse_when` (the history commands) adds `now` and a
duration meaning "ago"; `duration_start_ms` (`--by-duration`) is now minus a duration.
"""

from __future__ import annotations

import math
import re
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from offsetkeeper.errors import UsageError

# 9999-12-31T23:59:59.999Z: the last instant ISO-8601 (and datetime) can name.
MAX_TIME_MS = 253_402_300_799_999
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def iso_ms(ms: object) -> str | None:
    """Epoch milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ`; None outside 1970..9999 (see module)."""
    if ms is None or isinstance(ms, bool) or not isinstance(ms, int | float):
        return None
    if isinstance(ms, float):
        if not math.isfinite(ms):
            return None
        ms = math.floor(ms)
    if ms < 0 or ms > MAX_TIME_MS:
        return None
    seconds, millis = divmod(ms, 1000)
    when = datetime.fromtimestamp(seconds, UTC)
    return f"{when:%Y-%m-%dT%H:%M:%S}.{millis:03d}Z"


def iso_datetime(when: datetime) -> str:
    """An aware datetime (UTC when naive) formatted like `iso_ms`: `2026-11-21T19:45:01.123Z`."""
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    return f"{when:%Y-%m-%dT%H:%M:%S}.{when.microsecond // 1000:03d}Z"


def id_stamp(when: datetime | None = None) -> str:
    """The time part of an id: `20261121T194501.123Z` (now when `when` is None; UTC when naive)."""
    when = datetime.now(UTC) if when is None else (
        when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC))
    return f"{when:%Y%m%dT%H%M%S}.{when.microsecond // 1000:03d}Z"


def iso_now() -> str:
    """Now, formatted like `iso_ms`."""
    return iso_datetime(datetime.now(UTC))


# -- durations --------------------------------------------------------------------------------

DURATION_FORMS = "e.g. 2h, 30s, 1d2h, 500ms, PT2H or P1DT2H"
_NUM = r"[0-9]+(?:[.,][0-9]+)?"
_SHORT_UNITS = (("w", 604_800_000), ("d", 86_400_000), ("h", 3_600_000), ("m", 60_000),
                ("s", 1000), ("ms", 1))
_SHORT = re.compile(
    rf"(?:(?P<w>{_NUM})w)?(?:(?P<d>{_NUM})d)?(?:(?P<h>{_NUM})h)?(?:(?P<m>{_NUM})m(?!s))?"
    rf"(?:(?P<s>{_NUM})s)?(?:(?P<ms>{_NUM})ms)?", re.IGNORECASE)
_ISO = re.compile(
    rf"P(?:(?P<w>{_NUM})W|(?:(?P<d>{_NUM})D)?(?:T(?=[0-9])(?:(?P<h>{_NUM})H)?(?:(?P<m>{_NUM})M)?"
    rf"(?:(?P<s>{_NUM})S)?)?)", re.IGNORECASE)
_UNIT_MS = dict(_SHORT_UNITS)


def _quoted(text: object) -> str:
    return repr(str(text))


def parse_duration_ms(text: object, *, what: str = "duration", allow_zero: bool = False) -> int:
    """A duration in the short or the ISO-8601 form -> milliseconds (> 0 unless `allow_zero`)."""
    s = str(text if text is not None else "").strip()
    m = _ISO.fullmatch(s) if s[:1] in ("P", "p") else _SHORT.fullmatch(s)
    parts = {k: v for k, v in m.groupdict().items() if v} if m else {}
    if not parts:
        hint = " (no sign: a duration is a length)" if s[:1] in ("-", "+") else ""
        raise UsageError(f"{what} {_quoted(text)} is not a duration (expected {DURATION_FORMS}){hint}")
    total = sum((Decimal(v.replace(",", ".")) * _UNIT_MS[k.lower()] for k, v in parts.items()),
                Decimal(0))
    ms = int(total.to_integral_value(rounding="ROUND_CEILING"))
    if ms <= 0 and not allow_zero:
        raise UsageError(f"{what} {_quoted(text)} must be greater than zero")
    return ms


def is_duration(text: object) -> bool:
    """Whether `text` reads as a duration in the grammar above."""
    try:
        parse_duration_ms(text, allow_zero=True)
    except UsageError:
        return False
    return True


def format_duration_ms(ms: int) -> str:
    """Milliseconds in the short form, exact (`1d2h`, `500ms`, `0s`); parses back to `ms`."""
    if ms <= 0:
        return "0s"
    parts = []
    for unit, size in _SHORT_UNITS:
        n, ms = divmod(ms, size)
        if n:
            parts.append(f"{n}{unit}")
    return "".join(parts)


def human_duration_ms(ms: float | None) -> str | None:
    """A rounded length for tables: `850ms`, `42s`, `12.5m`, `5.2h`, `3.1d` (JSON keeps ms)."""
    if ms is None or isinstance(ms, bool) or not isinstance(ms, int | float) or not math.isfinite(ms):
        return None
    if ms == 0:
        return "0s"
    sign, ms = ("-" if ms < 0 else ""), abs(ms)
    unit, size = next((u, s) for u, s, limit in (("ms", 1, 1000), ("s", 1000, 60_000),
                                                 ("m", 60_000, 3_600_000), ("h", 3_600_000, 86_400_000),
                                                 ("d", 86_400_000, math.inf)) if ms < limit)
    value = ms / size
    text = f"{value:.0f}" if unit == "ms" or value >= 100 else f"{value:.1f}".removesuffix(".0")
    return f"{sign}{text}{unit}"


# -- points in time ---------------------------------------------------------------------------

TIME_FORMS = ("ISO-8601 YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS[.fraction]] with an optional zone Z, "
              "+HH:MM or +HHMM (UTC when none), e.g. 2026-11-20T09:40:00.250+02:00, or 13-digit epoch "
              "milliseconds such as 1795167600000")
# The documented forms, nothing more (see the module's docstring).
_ISO_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}"
    r"(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?", re.ASCII)
# Epoch milliseconds: 13 digits (2001-09-09 to 2286-11-20); a shorter number is more likely a
# date typed without dashes (20231114) than a time in 1970.
_EPOCH_MS = re.compile(r"\d{13}", re.ASCII)
_NEGATIVE_INT = re.compile(r"-[0-9]+")


def datetime_ms(dt: datetime, *, what: str, text: object) -> int:
    """Epoch milliseconds of a datetime (UTC when naive), rounded up; before 1970 refused."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    try:
        delta = dt - _EPOCH
    except OverflowError:
        delta = None
    if delta is None or delta < timedelta(0):
        raise UsageError(f"{what} {_quoted(text)} is before 1970-01-01T00:00:00Z; Kafka timestamps "
                         "start there (a negative timestamp means latest/earliest to a broker)")
    whole, rest = divmod(delta, timedelta(milliseconds=1))
    return whole + (1 if rest else 0)


def parse_time(text: str | int | datetime, *, what: str = "--to-datetime") -> int:
    """A point in time -> epoch milliseconds.

    Accepts ISO-8601 (`2026-11-20T09:40:00`, UTC when no zone; `Z`, `+02:00`, fractions) and
    epoch milliseconds (13 ASCII digits). Refuses times before 1970 and after 9999.
    """
    if isinstance(text, datetime):  # YAML parses unquoted timestamps itself
        return datetime_ms(text, what=what, text=text.isoformat())
    if isinstance(text, int) and not isinstance(text, bool):
        text = str(text)
    s = str(text).strip()
    if _NEGATIVE_INT.fullmatch(s):
        raise UsageError(f"{what} {_quoted(text)} is before 1970-01-01T00:00:00Z; Kafka "
                         "timestamps start there")
    if _EPOCH_MS.fullmatch(s):
        ms = int(s)
    else:
        try:
            if not _ISO_TIME.fullmatch(s):
                raise ValueError(s)
            dt = datetime.fromisoformat(s[:-1] + "+00:00" if s.endswith("Z") else s)
        except ValueError:
            raise UsageError(f"{what} {_quoted(text)} is not a time (expected {TIME_FORMS})") from None
        ms = datetime_ms(dt, what=what, text=text)
    if ms > MAX_TIME_MS:
        raise UsageError(f"{what} {_quoted(text)} is after 9999-12-31T23:59:59.999Z")
    return ms


def now_ms() -> int:
    """Now in epoch milliseconds."""
    return int(time.time() * 1000)


def duration_start_ms(text: str, *, now: datetime | None = None, what: str = "--by-duration") -> int:
    """Epoch milliseconds of now minus the duration; refused when that is before 1970."""
    back = parse_duration_ms(text, what=what, allow_zero=True)
    now = now or datetime.now(UTC)
    ms = (now - _EPOCH) // timedelta(milliseconds=1) - back
    if ms < 0:
        raise UsageError(f"{what} {_quoted(text)} reaches back before 1970-01-01T00:00:00Z")
    return ms


def parse_when(text: str, *, what: str = "time", now: int | None = None) -> int:
    """A time of the history commands -> epoch ms: `parse_time`'s forms, `now`, or a duration
    back from now (`6h`, `PT30M`)."""
    now = now_ms() if now is None else now
    t = (text or "").strip()
    if t.lower() == "now":
        return now
    if (t[:1].isdigit() and is_duration(t)) or t[:1] in ("P", "p"):
        return now - parse_duration_ms(t, what=what)
    try:
        return parse_time(t, what=what)
    except UsageError:
        raise UsageError(f"{what} '{text}' is not a time (expected an ISO-8601 datetime such as "
                         "2026-11-20T09:40:00Z, 'now', or a duration ago such as 6h)") from None


def ms_of_iso(text: object) -> int | None:
    """Epoch milliseconds of an ISO-8601 time this library wrote (`...Z` or an offset; UTC when
    no zone); None for anything else. For reading stored times back, not for user input."""
    if not isinstance(text, str) or not text:
        return None
    try:
        when = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        return None
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when
    return (when - _EPOCH) // timedelta(milliseconds=1)
