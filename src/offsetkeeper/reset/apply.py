"""Executing a plan: the ONE code path that changes consumer-group offsets.

Reset, rollback, restore translation, offset deletion, group deletion and bulk changes all end
here. For each group: check that it still has no active members (Kafka refuses a commit from
outside a group with members, but not every broker does, and the check gives the clear message)
and that nobody moved its offsets since planning, then
commit (or delete), retry retriable errors with exponential backoff and jitter, and read the
result back to compare it with the plan. Groups run concurrently in waves.

This module knows nothing of snapshot stores: the caller passes `ApplyOptions.snapshot_fn`,
which is called once, before anything changes, with the groups about to change.

Two apply strategies share the checks and the read-back: committing from outside (groups
without members), and a live reset (`ApplyOptions.live`, a `LiveChannel`): the plan goes to the
group's running members, which apply it themselves; their acknowledgements are claims, and a
partition counts as changed only when the acknowledging member is a current member of the group
and the group's committed offset read back equals the target.

Size: over 500 lines on purpose: the one executor (snapshot, waves, re-checks, commits,
read-backs, retries on a fresh client) reads top to bottom in one module.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Protocol

from offsetkeeper.errors import OffsetkeeperError
from offsetkeeper.kafka.errors import (
    AUTHORIZATION,
    RETRIABLE,
    group_denied,
    partition_error,
    translate,
)
from offsetkeeper.kafka.ports import AdminPort, GroupsPort
from offsetkeeper.models import CommittedOffset, TopicPartition
from offsetkeeper.progress import ProgressEvent, ProgressFn, no_progress
from offsetkeeper.reset.options import ExecuteOptions
from offsetkeeper.reset.plan import GroupPlan, GroupReads, PlanKind, ResetPlan, refusal_of


class GroupStatus(StrEnum):
    """What happened to one group."""

    SUCCESS = "success"
    REFUSED = "refused"
    FAILED = "failed"
    NOTHING = "nothing-to-do"
    # The change was sent, its answer was lost (a helper process died, a timeout), and reading
    # the group back failed too: it may or may not have changed. Never reported as "nothing
    # changed".
    UNKNOWN = "unknown"


class ReportStatus(StrEnum):
    """The outcome of a whole run (SUCCESS only when every group succeeded)."""

    SUCCESS = "SUCCESS"
    PARTIAL_SUCCESS = "PARTIAL_SUCCESS"
    FAILED = "FAILED"
    UNKNOWN = "UNKNOWN"  # some group's outcome could not be told (GroupStatus.UNKNOWN)


# snapshot_fn(admin, groups, description, *, uncommitted) -> snapshot id; `uncommitted`: per
# group, the partitions the plan commits to that have no committed offset now (the snapshot
# records them, so a rollback deletes those commits again). A snapshot_fn whose attribute
# `takes_reads` is true also takes `reads=(described, committed)`: the groups as planning or the
# executor just read them, which the executor then uses as its re-check (see `apply_plan`).
SnapshotFn = Callable[..., str]

# Reads of the groups (planning's, or the snapshot's) stand for a wave's re-check only while
# they are at most this old when the wave starts: the re-check is there for what changes
# between planning and the commit, and a second is the window the commit itself already has
# (its request in flight, the read-back after it). Older reads (a slow remote snapshot store,
# the later waves of a big run) mean reading again; a plan previewed and confirmed later (the
# dashboard) passes none.
SNAPSHOT_READS_FRESH_S = 1.0


class LiveAckClaim(Protocol):
    """What a member says it did with one partition of a live reset."""

    group: str
    tp: TopicPartition
    offset: int
    status: str  # "applied" | "failed"
    member: str
    error: str | None
    store: bool  # offsets kept only in an external store (cannot be read back)


class LiveChannel(Protocol):
    """Where a live reset is published to a group's running members (consumer.live)."""

    timeout_s: float

    def publish(self, offsets: Mapping[str, Mapping[TopicPartition, int]],
                snapshot_id: str | None) -> None: ...

    def acknowledgements(self, deadline: float) -> Iterator[LiveAckClaim]: ...

    def withdraw(self) -> bool: ...


@dataclass(frozen=True)
class ApplyOptions:
    """How to execute a plan: the user's `ExecuteOptions` as they came (`options`), plus what
    only this run has."""

    options: ExecuteOptions = field(default_factory=ExecuteOptions)
    # Take a snapshot of the groups about to change, first (None: no snapshot).
    snapshot_fn: SnapshotFn | None = None
    description: str = ""
    progress: ProgressFn = no_progress
    # Apply through the group's running members instead of committing from outside.
    live: LiveChannel | None = None


