"""One sampling cycle: every group's committed offsets, then log starts/ends, then the
timestamps of the next records to consume — batched: one request lists every group's state, the
log offsets of all partitions take two, and the one committed-offset request per group (the
admin API takes one group per call) are all in flight at once.

Read order matters: committed offsets are read before log ends, so `log_end - committed` is
never negative from read order (a commit cannot overtake a log end read after it).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from offsetkeeper.errors import OffsetkeeperError, UnknownGroupError
from offsetkeeper.history import timelag
from offsetkeeper.history.model import Sample
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.models import CommittedOffset, GroupInfo, TopicPartition

Key = tuple[str, int]  # (topic, partition)


@dataclass(frozen=True)
class SampleScope:
    """Which groups to sample: the named ones, or every group of the cluster."""

    groups: tuple[str, ...] = ()
    all_groups: bool = False


@dataclass
class CycleResult:
    """What one cycle read: the samples, and per group what could not be read."""

    ts: int
    samples: list[Sample]
    groups: int
    duration_ms: int
    errors: dict[str, str] = field(default_factory=dict)
    # Groups that could not be read this cycle (a coordinator down, a broker that did not answer
    # ListGroups), not counting named groups without commits: the sampler records a gap for them.
    missed: int = 0
    missed_reason: str = ""

    @property
    def total_lag(self) -> int:
        return sum(s.lag for s in self.samples)


def _now() -> int:
    return int(time.time() * 1000)


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
        self._cache: dict[Key, tuple[int, int | None]] = {}
        self.fetched = 0   # partitions fetched (for benchmarks and tests)
        self.batches = 0   # consumer assignments (batches) made (for benchmarks and tests)

    def _client(self):
        if self._consumer is None:
            from confluent_kafka import Consumer

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
            self._consumer = Consumer(conf)
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
        out: dict[Key, int | None] = {}
        todo: dict[Key, int] = {}
        for tp, off in wanted.items():
            hit = self._cache.get(tp)
            if hit is not None and hit[0] == off:
                out[tp] = hit[1]
            else:
                todo[tp] = off
        if todo:
            for batch in plan_batches(todo, tails or {}, self.CHUNK, self.BATCH_RECORDS):
                self._fetch(batch, time.monotonic() + self.timeout_s)
            release_native_memory()
        for key, off in todo.items():
            hit = self._cache.get(key)
            out[key] = hit[1] if hit is not None and hit[0] == off else None
        return out

    def _fetch(self, todo: dict[Key, int], deadline: float) -> None:
        from confluent_kafka import KafkaError
        from confluent_kafka import TopicPartition as CkTP

        from offsetkeeper.kafka.errors import AUTHORIZATION

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
                        if err.code() == KafkaError._PARTITION_EOF:
                            self._cache[key] = (off, None)
                            done.append(CkTP(*key))
                        else:
                            remaining[key] = off  # not an answer: keep waiting
                        continue
                    ts_type, ts = m.timestamp()
                    self._cache[key] = (off, ts if ts_type != 0 and ts >= 0 else None)
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


_NO_OWNER = ("", "", "")


def _owners(info: GroupInfo | None) -> dict[Key, tuple[str, str, str]]:
    if info is None:
        return {}
    return {(tp.topic, tp.partition): (m.member_id, m.client_id, m.host)
            for m in info.members for tp in m.assignment}


class CycleSampler:
    """Reads one cycle at a time through one KafkaAdmin; keeps the time-lag state between cycles."""

    def __init__(self, admin: KafkaAdmin, scope: SampleScope, *, time_lag: bool = True,
                 table: timelag.LogEndTable | None = None) -> None:
        if not scope.groups and not scope.all_groups:
            from offsetkeeper.errors import UsageError

            raise UsageError("no group given: use --group GROUP (repeatable) or --all-groups")
        self.admin = admin
        self.scope = scope
        self.table = table or timelag.LogEndTable()
        self.next_times = NextRecordTimes(admin.conn.client_config(), timeout_s=min(5.0, admin.timeout)) \
            if time_lag else None

    def close(self) -> None:
        if self.next_times is not None:
            self.next_times.close()

    def sample(self) -> CycleResult:
        """Read one cycle. Raises (a retriable OffsetkeeperError) when the cluster is unreachable;
        a group that fails alone is reported in `errors` and left out."""
        start = _now()
        # Metadata first: a cheap, safe reachability check (group requests sent to an unreachable
        # cluster can abort the process in librdkafka, see KafkaAdmin.ping) and the partitions.
        topics = self.admin.topic_partitions(None)
        # One ListGroups request gives every group's state; only groups that can have members
        # are described (members and assignments), so idle groups cost no describe at all.
        listing = {g.group_id: g for g in self.admin.list_groups()}
        list_errors = list(getattr(self.admin, "last_list_errors", None) or [])
        groups = list(self.scope.groups) if not self.scope.all_groups else list(listing)
        to_describe = [g for g in groups if g not in listing
                       or listing[g].state not in ("empty", "dead")]
        infos: dict[str, GroupInfo | Exception] = {
            g: GroupInfo(g, listing[g].state, group_type=listing[g].group_type)
            for g in groups if g in listing}
        infos.update(self.admin.describe_groups_each(to_describe))
        committed = self.admin.committed_offsets_each(groups)   # committed offsets first ...
        errors: dict[str, str] = {}
        known = {t: frozenset(ps) for t, ps in topics.items()}
        # (topic, partition) tuples in the hot loops: hashing them is much cheaper than hashing
        # TopicPartition dataclasses, which matters at thousands of partitions per second.
        by_group: dict[str, list[tuple[Key, CommittedOffset]]] = {}
        for g in groups:
            c = committed.get(g)
            if isinstance(c, Exception):
                errors[g] = str(c)
                continue
            live = [((tp.topic, tp.partition), o) for tp, o in (c or {}).items()
                    if tp.partition in known.get(tp.topic, ())]
            if not live and not self.scope.all_groups:
                errors[g] = str(UnknownGroupError(f"group '{g}' has no committed offsets", group=g))
            if live:
                by_group[g] = live
        failed = [committed[g] for g in groups if isinstance(committed.get(g), OffsetkeeperError)]
        if groups and len(failed) == len(groups):
            raise failed[0]  # no group answered: an outage, not a per-group problem
        keys = {k for rows in by_group.values() for k, _ in rows}
        wms = {(tp.topic, tp.partition): wm for tp, wm in            # ... log ends after
               self.admin.watermarks([TopicPartition(*k) for k in keys], ordered=False).items()}
        ts = _now()
        table = self.table
        for k, wm in wms.items():
            table.add(k, ts, wm.high)
        table.retain(wms)
        next_ts: dict[tuple[Key, int], int | None] = {}
        if self.next_times is not None:
            # One fetch per lagging partition and distinct committed offset (several groups on
            # one partition at the same offset share it; the cache key is the offset).
            wanted: dict[Key, set[int]] = {}
            for rows in by_group.values():
                for k, o in rows:
                    wm = wms[k]
                    if o.offset < wm.high:
                        wanted.setdefault(k, set()).add(max(o.offset, wm.low))
            rounds = max((len(v) for v in wanted.values()), default=0)
            for i in range(rounds):  # each round asks for at most one offset per partition
                ask = {k: sorted(v)[i] for k, v in wanted.items() if len(v) > i}
                tails = {k: wms[k].high - o for k, o in ask.items()}
                for k, t in self.next_times.timestamps(ask, tails).items():
                    next_ts[(k, ask[k])] = t
            self.next_times.retain(wms)
        exact_on = self.next_times is not None
        samples: list[Sample] = []
        for g, rows in by_group.items():
            info = infos.get(g)
            info = info if isinstance(info, GroupInfo) else None
            owners = _owners(info)
            state = info.state if info else "unknown"
            members = len(info.members) if info else 0
            for k, o in rows:
                wm = wms[k]
                committed_ = o.offset
                if committed_ >= wm.high:
                    nts, exact, interp = None, (0 if exact_on else None), 0
                else:
                    nts = next_ts.get((k, max(committed_, wm.low)))
                    exact = timelag.exact_ms(ts, committed_, wm.high, nts) if exact_on else None
                    interp = table.estimate_ms(k, committed_, ts)
                member = owners.get(k, _NO_OWNER) if owners else _NO_OWNER
                samples.append(Sample(
                    ts, g, k[0], k[1], committed_, wm.low, wm.high, o.metadata, state,
                    members, member[0], member[1], member[2], nts, exact, interp))
        read_failures = [str(c) for g in groups if isinstance(c := committed.get(g), Exception)
                         and not isinstance(c, UnknownGroupError)]
        missed = len(read_failures) + (1 if list_errors and self.scope.all_groups else 0)
        why = (read_failures or [f"some brokers did not list their groups ({list_errors[0]})"
                                 if list_errors else ""])[0]
        return CycleResult(ts=ts, samples=samples, groups=len(by_group),
                           duration_ms=_now() - start, errors=errors, missed=missed,
                           missed_reason=why)
