"""The offset mapping of a restored chunk, derived from the target's log end and then proved.

Collecting the mapping from delivery reports costs a Python callback per record. It is not
needed in the usual case: a chunk of N records produced to a partition by ONE idempotent
producer (acks=all) lands in order, each record exactly once. If the partition's log end was S
right before the first record was sent and is S + N once every record is acknowledged, with no
delivery error, then nothing else was appended in between: the records are exactly the offsets
S .. S + N - 1, in production order. That is the proof; on top of it the first and the last
record are read back from the target and must be the ones this restore wrote (by their
``x-kafka-backup-*`` headers, or by key, value, timestamp and headers when those are off).

When the proof fails — another producer wrote to the partition during the chunk, the log end
moved for another reason, a read-back differs — the mapping is not guessed: the chunk's range
of the target is read back and matched record by record with what was produced (`map_read_back`),
skipping records someone else wrote. A record of the chunk that is not found stops the restore.

Everything here is pure except `TargetReader`, the small consumer the proof reads with.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from offsetkeeper.models import TopicPartition
from offsetkeeper.restore.resume import (
    OFFSET_HEADER,
    PARTITION_HEADER,
    TIMESTAMP_HEADER,
    TOPIC_HEADER,
)

# librdkafka errors of a partition whose leader is moving (a target node died): ask again
_LEADER_IN_FLUX = frozenset({"_DESTROY_BROKER", "_TRANSPORT", "_TIMED_OUT", "_LEADER_NOT_AVAILABLE",
                             "NOT_LEADER_OR_FOLLOWER", "NOT_LEADER_FOR_PARTITION",
                             "LEADER_NOT_AVAILABLE", "UNKNOWN_LEADER_EPOCH"})


@dataclass(frozen=True)
class TargetRecord:
    """One record as read back from the target partition."""

    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...] = ()

    @classmethod
    def from_message(cls, m: Any) -> TargetRecord:
        return cls(m.offset(), m.key(), m.value(), m.timestamp()[1], tuple(m.headers() or ()))


@dataclass
class ChunkRecords:
    """What one chunk produced, in production order. ``keys``/``values``/``headers`` are kept
    only when the records carry no offset headers (then they are what identifies a record)."""

    source: TopicPartition
    offset_headers: bool
    source_offsets: list[int] = field(default_factory=list)
    timestamps: list[int] = field(default_factory=list)
    keys: list[bytes | None] = field(default_factory=list)
    values: list[bytes | None] = field(default_factory=list)
    headers: list[list[tuple[str, bytes | None]] | None] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.source_offsets)

    def is_record(self, i: int, r: TargetRecord) -> bool:
        """True when target record `r` is the chunk's i-th record."""
        if self.offset_headers:
            # this restore appends its four headers last; compare exactly those
            return r.headers[-4:] == (
                (OFFSET_HEADER, str(self.source_offsets[i]).encode()),
                (TIMESTAMP_HEADER, str(self.timestamps[i]).encode()),
                (PARTITION_HEADER, str(self.source.partition).encode()),
                (TOPIC_HEADER, self.source.topic.encode()))
        return (r.key == self.keys[i] and r.value == self.values[i]
                and r.timestamp == self.timestamps[i]
                and r.headers == tuple(self.headers[i] or ()))


def proof_holds(*, start: int, end: int, count: int, first: TargetRecord | None,
                last: TargetRecord | None, chunk: ChunkRecords) -> bool:
    """True when the chunk provably occupies the target offsets ``start .. start + count - 1``:
    the log end grew by exactly `count` (with no delivery error, checked by the caller) and the
    records read back at both ends are the chunk's first and last."""
    return (count > 0 and end - start == count
            and first is not None and first.offset == start and chunk.is_record(0, first)
            and last is not None and last.offset == end - 1 and chunk.is_record(count - 1, last))


class MissingRecordError(RuntimeError):
    """A record the chunk produced (and the producer acknowledged) is not on the target."""


def map_read_back(chunk: ChunkRecords, records: Sequence[TargetRecord]) -> tuple[list[int], int]:
    """The target offset of each chunk record, matched in order against the records read back
    from the target (from the chunk's start); records that are not the next expected one were
    written by someone else and are skipped. Returns (target offsets, foreign record count).

    Without offset headers a foreign record identical in key, value, timestamp and headers to
    the next expected one cannot be told apart from it; the mapping then points at an identical
    record. Raises MissingRecordError when a chunk record is not found."""
    out: list[int] = []
    foreign = 0
    n = len(chunk)
    for r in records:
        if len(out) == n:
            break
        if chunk.is_record(len(out), r):
            out.append(r.offset)
        else:
            foreign += 1
    if len(out) != n:
        raise MissingRecordError(
            f"record of source offset {chunk.source_offsets[len(out)]} of {chunk.source} was "
            f"acknowledged but is not on the target")
    return out, foreign


class TargetReader:
    """Reads single records and log ends of target partitions (the proof's consumer)."""

    def __init__(self, consumer_conf: Mapping[str, str]) -> None:
        from offsetkeeper.kafka import clients

        self._c = clients.consumer(consumer_conf, {
            "group.id": f"offsetkeeper-restore-proof-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": "false", "enable.auto.offset.store": "false",
            "isolation.level": "read_uncommitted", "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": "10", "enable.partition.eof": "false",
            # one record is wanted: do not prefetch (brokers that ignore fetch limits answer
            # with the rest of the partition)
            "queued.max.messages.kbytes": "1024", "max.partition.fetch.bytes": "1048576"})

    def log_end(self, tp: TopicPartition, *, patience: float = 45.0) -> int:
        """The target partition's log end, asked again while its leader moves (a node of the
        target cluster that dies mid-restore makes the read fail for a few seconds)."""
        from confluent_kafka import KafkaException
        from confluent_kafka import TopicPartition as CkTP

        deadline = time.monotonic() + patience
        while True:
            try:
                return self._c.get_watermark_offsets(CkTP(tp.topic, tp.partition), timeout=15,
                                                     cached=False)[1]
            except KafkaException as exc:
                err = exc.args[0]
                if not (err.retriable() or err.name() in _LEADER_IN_FLUX) \
                        or time.monotonic() > deadline:
                    raise
                time.sleep(0.3)

    def read_one(self, tp: TopicPartition, offset: int, timeout: float = 15.0) -> TargetRecord | None:
        """The record at `offset` (or the first one after it, if that offset holds none);
        None when nothing could be read."""
        from confluent_kafka import TopicPartition as CkTP

        self._c.assign([CkTP(tp.topic, tp.partition, offset)])
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                for m in self._c.consume(1, 0.5):
                    if m.error() is None:
                        return TargetRecord.from_message(m)
            return None
        finally:
            self._c.unassign()

    def close(self) -> None:
        self._c.close()
