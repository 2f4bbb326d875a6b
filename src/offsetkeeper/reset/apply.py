"""Executing a reset plan: the ONE code path that commits consumer-group offsets.

Reset, rollback, restore translation and bulk changes all end here. For each group:
check that it still has no active members (the development broker, unlike Kafka, would accept
the commit anyway), commit, retry retriable errors with exponential backoff and jitter, then
read the offsets back and compare them with the plan. Groups run concurrently.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from offsetkeeper.errors import OffsetkeeperError
from offsetkeeper.kafka.errors import ADVICE, RETRIABLE, is_retriable, translate
from offsetkeeper.reset.plan import GroupPlan, ResetPlan

SUCCESS, REFUSED, FAILED, NOTHING = "success", "refused", "failed", "nothing-to-do"


@dataclass(frozen=True)
class ApplyOptions:
    """How to execute a plan."""

    max_concurrent: int = 100
    retries: int = 5
    backoff_base_s: float = 0.2
    backoff_max_s: float = 5.0
    verify: bool = True
    snapshot: bool = True
    snapshot_store: str | None = None
    description: str = ""
    # Called after each group finishes (for progress bars).
    on_group_done: Callable[[GroupResult], None] | None = None


@dataclass(frozen=True)
class GroupResult:
    """What happened to one group."""

    group: str
    status: str
    partitions_changed: int = 0
    attempts: int = 0
    latency_s: float = 0.0
    error: str | None = None
    partition_errors: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ApplyReport:
    """The outcome of executing a plan, with throughput and latency figures."""

    results: tuple[GroupResult, ...]
    elapsed_s: float
    snapshot_id: str | None = None

    @property
    def succeeded(self) -> int:
        return sum(r.status in (SUCCESS, NOTHING) for r in self.results)

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
    def status(self) -> str:
        if self.failed == 0:
            return "SUCCESS"
        return "PARTIAL_SUCCESS" if self.succeeded else "FAILED"

    def latency(self, q: float) -> float:
        """Per-group latency quantile in seconds (nearest rank) over the groups committed."""
        xs = sorted(r.latency_s for r in self.results if r.attempts)
        if not xs:
            return 0.0
        return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))]

    def summary(self) -> dict:
        return {
            "status": self.status,
            "groups_total": len(self.results),
            "groups_succeeded": self.succeeded,
            "groups_failed": self.failed,
            "partitions_changed": self.partitions_changed,
            "elapsed_s": round(self.elapsed_s, 3),
            "offsets_per_s": round(self.offsets_per_s, 1),
            "latency_p50_ms": round(self.latency(0.50) * 1000, 1),
            "latency_p99_ms": round(self.latency(0.99) * 1000, 1),
            "latency_max_ms": round(self.latency(1.0) * 1000, 1),
            "snapshot_id": self.snapshot_id,
        }

    def to_dict(self) -> dict:
        return {**self.summary(), "groups": [asdict(r) for r in self.results]}


def _backoff(attempt: int, opts: ApplyOptions) -> float:
    # Full jitter: spreads retries of many groups hitting the same coordinator.
    return random.uniform(0, min(opts.backoff_max_s, opts.backoff_base_s * 2 ** attempt))


@dataclass
class _Job:
    """Mutable progress of one group through the executor."""

    plan: GroupPlan
    offsets: dict
    started: float = 0.0
    attempts: int = 0
    partition_errors: dict[str, str] = field(default_factory=dict)


def _run_wave(admin, jobs: list[_Job], opts: ApplyOptions) -> tuple[list[GroupResult], list[_Job]]:
    """One pipelined pass over `jobs`: re-check state, commit, read back — all requests of a
    kind in flight at once (librdkafka routes each to its group's coordinator).

    Returns the finished results and the jobs to retry (retriable failures).
    """
    done: list[GroupResult] = []
    retry: list[_Job] = []

    def fail(job: _Job, status: str, error: str) -> None:
        done.append(GroupResult(job.plan.group, status,
                                attempts=job.attempts, latency_s=time.monotonic() - job.started,
                                error=error, partition_errors=job.partition_errors))

    def retry_or_fail(job: _Job, err: OffsetkeeperError) -> None:
        if is_retriable(err) and job.attempts <= opts.retries:
            retry.append(job)
        else:
            fail(job, FAILED, err.message)

    for job in jobs:
        job.attempts += 1
    try:
        admin.ping()
    except OffsetkeeperError as exc:
        for job in jobs:
            retry_or_fail(job, exc)
        return done, retry
    # 1. Re-check right before committing: a consumer may have joined since planning (the
    #    development broker, unlike Kafka, would accept the commit).
    try:
        infos = admin.describe_groups_each([j.plan.group for j in jobs])
    except Exception as exc:  # the whole request failed (e.g. no broker reachable)
        err = translate(exc, action="describe groups")
        infos = {j.plan.group: err for j in jobs}
    eligible = []
    for job in jobs:
        info = infos.get(job.plan.group)
        if isinstance(info, OffsetkeeperError):
            retry_or_fail(job, info)
        elif info is not None and info.is_active:
            fail(job, REFUSED, info.refusal or "")
        else:
            eligible.append(job)
    # 2. Commit: every group's request in flight at once.
    futures = []
    for job in eligible:
        try:
            futures.append((job, admin.alter_offsets_async(job.plan.group, job.offsets)))
        except Exception as exc:
            retry_or_fail(job, translate(exc, action="commit offsets", group=job.plan.group))
    committed = []
    for job, fut in futures:
        try:
            results = admin.alter_result(job.plan.group, fut)
        except OffsetkeeperError as exc:
            retry_or_fail(job, exc)
            continue
        bad = {str(tp): e for tp, e in results.items() if e}
        if bad and set(bad.values()) <= RETRIABLE and job.attempts <= opts.retries:
            retry.append(job)
            continue
        job.partition_errors.update({tp: ADVICE.get(e, e).format(what=tp) for tp, e in bad.items()})
        committed.append(job)
    # 3. Read back and compare with the plan.
    reads = [(job, admin.committed_offsets_async(job.plan.group)) for job in committed] \
        if opts.verify else []
    latency = {id(job): time.monotonic() - job.started for job in committed}
    live_by_job = {}
    for job, fut in reads:
        try:
            live_by_job[id(job)] = admin.committed_result(job.plan.group, fut)
        except OffsetkeeperError as exc:
            live_by_job[id(job)] = exc
    for job in committed:
        live = live_by_job.get(id(job))
        if isinstance(live, OffsetkeeperError):
            job.partition_errors["*"] = f"committed, but reading back failed: {live.message}"
        elif live is not None:
            for tp, want in job.offsets.items():
                got = live.get(tp)
                if (got is None or got.offset != want) and str(tp) not in job.partition_errors:
                    job.partition_errors[str(tp)] = \
                        f"read back {got.offset if got else 'nothing'}, planned {want}"
        changed = sum(1 for p in job.plan.partitions if p.changes and str(p.tp) not in job.partition_errors)
        perr = job.partition_errors
        done.append(GroupResult(job.plan.group, FAILED if perr else SUCCESS, partitions_changed=changed,
                                attempts=job.attempts, latency_s=latency[id(job)], partition_errors=perr,
                                error=f"{len(perr)} partition(s) failed" if perr else None))
    return done, retry


def _execute(admin, plans: list[GroupPlan], opts: ApplyOptions, notify) -> list[GroupResult]:
    """Run groups through waves of at most `max_concurrent` groups, retrying retriable ones."""
    results: list[GroupResult] = []
    queue: list[_Job] = []
    for gp in plans:
        perr = {str(p.tp): p.error for p in gp.partitions if p.error}
        if gp.refused:
            results.append(notify(GroupResult(gp.group, REFUSED, error=gp.refused)))
        elif not any(p.changes for p in gp.partitions):
            results.append(notify(GroupResult(
                gp.group, FAILED if perr else NOTHING, partition_errors=perr,
                error="no partition could be planned" if perr else None)))
        else:
            queue.append(_Job(gp, dict(gp.offsets), partition_errors=perr))
    retry_at: list[tuple[float, _Job]] = []
    while queue or retry_at:
        now = time.monotonic()
        ready = [j for t, j in retry_at if t <= now]
        retry_at = [(t, j) for t, j in retry_at if t > now]
        wave = ready + queue[: max(0, opts.max_concurrent - len(ready))]
        queue = queue[len(wave) - len(ready):]
        if not wave:
            time.sleep(max(0.0, min(t for t, _ in retry_at) - now))
            continue
        for job in wave:
            job.started = job.started or time.monotonic()
        done, again = _run_wave(admin, wave, opts)
        if again:
            admin.reconnect()
        results.extend(notify(r) for r in done)
        retry_at.extend((time.monotonic() + _backoff(j.attempts, opts), j) for j in again)
    order = {gp.group: i for i, gp in enumerate(plans)}
    return sorted(results, key=lambda r: order[r.group])


def take_auto_snapshot(admin, plan: ResetPlan, opts: ApplyOptions) -> str | None:
    """Snapshot the groups a plan touches, before anything changes; returns the snapshot id."""
    groups = [g.group for g in plan.groups if not g.refused and any(p.changes for p in g.partitions)]
    if not (opts.snapshot and groups):
        return None
    from offsetkeeper.snapshots.capture import take_snapshot
    from offsetkeeper.snapshots.store import SnapshotStore

    snap = take_snapshot(admin, groups, description=opts.description or f"before reset {plan.target}")
    return SnapshotStore(opts.snapshot_store).save(snap)


def apply_plan(admin, plan: ResetPlan, options: ApplyOptions | None = None) -> ApplyReport:
    """Execute `plan` against the cluster of `admin`; never raises for per-group failures."""
    opts = options or ApplyOptions()
    snapshot_id = take_auto_snapshot(admin, plan, opts)
    start = time.monotonic()

    def notify(res: GroupResult) -> GroupResult:
        if opts.on_group_done:
            opts.on_group_done(res)
        return res

    results = _execute(admin, list(plan.groups), opts, notify)
    return ApplyReport(results=tuple(results), elapsed_s=time.monotonic() - start, snapshot_id=snapshot_id)
