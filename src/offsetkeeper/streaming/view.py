"""A streaming query's checkpoint as offsetkeeper reads it: its Kafka source's offsets (last
committed batch and pending batch), and where they stand in the log (lag, time lag).

Where a query resumes: Spark restarts from the newest ``offsets/N``. When ``commits/N`` exists,
batch N is done and the next batch starts at N's end offsets; when it does not, batch N runs
again from ``offsets/N-1`` to ``offsets/N``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from offsetkeeper.errors import UsageError
from offsetkeeper.kafka.ports import AdminPort
from offsetkeeper.models import TopicPartition
from offsetkeeper.streaming.checkpoint import CheckpointState, KafkaOffsets, OffsetLogEntry
from offsetkeeper.streaming.store import CheckpointStore
from offsetkeeper.times import iso_ms


@dataclass(frozen=True)
class CheckpointView:
    """A checkpoint's state and its Kafka source's offsets (last committed and pending)."""

    state: CheckpointState
    source: int
    committed: OffsetLogEntry | None
    pending: OffsetLogEntry | None

    @property
    def committed_offsets(self) -> KafkaOffsets:
        return (self.committed.kafka_offsets(self.source) or {}) if self.committed else {}

    @property
    def pending_offsets(self) -> KafkaOffsets:
        return (self.pending.kafka_offsets(self.source) or {}) if self.pending else {}

    def rows(self) -> list[dict]:
        """One row per partition: committed batch end and pending batch end."""
        c, p = self.committed_offsets, self.pending_offsets
        return [{"topic": tp.topic, "partition": tp.partition, "committed_offset": c.get(tp),
                 "pending_offset": p.get(tp)} for tp in sorted(set(c) | set(p))]

    def summary(self) -> dict:
        s = self.state
        last_change = None if s.newest_change_s is None else int(s.newest_change_s * 1000)
        return {"checkpoint": s.location, "query_id": s.query_id, "source": self.source,
                "last_committed_batch": s.last_committed, "pending_batch": s.pending,
                "batches_in_log": len(s.offset_batches), "stateful": s.stateful,
                "last_change": last_change, "last_change_iso": iso_ms(last_change)}


def load_view(location: str, *, source: int | None = None) -> CheckpointView:
    """Read a checkpoint and pick its Kafka source (`source` = index of the query's source)."""
    store = CheckpointStore(location)
    st = store.state()
    if st.last_planned is None:
        raise UsageError(f"checkpoint {location} has no batch yet (offsets/ is empty)")
    latest = store.offset_entry(st.last_planned)
    kafka = latest.kafka_sources()
    if source is None:
        if not kafka:
            raise UsageError(f"checkpoint {location} has no source with Kafka offsets "
                             f"(offsets/{st.last_planned} has {len(latest.sources)} source line(s))")
        if len(kafka) > 1:
            raise UsageError(f"checkpoint {location} has {len(kafka)} Kafka sources "
                             f"({', '.join(map(str, kafka))}); choose one with --source")
        source = kafka[0]
    elif source not in kafka:
        raise UsageError(f"--source {source}: offsets/{st.last_planned} has no Kafka offsets for "
                         f"source {source} (Kafka sources: {kafka or 'none'})")
    committed = store.offset_entry(st.last_committed) if st.last_committed is not None else None
    pending = latest if st.pending is not None else None
    return CheckpointView(st, source, committed, pending)


# -- lag ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LagRow:
    topic: str
    partition: int
    position: int | None
    log_end: int
    lag: int | None
    time_lag_s: float | None
    pending_offset: int | None


def checkpoint_lag(admin: AdminPort, location: str, *, source: int | None = None,
                   time_lag: bool = True) -> tuple[CheckpointView, list[LagRow]]:
    """The query's lag per partition: log end (stable, as read_committed reads) minus the end
    of the last committed batch; time lag = now minus the timestamp of the first unread record."""
    view = load_view(location, source=source)
    from offsetkeeper.streaming.checkpoint import check_topic_names

    pos = view.committed_offsets or view.state.initial.get(view.source, {})
    tps = sorted(set(pos) | set(view.pending_offsets))
    check_topic_names(dict.fromkeys(tps, 0), where=f"checkpoint {location}")
    ends = admin.end_offsets(tps, read_committed=True)
    stamps = {}
    if time_lag:
        from offsetkeeper.streaming.lag import record_timestamps

        stamps = record_timestamps(admin.conn, {tp: pos[tp] for tp in tps
                                                if tp in pos and ends[tp] > pos[tp]})
    now_ms = time.time() * 1000
    rows = []
    for tp in tps:
        p = pos.get(tp)
        lag = None if p is None else max(0, ends[tp] - p)
        tl = None
        if lag == 0:
            tl = 0.0
        elif stamps.get(tp) is not None:
            tl = round(max(0.0, (now_ms - stamps[tp]) / 1000), 3)
        rows.append(LagRow(tp.topic, tp.partition, p, ends[tp], lag, tl,
                           view.pending_offsets.get(tp)))
    return view, rows


@dataclass(frozen=True)
class PositionRow:
    """One partition of a checkpoint against its log (the dashboard's checkpoint page)."""

    topic: str
    partition: int
    position: int | None        # end offset of the batch the query resumes after
    pending_offset: int | None  # end offset of a planned, uncommitted batch
    log_start: int
    log_end: int                # last stable offset, as read_committed reads (lag is against it)
    lag: int | None
    time_lag_s: float | None


def checkpoint_positions(admin: AdminPort, location: str, *, source: int | None = None,
                         time_lag: bool = True) -> tuple[CheckpointView, list[PositionRow]]:
    """`checkpoint_lag` plus each partition's log start: where the query stands in the log."""
    view, rows = checkpoint_lag(admin, location, source=source, time_lag=time_lag)
    wm = admin.watermarks([TopicPartition(r.topic, r.partition) for r in rows])
    return view, [PositionRow(r.topic, r.partition, r.position, r.pending_offset,
                              wm[TopicPartition(r.topic, r.partition)].low, r.log_end, r.lag,
                              r.time_lag_s) for r in rows]
