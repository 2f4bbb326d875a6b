"""The wizard's time picker: an HTML `datetime-local` value is a UTC time (as on the CLI)."""

from __future__ import annotations

import re

_LOCAL = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?")


def datetime_local_to_iso(value: str) -> str:
    """`2026-11-20T09:40` -> `2026-11-20T09:40:00Z`; anything else (a zone given, a duration
    such as PT1H, or junk for the parser to reject with its own message) is returned as is."""
    v = value.strip()
    if _LOCAL.fullmatch(v):
        return v + (":00" if v.count(":") == 1 else "") + "Z"
    return v
