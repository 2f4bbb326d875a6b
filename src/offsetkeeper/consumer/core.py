"""`OffsetConsumer`: a thin layer over confluent_kafka.Consumer that commits by policy.

The application still receives confluent-kafka `Message` objects. What this layer adds:

- commit policies (`CommitPolicy`, Spring Kafka's AckModes) with sync/async commits, retries of
  retriable sync commit errors with backoff, and an on-commit callback that receives errors;
- out-of-order acknowledgements: only the contiguous acknowledged prefix of a partition is
  committed; `nack(msg)` seeks back so the record and everything after it come again;
- rebalances: on revoke the acknowledged offsets are committed synchronously, on lost pending
  acknowledgements are dropped; eager and cooperative (incremental) assignment;
- `auto.offset.reset` earliest / latest / none (`NoCommittedOffset`);
- external offset stores with `transaction()`, seek-on-assign, and an optional mirror to Kafka;
- live resets published by `offsetkeeper offsets reset --live` (see `consumer.live`);
- counters (`metrics()`).

Records count as *processed* when the application asks for the next one (`records()`) or the
next batch (`poll()`) — the moment a Spring listener returns — or when it calls `ack(msg)` in the
MANUAL modes.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as CkTP

from offsetkeeper.consumer.acks import AckTracker
from offsetkeeper.consumer.metrics import ConsumerMetrics, Counters
from offsetkeeper.consumer.policy import AckMode, CommitPolicy, commit_due
from offsetkeeper.consumer.stores import OffsetStore, StoreTransaction, open_store
from offsetkeeper.errors import (
    ConsumerConfigError,
    FencedError,
    NoCommittedOffset,
    OffsetkeeperError,
    PartitionNotAssignedError,
)
from offsetkeeper.kafka.errors import (
    AUTHORIZATION,
    PARTITION_EOF,
    connection_failure,
    is_retriable,
    translate,
)
from offsetkeeper.models import TopicPartition

log = logging.getLogger("offsetkeeper.consumer")

OFFSET_RESETS = ("earliest", "latest", "none")
# Properties the policy and auto_offset_reset own: setting them too would contradict the policy.
_OWNED_PROPERTIES = ("enable.auto.commit", "enable.auto.offset.store", "auto.offset.reset",
                     "auto.commit.interval.ms", "on_commit", "enable.partition.eof")


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


def _tp(msg_or_tp) -> TopicPartition:
    return TopicPartition(msg_or_tp.topic(), msg_or_tp.partition()) if callable(
        getattr(msg_or_tp, "topic", None)) else TopicPartition(msg_or_tp.topic, msg_or_tp.partition)


class OffsetConsumer:
    """A consumer of `topics` in the group of `config["group.id"]`, committing by `policy`.

    Every parameter is checked before anything connects: invalid values raise
    ConsumerConfigError (or StoreError for a store that cannot be opened).

    Example::

        with OffsetConsumer({"bootstrap.servers": "localhost:9092", "group.id": "payments"},
                            ["orders"], policy=CommitPolicy.batch(),
                            auto_offset_reset="earliest") as consumer:
            for msg in consumer.records():
                handle(msg)              # processed when the loop asks for the next record
    """

    def __init__(
        self,
        config: Mapping[str, object],
        topics: Sequence[str],
        *,
        policy: CommitPolicy | None = None,
        auto_offset_reset: str = "latest",
        store: OffsetStore | str | None = None,
        mirror_to_kafka: bool = False,
        on_commit: Callable[[CommitResult], None] | None = None,
        on_assign: Callable[[list[TopicPartition]], None] | None = None,
        on_revoke: Callable[[list[TopicPartition]], None] | None = None,
        live_reset: bool = True,
        live_reset_keys: Sequence[str] | None = None,
        live_reset_topic: str | None = None,
        max_poll_records: int = 500,
    ) -> None:
        conf = dict(config)
        group = conf.get("group.id")
        if not isinstance(group, str) or not group:
            raise ConsumerConfigError(f"group.id={group!r} is invalid; expected a non-empty group name")
        if group != group.lstrip():
            # librdkafka strips leading whitespace from property values: the consumer would
            # join and commit to another group than the one named.
            raise ConsumerConfigError(f"group.id={group!r} starts with whitespace, which the Kafka "
                                      "client drops (it would use another group); rename the group")
        for key in _OWNED_PROPERTIES:
            if key in conf:
                raise ConsumerConfigError(
                    f"consumer property {key!r} is set by OffsetConsumer (policy / auto_offset_reset); "
                    "remove it from the config")
        if isinstance(topics, str) or not topics or not all(isinstance(t, str) and t for t in topics):
            raise ConsumerConfigError(f"topics={topics!r} is invalid; expected a non-empty list of topic names")
        if auto_offset_reset not in OFFSET_RESETS:
            raise ConsumerConfigError(
                f"auto_offset_reset={auto_offset_reset!r} is invalid; expected earliest, latest or none")
        if isinstance(max_poll_records, bool) or not isinstance(max_poll_records, int) or max_poll_records < 1:
            raise ConsumerConfigError(f"max_poll_records={max_poll_records!r} is invalid; expected an integer >= 1")
        if policy is not None and not isinstance(policy, CommitPolicy):
            raise ConsumerConfigError(f"policy={policy!r} is invalid; expected a CommitPolicy")
        if store is not None and policy is not None:
            raise ConsumerConfigError(
                "policy and store are exclusive: with an offset store, offsets are committed by "
                "transaction(); drop policy=")
        if mirror_to_kafka and store is None:
            raise ConsumerConfigError("mirror_to_kafka=True needs an offset store (store=...)")
        self.policy = policy or CommitPolicy()
        self.group = group
        self.topics = list(topics)
        self.auto_offset_reset = auto_offset_reset
        self._max_poll = max_poll_records
        self._on_commit_user = on_commit
        self._on_assign_user = on_assign
        self._on_revoke_user = on_revoke
        self._mirror = mirror_to_kafka
        self._owns_store = store is not None and not isinstance(store, OffsetStore)
        self._store: OffsetStore | None = open_store(store) if store is not None else None
        self._cooperative = "cooperative" in str(conf.get("partition.assignment.strategy", ""))

        mode = self.policy.mode
        auto = mode is AckMode.AUTO and self._store is None
        conf.update({
            "enable.auto.commit": auto,
            "enable.auto.offset.store": False,
            # librdkafka's 'error' is Kafka's 'none': the fetch fails instead of guessing.
            "auto.offset.reset": "error" if auto_offset_reset == "none" else auto_offset_reset,
            "on_commit": self._on_commit_cb,
        })
        # A refused SASL login / TLS handshake reaches only the error callback: raise it from
        # the next poll instead of polling an empty queue forever (a user callback is kept).
        self._user_error_cb = conf.get("error_cb")
        conf["error_cb"] = self._on_error_cb
        if auto:
            conf["auto.commit.interval.ms"] = self.policy.auto_commit_interval_ms
        self._base_conf = {k: v for k, v in conf.items() if not callable(v)}
        try:
            self._c = Consumer(conf)
        except (KafkaException, ValueError, TypeError) as exc:
            if self._owns_store and self._store:
                self._store.close()
            raise ConsumerConfigError(f"invalid consumer configuration: {exc}") from None

        self._owner = f"{conf.get('client.id', 'offsetkeeper')}/{uuid.uuid4().hex[:12]}"
        self._tracker = AckTracker()
        self._counters = Counters()
        # poll(): handed out, not yet acknowledged — per partition, offsets ascending.
        self._outstanding: dict[TopicPartition, list[int]] = {}
        self._tps: dict[tuple[str, int], TopicPartition] = {}
        self._cross_thread: deque[tuple[str, TopicPartition, int]] = deque()
        self._buffer: deque = deque()  # fetched, not yet handed out
        self._acked_since_commit = 0
        self._last_commit = time.monotonic()
        self._async_inflight: deque[tuple[float, dict[TopicPartition, int]]] = deque()
        self._in_sync_commit = False
        self._poll_thread: int | None = None
        self._pending_error: OffsetkeeperError | None = None
        self._closed = False
        self._stop = threading.Event()
        self._watcher = None
        # partition -> (request id, offset): applied by a live reset, paused until the request
        # is withdrawn so the command reads back a position nobody is moving
        self._held: dict[TopicPartition, tuple[str, int]] = {}
        if live_reset and live_reset_keys:
            from offsetkeeper.consumer.live import CONTROL_TOPIC, LiveResetWatcher
            from offsetkeeper.consumer.live_auth import LiveKeyError, trusted_keys

            try:
                trusted = trusted_keys(live_reset_keys)
            except LiveKeyError as exc:
                self._c.close()
                raise ConsumerConfigError(exc.message) from None
            self._watcher = LiveResetWatcher(self._base_conf, group, trusted,
                                             live_reset_topic or CONTROL_TOPIC)
        self._c.subscribe(self.topics, on_assign=self._on_assign, on_revoke=self._on_revoke,
                          on_lost=self._on_lost)

    # -- public surface -----------------------------------------------------------------------
    @property
    def kafka(self) -> Consumer:
        """The underlying confluent_kafka.Consumer (for position, watermarks, pause ...)."""
        return self._c

    def metrics(self) -> ConsumerMetrics:
        """A copy of the counters: processed, commits, commit latency, commit failures ..."""
        return self._counters.snapshot()

    def assignment(self) -> list[TopicPartition]:
        """Partitions this consumer owns now."""
        return self._tracker.owned()

    def stop(self) -> None:
        """Make `records()` return after the current record (safe from any thread)."""
        self._stop.set()

    def poll(self, timeout: float = 1.0) -> list:
        """Finish the previous batch (acknowledge it unless MANUAL, commit by policy), then fetch
        up to max_poll_records messages. Error events are handled, never returned."""
        self._check_open()
        self._poll_thread = threading.get_ident()
        self._finish_batch()
        msgs = list(self._buffer) if self._buffer else self._fetch(timeout)
        self._buffer.clear()
        if msgs:
            self._register(msgs, outstanding=True)
        return msgs

    def _register(self, msgs: list, *, outstanding: bool) -> None:
        """Messages handed (or about to be handed) to the application: track them."""
        by_part: dict[tuple[str, int], list[int]] = {}
        for m in msgs:
            by_part.setdefault((m.topic(), m.partition()), []).append(m.offset())
        batch = {self._tp_of(k): v for k, v in by_part.items()}
        self._tracker.delivered_many(batch)
        if outstanding:
            for tp, offs in batch.items():
                self._outstanding.setdefault(tp, []).extend(offs)

    def _tp_of(self, key: tuple[str, int]) -> TopicPartition:
        tp = self._tps.get(key)
        if tp is None:
            tp = self._tps[key] = TopicPartition(*key)
        return tp

    def records(self, timeout: float = 1.0, *,
                on_idle: Callable[[OffsetConsumer], None] | None = None) -> Iterator:
        """Yield messages one at a time until stop() or close(). A record counts as processed
        when the loop asks for the next one (unless MANUAL: then ack(msg) says so). Leaving
        the loop early keeps the rest of the batch for the next records()/poll() call.
        `on_idle(consumer)` runs on the consumer thread after a poll that returned nothing
        (Spring's idle event): a place to check progress or call stop()."""
        self._check_open()
        self._poll_thread = threading.get_ident()
        # Per record only where the policy commits per record; otherwise processed records are
        # collected and acknowledged in bulk at the next commit point (same result, far cheaper).
        per_record = self.policy.mode is AckMode.RECORD
        auto_ack = self._auto_ack_enabled()
        while not self._stop.is_set() and not self._closed:
            self._finish_batch()
            if not self._buffer:
                msgs = self._fetch(timeout)
                if msgs:
                    self._register(msgs, outstanding=False)
                    self._buffer.extend(msgs)
                elif on_idle is not None:
                    on_idle(self)
            tps, owns = self._tps, self._tracker.owns
            while self._buffer:
                m = self._buffer.popleft()
                key = (m.topic(), m.partition())
                tp = tps.get(key) or self._tp_of(key)
                if not owns(tp):
                    continue
                yield m
                if self._closed:
                    return
                if auto_ack:
                    if per_record:
                        self._do_ack(tp, m.offset(), on_consumer_thread=True)
                    else:
                        self._outstanding.setdefault(tp, []).append(m.offset())
                if self._stop.is_set():
                    break
        if not self._closed:
            self._finish_batch()

    def ack(self, msg) -> None:
        """Acknowledge a processed record (MANUAL modes; any mode for out-of-order processing).
        From another thread it is queued and applied at the consumer's next poll."""
        tp = _tp(msg)
        if self._poll_thread is not None and threading.get_ident() != self._poll_thread:
            self._cross_thread.append(("ack", tp, msg.offset()))
            return
        self._do_ack(tp, msg.offset(), on_consumer_thread=True)

    def nack(self, msg) -> None:
        """Negative acknowledgement: this record and all later ones of its partition are
        delivered again (the consumer seeks back to it)."""
        tp = _tp(msg)
        if self._poll_thread is not None and threading.get_ident() != self._poll_thread:
            self._cross_thread.append(("nack", tp, msg.offset()))
            return
        self._do_nack(tp, msg.offset())

    def commit(self, offsets: Mapping[TopicPartition, int] | None = None, *,
               asynchronous: bool | None = None) -> CommitResult | None:
        """Commit now: the acknowledged prefix (no argument), or explicit next offsets of owned
        partitions (PartitionNotAssignedError otherwise). Returns the result of a sync commit."""
        self._check_open()
        if self._store is not None:
            raise ConsumerConfigError("this consumer keeps offsets in a store: commit them with transaction()")
        if offsets is None:
            self._drain_cross_thread()
            offsets = self._tracker.committable()
        else:
            offsets = {TopicPartition(*tp) if isinstance(tp, tuple) else tp: int(o)
                       for tp, o in offsets.items()}
            for tp, o in offsets.items():
                if not self._tracker.owns(tp):
                    raise PartitionNotAssignedError(
                        f"cannot commit {tp} for group {self.group}: the partition is not assigned "
                        f"to this consumer (owned: {', '.join(map(str, self.assignment())) or 'none'})",
                        group=self.group, topic=tp.topic, partition=tp.partition)
                if o < 0:
                    raise ConsumerConfigError(f"offset {o} for {tp} is invalid; expected >= 0")
        if not offsets:
            return None
        return self._commit(dict(offsets), reason="explicit",
                            asynchronous=self.policy.asynchronous if asynchronous is None else asynchronous)

    @contextmanager
    def transaction(self) -> Iterator[StoreTransaction]:
        """A store transaction: run the application's SQL with tx.execute(...), include records
        with tx.ack(msg); on success the offsets are written in the same transaction. On an
        exception everything is rolled back and the records' partitions are rewound."""
        self._check_open()
        if self._store is None:
            raise ConsumerConfigError("transaction() needs an offset store (OffsetConsumer(..., store=...))")
        first: dict[TopicPartition, int] = {}
        start = time.monotonic()
        tx_ref: list[StoreTransaction] = []
        try:
            with self._store.transaction(self.group, self._owner) as tx:
                tx_ref.append(tx)
                orig_ack = tx.ack

                def ack(msg, _orig=orig_ack):
                    first.setdefault(_tp(msg), msg.offset())
                    _orig(msg)

                tx.ack = ack  # type: ignore[method-assign]
                yield tx
        except FencedError:
            self._counters.add(commit_failures=1)
            raise
        except BaseException:
            for tp, off in first.items():  # processed again, not skipped
                self._do_nack(tp, off)
            raise
        tx = tx_ref[0]
        self._counters.add(processed=tx.records)
        if tx.offsets:
            self._counters.commit_done(time.monotonic() - start, len(tx.offsets))
            self._tracker.mark_committed(tx.offsets)
            if self._mirror:
                self._mirror_commit(tx.offsets)
            self._notify(CommitResult(dict(tx.offsets), latency_s=time.monotonic() - start,
                                      reason="store"))

    def close(self) -> None:
        """Acknowledge and commit what was processed, leave the group, release everything."""
        if self._closed:
            return
        try:
            if self._poll_thread is None or threading.get_ident() == self._poll_thread:
                if self._auto_ack_enabled():
                    self._ack_outstanding()
                self._drain_cross_thread()
                self._commit_pending("close")
            self._c.close()  # triggers on_revoke, which commits anything left
        finally:
            self._closed = True
            if self._watcher:
                self._watcher.close()
            if self._owns_store and self._store:
                self._store.close()

    def __enter__(self) -> OffsetConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- batches ------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise ConsumerConfigError(f"the consumer of group {self.group} is closed")

    def _auto_ack_enabled(self) -> bool:
        # BEFORE_PROCESSING acknowledges too (for the processed counter); it never commits then.
        return self._store is None and not self.policy.is_manual

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

    def _finish_batch(self) -> None:
        """The previous poll's records are processed: Spring's commit point."""
        if self._auto_ack_enabled():
            self._ack_outstanding()
        else:
            self._outstanding = {}
        self._drain_cross_thread()
        if self._store is None and self.policy.mode not in (AckMode.AUTO, AckMode.BEFORE_PROCESSING) \
                and commit_due(self.policy, "poll", acked_since_commit=self._acked_since_commit,
                               seconds_since_commit=time.monotonic() - self._last_commit):
            self._commit_pending("poll")
        if self._watcher is not None:
            self._apply_live_resets()

    def _fetch(self, timeout: float) -> list:
        if self._pending_error is not None:
            err, self._pending_error = self._pending_error, None
            raise err
        try:
            raw = self._c.consume(self._max_poll, timeout)
        except OffsetkeeperError:
            raise
        except KafkaException as exc:
            raise translate(exc, action="consume", group=self.group) from exc
        if self._pending_error is not None:
            err, self._pending_error = self._pending_error, None
            raise err
        msgs = []
        for m in raw:
            err = m.error()
            if err is None:
                if not self._held or _tp(m) not in self._held:
                    msgs.append(m)
                continue
            self._handle_error(m, err)
        if msgs and self.policy.mode is AckMode.BEFORE_PROCESSING and self._store is None:
            # At-most-once: the poll's offsets are committed before any record is handed out.
            nxt: dict[TopicPartition, int] = {}
            for m in msgs:
                nxt[_tp(m)] = max(nxt.get(_tp(m), 0), m.offset() + 1)
            res = self._commit(nxt, reason="before-processing", asynchronous=False)
            if res is not None and not res.ok:
                # Not committed: handing the records out could process them twice later.
                for tp in nxt:
                    first = min(m.offset() for m in msgs if _tp(m) == tp)
                    self._seek(tp, first)
                return []
        return msgs

    def _on_error_cb(self, err: KafkaError) -> None:
        failure = connection_failure(err.name(), err.str(),
                                     bootstrap=str(self._base_conf.get("bootstrap.servers", "")))
        if failure is not None and self._pending_error is None:
            self._pending_error = failure
        if self._user_error_cb is not None:
            self._user_error_cb(err)
        elif failure is None:  # as _handle_error treats the errors a poll returns
            log.warning("consumer of group %s: %s", self.group, err.str())

    def _handle_error(self, m, err: KafkaError) -> None:
        code = err.code()
        if code == PARTITION_EOF:
            return
        if err.name() in AUTHORIZATION:
            # The ACLs will not change by retrying: one line naming the resource and operation.
            raise translate(KafkaException(err), action="consume", group=self.group,
                            topic=m.topic() or None)
        if code == KafkaError._AUTO_OFFSET_RESET:
            tp = TopicPartition(m.topic(), m.partition())
            raise NoCommittedOffset(
                f"group {self.group} has no committed offset for {tp} (or it is out of range) and "
                "auto_offset_reset is 'none'; reset the group's offsets or choose earliest/latest",
                group=self.group, topic=tp.topic, partition=tp.partition)
        if err.fatal():
            raise translate(KafkaException(err), action="consume", group=self.group)
        log.warning("consumer of group %s: %s", self.group, err.str())

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

    def _drop_buffered(self, pred) -> None:
        if self._buffer:
            self._buffer = deque(m for m in self._buffer if not pred(_tp(m), m.offset()))

    def _seek(self, tp: TopicPartition, offset: int) -> bool:
        try:
            self._c.seek(CkTP(tp.topic, tp.partition, offset))
            return True
        except KafkaException as exc:
            log.warning("seek %s to %d failed: %s", tp, offset, exc)
            return False

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
        if offsets:
            self._commit(offsets, reason=reason,
                         asynchronous=self.policy.asynchronous and reason not in ("revoke", "close"))
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
                return self._failed(offsets, translate(exc, action="commit offsets", group=self.group),
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
                return self._failed(offsets, translate(error, action="commit offsets", group=self.group),
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
            exc = translate(KafkaException(err), action="commit offsets", group=self.group) \
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

    # -- rebalances ---------------------------------------------------------------------------
    def _on_assign(self, consumer, partitions) -> None:
        tps = [_tp(p) for p in partitions]
        self._tracker.assign(tps)
        try:
            if self._store is not None and tps:
                stored = self._store.claim(self.group, tps, self._owner)
                for p in partitions:
                    off = stored.get(_tp(p))
                    if off is not None:
                        p.offset = off  # seek-on-assign to the stored offset
                    elif self.auto_offset_reset == "earliest":
                        p.offset = OFFSET_BEGINNING
                    # else: the group's Kafka commit, then auto.offset.reset (a migration path)
        except OffsetkeeperError as exc:
            self._pending_error = exc
        finally:
            if self._cooperative:
                consumer.incremental_assign(partitions)
            else:
                consumer.assign(partitions)
        if self._on_assign_user:
            self._on_assign_user(tps)

    def _on_revoke(self, consumer, partitions) -> None:
        tps = [_tp(p) for p in partitions]
        if self._store is None:
            if self._auto_ack_enabled():
                self._ack_outstanding()
            self._drain_cross_thread()
            try:
                if self.policy.mode is AckMode.AUTO:
                    self._store_auto()
                    if tps:
                        self._in_sync_commit = True
                        try:
                            consumer.commit(asynchronous=False)
                        except KafkaException as exc:
                            if exc.args[0].code() != KafkaError._NO_OFFSET:
                                log.warning("commit on revoke failed: %s", exc)
                        finally:
                            self._in_sync_commit = False
                else:
                    self._commit_pending("revoke", set(tps))
            except Exception as exc:  # never let a failed commit break the rebalance
                log.warning("commit on revoke failed: %s", exc)
        self._tracker.revoke(tps)
        self._release(tps)
        for t in tps:
            self._outstanding.pop(t, None)
        self._drop_buffered(lambda t, o: t in set(tps))
        if self._on_revoke_user:
            self._on_revoke_user(tps)

    def _on_lost(self, consumer, partitions) -> None:
        # Lost (session expired, fenced): another member may own them already; committing
        # would overwrite its progress, so pending acknowledgements are dropped.
        tps = [_tp(p) for p in partitions]
        self._tracker.revoke(tps)
        self._release(tps)
        for t in tps:
            self._outstanding.pop(t, None)
        self._cross_thread = deque(e for e in self._cross_thread if e[1] not in set(tps))
        self._drop_buffered(lambda t, o: t in set(tps))
        if self._on_revoke_user:
            self._on_revoke_user(tps)

    # -- live resets --------------------------------------------------------------------------
    def _apply_live_resets(self) -> None:
        watcher = self._watcher
        owned = set(self._tracker.owned())
        for req, tp, offset in watcher.pending(owned):
            try:
                self._check_in_log(tp, offset)
                if self._store is not None:
                    with self._store.transaction(self.group, self._owner) as tx:
                        tx.set_offset(tp, offset)
                if self._store is None or self._mirror:
                    res = self._commit({tp: offset}, reason="live-reset", asynchronous=False)
                    if res is None or not res.ok:
                        raise OffsetkeeperError(
                            res.error.message if res and res.error else f"commit failed: {res and res.partition_errors}")
                self._pause(tp)
                if not self._seek(tp, offset):
                    self._resume(tp)
                    continue  # not fetching yet; retried at the next poll
                if self._store is None and self.policy.mode is AckMode.AUTO:
                    # Otherwise the next auto commit would write the old stored position back.
                    self._c.store_offsets(offsets=[CkTP(tp.topic, tp.partition, offset)])
                self._tracker.reset(tp, offset)
                self._outstanding.pop(tp, None)
                self._drop_buffered(lambda t, o, tp=tp: t == tp)
                self._held[tp] = (req.id, offset)
                self._counters.add(live_resets_applied=1)
                watcher.acknowledge(req, tp, offset, member=self._member_label(),
                                    store=self._store is not None and not self._mirror)
            except OffsetkeeperError as exc:
                watcher.acknowledge(req, tp, offset, member=self._member_label(), error=exc.message)
        for tp, (rid, offset) in list(self._held.items()):
            if not watcher.is_open(rid):
                del self._held[tp]
                self._resume(tp)
                self._seek(tp, offset)  # records fetched while held were never handed out
        ignored = sum(watcher.ignored.values())
        seen = self._counters.snapshot().live_reset_records_ignored
        if ignored > seen:
            self._counters.add(live_reset_records_ignored=ignored - seen)

    def _check_in_log(self, tp: TopicPartition, offset: int) -> None:
        """A signed request is still checked against the log: an offset outside it would make
        the consumer fall back to auto.offset.reset (or fail) on every restart."""
        try:
            low, high = self._c.get_watermark_offsets(CkTP(tp.topic, tp.partition), timeout=5,
                                                      cached=False)
        except KafkaException as exc:
            raise OffsetkeeperError(f"cannot read the log start/end of {tp}: {exc}") from None
        if not low <= offset <= high:
            raise OffsetkeeperError(f"offset {offset} is outside the log of {tp} "
                                    f"(log start {low}, log end {high})")

    def _release(self, tps) -> None:
        # a held partition that leaves must not come back paused
        for t in tps:
            if self._held.pop(t, None) is not None:
                self._resume(t)

    def _pause(self, tp: TopicPartition) -> None:
        try:
            self._c.pause([CkTP(tp.topic, tp.partition)])
        except KafkaException as exc:
            log.warning("pause %s failed: %s", tp, exc)

    def _resume(self, tp: TopicPartition) -> None:
        try:
            self._c.resume([CkTP(tp.topic, tp.partition)])
        except KafkaException as exc:
            log.info("resume %s failed: %s", tp, exc)

    def _member_label(self) -> str:
        try:
            member = self._c.memberid() or ""
        except (KafkaException, RuntimeError):
            member = ""
        return member or self._owner