@dataclass(frozen=True)
class GroupResult:
    """What happened to one group."""

    group: str
    status: GroupStatus
    partitions_changed: int = 0
    attempts: int = 0
    latency_s: float = 0.0
    error: str | None = None
    partition_errors: dict[str, str] = field(default_factory=dict)
    # A live reset: partition -> the member that applied it (verified by read-back).
    applied_by: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ApplyReport:
    """The outcome of executing a plan, with throughput and latency figures."""

    results: tuple[GroupResult, ...]
    elapsed_s: float
    snapshot_id: str | None = None
    kind: PlanKind = PlanKind.RESET

    @property
    def succeeded(self) -> int:
        return sum(r.status in (GroupStatus.SUCCESS, GroupStatus.NOTHING) for r in self.results)

    @property
    def failed(self) -> int:
        return len(self.results) - self.succeeded

    @property
    def partitions_changed(self) -> int:
        return sum(r.partitions_changed for r in self.results)

    @property
    def offsets_per_s(self) -> float:
        return self.partitions_changed / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def unknown(self) -> int:
        return sum(r.status is GroupStatus.UNKNOWN for r in self.results)

    @property
    def status(self) -> ReportStatus:
        if self.failed == 0:
            return ReportStatus.SUCCESS
        if self.unknown:
            return ReportStatus.UNKNOWN
        return ReportStatus.PARTIAL_SUCCESS if self.succeeded else ReportStatus.FAILED

    def latency(self, q: float) -> float:
        """Per-group latency quantile in seconds (nearest rank) over the groups committed."""
        xs = sorted(r.latency_s for r in self.results if r.attempts)
        if not xs:
            return 0.0
        return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))]

    def summary(self) -> dict:
        return {
            "status": str(self.status),
            "kind": str(self.kind),
            "groups_total": len(self.results),
            "groups_succeeded": self.succeeded,
            "groups_failed": self.failed,
            "groups_unknown": self.unknown,
            "partitions_changed": self.partitions_changed,
            "elapsed_s": round(self.elapsed_s, 3),
            "offsets_per_s": round(self.offsets_per_s, 1),
            "latency_p50_ms": round(self.latency(0.50) * 1000, 1),
            "latency_p99_ms": round(self.latency(0.99) * 1000, 1),
            "latency_max_ms": round(self.latency(1.0) * 1000, 1),
            "snapshot_id": self.snapshot_id,
        }

    def to_dict(self) -> dict:
        return {**self.summary(), "groups": [
            {**asdict(r), "status": str(r.status)} for r in self.results]}


# Errors after which a change request may or may not have been applied (besides retriable
# ones): the admin helper process died before answering, a request timed out.
_OUTCOME_UNKNOWN = frozenset({"_HELPER_FAILED", "_TIMED_OUT", "REQUEST_TIMED_OUT", "_TRANSPORT"})


def _backoff(attempt: int, opts: ApplyOptions) -> float:
    # Full jitter: spreads retries of many groups hitting the same coordinator.
    run = opts.options
    return random.uniform(0, min(run.backoff_max_s, run.backoff_base_s * 2 ** attempt))


@dataclass
class _Job:
    """Mutable progress of one group through the executor."""

    plan: GroupPlan
    offsets: dict
    # A reset plan's partitions to end with no committed offset (OffsetDelete), e.g. a rollback
    # to a snapshot that recorded them as uncommitted.
    deletes: list = field(default_factory=list)
    started: float = 0.0
    attempts: int = 0
    partition_errors: dict[str, str] = field(default_factory=dict)


def _moved(job: _Job, live: dict) -> str | None:
    """The first partition whose committed offset differs from both the plan's CURRENT and its
    TARGET (TARGET: our own earlier attempt may have committed it), as a message; else None."""
    for p in job.plan.partitions:
        got = live.get(p.tp)
        now = None if got is None else got.offset
        if p.delete and now is None:  # deleted already (our own earlier attempt) or never set
            continue
        if now != p.current and not (p.target is not None and now == p.target and not p.delete):
            was = "no offset" if p.current is None else p.current
            return (f"group {job.plan.group}: the committed offset of {p.tp} changed since planning "
                    f"(planned from {was}, now {'none' if now is None else now}); another tool or "
                    "consumer is writing to this group: plan again")
    return None


