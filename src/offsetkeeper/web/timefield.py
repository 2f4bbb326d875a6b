"""The wizard's time field: ISO 8601 with a 24-hour clock, read as UTC (as on the CLI).

A text field, not `datetime-local`: browsers render that in the viewer's locale (12-hour
mm/dd/yyyy in en-US), which hides that the value is UTC and invites AM/PM mistakes."""

from __future__ import annotations

import re

_LOCAL = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?")


def datetime_local_to_iso(value: str) -> str:
    """`2026-11-20T09:40` -> `2026-11-20T09:40:00Z`; anything else (a zone given, a duration
    such as PT1H, or junk for the parser to reject with its own message) is returned as is."""
    v = value.strip()
    if _LOCAL.fullmatch(v):
        v = v[:10] + "T" + v[11:]  # "2026-11-20 09:40" as typed by people
        return v + (":00" if v.count(":") == 1 else "") + "Z"
    return v
