"""Executing a reset plan: the ONE code path that commits consumer-group offsets.

Reset, rollback, restore translation and bulk changes all end here. For each group:
check that it still has no active members (the development broker, unlike Kafka, would accept
the commit anyway), commit, retry retriable errors with exponential backoff and jitter, then
read the offsets back and compare them with the plan. Groups run concurrently.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

from offsetkeeper.errors import OffsetkeeperError
from offsetkeeper.kafka.errors import ADVICE, is_retriable, translate
from offsetkeeper.reset.plan import GroupPlan, ResetPlan

SUCCESS, REFUSED, FAILED, NOTHING = "success", "refused", "failed", "nothing-to-do"


@dataclass(frozen=True)
class ApplyOptions:
    """How to execute a plan."""

    max_concurrent: int = 32
    retries: int = 5
    backoff_base_s: float = 0.2
    backoff_max_s: float = 5.0
    verify: bool = True
    snapshot: bool = True
    snapshot_store: str | None = None
    description: str = ""
    # Called from worker threads after each group finishes (for progress bars).
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


def _apply_group(admin, gp: GroupPlan, opts: ApplyOptions) -> GroupResult:
    if gp.refused:
        return GroupResult(gp.group, REFUSED, error=gp.refused)
    offsets = {tp: t for tp, t in gp.offsets.items()}
    perr = {str(p.tp): p.error for p in gp.partitions if p.error}
    if not any(p.changes for p in gp.partitions):
        status = FAILED if perr else NOTHING
        return GroupResult(gp.group, status, partition_errors=perr,
                           error="no partition could be planned" if perr else None)
    start = time.monotonic()
    attempts = 0
    while True:
        attempts += 1
        try:
            # Re-check right before committing: a consumer may have joined since planning.
            info = admin.describe_groups([gp.group])[gp.group]
            if info.is_active:
                n = len(info.members)
                return GroupResult(gp.group, REFUSED, attempts=attempts,
                                   latency_s=time.monotonic() - start,
                                   error=f"group {gp.group} has {n} active member{'s' if n != 1 else ''} "
                                         f"(state {info.state}); stop its consumers and run again")
            results = admin.alter_result(gp.group, admin.alter_offsets_async(gp.group, offsets))
            bad = {str(tp): err for tp, err in results.items() if err}
            if bad:
                names = set(bad.values())
                if names & {"COORDINATOR_LOAD_IN_PROGRESS", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE",
                            "REQUEST_TIMED_OUT", "REBALANCE_IN_PROGRESS"} and attempts <= opts.retries:
                    time.sleep(_backoff(attempts, opts))
                    continue
                perr.update({tp: ADVICE.get(e, e).format(what=tp) for tp, e in bad.items()})
                return GroupResult(gp.group, FAILED, attempts=attempts,
                                   latency_s=time.monotonic() - start,
                                   partitions_changed=len(results) - len(bad),
                                   error=f"{len(bad)} partition(s) rejected", partition_errors=perr)
            break
        except OffsetkeeperError as exc:
            if is_retriable(exc) and attempts <= opts.retries:
                time.sleep(_backoff(attempts, opts))
                continue
            return GroupResult(gp.group, FAILED, attempts=attempts, latency_s=time.monotonic() - start,
                               error=exc.message, partition_errors=perr)
        except Exception as exc:  # librdkafka raising outside a future
            err = translate(exc, action="commit offsets", group=gp.group)
            if is_retriable(err) and attempts <= opts.retries:
                time.sleep(_backoff(attempts, opts))
                continue
            return GroupResult(gp.group, FAILED, attempts=attempts, latency_s=time.monotonic() - start,
                               error=err.message, partition_errors=perr)
    latency = time.monotonic() - start
    if opts.verify:
        try:
            live = admin.committed_offsets(gp.group)
        except OffsetkeeperError as exc:
            return GroupResult(gp.group, FAILED, attempts=attempts, latency_s=latency,
                               partitions_changed=len(offsets),
                               error=f"committed, but reading back failed: {exc.message}")
        for tp, want in offsets.items():
            got = live.get(tp)
            if got is None or got.offset != want:
                perr[str(tp)] = f"read back {got.offset if got else 'nothing'}, planned {want}"
    changed = sum(1 for p in gp.partitions if p.changes and str(p.tp) not in perr)
    status = FAILED if perr else SUCCESS
    return GroupResult(gp.group, status, partitions_changed=changed, attempts=attempts,
                       latency_s=latency, partition_errors=perr,
                       error=f"{len(perr)} partition(s) failed" if perr else None)


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
    lock = threading.Lock()
    start = time.monotonic()

    def run(gp: GroupPlan) -> GroupResult:
        res = _apply_group(admin, gp, opts)
        if opts.on_group_done:
            with lock:
                opts.on_group_done(res)
        return res

    workers = max(1, min(opts.max_concurrent, len(plan.groups) or 1))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="reset") as pool:
        results = tuple(pool.map(run, plan.groups))
    return ApplyReport(results=results, elapsed_s=time.monotonic() - start, snapshot_id=snapshot_id)
