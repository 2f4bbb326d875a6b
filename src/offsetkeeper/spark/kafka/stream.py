"""The streaming reader: ``spark.readStream.format("offsetkeeper-kafka")``.

Offsets are dicts in the JSON shape of Spark's own Kafka source, ``{"orders":{"0":23,"1":6}}``
(the offset of the next record to read, like a committed offset), so Spark writes them into the
checkpoint's ``offsets/N`` files exactly as it does for its JVM Kafka source and the
`offsetkeeper streaming` tools read both.

Committing to a consumer group (``commitToGroup``): Spark calls `commit(end)` for batch N only
when it plans batch N+1, so a query that stops receiving data would leave its last batch
uncommitted forever. `latestOffset(start, ...)` is called with ``start`` = the end of the last
batch, and in micro-batch mode that batch has finished and its ``commits/N`` file is written
before Spark asks for the next end. So the reader commits ``start`` there too: the group's lag
reaches 0 at the next trigger after the data stops (see docs/streaming.md for the measurements).
A commit that fails ``commitToGroupMaxFailures`` times in a row (default 3) fails the query with
a GroupCommitError; before that it is logged and retried at a later trigger.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterator, Mapping, Sequence

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

try:
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )

    ADMISSION_CONTROL = True
except ImportError:  # pyspark 4.0: latestOffset() takes no arguments, no read limits
    from offsetkeeper.spark.kafka.compat import (  # type: ignore[assignment]
        ReadAllAvailable,
        ReadLimit,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )

    ADMISSION_CONTROL = False

from offsetkeeper.records.ranges import OffsetRange, split_ranges
from offsetkeeper.records.read import read_range
from offsetkeeper.spark.kafka.options import (
    EARLIEST,
    LATEST,
    SourceOptions,
    connection,
)
from offsetkeeper.spark.kafka.partition import KafkaInputPartition
from offsetkeeper.spark.kafka.planning import read_cluster

log = logging.getLogger("offsetkeeper.spark.kafka.stream")

Key = tuple[str, int]
GROUP_RETRY_S = 10


def to_json_offsets(offsets: Mapping[Key, int]) -> dict[str, dict[str, int]]:
    """{(topic, partition): offset} -> Spark's Kafka JSON shape {"topic": {"0": offset}}."""
    out: dict[str, dict[str, int]] = {}
    for (t, p), o in sorted(offsets.items()):
        out.setdefault(t, {})[str(p)] = int(o)
    return out


def from_json_offsets(data: Mapping[str, Mapping[str, int]] | None) -> dict[Key, int]:
    """Spark's Kafka JSON shape -> {(topic, partition): offset}."""
    return {(t, int(p)): int(o) for t, ps in (data or {}).items() for p, o in ps.items()}


def initial_offsets(view, opts: SourceOptions) -> dict[Key, int]:
    """Where a new query starts, per partition: overrides (timestamps, group) win over
    startingOffsets; EARLIEST/LATEST resolve to log start / (stable) log end."""
    out: dict[Key, int] = {}
    for t, ps in view.partitions.items():
        for p in ps:
            k = (t, p)
            s = opts.starting if isinstance(opts.starting, int) else \
                opts.starting.get(t, {}).get(p, EARLIEST)
            s = view.overrides.get(k, s)
            lo, hi = view.low[k], view.high[k]
            s = lo if s == EARLIEST else hi if s == LATEST else s
            out[k] = min(s, hi)
    return out


