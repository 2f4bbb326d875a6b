"""One sampling cycle: every group's committed offsets, then log starts/ends, then the
timestamps of the next records to consume — batched: one request lists every group's state, the
log offsets of all partitions take two, and the one committed-offset request per group (the
admin API takes one group per call) are all in flight at once — per chunk of groups (32, 64, ...
up to 1,024), each chunk read completely and handed over at once (`sample(on_chunk=...)`), so
the exporter serves the first groups long before a cycle over thousands of groups ends.

Read order matters: committed offsets are read before log ends, so `log_end - committed` is
never negative from read order (a commit cannot overtake a log end read after it).

Transactions (kafka/stable.py): each cycle also reads the last stable offset (LSO) of every
partition; where a committed offset is a few offsets short of the LSO, a read_committed consumer
counts the records left (a group behind transaction markers only has lag 0); and a partition
whose LSO an open transaction holds back gets the time of that transaction's first record.

Share groups (KIP-932) are sampled too: with --all-groups when the JVM admin helper is installed
(one extra ListGroups through it per cycle), and when named. Their "committed offset" is the
share-partition start offset, and their lag is the broker's (KIP-1226: the records from the start
offset to the log end that the group has not acknowledged), kept as the sample's `readable`
count, so acknowledged records beyond a start offset that has not moved yet are not lag.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from offsetkeeper.errors import OffsetkeeperError, UnknownGroupError
from offsetkeeper.history import timelag
from offsetkeeper.history.model import Sample
from offsetkeeper.kafka.peek import (  # noqa: F401 (re-exported: bench/, tests)
    NextRecordTimes,
    plan_batches,
    release_native_memory,
)
from offsetkeeper.kafka.ports import KafkaPort
from offsetkeeper.kafka.stable import readable_lag, wants_count
from offsetkeeper.models import CommittedOffset, GroupInfo, GroupType, TopicPartition

Key = tuple[str, int]  # (topic, partition)


@dataclass(frozen=True)
class SampleScope:
    """Which groups to sample: the named ones, or every group of the cluster."""

    groups: tuple[str, ...] = ()
    all_groups: bool = False
    # regexes (re.fullmatch, like the exporter's lists) deciding which of every group the
    # sampler tracks with `all_groups`: allowed by one of `allow` (all when empty), and by none
    # of `deny`
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    def tracks(self, group: str) -> bool:
        """Whether the sampler samples `group` (named groups are always sampled)."""
        import re

        if not self.all_groups:
            return True
        if self.allow and not any(re.fullmatch(p, group) for p in self.allow):
            return False
        return not any(re.fullmatch(p, group) for p in self.deny)


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
    interrupted: bool = False  # stopped between chunks (SIGTERM): not every group was read

    @property
    def total_lag(self) -> int:
        return sum(s.lag for s in self.samples)


def _now() -> int:
    return int(time.time() * 1000)


_NO_OWNER = ("", "", "")


def _owners(info: GroupInfo | None) -> dict[Key, tuple[str, str, str]]:
    if info is None:
        return {}
    return {(tp.topic, tp.partition): (m.member_id, m.client_id, m.host)
            for m in info.members for tp in m.assignment}


class CycleSampler:
    """Reads one cycle at a time through one admin port; keeps the time-lag state between cycles."""

    def __init__(self, admin: KafkaPort, scope: SampleScope, *, time_lag: bool = True,
                 table: timelag.LogEndTable | None = None) -> None:
        if not scope.groups and not scope.all_groups:
            from offsetkeeper.errors import UsageError

            raise UsageError("no group given: use --group GROUP (repeatable) or --all-groups")
        self.admin = admin
        self.scope = scope
        self.table = table or timelag.LogEndTable()
        self.next_times = NextRecordTimes(admin.conn.client_config(), timeout_s=min(5.0, admin.timeout)) \
            if time_lag else None
        self._txn_starts: NextRecordTimes | None = None   # first records of open transactions
        self._counter: NextRecordTimes | None = None      # counts records left to the LSO

    def close(self) -> None:
        if self.next_times is not None:
            self.next_times.close()
        for peek in (self._txn_starts, self._counter):
            if peek is not None:
                peek.close()

    def _count_readable(self, by_group: dict, wms: dict, wanted_all: dict) -> dict[tuple[Key, int], int]:
        """Records left to the LSO, per (partition, committed offset), counted by a
        read_committed consumer where the committed offset is a few offsets short of the LSO
        (`stable.wants_count`): on transactional topics those may be markers only (lag 0).
        Cached by range: a caught-up group costs no fetch while its partition is idle.
        `wanted_all` collects the ranges of the whole cycle (the cache keeps those)."""
        wanted: dict[Key, set[int]] = {}
        for rows in by_group.values():
            for k, o in rows:
                lo = wms[k]
                if wants_count(o.offset, lo.log_end, lo.lso) and o.offset >= lo.log_start:
                    wanted.setdefault(k, set()).add(o.offset)
        if not wanted:
            return {}
        for k, v in wanted.items():
            wanted_all.setdefault(k, set()).update(v)
        if self._counter is None:
            self._counter = NextRecordTimes(self.admin.conn.client_config(),
                                            timeout_s=min(5.0, self.admin.timeout))
        out: dict[tuple[Key, int], int] = {}
        rounds = max(len(v) for v in wanted.values())
        for i in range(rounds):
            ask = {k: sorted(v)[i] for k, v in wanted.items() if len(v) > i}
            got = self._counter.count_records({k: (o, wms[k].lso) for k, o in ask.items()})
            for k, res in got.items():
                if res is not None:
                    out[(k, ask[k])] = res[0]
        return out

    def _open_transactions(self, held: dict[Key, int]) -> dict[Key, int | None]:
        """When the open transaction holding each partition's LSO began: the timestamp of its
        first record, at the LSO, read uncommitted (cached by LSO: one fetch per transaction)."""
        if not held:
            return {}
        if self._txn_starts is None:
            conf = {**self.admin.conn.client_config(), "isolation.level": "read_uncommitted"}
            self._txn_starts = NextRecordTimes(conf, timeout_s=min(5.0, self.admin.timeout))
        return self._txn_starts.timestamps(held)

    def _share_listing(self, list_errors: list[str]) -> dict:
        """Every share group (librdkafka's ListGroups has none), when the admin helper is
        installed; a failure is one of the cycle's list errors, not an outage."""
        from offsetkeeper.kafka import jvm

        if not jvm.available():
            return {}
        try:
            return {g.group_id: g for g in self.admin.for_group_type(GroupType.SHARE).list_groups()}
        except OffsetkeeperError as exc:
            list_errors.append(f"share groups: {exc}")
            return {}

    def _share_offsets(self, groups: list[str], infos: dict, committed: dict) -> dict:
        """Members, start offsets and the broker's lag (KIP-1226) of share groups, into `infos`
        and `committed`; returns (group, (topic, partition)) -> lag."""
        view = self.admin.for_group_type(GroupType.SHARE)
        infos.update(view.describe_groups_each(groups))
        lags: dict[tuple[str, Key], int] = {}
        try:
            answers = self.admin.share_group_offsets(groups)
        except OffsetkeeperError as exc:
            committed.update({g: exc for g in groups})
            return lags
        for g in groups:
            res = answers.get(g, [])
            if isinstance(res, Exception):
                committed[g] = res
                continue
            committed[g] = {TopicPartition(o.topic, o.partition): CommittedOffset(int(o.start_offset))
                            for o in res if o.start_offset is not None}
            lags.update({(g, (o.topic, o.partition)): int(o.lag) for o in res
                         if o.start_offset is not None and o.lag is not None})
        return lags

    def sample(self, *, on_chunk: Callable[[list[Sample]], None] | None = None,
               should_stop: Callable[[], bool] | None = None) -> CycleResult:
        """Read one cycle. Raises (a retriable OffsetkeeperError) when the cluster is unreachable;
        a group that fails alone is reported in `errors` and left out.

        Groups are read in chunks of growing size (32, 64, ... up to 1,024 groups): each chunk
        is read completely (committed offsets, log offsets, time lag) and handed to `on_chunk`
        at once, so the first groups are served long before a cycle over thousands of groups
        ends. `should_stop()` is asked between chunks: when it says yes, the cycle ends with
        what was read (`interrupted`)."""
        start = _now()
        # Metadata first: a cheap, safe reachability check (group requests sent to an unreachable
        # cluster can abort the process in librdkafka, see KafkaAdmin.ping) and the partitions.
        topics = self.admin.topic_partitions(None)
        # One ListGroups request gives every group's state; only groups that can have members
        # are described (members and assignments), so idle groups cost no describe at all.
        listing = {g.group_id: g for g in self.admin.list_groups()}
        list_errors = list(self.admin.last_list_errors)
        if self.scope.all_groups:
            listing.update(self._share_listing(list_errors))
        groups = list(self.scope.groups) if not self.scope.all_groups else \
            [g for g in listing if self.scope.tracks(g)]
        known = {t: frozenset(ps) for t, ps in topics.items()}
        cyc = _CycleState(ts=0)
        interrupted = False
        for chunk in chunked(groups):
            if should_stop is not None and should_stop():
                interrupted = True
                break
            part = self._sample_chunk(chunk, listing, known, cyc)
            if on_chunk is not None and part:
                on_chunk(part)
        if groups and not interrupted and cyc.failed == len(groups):
            raise cyc.first_failure  # no group answered: an outage, not a per-group problem
        # Per-partition state of partitions no longer sampled is dropped (flat memory); an
        # interrupted cycle did not see every partition, so it keeps everything.
        if not interrupted:
            self.table.retain(cyc.wms)
            if self.next_times is not None:
                self.next_times.retain(cyc.wms)
            if self._counter is not None:
                self._counter.retain(cyc.counted)
            if self._txn_starts is not None:
                self._txn_starts.retain(cyc.held)
        missed = len(cyc.read_failures) + (1 if list_errors and self.scope.all_groups else 0)
        why = (cyc.read_failures or [f"some brokers did not list their groups ({list_errors[0]})"
                                     if list_errors else ""])[0]
        return CycleResult(ts=cyc.ts or _now(), samples=cyc.samples, groups=cyc.groups,
                           duration_ms=_now() - start, errors=cyc.errors, missed=missed,
                           missed_reason=why, interrupted=interrupted)

    def _sample_chunk(self, groups: list[str], listing: dict, known: dict,
                      cyc: _CycleState) -> list[Sample]:
        """Read one chunk of groups completely; add its samples to `cyc` and return them."""
        share = GroupType.SHARE.value
        to_describe = [g for g in groups if g not in listing
                       or (listing[g].state not in ("empty", "dead")
                           and listing[g].group_type != share)]
        infos: dict[str, GroupInfo | Exception] = {
            g: GroupInfo(g, listing[g].state, group_type=listing[g].group_type)
            for g in groups if g in listing}
        infos.update(self.admin.describe_groups_each(to_describe))
        # share groups (listed, or named and typed by the describe): their start offsets
        shared = [g for g in groups if getattr(infos.get(g), "group_type", "") == share]
        committed = self.admin.committed_offsets_each([g for g in groups if g not in shared])
        share_lag = self._share_offsets(shared, infos, committed) if shared else {}
        errors = cyc.errors
        # (topic, partition) tuples in the hot loops: hashing them is much cheaper than hashing
        # TopicPartition dataclasses, which matters at thousands of partitions per second.
        by_group: dict[str, list[tuple[Key, CommittedOffset]]] = {}
        for g in groups:
            c = committed.get(g)
            if isinstance(c, Exception):
                errors[g] = str(c)
                if isinstance(c, OffsetkeeperError):
                    cyc.failed += 1
                    cyc.first_failure = cyc.first_failure or c
                if not isinstance(c, UnknownGroupError):
                    cyc.read_failures.append(str(c))
                continue
            live = [((tp.topic, tp.partition), o) for tp, o in (c or {}).items()
                    if tp.partition in known.get(tp.topic, ())]
            if not live and not self.scope.all_groups:
                errors[g] = str(UnknownGroupError(f"group '{g}' has no committed offsets", group=g))
            if live:
                by_group[g] = live
        if not by_group:
            return []
        keys = {k for rows in by_group.values() for k, _ in rows}
        # ... log starts, ends and last stable offsets after (again for every chunk: a log end
        # read before this chunk's commits could be older than them)
        wms = {(tp.topic, tp.partition): lo for tp, lo in
               self.admin.log_offsets([TopicPartition(*k) for k in keys], ordered=False).items()}
        ts = _now()
        cyc.ts = cyc.ts or ts   # every sample of a cycle carries the cycle's time
        table = self.table
        for k, lo in wms.items():
            if k not in cyc.wms:
                table.add(k, ts, lo.log_end)
                cyc.wms[k] = lo
        next_ts: dict[tuple[Key, int], int | None] = {}
        if self.next_times is not None:
            # One fetch per lagging partition and distinct committed offset (several groups on
            # one partition at the same offset share it; the cache key is the offset). Only
            # below the last stable offset: a read_committed fetch at or past it would wait for
            # the open transaction.
            wanted: dict[Key, set[int]] = {}
            for rows in by_group.values():
                for k, o in rows:
                    lo = wms[k]
                    if o.offset < lo.lso:
                        wanted.setdefault(k, set()).add(max(o.offset, lo.log_start))
            rounds = max((len(v) for v in wanted.values()), default=0)
            for i in range(rounds):  # each round asks for at most one offset per partition
                ask = {k: sorted(v)[i] for k, v in wanted.items() if len(v) > i}
                tails = {k: wms[k].lso - o for k, o in ask.items()}
                for k, t in self.next_times.timestamps(ask, tails).items():
                    next_ts[(k, ask[k])] = t
        counted = self._count_readable(by_group, wms, cyc.counted)
        held = {k: lo.lso for k, lo in wms.items() if lo.open_transaction}
        cyc.held.update(held)
        open_since = self._open_transactions(held)
        exact_on = self.next_times is not None
        samples: list[Sample] = []
        stamp = cyc.ts
        for g, rows in by_group.items():
            info = infos.get(g)
            info = info if isinstance(info, GroupInfo) else None
            owners = _owners(info)
            state = info.state if info else "unknown"
            members = len(info.members) if info else 0
            for k, o in rows:
                lo = wms[k]
                committed_ = o.offset
                n = share_lag.get((g, k), counted.get((k, committed_)))
                if readable_lag(committed_, lo.log_end, lo.lso, n) == 0:
                    nts, exact, interp = None, (0 if exact_on else None), 0
                else:
                    nts = next_ts.get((k, max(committed_, lo.log_start)))
                    exact = timelag.exact_ms(ts, committed_, lo.log_end, nts) if exact_on else None
                    interp = table.estimate_ms(k, committed_, ts)
                member = owners.get(k, _NO_OWNER) if owners else _NO_OWNER
                samples.append(Sample(
                    stamp, g, k[0], k[1], committed_, lo.log_start, lo.log_end, o.metadata or "", state,
                    members, member[0], member[1], member[2], nts, exact, interp,
                    lo.lso, n, open_since.get(k) if lo.open_transaction else None))
        cyc.samples.extend(samples)
        cyc.groups += len(by_group)
        return samples


@dataclass
class _CycleState:
    """What the chunks of one cycle have read so far."""

    ts: int
    samples: list[Sample] = field(default_factory=list)
    groups: int = 0
    errors: dict[str, str] = field(default_factory=dict)
    failed: int = 0
    first_failure: OffsetkeeperError | None = None
    read_failures: list[str] = field(default_factory=list)
    wms: dict = field(default_factory=dict)        # partition -> log offsets (first read)
    counted: dict = field(default_factory=dict)    # partition -> offsets counted to the LSO
    held: dict = field(default_factory=dict)       # partition -> LSO held by an open transaction


FIRST_CHUNK = 32
MAX_CHUNK = 1024


def chunked(groups: list[str], first: int = FIRST_CHUNK, most: int = MAX_CHUNK) -> Iterator[list[str]]:
    """The groups in chunks of doubling size (first, 2 x first, ... up to `most`): the first
    groups are ready soon, and a cycle over N groups takes O(log N) more rounds than one batch."""
    i, size = 0, first
    while i < len(groups):
        yield groups[i:i + size]
        i += size
        size = min(size * 2, most)
