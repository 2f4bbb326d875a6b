"""A source connector's positions read straight from the worker's offsets topic.

The independent read-back of a source connector change: not through the worker that made it,
but from the records Connect wrote (``offset.storage.topic``). Each record's key is the JSON
array ``["<connector>", {<partition map>}]`` and its value the offset map (JSON) or null (the
partition's offset was removed); the last record per key wins. Records are untrusted: a key or
value that is not that shape is skipped and counted, never trusted.
"""

from __future__ import annotations

import json

from offsetkeeper.connect.model import MAX_STRING, OffsetEntry, OffsetsFormatError, _check_map
from offsetkeeper.errors import OffsetkeeperError
from offsetkeeper.kafka.topic_reader import RawRecord, read_to_end

MAX_RECORD = 1024 * 1024


def decode_record(key: bytes | None, value: bytes | None) -> tuple[str, OffsetEntry] | None:
    """(connector, entry) of one offsets-topic record; None when it is not Connect's shape."""
    if key is None or len(key) > MAX_RECORD or (value is not None and len(value) > MAX_RECORD):
        return None
    try:
        k = json.loads(key)
        if not (isinstance(k, list) and len(k) == 2 and isinstance(k[0], str)
                and len(k[0]) <= MAX_STRING):
            return None
        part = _check_map(k[1], "offsets topic key")
        off = None if value is None else _check_map(json.loads(value), "offsets topic value")
    except (ValueError, OffsetsFormatError, RecursionError):
        return None
    return k[0], OffsetEntry(part, off)


def read_all_source_offsets(client_config: dict, topic: str, connectors: set[str], *,
                            timeout_s: float = 60.0) -> dict[str, tuple[OffsetEntry, ...]]:
    """The current positions of `connectors` in `topic`, in one read of the topic."""
    latest: dict[tuple[str, str], OffsetEntry] = {}

    def take(rec: RawRecord) -> None:
        decoded = decode_record(rec.key, rec.value)
        if decoded is not None and decoded[0] in connectors:
            latest[(decoded[0], decoded[1].key)] = decoded[1]

    try:
        read_to_end(client_config, topic, take, read_committed=True, timeout_s=timeout_s,
                    missing_hint="is it the worker's offset.storage.topic?")
    except OffsetkeeperError as exc:
        raise OffsetkeeperError(f"reading Connect's offsets topic failed: {exc}") from None
    out: dict[str, list[OffsetEntry]] = {}
    for (name, _), e in sorted(latest.items()):
        if e.offset is not None:
            out.setdefault(name, []).append(e)
    return {name: tuple(entries) for name, entries in out.items()}
