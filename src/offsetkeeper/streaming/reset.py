"""Resetting a streaming query's checkpoint, and putting it back.

A reset rewrites the end offsets of the last committed batch C in place (and, when a batch
P = C+1 is pending, P's end offsets too, so that its re-run is empty). It does not add a batch
id: a file sink's ``_spark_metadata`` log must have every batch id to compact (``... doesn't
exist when compacting batch``), so a skipped id would break such a query ten batches later.
Every file a reset changes is copied into the checkpoint first (streaming.store), so that
`rollback_checkpoint` restores every byte.

The planner is the reset planner (reset.plan) over a pseudo group, CHECKPOINT_GROUP, whose
committed offsets are the checkpoint's; targets come resolved (ops.targets resolves them for
`streaming reset` exactly as for `offsets reset`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from offsetkeeper.errors import CheckpointBusyError, UsageError
from offsetkeeper.kafka.ports import AdminPort
from offsetkeeper.models import CommittedOffset, GroupInfo, TopicPartition
from offsetkeeper.reset.facts import build_plan
from offsetkeeper.reset.options import ExecuteOptions
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
from offsetkeeper.streaming.checkpoint import CheckpointState, check_topic_names, render_offset_log
from offsetkeeper.streaming.store import CheckpointStore, FileChange, ResetRecord
from offsetkeeper.streaming.view import CheckpointView, load_view

CHECKPOINT_GROUP = "(checkpoint)"  # the pseudo group the reset planner plans for
DEFAULT_ALIVE_WINDOW_S = 120.0


@dataclass(frozen=True)
class CheckpointScope:
    """Which checkpoint a reset changes, which partitions of it, and its safety switches (what
    `streaming reset` asks): the planner takes it as it is; the executor writes the plan and
    takes of it only `force`, the override of the refusals the plan carries."""

    location: str
    topics: tuple[TopicSpec, ...] = ()   # none: every partition of the checkpoint
    source: int | None = None      # index of the query's Kafka source (when it has several)
    force: bool = False            # change it although the query looks alive or is stateful
    alive_window_s: float = DEFAULT_ALIVE_WINDOW_S


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


def reset_view(location: str, *, source: int | None = None) -> CheckpointView:
    """The checkpoint to reset: it must have a committed batch, and at most the next batch
    pending (the layouts Spark resumes from)."""
    view = load_view(location, source=source)
    st = view.state
    if st.last_committed is None:
        raise UsageError(f"checkpoint {location} has no committed batch yet: start the query "
                         "with startingOffsets instead of resetting it")
    if st.pending is not None and st.pending != st.last_committed + 1:
        raise UsageError(f"checkpoint {location}: batch {st.pending} is planned but batch "
                         f"{st.last_committed + 1} was never committed; not a layout Spark resumes from")
    return view


def plan_checkpoint_reset(admin: AdminPort, scope: CheckpointScope, target: ResetTarget, *,
                          label: str) -> CheckpointResetPlan:
    """Plan a reset with the reset planner's semantics (clamp to [log start, log end], notes):
    `target` for every partition of the checkpoint, or only `scope.topics`."""
    location, topics = scope.location, scope.topics
    view = reset_view(location, source=scope.source)
    st = view.state
    current = view.committed_offsets
    check_topic_names(current, where=f"checkpoint {location}")
    facts = _facts(admin, current, target, topics)
    plan = plan_reset(facts, ResetScope(groups=(CHECKPOINT_GROUP,), topics=topics,
                                        all_topics=not topics), target, label=label)
    parts = tuple(p for g in plan.groups for p in g.partitions)
    warnings = []
    if st.pending is not None:
        warnings.append(f"batch {st.pending} was planned but not committed (the query stopped "
                        f"mid-batch); its end offsets are reset too, so its re-run reads nothing")
    batches = (st.last_committed,) + ((st.pending,) if st.pending is not None else ())
    return CheckpointResetPlan(location, plan.target, parts, batches, tuple(warnings),
                               tuple(liveness_refusals(st, alive_window_s=scope.alive_window_s)),
                               view.source)


def _facts(admin: AdminPort, current: Mapping[TopicPartition, int], target: ResetTarget,
           only: tuple[TopicSpec, ...]) -> ResetFacts:
    topics = {tp.topic for tp in current} | {s.topic for s in only}
    if isinstance(target, FromOffsets):
        topics |= {tp.topic for tp in target.for_group(CHECKPOINT_GROUP)}
    parts = {t: tuple(ps) for t, ps in admin.topic_partitions(sorted(topics)).items()}
    tps = [TopicPartition(t, p) for t, ps in parts.items() for p in ps]
    wm = admin.watermarks(tps)
    times = admin.offsets_for_time(tps, target.timestamp_ms) \
        if isinstance(target, ToDatetime) else {}
    if isinstance(target, ShiftBy) and not current:
        raise UsageError("the checkpoint has no committed offsets to shift from")
    info = GroupInfo(group_id=CHECKPOINT_GROUP, state="empty")
    committed = {tp: CommittedOffset(o) for tp, o in current.items()}
    return ResetFacts(groups={CHECKPOINT_GROUP: GroupFacts(info, committed)},
                      topic_partitions=parts, watermarks=wm, time_offsets=times)


def execute_checkpoint_reset(plan: CheckpointResetPlan, *, force: bool = False) -> ResetRecord:
    """Write the planned offsets into the checkpoint (after copying every file it changes);
    refused while the query looks alive or is stateful, unless `force`."""
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


# -- rollback -------------------------------------------------------------------------------
@dataclass(frozen=True)
class RollbackResult:
    record: ResetRecord
    executed: bool
    files: tuple[str, ...]
    refusals: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class CheckpointRollbackRequest:
    """`streaming rollback`: put back every file a `streaming reset --execute` changed."""

    location: str
    reset_id: str = "latest"
    execute: bool = False
    force: bool = False
    alive_window_s: float = DEFAULT_ALIVE_WINDOW_S


def rollback_checkpoint(req: CheckpointRollbackRequest) -> RollbackResult:
    """Put back every file a reset changed (dry run unless `req.execute`)."""
    store = CheckpointStore(req.location)
    record = store.load_record(req.reset_id)
    st = store.state()
    untouched = st.last_planned == record.last_planned and all(
        f.after is None or store.read_bytes(f.path) == f.after for f in record.files)
    # The reset's own rewrite is the newest change of a checkpoint nobody ran since: that is
    # not a sign of a live query (it refused rollbacks for the whole alive window).
    refusals = [] if untouched else liveness_refusals(st, alive_window_s=req.alive_window_s)
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
    result = RollbackResult(record, req.execute, tuple(f.path for f in record.files), tuple(refusals))
    if not req.execute:
        return result
    if refusals and not req.force:
        raise CheckpointBusyError(refusals[0])
    for f in record.files:
        if f.before is None:
            store.remove(f.path)
        else:
            store.write_bytes(f.path, f.before)
    store.save_record(dataclasses.replace(record, rolled_back=True))
    return result


# -- commit to a group ----------------------------------------------------------------------
@dataclass(frozen=True)
class CommitToGroupRequest:
    """`streaming commit-to-group`: commit the checkpoint's position to a consumer group (the
    planner takes the request as it is, the executor its `options`)."""

    location: str
    group: str
    source: int | None = None      # index of the query's Kafka source (when it has several)
    execute: bool = False
    options: ExecuteOptions = field(default_factory=ExecuteOptions)


def commit_plan(admin: AdminPort, req: CommitToGroupRequest) -> ResetPlan:
    """The reset plan that commits the checkpoint's position (end of the last committed batch)
    to the request's group; the caller executes it through the one executor."""
    location, group = req.location, req.group
    view = load_view(location, source=req.source)
    offsets = view.committed_offsets
    if not offsets:
        raise UsageError(f"checkpoint {location} has no committed batch to commit")
    check_topic_names(offsets, where=f"checkpoint {location}")
    target = FromOffsets(offsets={group: offsets}, source=f"checkpoint {location}")
    return build_plan(admin, ResetScope(groups=(group,)), target,
                      label=f"checkpoint batch {view.state.last_committed}")
