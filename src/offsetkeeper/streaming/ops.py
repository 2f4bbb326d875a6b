"""One function per `offsetkeeper streaming` operation: show, lag, reset, rollback, commit.

Where a query resumes: Spark restarts from the newest ``offsets/N``. When ``commits/N`` exists,
batch N is done and the next batch starts at N's end offsets; when it does not, batch N runs
again from ``offsets/N-1`` to ``offsets/N``. A reset therefore rewrites the end offsets of the
last committed batch C in place (and, when a batch P = C+1 is pending, P's end offsets too, so
that its re-run is empty). It does not add a batch id: a file sink's ``_spark_metadata`` log
must have every batch id to compact (``... doesn't exist when compacting batch``), so a
skipped id would break such a query ten batches later.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from offsetkeeper.errors import CheckpointBusyError, UsageError
from offsetkeeper.models import CommittedOffset, GroupInfo, TopicPartition
from offsetkeeper.reset.facts import build_plan
from offsetkeeper.reset.plan import (
    GroupFacts,
    PartitionPlan,
    ResetFacts,
    ResetPlan,
    ResetScope,
    TopicSpec,
    plan_reset,
)
from offsetkeeper.reset.targets import FromOffsets, ResetTarget, ShiftBy, ToDatetime
from offsetkeeper.streaming.checkpoint import (
    CheckpointState,
    KafkaOffsets,
    OffsetLogEntry,
    render_offset_log,
)
from offsetkeeper.streaming.store import CheckpointStore, FileChange, ResetRecord
from offsetkeeper.times import iso_ms

CHECKPOINT_GROUP = "(checkpoint)"  # the pseudo group the reset planner plans for
DEFAULT_ALIVE_WINDOW_S = 120.0


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


def checkpoint_lag(admin, location: str, *, source: int | None = None,
                   time_lag: bool = True) -> tuple[CheckpointView, list[LagRow]]:
    """The query's lag per partition: log end (stable, as read_committed reads) minus the end
    of the last committed batch; time lag = now minus the timestamp of the first unread record."""
    view = load_view(location, source=source)
    pos = view.committed_offsets or view.state.initial.get(view.source, {})
    tps = sorted(set(pos) | set(view.pending_offsets))
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


def checkpoint_positions(admin, location: str, *, source: int | None = None,
                         time_lag: bool = True) -> tuple[CheckpointView, list[PositionRow]]:
    """`checkpoint_lag` plus each partition's log start: where the query stands in the log."""
    view, rows = checkpoint_lag(admin, location, source=source, time_lag=time_lag)
    wm = admin.watermarks([TopicPartition(r.topic, r.partition) for r in rows])
    return view, [PositionRow(r.topic, r.partition, r.position, r.pending_offset,
                              wm[TopicPartition(r.topic, r.partition)].low, r.log_end, r.lag,
                              r.time_lag_s) for r in rows]


# -- reset ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckpointResetPlan:
    """What a reset would write: per partition plan, the files, and why it may be refused."""

    location: str
    target: str
    partitions: tuple[PartitionPlan, ...]
    batches: tuple[int, ...]  # offsets/N files to rewrite
    warnings: tuple[str, ...] = ()
    refusals: tuple[str, ...] = ()  # overridable with force
    source: int = 0

    @property
    def offsets(self) -> dict[TopicPartition, int]:
        return {p.tp: p.target for p in self.partitions if p.error is None and p.target is not None}

    @property
    def has_errors(self) -> bool:
        return any(p.error for p in self.partitions)

    def rows(self) -> list[dict]:
        return [{"topic": p.topic, "partition": p.partition, "current": p.current,
                 "target": p.target, "log_start": p.log_start if p.log_start >= 0 else None,
                 "log_end": p.log_end if p.log_end >= 0 else None,
                 "note": f"ERROR: {p.error}" if p.error else (p.note or None)}
                for p in self.partitions]

    def to_dict(self) -> dict:
        return {"checkpoint": self.location, "target": self.target, "source": self.source,
                "rewrites": [f"offsets/{b}" for b in self.batches], "warnings": list(self.warnings),
                "refusals": list(self.refusals), "partitions": self.rows()}


@dataclass(frozen=True)
class FromGroup:
    """Reset target: a consumer group's committed offsets (resolved when planning)."""

    group: str
    label = "from-group"


def group_target(admin, group: str) -> FromOffsets:
    """The committed offsets of `group` as an explicit target for the checkpoint."""
    from offsetkeeper.errors import UnknownGroupError

    committed = admin.committed_offsets(group)
    if not committed:
        raise UnknownGroupError(f"group '{group}' has no committed offsets", group=group)
    return FromOffsets(offsets={None: {tp: c.offset for tp, c in committed.items()}},
                       source=f"group {group}")


