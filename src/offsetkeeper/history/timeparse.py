"""Parsing of times and durations for the history commands (one-line UsageErrors).

Durations: `30s`, `1.5m`, `6h`, `30d`, `500ms`, or ISO-8601 `PT30S` / `P1D`.
Points in time: an ISO-8601 datetime (UTC when no zone), `now`, or a duration meaning "ago".
"""

from __future__ import annotations

import re
import time

from offsetkeeper.errors import UsageError

_SIMPLE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)\s*$", re.IGNORECASE)
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


def now_ms() -> int:
    return int(time.time() * 1000)


def parse_duration_ms(text: str, *, what: str = "duration") -> int:
    """`30s` / `6h` / `PT1H30M` -> milliseconds (> 0)."""
    m = _SIMPLE.match(text or "")
    if m:
        ms = int(float(m.group(1)) * _UNIT_MS[m.group(2).lower()])
    else:
        from offsetkeeper.reset.parse import parse_duration

        try:
            ms = int(parse_duration(text).total_seconds() * 1000)
        except UsageError:
            raise UsageError(f"{what} '{text}' is not a duration "
                             "(expected e.g. 500ms, 30s, 5m, 6h, 30d or PT1H30M)") from None
    if ms <= 0:
        raise UsageError(f"{what} '{text}' must be greater than zero")
    return ms


def parse_when(text: str, *, what: str = "time", now: int | None = None) -> int:
    """An ISO-8601 datetime (UTC when no zone), `now`, or a duration back from now -> epoch ms."""
    now = now_ms() if now is None else now
    t = (text or "").strip()
    if t.lower() == "now":
        return now
    if _SIMPLE.match(t) or t.upper().startswith("P"):
        return now - parse_duration_ms(t, what=what)
    from offsetkeeper.reset.parse import parse_datetime

    try:
        return parse_datetime(t)
    except UsageError:
        raise UsageError(f"{what} '{text}' is not a time (expected an ISO-8601 datetime such as "
                         "2026-11-20T09:40:00Z, 'now', or a duration ago such as 6h)") from None