class _Wave:
    """One pipelined pass over jobs: re-check state and offsets, apply, read back — every request
    of a kind in flight at once (librdkafka routes each to its group's coordinator)."""

    def __init__(self, admin: AdminPort, kind: PlanKind, opts: ApplyOptions,
                 prepared: GroupReads | None = None) -> None:
        self.admin, self.kind, self.opts = admin, kind, opts
        # the groups as read a moment ago (planning, the snapshot): this wave's re-check
        self.prepared = prepared
        self.done: list[GroupResult] = []
        self.retry: list[_Job] = []
        # change requests sent whose answer was lost for good: read back before saying anything
        self.lost: list[tuple[_Job, OffsetkeeperError]] = []
        # group -> what this run committed, for groups that read back exactly that
        self.confirmed: dict[str, dict[TopicPartition, int]] = {}
        # group -> its describe answer of this wave's re-check: the read-backs reuse it as the
        # proof `committed_offsets_each` needs that the coordinator is ready (the commit that
        # followed was answered by that coordinator), instead of describing every group again
        self.described: dict[str, object] = {}

    def fail(self, job: _Job, status: GroupStatus, error: str) -> None:
        self.done.append(GroupResult(job.plan.group, status, attempts=job.attempts,
                                     latency_s=time.monotonic() - job.started, error=error,
                                     partition_errors=job.partition_errors))

    def retry_or_fail(self, job: _Job, err: OffsetkeeperError) -> None:
        if getattr(err, "retriable", False) and job.attempts <= self.opts.options.retries:
            self.retry.append(job)
        else:
            self.fail(job, GroupStatus.FAILED, err.message)

    def run(self, jobs: list[_Job]) -> None:
        for job in jobs:
            job.attempts += 1
        try:
            self.admin.ping()
        except OffsetkeeperError as exc:
            for job in jobs:
                self.retry_or_fail(job, exc)
            return
        eligible = self._recheck(jobs)
        applied = self._apply(eligible)
        self._verify(applied)
        self._read_back_lost()

    def _recheck(self, jobs: list[_Job]) -> list[_Job]:
        """Right before changing anything: the group must still be inactive (a consumer may have
        joined since planning) and its offsets must be the ones planned from (a concurrent run
        or tool may have moved them: last writer would silently win)."""
        ids = [j.plan.group for j in jobs]
        prepared = self.prepared if self.prepared is not None and all(
            g in self.prepared.described and g in self.prepared.committed for g in ids) else None
        try:
            infos = {g: prepared.described[g] for g in ids} if prepared is not None else \
                self.admin.describe_groups_each(ids)
        except Exception as exc:  # the whole request failed (e.g. no broker reachable)
            err = translate(exc, action="describe groups")
            infos = {j.plan.group: err for j in jobs}
        self.described = dict(infos)
        alive = []
        for job in jobs:
            info = infos.get(job.plan.group)
            if isinstance(info, OffsetkeeperError):
                self.retry_or_fail(job, info)
                continue
            refusal = refusal_of(info, allow_unknown_state=self.opts.options.allow_unknown_state) \
                if info is not None else None
            if refusal is not None:
                self.fail(job, GroupStatus.REFUSED, refusal.message)
            else:
                alive.append(job)
        reads = {j.plan.group: prepared.committed[j.plan.group] for j in alive} \
            if prepared is not None \
            else self.admin.committed_offsets_each([job.plan.group for job in alive],
                                                   described=infos)
        eligible = []
        for job in alive:
            live = reads[job.plan.group]
            if isinstance(live, OffsetkeeperError):
                self.retry_or_fail(job, live)
                continue
            moved = _moved(job, live) if job.attempts == 1 or self.kind is PlanKind.RESET else None
            if moved:
                self.fail(job, GroupStatus.REFUSED, moved)
            else:
                eligible.append(job)
        return eligible

    def _refuse_unreadable(self, jobs: list[_Job]) -> list[_Job]:
        """A group is committed whole or not at all: when this principal lacks Read on any
        topic the group's commit touches, Kafka would refuse those partitions and apply the
        others (a half-reset group). Checked first, for every topic of the wave at once."""
        if not jobs:
            return jobs
        topics = {tp.topic for j in jobs for tp in [*j.offsets, *j.deletes]}
        try:
            denied = self.admin.topics_without_read(topics)
        except OffsetkeeperError:
            return jobs
        if not denied:
            return jobs
        action = "delete offsets" if self.kind is PlanKind.DELETE_OFFSETS else "commit offsets"
        keep = []
        for job in jobs:
            mine = sorted({tp.topic for tp in [*job.offsets, *job.deletes]} & denied)
            if mine:
                self.fail(job, GroupStatus.FAILED, group_denied(
                    "TOPIC_AUTHORIZATION_FAILED", action=action, group=job.plan.group,
                    topics=mine) + "; nothing of this group was changed")
            else:
                keep.append(job)
        return keep

    def change_lost(self, job: _Job, err: OffsetkeeperError) -> None:
        """A change request failed after it may have reached the cluster: retried when
        retriable (the re-check accepts our own earlier commit), else read back."""
        if getattr(err, "retriable", False) and job.attempts <= self.opts.options.retries:
            self.retry.append(job)
        elif getattr(err, "retriable", False) or getattr(err, "code", None) in _OUTCOME_UNKNOWN:
            self.lost.append((job, err))
        else:  # a definite refusal (authorization, invalid request): nothing was changed
            self.fail(job, GroupStatus.FAILED, err.message)

    def _apply(self, jobs: list[_Job]) -> list[_Job]:
        if self.kind is PlanKind.DELETE_GROUPS:
            return self._delete_groups(jobs)
        jobs = self._refuse_unreadable(jobs)
        pending = []
        for job in jobs:
            try:
                if self.kind is PlanKind.DELETE_OFFSETS:
                    pending.append((job, self.admin.delete_offsets(job.plan.group, list(job.offsets))))
                else:
                    pending.append((job, self.admin.alter_offsets_async(job.plan.group,
                                                                        _with_metadata(job))
                                    if job.offsets else {}))
            except OffsetkeeperError as exc:
                self.change_lost(job, exc)
            except Exception as exc:
                self.change_lost(job, translate(exc, action="commit offsets", group=job.plan.group))
        applied = []
        for job, res in pending:
            try:
                results = res if self.kind is PlanKind.DELETE_OFFSETS or not job.offsets else \
                    self.admin.alter_result(job.plan.group, res)
                if job.deletes and self.kind is PlanKind.RESET:
                    results = {**results, **self.admin.delete_offsets(job.plan.group, job.deletes)}
            except OffsetkeeperError as exc:
                self.change_lost(job, exc)
                continue
            bad = {tp: e for tp, e in results.items() if e}
            if bad and set(bad.values()) <= RETRIABLE and job.attempts <= self.opts.options.retries:
                self.retry.append(job)
                continue
            action = "delete offsets" if self.kind is PlanKind.DELETE_OFFSETS else "commit offsets"
            names = set(bad.values())
            if len(bad) == len(results) and len(names) == 1 and names <= AUTHORIZATION:
                # every partition refused by the ACLs: one line for the group, nothing changed
                self.fail(job, GroupStatus.FAILED, group_denied(
                    names.pop(), action=action, group=job.plan.group,
                    topics=[tp.topic for tp in bad]))
                continue
            job.partition_errors.update({str(tp): partition_error(e, group=job.plan.group, tp=tp,
                                                                  action=action)
                                         for tp, e in bad.items()})
            applied.append(job)
        return applied

    def _read_back_lost(self) -> None:
        """Groups whose change request was sent but whose answer was lost: what changed is
        said from the group read back (per partition: at the target, still where planned
        from, or elsewhere); when even that read fails, the group's outcome is UNKNOWN."""
        if not self.lost:
            return
        groups = [j.plan.group for j, _ in self.lost]
        try:
            reads = self.admin.committed_offsets_each(groups)
        except OffsetkeeperError as exc:
            reads = {g: exc for g in groups}
        for job, err in self.lost:
            latency = time.monotonic() - job.started
            live = reads.get(job.plan.group)
            if not isinstance(live, dict):
                why = getattr(live, "message", "no answer")
                self.done.append(GroupResult(
                    job.plan.group, GroupStatus.UNKNOWN, attempts=job.attempts, latency_s=latency,
                    partition_errors=job.partition_errors,
                    error=f"outcome unknown: {err.message}; the change may have been made, and "
                          f"reading the group back failed ({why}): look at it (offsetkeeper groups "
                          f"describe {job.plan.group}) before running again"))
                continue
            wanted = {**{tp: o for tp, o in job.offsets.items()
                         if self.kind is PlanKind.RESET},
                      **{tp: None for tp in job.deletes},
                      **({tp: None for tp in job.offsets}
                         if self.kind is PlanKind.DELETE_OFFSETS else {})}
            current = {p.tp: p.current for p in job.plan.partitions}
            perr = dict(job.partition_errors)
            changed = 0
            for tp, want in wanted.items():
                got = live.get(tp)
                now = None if got is None else got.offset
                if now == want:
                    changed += 1
                elif now == current.get(tp):
                    perr[str(tp)] = f"not changed ({err.message})"
                elif want is None:
                    perr[str(tp)] = f"still committed at {now} after the delete ({err.message})"
                else:
                    perr[str(tp)] = _moved_by_another(want, now)
            ok = not perr
            if ok and self.kind is PlanKind.RESET:
                self.confirmed[job.plan.group] = dict(job.offsets)
            self.done.append(GroupResult(
                job.plan.group, GroupStatus.SUCCESS if ok else GroupStatus.FAILED,
                partitions_changed=changed, attempts=job.attempts, latency_s=latency,
                partition_errors=perr,
                error=None if ok else f"the answer was lost ({err.message}); read back: "
                                      f"{changed} of {len(wanted)} partition(s) changed"))

    def _delete_groups(self, jobs: list[_Job]) -> list[_Job]:
        if not jobs:
            return []
        results = self.admin.delete_groups([j.plan.group for j in jobs])
        applied = []
        for job in jobs:
            err = results.get(job.plan.group)
            if err is None:
                applied.append(job)
            else:
                self.retry_or_fail(job, translate(err, action="delete group", group=job.plan.group))
        return applied

    def _verify(self, jobs: list[_Job]) -> None:
        """Read every group back and compare with the plan."""
        latency = {id(job): time.monotonic() - job.started for job in jobs}
        groups = [job.plan.group for job in jobs]
        reads = self.admin.committed_offsets_each(
            groups, described={g: self.described[g] for g in groups if g in self.described}) \
            if self.opts.options.verify and jobs else {}
        live_by_job: dict[int, object] = {id(job): reads[job.plan.group] for job in jobs
                                          if job.plan.group in reads}
        for job in jobs:
            live = live_by_job.get(id(job))
            if isinstance(live, OffsetkeeperError):
                job.partition_errors["*"] = f"applied, but reading back failed: {live.message}"
            elif live is not None:
                self._compare(job, live)
            changed = sum(1 for p in job.plan.partitions
                          if p.changes and str(p.tp) not in job.partition_errors)
            perr = job.partition_errors
            if not perr and live is not None and self.kind is PlanKind.RESET:
                self.confirmed[job.plan.group] = dict(job.offsets)
            self.done.append(GroupResult(
                job.plan.group, GroupStatus.FAILED if perr else GroupStatus.SUCCESS,
                partitions_changed=changed, attempts=job.attempts, latency_s=latency[id(job)],
                partition_errors=perr, error=f"{len(perr)} partition(s) failed" if perr else None))

    def _compare(self, job: _Job, live: dict) -> None:
        metadata = {p.tp: p.metadata for p in job.plan.partitions}
        for tp in job.deletes:
            got = live.get(tp)
            if str(tp) not in job.partition_errors and got is not None:
                job.partition_errors[str(tp)] = f"still committed at {got.offset} after the delete"
        for tp, want in job.offsets.items():
            if str(tp) in job.partition_errors:
                continue
            got = live.get(tp)
            if self.kind is PlanKind.RESET:
                if got is None or got.offset != want:
                    job.partition_errors[str(tp)] = _moved_by_another(
                        want, None if got is None else got.offset)
                elif got.metadata is not None and got.metadata != metadata.get(tp, ""):
                    job.partition_errors[str(tp)] = (
                        f"committed at {want}, but its commit metadata reads back as "
                        f"{got.metadata[:64]!r}, not {metadata.get(tp, '')[:64]!r}")
            elif got is not None:
                job.partition_errors[str(tp)] = f"still committed at {got.offset} after the delete"