@dataclass(frozen=True)
class ResetRequest:
    """`streaming reset`: where, to what, which partitions, and the safety switches."""

    location: str
    target: ResetTarget | FromGroup
    label: str
    topics: tuple[TopicSpec, ...] = ()
    source: int | None = None
    execute: bool = False
    force: bool = False
    alive_window_s: float = DEFAULT_ALIVE_WINDOW_S


def liveness_refusals(st: CheckpointState, *, alive_window_s: float, now: float | None = None) -> list[str]:
    """Reasons not to change the checkpoint now (each overridable with --force).

    Spark holds no lock in a checkpoint, so a running query is recognised by its files: an
    offsets/ or commits/ file written within `alive_window_s` seconds. A running query that
    has been idle for longer (no new data, no new batch) is not detected: stop it first.
    """
    out = []
    now = time.time() if now is None else now
    if st.newest_change_s is not None and now - st.newest_change_s < alive_window_s:
        out.append(f"the query looks alive: a batch file was written {now - st.newest_change_s:.0f} s "
                   f"ago (within {alive_window_s:.0f} s); stop the query, or pass --force")
    if st.stateful:
        out.append("the query is stateful (state/ exists): its state would no longer match the "
                   "new offsets; pass --force to reset anyway")
    return out


def plan_checkpoint_reset(admin, req: ResetRequest) -> CheckpointResetPlan:
    """Plan a reset with the reset planner's semantics (clamp to [log start, log end], notes)."""
    view = load_view(req.location, source=req.source)
    st = view.state
    if st.last_committed is None:
        raise UsageError(f"checkpoint {req.location} has no committed batch yet: start the query "
                         "with startingOffsets instead of resetting it")
    if st.pending is not None and st.pending != st.last_committed + 1:
        raise UsageError(f"checkpoint {req.location}: batch {st.pending} is planned but batch "
                         f"{st.last_committed + 1} was never committed; not a layout Spark resumes from")
    current = view.committed_offsets
    if isinstance(req.target, FromGroup):
        req = dataclasses.replace(req, target=group_target(admin, req.target.group))
    facts = _facts(admin, current, req)
    scope = ResetScope(groups=(CHECKPOINT_GROUP,), topics=req.topics, all_topics=not req.topics)
    plan = plan_reset(facts, scope, req.target, label=req.label)
    parts = tuple(p for g in plan.groups for p in g.partitions)
    warnings = []
    if st.pending is not None:
        warnings.append(f"batch {st.pending} was planned but not committed (the query stopped "
                        f"mid-batch); its end offsets are reset too, so its re-run reads nothing")
    batches = (st.last_committed,) + ((st.pending,) if st.pending is not None else ())
    return CheckpointResetPlan(req.location, plan.target, parts, batches, tuple(warnings),
                               tuple(liveness_refusals(st, alive_window_s=req.alive_window_s)),
                               view.source)


def _facts(admin, current: Mapping[TopicPartition, int], req: ResetRequest) -> ResetFacts:
    topics = {tp.topic for tp in current} | {s.topic for s in req.topics}
    if isinstance(req.target, FromOffsets):
        topics |= {tp.topic for tp in req.target.for_group(CHECKPOINT_GROUP)}
    parts = {t: tuple(ps) for t, ps in admin.topic_partitions(sorted(topics)).items()}
    tps = [TopicPartition(t, p) for t, ps in parts.items() for p in ps]
    wm = admin.watermarks(tps)
    times = admin.offsets_for_time(tps, req.target.timestamp_ms) \
        if isinstance(req.target, ToDatetime) else {}
    if isinstance(req.target, ShiftBy) and not current:
        raise UsageError("the checkpoint has no committed offsets to shift from")
    info = GroupInfo(group_id=CHECKPOINT_GROUP, state="empty")
    committed = {tp: CommittedOffset(o) for tp, o in current.items()}
    return ResetFacts(groups={CHECKPOINT_GROUP: GroupFacts(info, committed)},
                      topic_partitions=parts, watermarks=wm, time_offsets=times)


