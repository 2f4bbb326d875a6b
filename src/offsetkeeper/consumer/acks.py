"""Out-of-order acknowledgements: what may be committed is the contiguous acknowledged prefix.

Records of a partition are delivered in offset order; they may be processed (acknowledged) in
any order, e.g. by a thread pool. The offset to commit for a partition is one past the last
record of the longest run of acknowledged records starting at the oldest delivered one — a
record still being processed holds back everything after it, so a crash never skips it.

Offsets are taken from the records themselves, never computed as "previous + 1": on compacted
and transactional topics delivered offsets have gaps. `AckTracker` is thread-safe and pure
(no Kafka calls), so it is unit-tested on its own.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from itertools import islice

from offsetkeeper.models import TopicPartition


def tp_of(msg_or_tp) -> TopicPartition:
    """The partition of a confluent-kafka Message or TopicPartition, as offsetkeeper's type."""
    return TopicPartition(msg_or_tp.topic(), msg_or_tp.partition()) if callable(
        getattr(msg_or_tp, "topic", None)) else TopicPartition(msg_or_tp.topic, msg_or_tp.partition)


@dataclass
class _Partition:
    delivered: deque[int] = field(default_factory=deque)  # delivered, not yet in the prefix
    acked: set[int] = field(default_factory=set)  # acknowledged, waiting for the prefix
    prefix: int | None = None  # next offset to read after the contiguous processed prefix
    committed: int | None = None  # last offset committed (or stored) successfully


class AckTracker:
    """Delivered and acknowledged offsets per owned partition."""

    def __init__(self) -> None:
        self._parts: dict[TopicPartition, _Partition] = {}
        self._lock = threading.Lock()

    def assign(self, tps) -> None:
        """Start tracking partitions (fresh state: a new owner starts from the committed offset)."""
        with self._lock:
            for tp in tps:
                self._parts[tp] = _Partition()

    def revoke(self, tps) -> None:
        """Forget partitions (after their prefix was committed, or when they were lost)."""
        with self._lock:
            for tp in tps:
                self._parts.pop(tp, None)

    def owns(self, tp: TopicPartition) -> bool:
        return tp in self._parts

    def owned(self) -> list[TopicPartition]:
        with self._lock:
            return sorted(self._parts)

    def delivered(self, tp: TopicPartition, offset: int) -> None:
        """A record was handed to the application."""
        with self._lock:
            p = self._parts.get(tp)
            if p is not None and (not p.delivered or offset > p.delivered[-1]) \
                    and (p.prefix is None or offset >= p.prefix):
                p.delivered.append(offset)

    def delivered_many(self, batch: dict[TopicPartition, list[int]]) -> None:
        """Several records per partition handed out at once (offsets ascending)."""
        with self._lock:
            for tp, offsets in batch.items():
                p = self._parts.get(tp)
                if p is None:
                    continue
                floor = max(p.delivered[-1] + 1 if p.delivered else -1, p.prefix or -1)
                p.delivered.extend(offsets if offsets[0] >= floor else [o for o in offsets if o >= floor])

    def ack(self, tp: TopicPartition, offset: int) -> bool:
        """Mark a record processed; False when it is not pending (revoked partition, duplicate
        ack, or a record that a nack/reset has since discarded)."""
        with self._lock:
            p = self._parts.get(tp)
            return p is not None and self._ack(p, offset)

    @staticmethod
    def _ack(p: _Partition, offset: int) -> bool:
        if offset in p.acked or not p.delivered or offset < p.delivered[0] or offset > p.delivered[-1]:
            return False
        p.acked.add(offset)
        while p.delivered and p.delivered[0] in p.acked:
            done = p.delivered.popleft()
            p.acked.discard(done)
            p.prefix = done + 1
        return True

    def ack_many(self, batch: dict[TopicPartition, list[int]]) -> int:
        """Acknowledge several records per partition; returns how many were pending."""
        count = 0
        with self._lock:
            for tp, offsets in batch.items():
                p = self._parts.get(tp)
                if p is None or not offsets:
                    continue
                n = len(offsets)
                # Fast path (a whole batch processed in order): the oldest pending records.
                if not p.acked and len(p.delivered) >= n and p.delivered[0] == offsets[0] \
                        and list(islice(p.delivered, n)) == offsets:
                    if n == len(p.delivered):
                        p.delivered.clear()
                    else:
                        for _ in range(n):
                            p.delivered.popleft()
                    p.prefix = offsets[-1] + 1
                    count += n
                else:
                    count += sum(self._ack(p, o) for o in offsets)
        return count

    def rewind(self, tp: TopicPartition, offset: int) -> None:
        """A nack at `offset`: that record and everything after it will be delivered again."""
        with self._lock:
            p = self._parts.get(tp)
            if p is None:
                return
            while p.delivered and p.delivered[-1] >= offset:
                p.acked.discard(p.delivered.pop())
            if p.prefix is not None and p.prefix > offset:
                p.prefix = offset

    def reset(self, tp: TopicPartition, offset: int) -> None:
        """The position was moved (live reset) and `offset` committed: drop everything pending."""
        with self._lock:
            if tp in self._parts:
                self._parts[tp] = _Partition(prefix=offset, committed=offset)

    def committable(self, tps=None) -> dict[TopicPartition, int]:
        """Offsets to commit: partitions whose processed prefix moved past the last commit."""
        with self._lock:
            out = {}
            for tp, p in self._parts.items():
                if tps is not None and tp not in tps:
                    continue
                if p.prefix is not None and p.prefix != p.committed:
                    out[tp] = p.prefix
            return out

    def mark_committed(self, offsets: dict[TopicPartition, int]) -> None:
        """Record a successful commit (ignored for partitions no longer owned)."""
        with self._lock:
            for tp, off in offsets.items():
                p = self._parts.get(tp)
                if p is not None:
                    p.committed = off

    def pending(self, tp: TopicPartition) -> int:
        """Records delivered but not yet in the committable prefix."""
        with self._lock:
            p = self._parts.get(tp)
            return len(p.delivered) if p else 0