def _with_metadata(job: _Job) -> dict[TopicPartition, int | CommittedOffset]:
    """The offsets to commit, each with the commit metadata the plan gives it (none: bare)."""
    meta = {p.tp: p.metadata for p in job.plan.partitions if p.metadata}
    return {tp: CommittedOffset(o, meta[tp]) if tp in meta else o for tp, o in job.offsets.items()}


def _moved_by_another(want: int, got: int | None, *, after: bool = False) -> str:
    when = "after this run committed it" if after else "while this run committed it"
    return (f"moved by another writer {when}: this run committed {want}, the group now has "
            f"{'no offset' if got is None else got}; another reset or consumer is writing to "
            "this group (see where it is, then plan again)")


def _confirm_at_end(admin: AdminPort, results: list[GroupResult],
                    confirmed: dict[str, dict[TopicPartition, int]],
                    described: Mapping[str, object]) -> list[GroupResult]:
    """Read the groups that succeeded once more, after the whole run: Kafka has no
    compare-and-set for offsets, so two concurrent runs can each read back their own commit.
    A group that no longer holds this run's offsets is not reported as this run's success.
    `described`: each group's describe answer of its last re-check (its coordinator answered
    the commit and the read-back since, so it is not described once more)."""
    groups = [r.group for r in results if r.status is GroupStatus.SUCCESS and r.group in confirmed]
    if not groups:
        return results
    try:
        reads = admin.committed_offsets_each(
            groups, described={g: described[g] for g in groups if g in described})
    except OffsetkeeperError:
        return results  # the first read-back stands
    out = []
    for r in results:
        live = reads.get(r.group) if r.group in groups else None
        if live is None or isinstance(live, OffsetkeeperError):
            out.append(r)
            continue
        perr = {}
        for tp, want in confirmed[r.group].items():
            got = live.get(tp)
            if got is None or got.offset != want:
                perr[str(tp)] = _moved_by_another(want, None if got is None else got.offset,
                                                  after=True)
        if not perr:
            out.append(r)
        else:
            out.append(replace(r, status=GroupStatus.FAILED, partition_errors={**r.partition_errors,
                                                                              **perr},
                               partitions_changed=max(0, r.partitions_changed - len(perr)),
                               error=f"{len(perr)} partition(s) moved by another writer"))
    return out


