"""Live resets applied by `OffsetConsumer` (`LiveResetApplication`, mixed into it).

A signed request published by `offsetkeeper offsets reset --live` (read by
`consumer.live.LiveResetWatcher`) is applied on the consumer's thread between batches: the
offset is checked against the log, committed (or written to the offset store), the partition is
paused and moved there, and the request acknowledged. The partition stays held — paused, its
position fixed — until the request is withdrawn, so the command reads back a position nobody is
moving; a held partition that leaves the consumer is released, never left paused.
"""

from __future__ import annotations

import logging

from confluent_kafka import KafkaException
from confluent_kafka import TopicPartition as CkTP

from offsetkeeper.consumer.policy import AckMode
from offsetkeeper.errors import OffsetkeeperError
from offsetkeeper.models import TopicPartition

log = logging.getLogger("offsetkeeper.consumer")


class LiveResetApplication:
    """Applying live resets and holding their partitions, on the state of `OffsetConsumer`
    (`_watcher`, `_held`: partition -> (request id, offset))."""

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
        ignored = watcher.ignored_total()
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
