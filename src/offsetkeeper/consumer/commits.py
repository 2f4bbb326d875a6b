"""Acknowledgements and commits of `OffsetConsumer` (`CommitMachinery`, mixed into it).

Acknowledged records move the committable prefix (`consumer.acks.AckTracker`); the policy
(`consumer.policy.commit_due`) says when it is committed: synchronously with retries of retriable
errors and backoff, or asynchronously with librdkafka's offset-commit callback; AUTO stores the
prefix for librdkafka's auto commit instead. Every result reaches the on-commit callback as a
`CommitResult`. Acknowledgements from other threads are queued and applied on the consumer's
thread (`_drain_cross_thread`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import TopicPartition as CkTP

from offsetkeeper.consumer.acks import tp_of as _tp
from offsetkeeper.consumer.policy import AckMode, commit_due
from offsetkeeper.errors import KafkaOperationError, OffsetkeeperError
from offsetkeeper.kafka.errors import error_name, is_retriable, translate
from offsetkeeper.models import TopicPartition

log = logging.getLogger("offsetkeeper.consumer")

# Asynchronous commits in flight at most: one more would only be superseded by a later commit
# of the same partitions, so it waits (coalesced) until an answer frees a slot. Unbounded, a
# RECORD policy with async commits queued one request per record: 200,000 records piled up
# ~200,000 OffsetCommits, 0.5 GB, and close() waited minutes behind them.
MAX_ASYNC_INFLIGHT = 16

# Kafka's answers to a member whose membership ended (session or max.poll.interval.ms expired,
# fenced, or the group moved on to a new generation / epoch). translate() words them for commits
# from outside the group ("stop its consumers"); a member's own commit needs its own words.
MEMBERSHIP_LOST = frozenset({"UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS",
                             "STALE_MEMBER_EPOCH", "FENCED_MEMBER_EPOCH", "FENCED_INSTANCE_ID"})


def commit_error(exc: KafkaException, group: str) -> OffsetkeeperError:
    """The error of a member's own failed commit: one sentence, no admin advice."""
    name = error_name(exc)
    if name in MEMBERSHIP_LOST:
        return KafkaOperationError(
            f"commit offsets: this consumer is not a current member of group {group} ({name}: "
            "its session or max.poll.interval.ms expired, or the group rebalanced); it rejoins "
            "on its next poll, and records processed since the last commit may be delivered "
            "again", code=name, retriable=False, group=group)
    return translate(exc, action="commit offsets", group=group)


@dataclass(frozen=True)
class CommitResult:
    """What the on-commit callback receives: the offsets, and the error if the commit failed."""

    offsets: dict[TopicPartition, int]
    error: OffsetkeeperError | None = None
    partition_errors: dict[TopicPartition, str] = field(default_factory=dict)
    asynchronous: bool = False
    latency_s: float = 0.0
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None and not self.partition_errors