def _initial_results(plans: list[GroupPlan], kind: PlanKind) -> tuple[list[GroupResult], list[_Job]]:
    results, queue = [], []
    for gp in plans:
        perr = {str(p.tp): p.error for p in gp.partitions if p.error}
        if gp.refused:
            results.append(GroupResult(gp.group, GroupStatus.REFUSED, error=gp.refused.message))
        elif not any(p.changes for p in gp.partitions) and kind is not PlanKind.DELETE_GROUPS:
            results.append(GroupResult(
                gp.group, GroupStatus.FAILED if perr else GroupStatus.NOTHING, partition_errors=perr,
                error="no partition could be planned" if perr else None))
        else:
            # Only what changes is committed: a partition already where the plan wants it (a
            # rollback's untouched partitions) needs no commit, and no rights to commit it.
            offsets = {p.tp: p.target for p in gp.partitions if p.changes} \
                if kind is not PlanKind.RESET else \
                {p.tp: p.target for p in gp.partitions if p.changes and not p.delete}
            deletes = gp.deletes if kind is PlanKind.RESET else []
            queue.append(_Job(gp, offsets, deletes, partition_errors=perr))
    return results, queue


def _execute(admin: AdminPort, plan: ResetPlan, opts: ApplyOptions,
             prepared: GroupReads | None = None) -> list[GroupResult]:
    """Run groups through waves of at most `max_concurrent` groups, retrying retriable ones.
    `prepared`: the groups' states and offsets read a moment ago (planning, the snapshot): the
    re-check of the waves that start within SNAPSHOT_READS_FRESH_S of it, retries aside."""
    run = opts.options
    plans = list(plan.groups)
    total = len(plans)
    results: list[GroupResult] = []

    def notify(done: list[GroupResult]) -> None:
        results.extend(done)
        opts.progress(ProgressEvent(str(plan.kind), len(results), total, "groups"))

    first, queue = _initial_results(plans, plan.kind)
    notify(first)
    deadline = None if run.deadline_s is None else time.monotonic() + run.deadline_s
    retry_at: list[tuple[float, _Job]] = []
    confirmed: dict[str, dict[TopicPartition, int]] = {}
    described: dict[str, object] = {}
    while queue or retry_at:
        now = time.monotonic()
        if deadline is not None and now > deadline:
            late = queue + [j for _, j in retry_at]
            queue, retry_at = [], []
            notify([GroupResult(j.plan.group, GroupStatus.FAILED, attempts=j.attempts,
                                latency_s=now - (j.started or now), partition_errors=j.partition_errors,
                                error=f"not done within the run's deadline of {run.deadline_s:g}s "
                                      "(is the cluster reachable?)") for j in late])
            break
        ready = [j for t, j in retry_at if t <= now]
        retry_at = [(t, j) for t, j in retry_at if t > now]
        wave = ready + queue[: max(0, run.max_concurrent - len(ready))]
        queue = queue[len(wave) - len(ready):]
        if not wave:
            time.sleep(max(0.0, min(t for t, _ in retry_at) - now))
            continue
        for job in wave:
            job.started = job.started or time.monotonic()
        # a retried group is read again: its state now includes this run's earlier attempt
        fresh = prepared if prepared is not None and not ready and \
            time.monotonic() - prepared.at <= SNAPSHOT_READS_FRESH_S else None
        w = _Wave(admin, plan.kind, opts, fresh)
        w.run(wave)
        if w.retry:
            admin.reconnect()
        confirmed.update(w.confirmed)
        described.update(w.described)
        notify(w.done)
        retry_at.extend((time.monotonic() + _backoff(j.attempts, opts), j) for j in w.retry)
    if run.verify:
        results = _confirm_at_end(admin, results, confirmed, described)
    order = {gp.group: i for i, gp in enumerate(plans)}
    return sorted(results, key=lambda r: order[r.group])


