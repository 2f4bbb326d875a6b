"""Parsing of times and durations for the history commands (one-line UsageErrors).

Durations: the one grammar of `offsetkeeper.times` (`30s`, `1.5m`, `1d2h`, `500ms`, `PT30S`, `P1D`).
Points in time: an ISO-8601 datetime (UTC when no zone), `now`, or a duration meaning "ago".
"""

from __future__ import annotations

import time

from offsetkeeper.errors import UsageError
from offsetkeeper.times import is_duration, parse_duration_ms

__all__ = ["now_ms", "parse_duration_ms", "parse_when"]



def now_ms() -> int:
    return int(time.time() * 1000)


def parse_when(text: str, *, what: str = "time", now: int | None = None) -> int:
    """An ISO-8601 datetime (UTC when no zone), `now`, or a duration back from now -> epoch ms."""
    now = now_ms() if now is None else now
    t = (text or "").strip()
    if t.lower() == "now":
        return now
    if (t[:1].isdigit() and is_duration(t)) or t[:1] in ("P", "p"):
        return now - parse_duration_ms(t, what=what)
    from offsetkeeper.reset.parse import parse_datetime

    try:
        return parse_datetime(t)
    except UsageError:
        raise UsageError(f"{what} '{text}' is not a time (expected an ISO-8601 datetime such as "
                         "2026-11-20T09:40:00Z, 'now', or a duration ago such as 6h)") from None
