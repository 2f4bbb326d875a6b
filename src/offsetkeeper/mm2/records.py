"""MirrorMaker 2's internal records, decoded from bytes (connect-mirror 4.x, Checkpoint.java
and OffsetSync.java, written with Kafka's protocol `Schema` types, big-endian):

- checkpoint key ``group STRING, topic STRING, partition INT32``; value ``version INT16`` (0),
  then ``upstreamOffset INT64, offset INT64, metadata STRING`` — in
  ``<source alias>.checkpoints.internal`` on the target cluster. ``topic`` is the topic as the
  group reads it on the TARGET (``<alias>.<topic>`` under DefaultReplicationPolicy), as
  RemoteClusterUtils returns it.
- offset sync key ``topic STRING, partition INT32``; value ``upstreamOffset INT64, offset
  INT64`` — in ``mm2-offset-syncs.<target alias>.internal`` (on the source cluster by default).

STRING is an int16 length and UTF-8 bytes. Every record is untrusted: a record that is not
exactly this shape (short, trailing bytes, negative lengths or offsets, bad UTF-8, a newer
value version) decodes to None and is counted by the readers, never trusted.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from offsetkeeper.errors import OffsetkeeperError

MAX_RECORD = 64 * 1024


class _Buf:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("short record")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int16(self) -> int:
        return struct.unpack(">h", self.take(2))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def int64(self) -> int:
        return struct.unpack(">q", self.take(8))[0]

    def string(self) -> str:
        n = self.int16()
        if n < 0:
            raise ValueError("null string")
        return self.take(n).decode("utf-8")

    def done(self) -> None:
        if self.pos != len(self.data):
            raise ValueError("trailing bytes")


@dataclass(frozen=True)
class Checkpoint:
    """Where MM2 last translated a group's committed offset of one source partition."""

    group: str
    topic: str  # the topic on the target (renamed: A.orders)
    partition: int
    upstream: int  # the group's committed offset on the source
    downstream: int  # MM2's translation on the target
    metadata: str
    timestamp_ms: int | None = None


@dataclass(frozen=True)
class OffsetSync:
    """A pair of offsets MM2 knows to match: source `upstream` is target `downstream`."""

    topic: str
    partition: int
    upstream: int
    downstream: int
    timestamp_ms: int | None = None


def decode_checkpoint(key: bytes | None, value: bytes | None,
                      timestamp_ms: int | None = None) -> Checkpoint | None:
    if not key or not value or len(key) > MAX_RECORD or len(value) > MAX_RECORD:
        return None
    try:
        k = _Buf(key)
        group, topic, partition = k.string(), k.string(), k.int32()
        k.done()
        v = _Buf(value)
        if v.int16() != 0:
            return None  # a newer format this offsetkeeper does not know
        upstream, downstream, metadata = v.int64(), v.int64(), v.string()
        v.done()
    except (ValueError, UnicodeDecodeError, struct.error):
        return None
    if partition < 0 or upstream < 0 or downstream < 0 or not group or not topic:
        return None
    return Checkpoint(group, topic, partition, upstream, downstream, metadata, timestamp_ms)


def decode_offset_sync(key: bytes | None, value: bytes | None,
                       timestamp_ms: int | None = None) -> OffsetSync | None:
    if not key or not value or len(key) > MAX_RECORD or len(value) > MAX_RECORD:
        return None
    try:
        k = _Buf(key)
        topic, partition = k.string(), k.int32()
        k.done()
        v = _Buf(value)
        upstream, downstream = v.int64(), v.int64()
        v.done()
    except (ValueError, UnicodeDecodeError, struct.error):
        return None
    if partition < 0 or upstream < 0 or downstream < 0 or not topic:
        return None
    return OffsetSync(topic, partition, upstream, downstream, timestamp_ms)


T = TypeVar("T")


@dataclass(frozen=True)
class TopicRead:
    """What a read of a whole internal topic found."""

    records: tuple
    skipped: int  # records that were not the expected shape


def read_topic(client_config: dict, topic: str,
               decode: Callable[[bytes | None, bytes | None, int | None], T | None], *,
               timeout_s: float = 60.0, max_records: int = 5_000_000) -> TopicRead:
    """Every record of `topic` from its log start to its current log end, decoded."""
    from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

    from offsetkeeper.kafka import clients

    consumer = clients.consumer(client_config, {"group.id": "offsetkeeper-mm2-reader",
                                                "enable.auto.commit": False,
                                                "enable.partition.eof": False})
    out: list = []
    skipped = 0
    try:
        md = consumer.list_topics(topic, timeout=10)
        t = md.topics.get(topic)
        if t is None or t.error is not None or not t.partitions:
            raise OffsetkeeperError(f"topic {topic!r} does not exist on the cluster (is MM2 "
                                    "running, and is the source alias right?)")
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
                raise OffsetkeeperError(f"reading {topic!r} took longer than {timeout_s:.0f}s")
            for msg in consumer.consume(1000, 1.0):
                if msg.error():
                    continue
                ts = msg.timestamp()[1] if msg.timestamp()[0] else None
                rec = decode(msg.key(), msg.value(), ts)
                if rec is None:
                    skipped += 1
                else:
                    out.append(rec)
                if len(out) + skipped > max_records:
                    raise OffsetkeeperError(f"{topic!r} holds more than {max_records} records")
                if msg.offset() + 1 >= ends[msg.partition()]:
                    done.add(msg.partition())
            for tp in consumer.position([TopicPartition(topic, p) for p in ends if p not in done]):
                if tp.offset >= ends[tp.partition]:
                    done.add(tp.partition)
    except KafkaException as exc:
        raise clients.translate(exc, action=f"read {topic!r}", topic=topic) from exc
    finally:
        consumer.close()
    return TopicRead(tuple(out), skipped)


def checkpoints_topic(source_alias: str) -> str:
    return f"{source_alias}.checkpoints.internal"


def latest_checkpoints(client_config: dict, source_alias: str, *,
                       timeout_s: float = 60.0) -> tuple[dict[tuple[str, str, int], Checkpoint], int]:
    """The newest checkpoint per (group, target topic, partition) on the target; and how many
    records were skipped as malformed."""
    read = read_topic(client_config, checkpoints_topic(source_alias), decode_checkpoint,
                      timeout_s=timeout_s)
    latest: dict[tuple[str, str, int], Checkpoint] = {}
    for c in read.records:  # in log order per partition; one key lives in one partition
        latest[(c.group, c.topic, c.partition)] = c
    return latest, read.skipped


def latest_offset_syncs(client_config: dict, target_alias: str, *,
                        timeout_s: float = 60.0) -> tuple[dict[tuple[str, int], OffsetSync], int]:
    """The newest offset sync per source partition (read from the source cluster)."""
    read = read_topic(client_config, f"mm2-offset-syncs.{target_alias}.internal",
                      decode_offset_sync, timeout_s=timeout_s)
    latest: dict[tuple[str, int], OffsetSync] = {}
    for s in read.records:
        latest[(s.topic, s.partition)] = s
    return latest, read.skipped