def groups_to_change(plan: ResetPlan, *, live: bool = False) -> list[str]:
    """The groups executing `plan` would change (those a snapshot must cover). A live reset
    moves every planned partition's position, even where the committed offset is the target."""
    return [g.group for g in plan.groups if not g.refused and
            (any(p.changes or (live and _live_target(p) is not None) for p in g.partitions)
             or plan.kind is PlanKind.DELETE_GROUPS)]


def _live_target(p) -> int | None:
    return p.target if p.target is not None and not p.error and not p.delete else None


def _execute_live(admin: AdminPort, plan: ResetPlan, opts: ApplyOptions,
                  snapshot_id: str | None) -> list[GroupResult]:
    """The live strategy: re-check that each group still has members, publish, collect the
    members' claims until every partition answered or the channel's timeout, then believe a
    claim only when the group itself confirms it (member current, offset read back)."""
    channel = opts.live
    results: list[GroupResult] = []
    jobs: dict[str, _Job] = {}
    now = time.monotonic()
    for gp in plan.groups:
        perr = {str(p.tp): p.error for p in gp.partitions if p.error}
        offsets = {p.tp: t for p in gp.partitions if (t := _live_target(p)) is not None}
        if gp.refused:
            results.append(GroupResult(gp.group, GroupStatus.REFUSED, error=gp.refused.message))
        elif not offsets:
            results.append(GroupResult(gp.group, GroupStatus.FAILED if perr else GroupStatus.NOTHING,
                                       partition_errors=perr,
                                       error="no partition could be planned" if perr else None))
        else:
            jobs[gp.group] = _Job(gp, offsets, started=now, attempts=1, partition_errors=perr)
    infos = admin.describe_groups_each(list(jobs)) if jobs else {}
    for g in list(jobs):
        info = infos.get(g)
        if isinstance(info, OffsetkeeperError) or info is None or not info.members:
            job = jobs.pop(g)
            why = info.message if isinstance(info, OffsetkeeperError) else (
                f"group {g} has no members now; a live reset is applied by the group's running "
                "consumers (for a stopped group, reset without --live)")
            results.append(GroupResult(g, GroupStatus.FAILED if isinstance(info, OffsetkeeperError)
                                       else GroupStatus.REFUSED, attempts=1, error=why,
                                       partition_errors=job.partition_errors))
    if not jobs:
        return results
    wanted = {(g, tp) for g, job in jobs.items() for tp in job.offsets}
    claims: dict[tuple[str, TopicPartition], dict[str, LiveAckClaim]] = {}
    members = _MemberCache(admin)
    answered: set[tuple[str, TopicPartition]] = set()
    channel.publish({g: job.offsets for g, job in jobs.items()}, snapshot_id)
    try:
        for ack in channel.acknowledgements(time.monotonic() + channel.timeout_s):
            k = (ack.group, ack.tp)
            if k not in wanted:
                continue
            mine = claims.setdefault(k, {})
            # Anyone who can write the topic can claim anything in any member's name: keep a
            # bounded number of claimants, but never crowd out a current member's claim.
            if ack.member not in mine and (len(mine) < _MAX_CLAIMANTS
                                           or members.is_member(ack.group, ack.member)):
                mine[ack.member] = ack
            if k not in answered and (ack.status == "applied"
                                      or members.is_member(ack.group, ack.member)):
                # an applied claim is checked by the read-back; a failure only counts from a
                # current member (a forged "failed" must not end the wait for the real answer)
                answered.add(k)
                opts.progress(ProgressEvent("live reset", len(answered), len(wanted), "partitions"))
                if len(answered) == len(wanted):
                    break
        results.extend(_confirm_live(admin, jobs, claims, channel.timeout_s))
    finally:
        # members hold the partitions they applied until the request is withdrawn: the
        # read-back above saw a position nobody was moving
        channel.withdraw()
    order = {gp.group: i for i, gp in enumerate(plan.groups)}
    return sorted(results, key=lambda r: order[r.group])


