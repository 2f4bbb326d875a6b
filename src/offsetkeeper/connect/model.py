"""Connector offsets as Connect's REST API gives and takes them (KIP-875), validated.

A connector's offsets are a list of entries ``{"partition": {...}, "offset": {...} | null}``.
For a source connector the maps are whatever the connector defines (FileStream:
``{"filename": ...}`` / ``{"position": N}``); for a sink connector they are
``{"kafka_topic", "kafka_partition"}`` / ``{"kafka_offset"}``. Everything read from a worker, a
file or the offsets topic is untrusted: sizes, nesting and value types are bounded here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from offsetkeeper.errors import UsageError

MAX_ENTRIES = 100_000
MAX_DEPTH = 4
MAX_KEYS = 64
MAX_STRING = 4096


class OffsetsFormatError(UsageError):
    """Connector offsets (from a file, a worker or the offsets topic) are malformed."""


def _check_value(value: Any, where: str, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise OffsetsFormatError(f"{where} nests deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, bool | float):
        return value
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise OffsetsFormatError(f"{where} holds {value}, outside a 64-bit integer")
        return value
    if isinstance(value, str):
        if len(value) > MAX_STRING:
            raise OffsetsFormatError(f"{where} holds a string longer than {MAX_STRING}")
        return value
    if isinstance(value, list):
        if len(value) > MAX_KEYS:
            raise OffsetsFormatError(f"{where} holds a list longer than {MAX_KEYS}")
        return [_check_value(v, where, depth + 1) for v in value]
    if isinstance(value, dict):
        return _check_map(value, where, depth + 1)
    raise OffsetsFormatError(f"{where} holds a {type(value).__name__} (expected JSON values)")


def _check_map(value: Any, where: str, depth: int = 0) -> dict:
    if not isinstance(value, dict):
        raise OffsetsFormatError(f"{where} is not a JSON object")
    if depth > MAX_DEPTH:
        raise OffsetsFormatError(f"{where} nests deeper than {MAX_DEPTH} levels")
    if len(value) > MAX_KEYS:
        raise OffsetsFormatError(f"{where} has more than {MAX_KEYS} keys")
    out = {}
    for k, v in value.items():
        if not isinstance(k, str) or len(k) > MAX_STRING:
            raise OffsetsFormatError(f"{where} has a key that is not a short string")
        out[k] = _check_value(v, f"{where}.{k}", depth)
    return out


def canonical(value: Any) -> str:
    """One text per map (sorted keys): partitions are compared and keyed by it."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class OffsetEntry:
    """One connector partition and its offset (None: no offset / delete it)."""

    partition: dict
    offset: dict | None

    @property
    def key(self) -> str:
        return canonical(self.partition)

    def as_json(self) -> dict:
        return {"partition": self.partition, "offset": self.offset}

    def describe_partition(self) -> str:
        return canonical(self.partition)

    def describe_offset(self) -> str:
        return "-" if self.offset is None else canonical(self.offset)


def parse_entries(doc: Any, *, where: str = "offsets") -> tuple[OffsetEntry, ...]:
    """Validate ``{"offsets": [{"partition": {...}, "offset": {...}|null}, ...]}``."""
    if not isinstance(doc, dict) or not isinstance(doc.get("offsets"), list):
        raise OffsetsFormatError(f"{where} is not a JSON object with an \"offsets\" list "
                                 "(expected Connect's GET /connectors/NAME/offsets shape)")
    items = doc["offsets"]
    if len(items) > MAX_ENTRIES:
        raise OffsetsFormatError(f"{where} holds more than {MAX_ENTRIES} entries")
    seen: dict[str, OffsetEntry] = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict) or "partition" not in item:
            raise OffsetsFormatError(f"{where} entry {i} has no \"partition\"")
        part = _check_map(item["partition"], f"{where} entry {i} partition")
        off = item.get("offset")
        off = None if off is None else _check_map(off, f"{where} entry {i} offset")
        entry = OffsetEntry(part, off)
        if entry.key in seen and seen[entry.key] != entry:
            raise OffsetsFormatError(f"{where} names partition {entry.key} twice with "
                                     "different offsets")
        seen[entry.key] = entry
    return tuple(seen.values())


def parse_file_text(text: str, *, where: str) -> tuple[OffsetEntry, ...]:
    """Entries from a file (as `connect offsets export` writes it)."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise OffsetsFormatError(f"{where} is not JSON ({exc.msg} at line {exc.lineno})") from None
    return parse_entries(doc, where=where)


def entries_json(entries: tuple[OffsetEntry, ...]) -> dict:
    """The REST / file shape of some entries."""
    return {"offsets": [e.as_json() for e in entries]}


def sink_position(entry: OffsetEntry) -> tuple[str, int, int] | None:
    """(topic, partition, offset) of a sink connector's entry; None when not that shape."""
    p, o = entry.partition, entry.offset or {}
    t, n, off = p.get("kafka_topic"), p.get("kafka_partition"), o.get("kafka_offset")
    if isinstance(t, str) and isinstance(n, int) and not isinstance(n, bool) \
            and (off is None or (isinstance(off, int) and not isinstance(off, bool))):
        return t, n, off
    return None