class CommitMachinery:
    """Acknowledging and committing, on the state of `OffsetConsumer` (its consumer `_c`,
    `_tracker`, `_counters`, `policy`, `_store`, `_outstanding`, `_cross_thread`, the commit
    bookkeeping `_acked_since_commit`, `_last_commit`, `_async_inflight`, `_in_sync_commit`)."""

    # -- acknowledgements ---------------------------------------------------------------------
    def _drain_cross_thread(self) -> None:
        while self._cross_thread:
            kind, tp, off = self._cross_thread.popleft()
            if kind == "ack":
                self._do_ack(tp, off, on_consumer_thread=False)
            else:
                self._do_nack(tp, off)

    def _do_ack(self, tp: TopicPartition, offset: int, *, on_consumer_thread: bool,
                allow_commit: bool = True) -> None:
        if not self._tracker.ack(tp, offset):
            return
        self._counters.add(processed=1)
        self._acked_since_commit += 1
        if self._store is not None:
            return
        if self.policy.mode is AckMode.AUTO:
            self._store_auto()
        elif allow_commit and commit_due(self.policy, "ack", acked_since_commit=self._acked_since_commit,
                                         seconds_since_commit=time.monotonic() - self._last_commit,
                                         on_consumer_thread=on_consumer_thread):
            self._commit_pending("ack")

    def _do_nack(self, tp: TopicPartition, offset: int) -> None:
        if not self._tracker.owns(tp):
            return
        self._tracker.rewind(tp, offset)
        if tp in self._outstanding:
            self._outstanding[tp] = [o for o in self._outstanding[tp] if o < offset]
        self._drop_buffered(lambda t, o: t == tp and o >= offset)
        self._seek(tp, offset)

    def _ack_outstanding(self) -> None:
        if not self._outstanding:
            return
        n = self._tracker.ack_many(self._outstanding)
        self._outstanding = {}
        if n:
            self._counters.add(processed=n)
            self._acked_since_commit += n
            if self._store is None and self.policy.mode is AckMode.AUTO:
                self._store_auto()

    def _store_auto(self) -> None:
        offsets = self._tracker.committable()
        if not offsets:
            return
        try:
            self._c.store_offsets(offsets=[CkTP(tp.topic, tp.partition, o) for tp, o in offsets.items()])
            self._tracker.mark_committed(offsets)
        except KafkaException as exc:  # e.g. partition revoked meanwhile
            log.warning("store_offsets failed: %s", exc)

    # -- commits ------------------------------------------------------------------------------
    def _commit_pending(self, reason: str, tps=None) -> None:
        if self._store is not None or self.policy.mode is AckMode.BEFORE_PROCESSING:
            return
        if self.policy.mode is AckMode.AUTO:
            self._store_auto()
            return
        offsets = self._tracker.committable(tps)
        asynchronous = self.policy.asynchronous and reason not in ("revoke", "close")
        if offsets and asynchronous and len(self._async_inflight) >= MAX_ASYNC_INFLIGHT:
            self._counters.add(commits_coalesced=1)
            return  # still committable: the next commit after an answer carries these offsets
        if offsets:
            self._commit(offsets, reason=reason, asynchronous=asynchronous)
        self._acked_since_commit = 0
        self._last_commit = time.monotonic()

    def _commit(self, offsets: dict[TopicPartition, int], *, reason: str,
                asynchronous: bool) -> CommitResult | None:
        cks = [CkTP(tp.topic, tp.partition, o) for tp, o in sorted(offsets.items())]
        start = time.monotonic()
        if asynchronous:
            self._async_inflight.append((start, offsets))
            try:
                self._c.commit(offsets=cks, asynchronous=True)
            except KafkaException as exc:
                self._async_inflight.pop()
                return self._failed(offsets, commit_error(exc, self.group),
                                    start, reason, asynchronous=True)
            return None
        attempt = 0
        while True:
            self._in_sync_commit = True
            try:
                res = self._c.commit(offsets=cks, asynchronous=False)
                error = None
            except KafkaException as exc:
                res, error = None, exc
            finally:
                self._in_sync_commit = False
            perr = {} if res is None else {_tp(r): r.error.name() for r in res if r.error}
            retriable = (error is not None and is_retriable(error)) or (
                perr and all(is_retriable(r.error) for r in res if r.error))
            if (error is not None or perr) and retriable and attempt < self.policy.commit_retries:
                attempt += 1
                self._counters.add(commit_retries=1)
                time.sleep(min(2.0, self.policy.commit_backoff_s * 2 ** (attempt - 1)))
                continue
            if error is not None:
                return self._failed(offsets, commit_error(error, self.group),
                                    start, reason, asynchronous=False)
            if perr:
                ok = {tp: o for tp, o in offsets.items() if tp not in perr}
                self._tracker.mark_committed(ok)
                return self._failed(offsets, None, start, reason, asynchronous=False, perr=perr)
            latency = time.monotonic() - start
            self._tracker.mark_committed(offsets)
            self._counters.commit_done(latency, len(offsets))
            result = CommitResult(offsets, latency_s=latency, reason=reason)
            self._notify(result)
            return result

    def _failed(self, offsets, error, start, reason, *, asynchronous, perr=None) -> CommitResult:
        self._counters.add(commit_failures=1)
        result = CommitResult(offsets, error=error, partition_errors=perr or {},
                              asynchronous=asynchronous, latency_s=time.monotonic() - start,
                              reason=reason)
        log.warning("commit of group %s failed: %s", self.group,
                    error.message if error else perr)
        self._notify(result)
        return result

    def _notify(self, result: CommitResult) -> None:
        if self._on_commit_user is not None:
            self._on_commit_user(result)

    def _on_commit_cb(self, err, partitions) -> None:
        """librdkafka's offset-commit callback (served from poll): async and auto commits."""
        if self._in_sync_commit:
            return  # the sync path reads its own result
        if self._async_inflight:
            start, offsets = self._async_inflight.popleft()
        else:  # an auto commit (AUTO policy)
            start, offsets = time.monotonic(), {_tp(p): p.offset for p in partitions or []}
        if err is not None and err.code() == KafkaError._NO_OFFSET:
            return  # auto commit with nothing new to commit
        perr = {_tp(p): p.error.name() for p in partitions or [] if p.error}
        if err is not None or perr:
            exc = commit_error(KafkaException(err), self.group) \
                if err is not None else None
            self._failed(offsets, exc, start, "async", asynchronous=True, perr=perr)
            return
        latency = time.monotonic() - start
        if self.policy.mode is not AckMode.AUTO:
            self._tracker.mark_committed(offsets)
        self._counters.commit_done(latency, len(offsets))
        self._notify(CommitResult(offsets, asynchronous=True, latency_s=latency, reason="async"))

    def _mirror_commit(self, offsets: dict[TopicPartition, int]) -> None:
        """Informational copy of stored offsets in the Kafka group (for lag tools)."""
        try:
            self._c.commit(offsets=[CkTP(tp.topic, tp.partition, o) for tp, o in offsets.items()],
                           asynchronous=True)
        except KafkaException as exc:
            log.info("mirror commit failed (ignored): %s", exc)