_MAX_CLAIMANTS = 32


class _MemberCache:
    """Current member ids of groups, read at most once a second per group (claims arrive in
    bursts, and forged ones must not turn into a flood of describe calls)."""

    def __init__(self, admin: GroupsPort) -> None:
        self.admin = admin
        self._seen: dict[str, tuple[float, set[str]]] = {}

    def is_member(self, group: str, member: str) -> bool:
        at, ids = self._seen.get(group, (-1.0, set()))
        if member not in ids and time.monotonic() - at > 1.0:
            info = self.admin.describe_groups_each([group]).get(group)
            ids = {m.member_id for m in getattr(info, "members", None) or ()}
            self._seen[group] = (time.monotonic(), ids)
        return member in ids


def _pick_claim(mine: dict, members: set[str] | None):
    """The claim that decides a partition: a current member's applied claim, else its failure,
    else (to say why it is not believed) any other claim, applied first."""
    def rank(a) -> tuple[int, int]:
        known = members is None or a.member in members
        return (0 if known else 1, 0 if a.status == "applied" else 1)

    return min(mine.values(), key=rank) if mine else None


def _confirm_live(admin: AdminPort, jobs: dict[str, _Job], claims: dict, timeout_s: float) -> list[GroupResult]:
    infos = admin.describe_groups_each(list(jobs))
    reads = admin.committed_offsets_each(list(jobs), described=infos)
    out = []
    for g, job in jobs.items():
        info, live = infos.get(g), reads.get(g)
        members = {m.member_id for m in info.members} if hasattr(info, "members") else None
        applied: dict[str, str] = {}
        for tp, want in job.offsets.items():
            ack = _pick_claim(claims.get((g, tp)) or {}, members)
            err = None
            if ack is None:
                err = (f"no member acknowledged within {timeout_s:g}s (is the partition owned by a "
                       "consumer built on offsetkeeper.consumer that trusts this signing key?)")
            elif members is not None and ack.member not in members:
                err = (f"acknowledged by {ack.member!r}, which is not a member of group {g}"
                       if ack.status == "applied" else
                       f"no member acknowledged within {timeout_s:g}s; a 'failed' acknowledgement "
                       f"in the name of {ack.member!r}, which is not a member of group {g}, was "
                       "not believed")
            elif ack.status != "applied":
                err = f"member {ack.member} could not apply it: {ack.error or 'no reason given'}"
            elif ack.store:
                err = (f"member {ack.member} wrote its offset store; offsets kept outside Kafka "
                       "cannot be read back (OffsetConsumer(mirror_to_kafka=True) lets the command "
                       "verify them)")
            elif isinstance(live, OffsetkeeperError) or live is None:
                err = f"acknowledged, but reading the group back failed: {getattr(live, 'message', live)}"
            elif (got := live.get(tp)) is None or got.offset != want:
                err = (f"acknowledged by {ack.member}, but the group's committed offset is "
                       f"{'none' if got is None else got.offset}, not {want}")
            if err:
                job.partition_errors[str(tp)] = err
            else:
                applied[str(tp)] = ack.member
        perr = job.partition_errors
        out.append(GroupResult(g, GroupStatus.FAILED if perr else GroupStatus.SUCCESS,
                               partitions_changed=len(applied), attempts=1,
                               latency_s=time.monotonic() - job.started, partition_errors=perr,
                               error=f"{len(perr)} partition(s) failed" if perr else None,
                               applied_by=applied))
    return out