def rate_limit(start: Mapping[Key, int], end: Mapping[Key, int], max_offsets: int) -> dict[Key, int]:
    """Cap the batch to `max_offsets` offsets in total, shared in proportion to each
    partition's backlog (as Spark's Kafka source does), never beyond `end`.

    Offsets, not records: on compacted or transactional topics a batch holds fewer records.
    """
    sizes = {k: max(0, end[k] - start.get(k, 0)) for k in end}
    total = sum(sizes.values())
    if total <= max_offsets:
        return dict(end)
    shares = {k: max_offsets * s / total for k, s in sizes.items()}
    take = {k: math.floor(v) for k, v in shares.items()}
    # hand the remainder out by largest fraction so the batch uses the whole allowance
    left = max_offsets - sum(take.values())
    for k in sorted(shares, key=lambda k: (take[k] - shares[k], k))[:left]:
        if take[k] < sizes[k]:
            take[k] += 1
    return {k: start.get(k, 0) + take[k] for k in end}


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reads of Kafka; one instance lives on the driver for the whole query."""

    def __init__(self, opts: SourceOptions) -> None:
        if opts.max_offsets_per_trigger and not ADMISSION_CONTROL:
            import pyspark

            from offsetkeeper.errors import UsageError

            raise UsageError(f"maxOffsetsPerTrigger needs a newer Spark: pyspark "
                             f"{pyspark.__version__} has no read limits for Python data sources "
                             "(pyspark.sql.streaming.datasource)")
        self.opts = opts
        self._target: dict[Key, int] | None = None  # Trigger.AvailableNow's end
        self._latest: dict[Key, int] = {}
        self._group_committed: dict[Key, int] | None = None
        self._group_retry_at = 0.0  # after a failed commit, wait before trying again
        self._group_failures = 0  # failed commits in a row (commitToGroupMaxFailures)
        self._admin = None  # one admin client for the driver-side calls of the whole query

    def __getstate__(self) -> dict:
        # executors get a copy of the reader for read(): never ship the driver's client
        return {**self.__dict__, "_admin": None}

    def _admin_client(self):
        from offsetkeeper.kafka.admin import KafkaAdmin

        if self._admin is None:
            self._admin = KafkaAdmin(connection(self.opts))
        return self._admin

    def _cluster(self, *, with_overrides: bool = False):
        return read_cluster(self.opts, with_overrides=with_overrides, admin=self._admin_client())

    # -- offsets (driver) ------------------------------------------------------------------
    def initialOffset(self) -> dict:
        view = self._cluster(with_overrides=True)
        for k, note in sorted(view.notes.items()):
            log.info("%s:%d: %s", k[0], k[1], note)
        return to_json_offsets(initial_offsets(view, self.opts))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = dict(self._cluster().high)

    def latestOffset(self, start: dict | None = None, limit: ReadLimit | None = None) -> dict:
        # pyspark 4.0 calls latestOffset() without the start: then there is no rate limit and
        # the group is committed by commit(end) alone (one batch later)
        known = start is not None
        begin = from_json_offsets(start) if known else {}
        # `start` is the end of the last batch, which is durable by now (module docstring)
        if known:
            self._commit_group(begin)
        if self._target is not None and all(begin.get(k, 0) >= o for k, o in self._target.items()):
            return start  # Trigger.AvailableNow reached its end: no cluster read needed
        view = self._cluster()
        end: dict[Key, int] = {}
        for k, hi in view.high.items():
            if known and k not in begin:
                # a partition added while running starts at 0, like Spark's Kafka source; if
                # retention already removed its head, the read reports it as data loss
                log.info("new partition %s:%d picked up", *k)
            if self._target is not None:
                hi = min(hi, self._target.get(k, begin.get(k, 0)))
            end[k] = max(hi, begin.get(k, 0))
            if known and begin.get(k, 0) < view.low[k]:
                log.warning("%s:%d: offsets %d..%d were removed by retention before they were "
                            "read%s", k[0], k[1], begin.get(k, 0), view.low[k] - 1,
                            " (failOnDataLoss=true: the batch fails)"
                            if self.opts.fail_on_data_loss else "; skipped")
        for k in begin.keys() - end.keys():
            # a partition that disappeared (topic deleted): keep its position, read nothing
            end[k] = begin[k]
        self._latest = dict(view.high)
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(begin, end, limit.max_rows)
        return to_json_offsets(end)

    def reportLatestOffset(self) -> dict | None:
        return to_json_offsets(self._latest) if self._latest else None

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin, stop = from_json_offsets(start), from_json_offsets(end)
        ranges = [OffsetRange(t, p, begin.get((t, p), 0), o) for (t, p), o in sorted(stop.items())
                  if o > begin.get((t, p), 0)]
        ranges = split_ranges(ranges, min_partitions=self.opts.min_partitions,
                              max_records=self.opts.max_records_per_partition)
        return [KafkaInputPartition(i, r.topic, r.partition, r.start, r.end)
                for i, r in enumerate(ranges)]

    def commit(self, end: dict) -> None:
        self._commit_group(from_json_offsets(end))

    def stop(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    # -- executors -------------------------------------------------------------------------
    def read(self, partition: KafkaInputPartition) -> Iterator:
        yield from read_range(self.opts.reading(),
                              OffsetRange(partition.topic, partition.partition, partition.start,
                                          partition.end), self.opts.report_path)

    # -- the consumer group ----------------------------------------------------------------
    def _commit_group(self, offsets: dict[Key, int]) -> None:
        """Commit `offsets` to `commitToGroup` (when set and changed).

        A failed commit is retried at a later trigger (not before GROUP_RETRY_S); after
        `commitToGroupMaxFailures` failures in a row (default 3; 0: never) it fails the query
        with a GroupCommitError naming the group and the last error, so `awaitTermination()`
        raises it instead of the group's lag silently growing. The checkpoint stays the query's
        truth: a restarted query resumes from it and commits again."""
        group = self.opts.commit_to_group
        if not group or not offsets or offsets == self._group_committed:
            return
        if time.monotonic() < self._group_retry_at:
            return  # an idle query asks for offsets every few ms: do not hammer the cluster
        from offsetkeeper.spark.kafka.group import GroupCommitError, commit_positions

        try:
            commit_positions(self._admin_client(), group, offsets)
        except Exception as exc:
            self._group_failures += 1
            self._group_retry_at = time.monotonic() + GROUP_RETRY_S
            limit = self.opts.commit_to_group_max_failures
            if limit and self._group_failures >= limit:
                log.error("commitToGroup %s: failed %d times in a row, failing the query: %s",
                          group, self._group_failures, exc)
                raise GroupCommitError(
                    f"commitToGroup {group}: {self._group_failures} commits in a row failed "
                    f"(last: {exc}); the checkpoint is intact, restart the query once the group "
                    "can be committed (or raise commitToGroupMaxFailures, 0 = never fail)",
                    group=group) from exc
            log.warning("commitToGroup %s: %s (failure %d%s, retrying in %d s)", group, exc,
                        self._group_failures, f" of {limit}" if limit else "", GROUP_RETRY_S)
            return
        self._group_committed = dict(offsets)
        self._group_failures = 0
