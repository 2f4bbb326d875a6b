"""commitToGroup for queries on Spark's own Kafka source (``format("kafka")``).

Spark's JVM connector never commits a query's progress to a consumer group, so lag tools
(Burrow, kafka-lag-exporter, offsetkeeper's history, status and exporter) cannot see the query.
`commit_to_group` adds a `StreamingQueryListener` to the query's session that commits the end
offsets of every completed micro-batch of the query's Kafka sources to a named consumer group,
through the one reset executor (`offsetkeeper.spark.kafka.group.commit_positions`): the group
must have no active members, the commit is read back per partition.

    q = df.writeStream ... .start()
    committer = commit_to_group(q, "orders-etl", bootstrap="localhost:9092")   # the one line
    q.awaitTermination(); committer.check()   # raises the commit failure, if there was one

What "committed" means: Spark posts a query's progress event after the batch's ``commits/N``
file is written, so the group never gets ahead of the checkpoint; it is at most the batches
whose events are still queued behind (events are delivered asynchronously) — and, after a
driver crash, the last batch or batches before it. The checkpoint stays the query's truth: on
restart the query resumes from the checkpoint, and its next batch commits its newer end to the
group (add the listener to the restarted query again). Progress events of idle triggers repeat
the last end offsets; nothing is committed for them.

A commit that fails (the group has active members, an authorization error, the cluster down)
is not retried in a loop: the failure is logged, kept (`failure`, `check()`), and with
``on_failure="stop"`` (the default) the query is stopped, so ``awaitTermination()`` returns and
`check()` raises it. With ``on_failure="continue"`` the query runs on and the next batch's
progress tries once again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql.streaming import StreamingQueryListener

from offsetkeeper.errors import UsageError
from offsetkeeper.models import TopicPartition
from offsetkeeper.spark.kafka.group import GroupCommitError
from offsetkeeper.streaming.checkpoint import KafkaOffsets, parse_kafka_offsets

log = logging.getLogger("offsetkeeper.spark.kafka.listener")

# descriptions of Spark's JVM Kafka sources in progress events: KafkaV2[Subscribe[orders]]
# (micro-batch, DataSource V2) and KafkaSourceV1[...] (the V1 fallback)
JVM_KAFKA_SOURCES = ("KafkaV2[", "KafkaSource[", "KafkaSourceV1[")
ON_FAILURE = ("stop", "continue")


@dataclass(frozen=True)
class CommitFailure:
    batch_id: int
    error: Exception


def kafka_end_offsets(sources) -> KafkaOffsets:
    """The end offsets of the JVM Kafka sources among a progress event's `sources` (merged:
    a query reading several topics through several sources commits them all)."""
    out: KafkaOffsets = {}
    for s in sources:
        if not str(s.description).startswith(JVM_KAFKA_SOURCES):
            continue
        offsets = parse_kafka_offsets(s.endOffset or "")
        if offsets:
            out.update(offsets)
    return out


class GroupCommitListener(StreamingQueryListener):
    """Commits each completed batch's Kafka end offsets of one query (by its id, which survives
    restarts) to `group`. Prefer `commit_to_group`, which also commits the progress the query
    made before the listener was added."""

    def __init__(self, group: str, connection, *, query_id: str, on_failure: str = "stop",
                 spark=None) -> None:
        if on_failure not in ON_FAILURE:
            raise UsageError(f"on_failure must be one of {', '.join(ON_FAILURE)}, not {on_failure!r}")
        if not group:
            raise UsageError("commit_to_group needs a group name")
        self.group = group
        self.connection = connection
        self.query_id = str(query_id)
        self.on_failure = on_failure
        self._spark = spark
        self._admin = None
        self._lock = threading.Lock()
        self.committed: KafkaOffsets = {}
        self.committed_batch: int | None = None
        self.failure: CommitFailure | None = None

    # -- the listener interface (called on the driver, asynchronously, in event order) -------
    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        p = event.progress
        if str(p.id) != self.query_id:
            return
        self.commit(kafka_end_offsets(p.sources), batch_id=p.batchId)

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        if str(event.id) == self.query_id:
            self.close()

    # -- committing --------------------------------------------------------------------------
    def commit(self, offsets: Mapping[TopicPartition, int], *, batch_id: int) -> bool:
        """Commit `offsets` (batch `batch_id`'s ends) unless unchanged or after a stopping
        failure; True when committed. A failure is kept and handled per `on_failure`."""
        with self._lock:
            if not offsets or dict(offsets) == self.committed:
                return False
            if self.failure is not None and self.on_failure == "stop":
                return False
            from offsetkeeper.spark.kafka.group import commit_positions

            try:
                commit_positions(self._admin_client(), self.group,
                                 {(tp.topic, tp.partition): o for tp, o in offsets.items()})
            except Exception as exc:
                self.failure = CommitFailure(batch_id, exc)
                log.error("commitToGroup %s: batch %d of query %s not committed: %s",
                          self.group, batch_id, self.query_id, exc)
                if self.on_failure == "stop":
                    self._stop_query()
                return False
            self.committed = dict(offsets)
            self.committed_batch = batch_id
            return True

    def check(self) -> None:
        """Raise GroupCommitError (caused by the original error) when a commit failed."""
        f = self.failure
        if f is not None:
            raise GroupCommitError(
                f"commitToGroup {self.group}: batch {f.batch_id} was not committed: {f.error}",
                group=self.group) from f.error

    def _admin_client(self):
        from offsetkeeper.kafka.admin import KafkaAdmin

        if self._admin is None:
            self._admin = KafkaAdmin(self.connection)
        return self._admin

    def _stop_query(self) -> None:
        """Stop the query from another thread (stop() waits for the query thread, which may be
        posting the next event to the bus this listener runs on)."""
        spark = self._spark
        if spark is None:
            return

        def stop() -> None:
            try:
                q = spark.streams.get(self.query_id)
                if q is not None:
                    q.stop()
            except Exception as exc:
                log.error("commitToGroup %s: stopping query %s failed: %s",
                          self.group, self.query_id, exc)

        threading.Thread(target=stop, name="offsetkeeper-commit-stop", daemon=True).start()

    def close(self) -> None:
        admin, self._admin = self._admin, None
        if admin is not None:
            admin.close()


def commit_to_group(query, group: str, *, bootstrap: str | None = None,
                    kafka: Mapping[str, str] | None = None, connection=None,
                    on_failure: str = "stop") -> GroupCommitListener:
    """Commit `query`'s completed batches (its JVM Kafka sources' end offsets) to `group`.

    The cluster is `connection` (an `offsetkeeper.config.Connection`), or `bootstrap` plus
    librdkafka `kafka` properties (SASL, TLS: the keys without the ``kafka.`` prefix). Adds
    the listener to the query's session and commits the progress the query already made;
    returns the listener (`check()`, `failure`, `committed`). Remove it with
    ``spark.streams.removeListener(listener)``.
    """
    if connection is None:
        if not bootstrap:
            raise UsageError("commit_to_group needs bootstrap= or connection=")
        from offsetkeeper.config import Connection

        connection = Connection(bootstrap_servers=bootstrap, properties=dict(kafka or {}))
    spark = _session_of(query)
    listener = GroupCommitListener(group, connection, query_id=str(query.id),
                                   on_failure=on_failure, spark=spark)
    spark.streams.addListener(listener)
    # batches that completed before the listener was added (their events went by)
    last = query.lastProgress  # a StreamingQueryProgress (pyspark 4), endOffset as JSON text
    if last is not None:
        listener.commit(kafka_end_offsets(last.sources), batch_id=last.batchId)
    return listener


def _session_of(query):
    """The SparkSession `query` runs in (listeners are registered per session)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    jsq = getattr(query, "_jsq", None)
    if jsq is None:  # Spark Connect: the query's own session
        return getattr(query, "_session", None) or active
    jsession = jsq.sparkSession()
    if active is not None and active._jsparkSession.equals(jsession):
        return active
    return SparkSession(active.sparkContext if active else None, jsession)