def uncommitted_partitions(plan: ResetPlan) -> dict[str, list[TopicPartition]]:
    """Per group, the partitions executing `plan` commits to that have no committed offset now
    (a snapshot records them: "no committed offset" is a state a rollback must restore)."""
    if plan.kind is not PlanKind.RESET:
        return {}
    out = {g.group: [p.tp for p in g.partitions if p.changes and not p.delete and p.current is None]
           for g in plan.groups if not g.refused}
    return {g: tps for g, tps in out.items() if tps}


def admin_for(admin: AdminPort, plan: ResetPlan) -> AdminPort:
    """The admin facade's view for the plan's group type: a share group's start offsets are
    read and changed by other calls than committed offsets (kafka/share_offsets.py)."""
    return admin.for_group_type(plan.group_type)


def apply_plan(admin: AdminPort, plan: ResetPlan, options: ApplyOptions | None = None, *,
               reads: GroupReads | None = None) -> ApplyReport:
    """Execute `plan` against the cluster of `admin`; never raises for per-group failures.

    The snapshot (when `snapshot_fn` is given) is taken before anything changes; if it cannot
    be taken, nothing is changed and the error propagates. `reads`: the groups as planning read
    them (`reset.facts.plan_with_reads`); while at most SNAPSHOT_READS_FRESH_S old they are the
    snapshot's reads and the re-check, else the executor reads the groups again itself.
    """
    opts = options or ApplyOptions()
    view = admin_for(admin, plan)
    groups = groups_to_change(plan, live=opts.live is not None)
    # a share plan's view reads start offsets, not the committed offsets planning read
    fresh = reads if reads is not None and view is admin and opts.live is None \
        and plan.kind is not PlanKind.DELETE_GROUPS \
        and reads.usable_for(groups, within_s=SNAPSHOT_READS_FRESH_S, now=time.monotonic()) \
        else None
    admin = view
    snapshot_id = None
    if opts.snapshot_fn is not None and groups:
        description = opts.description or f"before {plan.kind} {plan.target}"
        if fresh is None or not getattr(opts.snapshot_fn, "takes_reads", False):
            fresh = _read_for_snapshot(admin, plan, opts, groups)
        snapshot_id = opts.snapshot_fn(admin, groups, description,
                                       uncommitted=uncommitted_partitions(plan),
                                       **({"reads": (fresh.described, fresh.committed)}
                                          if fresh is not None else {}))
    start = time.monotonic()
    results = _execute_live(admin, plan, opts, snapshot_id) if opts.live is not None \
        else _execute(admin, plan, opts, fresh)
    return ApplyReport(results=tuple(results), elapsed_s=time.monotonic() - start,
                       snapshot_id=snapshot_id, kind=plan.kind)


def _read_for_snapshot(admin: AdminPort, plan: ResetPlan, opts: ApplyOptions,
                       groups: list[str]) -> GroupReads | None:
    """The groups' states and committed offsets, read once for both the snapshot and the
    re-check (the same two reads the re-check makes), with the time they were read; None
    where the snapshot reads for itself: its snapshot_fn does not take reads, a live reset
    (its own checks), a group deletion, or any group whose read still failed after its
    retriable errors were read again (the snapshot then reads again and fails the run as
    before)."""
    from offsetkeeper.reset.facts import read_groups

    if (not getattr(opts.snapshot_fn, "takes_reads", False) or opts.live is not None
            or plan.kind is PlanKind.DELETE_GROUPS):
        return None
    try:
        described, committed = read_groups(admin, groups)
    except Exception:  # the snapshot reads again, and fails the run as it would have
        return None
    if any(isinstance(v, Exception) for v in (*described.values(), *committed.values())):
        return None
    return GroupReads(described, committed, time.monotonic())