def execute_checkpoint_reset(plan: CheckpointResetPlan, *, force: bool = False) -> ResetRecord:
    """Write the planned offsets into the checkpoint (after copying every file it changes)."""
    if plan.refusals and not force:
        raise CheckpointBusyError(plan.refusals[0])
    if plan.has_errors:
        bad = next(p for p in plan.partitions if p.error)
        raise UsageError(f"{bad.topic}:{bad.partition}: {bad.error}; nothing was changed")
    store = CheckpointStore(plan.location)
    st = store.state()
    if st.last_planned != plan.batches[-1]:
        raise CheckpointBusyError(f"the checkpoint changed since planning (now at batch "
                                  f"{st.last_planned}); plan again")
    new = plan.offsets
    record = ResetRecord.new(plan.target, st.last_planned)
    writes: list[tuple[str, bytes]] = []
    for b in plan.batches:
        entry = store.offset_entry(b)
        offsets = {**(entry.kafka_offsets(plan.source) or {}), **new}
        text = render_offset_log(entry.with_source(plan.source, offsets)).encode("utf-8")
        rel = f"offsets/{b}"
        record.files.append(FileChange.of(rel, store.read_bytes(rel), text))
        crc = f"offsets/.{b}.crc"
        before_crc = store.read_bytes(crc)
        if before_crc is not None:
            record.files.append(FileChange.of(crc, before_crc, None))
        writes.append((rel, text))
    store.save_record(record)  # the copies first: a crash after this can be rolled back
    for rel, text in writes:
        store.remove(f"offsets/.{rel.split('/')[1]}.crc")
        store.write_bytes(rel, text)
    return record


def reset_checkpoint(admin, req: ResetRequest) -> tuple[CheckpointResetPlan, ResetRecord | None]:
    """Plan a reset and, with `req.execute`, apply it."""
    plan = plan_checkpoint_reset(admin, req)
    record = execute_checkpoint_reset(plan, force=req.force) if req.execute else None
    return plan, record


# -- rollback -------------------------------------------------------------------------------
@dataclass(frozen=True)
class RollbackResult:
    record: ResetRecord
    executed: bool
    files: tuple[str, ...]
    refusals: tuple[str, ...] = field(default_factory=tuple)


def rollback_checkpoint(location: str, reset_id: str = "latest", *, execute: bool = False,
                        force: bool = False,
                        alive_window_s: float = DEFAULT_ALIVE_WINDOW_S) -> RollbackResult:
    """Put back every file a reset changed (dry run unless `execute`)."""
    store = CheckpointStore(location)
    record = store.load_record(reset_id)
    st = store.state()
    untouched = st.last_planned == record.last_planned and all(
        f.after is None or store.read_bytes(f.path) == f.after for f in record.files)
    # The reset's own rewrite is the newest change of a checkpoint nobody ran since: that is
    # not a sign of a live query (it refused rollbacks for the whole alive window).
    refusals = [] if untouched else liveness_refusals(st, alive_window_s=alive_window_s)
    refusals = [r for r in refusals if "stateful" not in r]
    if record.rolled_back:
        refusals.append(f"reset {record.reset_id} was already rolled back")
    if st.last_planned != record.last_planned:
        refusals.append(f"the query ran batches after reset {record.reset_id} (now at batch "
                        f"{st.last_planned}, reset at {record.last_planned}): restoring the old "
                        "files would not move it back; pass --force to restore them anyway")
    for f in record.files:
        if f.after is not None and store.read_bytes(f.path) != f.after:
            refusals.append(f"{f.path} changed since reset {record.reset_id}; pass --force")
    result = RollbackResult(record, execute, tuple(f.path for f in record.files), tuple(refusals))
    if not execute:
        return result
    if refusals and not force:
        raise CheckpointBusyError(refusals[0])
    for f in record.files:
        if f.before is None:
            store.remove(f.path)
        else:
            store.write_bytes(f.path, f.before)
    store.save_record(dataclasses.replace(record, rolled_back=True))
    return result


# -- commit to a group ----------------------------------------------------------------------
def commit_to_group(admin, location: str, group: str, *, source: int | None = None,
                    execute: bool = False, apply_options=None):
    """Plan (and with `execute` apply, through the reset executor with its snapshot, active
    member check and read-back) committing the checkpoint's position to `group`."""
    from offsetkeeper.reset.apply import ApplyOptions, apply_plan

    view = load_view(location, source=source)
    offsets = view.committed_offsets
    if not offsets:
        raise UsageError(f"checkpoint {location} has no committed batch to commit")
    target = FromOffsets(offsets={group: offsets}, source=f"checkpoint {location}")
    plan: ResetPlan = build_plan(admin, ResetScope(groups=(group,)), target,
                                 label=f"checkpoint batch {view.state.last_committed}")
    report = apply_plan(admin, plan, apply_options or ApplyOptions()) if execute else None
    return plan, report
