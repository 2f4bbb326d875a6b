"""Rebalances of `OffsetConsumer` (`RebalanceHandling`, mixed into it): assign, revoke, lost.

- assign: partitions join the ack tracker; with an offset store they are claimed for this
  consumer and it seeks to the stored offsets (seek-on-assign); eager or cooperative assignment;
- revoke: what was processed is acknowledged and committed synchronously (AUTO: stored and
  committed), then the partitions leave the tracker, live-reset holds and the buffer;
- lost (session expired, fenced): another member may own them already, so nothing is
  committed; pending acknowledgements are dropped.
"""

from __future__ import annotations

import logging
from collections import deque

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException

from offsetkeeper.consumer.acks import tp_of as _tp
from offsetkeeper.consumer.policy import AckMode
from offsetkeeper.errors import OffsetkeeperError

log = logging.getLogger("offsetkeeper.consumer")


class RebalanceHandling:
    """librdkafka's rebalance callbacks, on the state of `OffsetConsumer`."""

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
            if self._incremental:
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
