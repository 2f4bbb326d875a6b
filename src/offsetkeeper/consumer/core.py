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

This module holds the public surface and the fetch loop (batches, the buffer, error events);
the rest of `OffsetConsumer` is mixed in from modules named after what they hold:
`arguments` (the constructor's checks), `commits` (acknowledgements, commit points, commits and
their callback), `rebalance` (assign / revoke / lost) and `live_apply` (applying live resets and
holding their partitions).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as CkTP

from offsetkeeper.consumer.acks import AckTracker
from offsetkeeper.consumer.acks import tp_of as _tp
from offsetkeeper.consumer.arguments import check_arguments
from offsetkeeper.consumer.commits import CommitMachinery, CommitResult
from offsetkeeper.consumer.live_apply import LiveResetApplication
from offsetkeeper.consumer.metrics import ConsumerMetrics, Counters
from offsetkeeper.consumer.policy import AckMode, CommitPolicy, commit_due
from offsetkeeper.consumer.rebalance import RebalanceHandling
from offsetkeeper.consumer.stores import OffsetStore, StoreTransaction, open_store
from offsetkeeper.errors import (
    ConfigError,
    ConsumerConfigError,
    FencedError,
    NoCommittedOffset,
    OffsetkeeperError,
    PartitionNotAssignedError,
)
from offsetkeeper.kafka import clients
from offsetkeeper.kafka.errors import (
    AUTHORIZATION,
    PARTITION_EOF,
    connection_failure,
    translate,
)
from offsetkeeper.models import TopicPartition

log = logging.getLogger("offsetkeeper.consumer")


class OffsetConsumer(CommitMachinery, RebalanceHandling, LiveResetApplication):
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
        group = check_arguments(conf, topics, policy=policy, auto_offset_reset=auto_offset_reset,
                                store=store, mirror_to_kafka=mirror_to_kafka,
                                max_poll_records=max_poll_records)
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
        # Incremental assignment: cooperative assignors of the classic protocol, and always the
        # consumer protocol (KIP-848), where librdkafka refuses an eager assign() in the callback.
        self._incremental = (
            "cooperative" in str(conf.get("partition.assignment.strategy", ""))
            or str(conf.get("group.protocol", "classic")).strip().lower() == "consumer")

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
            self._c = clients.consumer(conf, where="invalid consumer configuration")
        except ConfigError as exc:
            if self._owns_store and self._store:
                self._store.close()
            raise ConsumerConfigError(exc.message) from None

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

    def _take(self, timeout: float) -> list:
        """Up to max_poll_records messages: what is queued now, else wait up to `timeout` for
        the first and take what came with it. librdkafka's consume(n, timeout) waits until it
        has n messages or the timeout passed, so at low traffic every record would wait the
        whole timeout; Kafka's poll(timeout) returns as soon as there are records."""
        raw = self._c.consume(self._max_poll, 0)
        if raw:
            return raw
        first = self._c.poll(timeout)
        if first is None:
            return []
        return [first, *self._c.consume(self._max_poll - 1, 0)] if self._max_poll > 1 else [first]

    def _fetch(self, timeout: float) -> list:
        if self._pending_error is not None:
            err, self._pending_error = self._pending_error, None
            raise err
        try:
            raw = self._take(timeout)
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
        if failure is None and (err.fatal() or err.code() == KafkaError._FATAL):
            # The client is dead (e.g. UNRELEASED_INSTANCE_ID under group.protocol=consumer);
            # librdkafka says so only here: raised from the next poll, never polled forever.
            failure = translate(KafkaException(err), action="consume", group=self.group)
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
        if err.fatal() or code == KafkaError._FATAL:  # a _FATAL event's fatal() says False
            raise translate(KafkaException(err), action="consume", group=self.group)
        log.warning("consumer of group %s: %s", self.group, err.str())

    # -- the fetched buffer ---------------------------------------------------------------------
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
