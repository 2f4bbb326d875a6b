"""Parsing the API versions librdkafka logs for each broker (debug context "feature")."""

from __future__ import annotations

import re
from collections.abc import Iterable

# e.g. "... 127.0.0.1:9092/bootstrap:   ApiKey OffsetDeleteRequest (47) Versions 0..0"
_LINE = re.compile(r"(?P<broker>[^\s\]]+/[^\s:]+):\s+ApiKey \S+ \((?P<key>\d+)\) Versions (?P<lo>\d+)\.\.(?P<hi>\d+)")


def parse_api_versions(lines: Iterable[str]) -> dict[str, dict[int, tuple[int, int]]]:
    """broker -> api key -> (min version, max version), from librdkafka's feature log lines."""
    out: dict[str, dict[int, tuple[int, int]]] = {}
    for line in lines:
        m = _LINE.search(line)
        if m:
            out.setdefault(m["broker"], {})[int(m["key"])] = (int(m["lo"]), int(m["hi"]))
    return out
