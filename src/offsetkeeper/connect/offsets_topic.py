"""A source connector's positions read straight from the worker's offsets topic.

The independent read-back of a source connector change: not through the worker that made it,
but from the records Connect wrote (``offset.storage.topic``). Each record's key is the JSON
array ``["<connector>", {<partition map>}]`` and its value the offset map (JSON) or null (the
partition's offset was removed); the last record per key wins. Records are untrusted: a key or
value that is not that shape is skipped and counted, never trusted.
"""

from __future__ import annotations

import json
import time

from offsetkeeper.connect.model import MAX_STRING, OffsetEntry, OffsetsFormatError, _check_map
from offsetkeeper.errors import OffsetkeeperError

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


def read_source_offsets(client_config: dict, topic: str, connector: str, *,
                        timeout_s: float = 60.0) -> tuple[OffsetEntry, ...]:
    """The connector's current positions in `topic` (entries with an offset only)."""
    return read_all_source_offsets(client_config, topic, {connector},
                                   timeout_s=timeout_s).get(connector, ())


def read_all_source_offsets(client_config: dict, topic: str, connectors: set[str], *,
                            timeout_s: float = 60.0) -> dict[str, tuple[OffsetEntry, ...]]:
    """The current positions of `connectors` in `topic`, in one read of the topic."""
    from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

    from offsetkeeper.kafka import clients

    consumer = clients.consumer(client_config, {
        "group.id": "offsetkeeper-connect-readback", "enable.auto.commit": False,
        "enable.partition.eof": False, "isolation.level": "read_committed"})
    latest: dict[tuple[str, str], OffsetEntry] = {}
    try:
        md = consumer.list_topics(topic, timeout=10)
        t = md.topics.get(topic)
        if t is None or t.error is not None or not t.partitions:
            raise OffsetkeeperError(f"offsets topic {topic!r} does not exist on the cluster")
        ends = {}
        for p in t.partitions:
            lo, hi = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            if hi > lo:
                ends[p] = hi
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
        deadline = time.monotonic() + timeout_s
        done: set[int] = set()
        while len(done) < len(ends):
            if time.monotonic() > deadline:
                raise OffsetkeeperError(f"reading offsets topic {topic!r} took longer than "
                                        f"{timeout_s:.0f}s")
            for msg in consumer.consume(500, 1.0):
                if msg.error():
                    continue
                decoded = decode_record(msg.key(), msg.value())
                if decoded is not None and decoded[0] in connectors:
                    latest[(decoded[0], decoded[1].key)] = decoded[1]
                if msg.offset() + 1 >= ends[msg.partition()]:
                    done.add(msg.partition())
            # transaction markers may end a partition: its position tells, not the last record
            for tp in consumer.position([TopicPartition(topic, p) for p in ends
                                         if p not in done]):
                if tp.offset >= ends[tp.partition]:
                    done.add(tp.partition)
    except KafkaException as exc:
        raise clients.translate(exc, action=f"read the offsets topic {topic!r}",
                                topic=topic) from exc
    finally:
        consumer.close()
    out: dict[str, list[OffsetEntry]] = {}
    for (name, _), e in sorted(latest.items()):
        if e.offset is not None:
            out.setdefault(name, []).append(e)
    return {name: tuple(entries) for name, entries in out.items()}
