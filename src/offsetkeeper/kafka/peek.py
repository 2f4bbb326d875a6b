"""The first records at given offsets, read with one consumer that never joins a group.

The history sampler reads the timestamp of the next record each group will consume (exact time
lag); lag on transactional topics reads the offset of the first record a read_committed consumer
gets from a committed offset (control markers and aborted records are skipped), and the time the
oldest open transaction started (the record at the LSO, read uncommitted). Same machinery.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection, Mapping

Key = tuple[str, int]  # (topic, partition)


class NextRecordTimes:
    """Timestamps of the records at given offsets, read with one consumer and cached by offset.

    A partition is fetched only when its committed offset changed since the last cycle (an
    unchanged committed offset has the same next record), one fetch per lagging partition.
    The cache holds one entry per partition sampled, so memory stays flat.

    All partitions of a round are assigned to the one consumer at once, so their first records
    arrive in a few Fetch requests rather than one round trip each. Two things keep a long run's
    memory flat (docs/history.md, "Memory"):

    - A Fetch answer holds, per partition, what the broker sends from the offset on: at most
      `max.partition.fetch.bytes` on Apache Kafka, but the whole partition tail on brokers that
      ignore the limit (the development broker does). So the partitions of a round are split
      into batches whose expected tails (`tails`: records from the offset to the log end) add up
      to at most `BATCH_RECORDS`: the size of one answer no longer grows with the number of
      lagging partitions times their backlog.
    - glibc keeps freed native memory in its arenas for reuse; with answers that grow over time
      (backlogs grow) that high-water mark grew with them. After a round that read records the
      freed memory is handed back (`release_native_memory`).
    """

    CHUNK = 1000            # partitions per batch at most
    BATCH_RECORDS = 50_000  # expected tail records per batch at most (limit-ignoring brokers)

    def __init__(self, client_config: Mapping[str, str], *, timeout_s: float = 5.0) -> None:
        self._conf = dict(client_config)
        self.timeout_s = timeout_s
        self._consumer = None
        self._cache: dict[Key, tuple[int, int | None, int]] = {}  # fetch offset, ts, offset
        # (start, end) -> (records, first timestamp) per partition: a range below the last
        # stable offset never changes
        self._counts: dict[Key, tuple[tuple[int, int], tuple[int, int | None]]] = {}
        self.fetched = 0   # partitions fetched (for benchmarks and tests)
        self.batches = 0   # consumer assignments (batches) made (for benchmarks and tests)

    def _client(self):
        if self._consumer is None:
            from offsetkeeper.kafka import clients

            # librdkafka logs every failed reconnect at level 3 (many lines a second while a
            # broker is down); the sampler logs one line per cycle instead.
            conf = {"log_level": "2", **self._conf,
                    "group.id": "offsetkeeper-history-peek",  # never joins, never commits
                    "enable.auto.commit": "false", "enable.auto.offset.store": "false",
                    "enable.partition.eof": "true", "auto.offset.reset": "earliest",
                    "fetch.wait.max.ms": "50", "queued.min.messages": "1",
                    "queued.max.messages.kbytes": "4096", "fetch.max.bytes": "1048576",
                    "max.partition.fetch.bytes": "65536",
                    # A partition whose first record is queued need not be fetched again soon;
                    # one that is not fetchable yet must not wait librdkafka's default 1 s.
                    "fetch.queue.backoff.ms": "100", "fetch.error.backoff.ms": "50",
                    "reconnect.backoff.max.ms": "1000"}
            self._consumer = clients.consumer(conf)
        return self._consumer

    def close(self) -> None:
        c, self._consumer = self._consumer, None
        if c is not None:
            with contextlib.suppress(Exception):
                c.close()

    def timestamps(self, wanted: Mapping[Key, int],
                   tails: Mapping[Key, int] | None = None) -> dict[Key, int | None]:
        """Timestamp (ms) of the first record at or after each offset, per (topic, partition);
        None when none was read. `tails` (records from the offset to the log end, per
        partition) sizes the batches; without it every partition counts as one record."""
        return {k: (None if v is None else v[1]) for k, v in self.next_records(wanted, tails).items()}

    def next_records(self, wanted: Mapping[Key, int], tails: Mapping[Key, int] | None = None,
                     ) -> dict[Key, tuple[int, int | None] | None]:
        """Per (topic, partition), `(offset, timestamp ms)` of the first record the consumer
        gets when it fetches from the given offset (a read_committed consumer, librdkafka's
        default, skips control markers and aborted records), `(end offset, None)` when it
        reached the end without one, None when the broker did not answer in time.

        Records are cached by fetch offset; "no record before the end" is never cached (a
        record may be appended behind it any time)."""
        out: dict[Key, tuple[int, int | None] | None] = {}
        todo: dict[Key, int] = {}
        for tp, off in wanted.items():
            hit = self._cache.get(tp)
            if hit is not None and hit[0] == off:
                out[tp] = (hit[2], hit[1])
            else:
                todo[tp] = off
        if todo:
            ends: dict[Key, int] = {}
            for batch in plan_batches(todo, tails or {}, self.CHUNK, self.BATCH_RECORDS):
                self._fetch(batch, time.monotonic() + self.timeout_s, ends)
            release_native_memory()
            for key, off in todo.items():
                hit = self._cache.get(key)
                if hit is not None and hit[0] == off:
                    out[key] = (hit[2], hit[1])
                elif key in ends:
                    out[key] = (ends[key], None)
                else:
                    out[key] = None
        return out

    def _fetch(self, todo: dict[Key, int], deadline: float, ends: dict[Key, int]) -> None:
        from confluent_kafka import TopicPartition as CkTP

        from offsetkeeper.kafka.errors import AUTHORIZATION, PARTITION_EOF

        c = self._client()
        self.fetched += len(todo)
        self.batches += 1
        c.assign([CkTP(t, p, o) for (t, p), o in todo.items()])
        remaining = dict(todo)
        paused: list = []
        try:
            while remaining and time.monotonic() < deadline:
                done = []
                for m in c.consume(num_messages=500, timeout=0.1):
                    if m.error() is not None and m.error().name() in AUTHORIZATION:
                        # no Read on the topic (ACLs): no exact time lag for it, and no use
                        # waiting for one until the deadline (it is estimated instead)
                        for key in [k for k in remaining if k[0] == m.topic()]:
                            del remaining[key]
                        continue
                    key = (m.topic(), m.partition())
                    off = remaining.pop(key, None)
                    if off is None:
                        continue  # the rest of a tail, or a partition already answered
                    err = m.error()
                    if err is not None:
                        if err.code() == PARTITION_EOF:
                            ends[key] = max(off, m.offset())
                            done.append(CkTP(*key))
                        else:
                            remaining[key] = off  # not an answer: keep waiting
                        continue
                    ts_type, ts = m.timestamp()
                    self._cache[key] = (off, ts if ts_type != 0 and ts >= 0 else None, m.offset())
                    done.append(CkTP(*key))
                if done:
                    # One pause for the whole batch: stops further fetches of answered
                    # partitions (on Kafka they would keep reading their tails). Not one
                    # incremental_unassign per partition: each recomputes the whole assignment,
                    # which made a 1,000-partition round quadratic.
                    with contextlib.suppress(Exception):
                        c.pause(done)
                        paused.extend(done)
        finally:
            # A pause outlives the assignment in librdkafka: resume, or the partition would
            # never be fetched again when a later round assigns it.
            with contextlib.suppress(Exception):
                if paused:
                    c.resume(paused)
            c.unassign()

    def retain(self, tps: Collection[Key]) -> None:
        """Forget partitions not in `tps` (a set or dict: membership is checked directly)."""
        stale = [t for t in self._cache if t not in tps]
        for tp in stale:
            del self._cache[tp]
        for tp in [t for t in self._counts if t not in tps]:
            del self._counts[tp]

    def count_records(self, ranges: Mapping[Key, tuple[int, int]],
                      ) -> dict[Key, tuple[int, int | None] | None]:
        """Per (topic, partition), the records the consumer gets from `start` up to (not
        including) `end` — a read_committed consumer skips control markers and aborted
        records — and the first one's timestamp: `(count, ts | None)`; None when the broker did
        not answer in time. Meant for short ranges (a few offsets below the last stable
        offset); cached by range."""
        from confluent_kafka import TopicPartition as CkTP

        from offsetkeeper.kafka.errors import AUTHORIZATION, PARTITION_EOF

        out: dict[Key, tuple[int, int | None] | None] = {}
        todo: dict[Key, tuple[int, int]] = {}
        for key, rng in ranges.items():
            hit = self._counts.get(key)
            if rng[0] >= rng[1]:
                out[key] = (0, None)
            elif hit is not None and hit[0] == rng:
                out[key] = hit[1]
            else:
                todo[key] = rng
        if not todo:
            return out
        c = self._client()
        self.fetched += len(todo)
        self.batches += 1
        counts = {k: 0 for k in todo}
        first: dict[Key, int | None] = {}
        remaining = dict(todo)
        denied: set[Key] = set()
        c.assign([CkTP(t, p, rng[0]) for (t, p), rng in todo.items()])
        deadline = time.monotonic() + self.timeout_s
        done: list = []
        try:
            while remaining and time.monotonic() < deadline:
                for m in c.consume(num_messages=500, timeout=0.1):
                    if m.error() is not None and m.error().name() in AUTHORIZATION:
                        # no Read on the topic (ACLs): not counted, and no use waiting
                        for key in [k for k in remaining if k[0] == m.topic()]:
                            del remaining[key]
                            denied.add(key)
                        continue
                    key = (m.topic(), m.partition())
                    rng = remaining.get(key)
                    if rng is None:
                        continue
                    err = m.error()
                    if err is not None:
                        if err.code() == PARTITION_EOF:
                            del remaining[key]
                            done.append(CkTP(*key))
                        continue
                    if m.offset() < rng[1]:
                        counts[key] += 1
                        if key not in first:
                            ts_type, ts = m.timestamp()
                            first[key] = ts if ts_type != 0 and ts >= 0 else None
                    if m.offset() >= rng[1] - 1:
                        del remaining[key]
                        done.append(CkTP(*key))
                if done:
                    with contextlib.suppress(Exception):
                        c.pause(done)
        finally:
            with contextlib.suppress(Exception):
                if done:
                    c.resume(done)
            c.unassign()
        for key, rng in todo.items():
            if key in remaining or key in denied:
                out[key] = None
            else:
                out[key] = (counts[key], first.get(key))
                self._counts[key] = (rng, out[key])
        return out


def plan_batches(todo: Mapping[Key, int], tails: Mapping[Key, int], max_parts: int,
                 max_records: int) -> list[dict[Key, int]]:
    """Split partitions into batches of at most `max_parts` partitions whose expected tails
    (`tails`, records; 1 when unknown) add up to at most `max_records` — except that a partition
    whose tail alone exceeds it gets a batch of its own. Order is kept. Pure (unit-tested)."""
    batches: list[dict[Key, int]] = []
    cur: dict[Key, int] = {}
    size = 0
    for key, off in todo.items():
        n = max(1, tails.get(key, 1))
        if cur and (len(cur) >= max_parts or size + n > max_records):
            batches.append(cur)
            cur, size = {}, 0
        cur[key] = off
        size += n
    if cur:
        batches.append(cur)
    return batches


def release_native_memory() -> None:
    """Hand memory freed by librdkafka back to the OS (glibc `malloc_trim`; a no-op elsewhere).

    glibc keeps freed memory in its arenas; Fetch answers that grow as backlogs grow ratchet
    that high-water mark up, which shows as RSS growing for hours although nothing is live.
    """
    fn = _malloc_trim()
    if fn is not None:
        fn(0)


_TRIM: list = []


def _malloc_trim():
    if not _TRIM:
        fn = None
        with contextlib.suppress(OSError, AttributeError):
            import ctypes
            import ctypes.util

            name = ctypes.util.find_library("c")
            if name and "libc.so" in name:
                fn = ctypes.CDLL(name).malloc_trim
                fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
        _TRIM.append(fn)
    return _TRIM[0]
