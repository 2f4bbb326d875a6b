"""Shared set-up of the executor tests: a fake cluster, plans built by the real planner from it,
and a run with a fake clock (no test sleeps)."""

from __future__ import annotations

from offsetkeeper.reset import apply
from offsetkeeper.reset.apply import ApplyOptions, ApplyReport, GroupResult, apply_plan
from offsetkeeper.reset.facts import build_delete_plan, build_plan
from offsetkeeper.reset.options import ExecuteOptions
from offsetkeeper.reset.plan import ResetPlan, ResetScope, TopicSpec
from offsetkeeper.reset.targets import ResetTarget, ToOffset
from tests.fake_admin import FakeAdmin, FakeClock

TOPIC = "orders"
# No backoff and no real clock: retries are immediate, deadlines are reached by advancing the
# fake clock (hooks), so every test runs in milliseconds.
TO_50 = ToOffset(50)
FAST = ApplyOptions(ExecuteOptions(backoff_base_s=0.0, backoff_max_s=0.0, retries=3, deadline_s=60.0))


def cluster(groups: dict[str, dict[int, int]] | None = None, *, partitions: int = 2) -> FakeAdmin:
    """Topic `orders` (log 0..100 per partition) and groups with committed offsets per partition."""
    admin = FakeAdmin(topics={TOPIC: [(0, 100)] * partitions})
    for g, offs in (groups or {"g": {0: 10, 1: 20}}).items():
        admin.add_group(g, committed={(TOPIC, p): o for p, o in offs.items()})
    return admin


def reset_plan(admin: FakeAdmin, groups: list[str] | None = None,
               target: ResetTarget = TO_50) -> ResetPlan:
    scope = ResetScope(groups=tuple(groups or sorted(admin.groups)), topics=(TopicSpec(TOPIC),))
    return build_plan(admin, scope, target)


def delete_plan(admin: FakeAdmin, groups: list[str] | None = None, *,
                whole_groups: bool = False) -> ResetPlan:
    scope = ResetScope(groups=tuple(groups or sorted(admin.groups)), topics=(TopicSpec(TOPIC),))
    return build_delete_plan(admin, scope, whole_groups=whole_groups)


def install_clock(monkeypatch) -> FakeClock:
    """Replace reset/apply.py's clock (the tests' `clock` fixture)."""
    c = FakeClock()
    monkeypatch.setattr(apply, "time", c)
    return c


def run(admin: FakeAdmin, plan: ResetPlan, opts: ApplyOptions = FAST, **kw) -> ApplyReport:
    admin.calls.clear()
    if kw:
        from dataclasses import replace

        # the user's options (max_concurrent, retries ...) or the run's own (live, snapshot_fn)
        run = {k: v for k, v in kw.items() if hasattr(opts.options, k)}
        opts = replace(opts, options=replace(opts.options, **run),
                       **{k: v for k, v in kw.items() if k not in run})
    return apply_plan(admin, plan, opts)


def by_group(report: ApplyReport) -> dict[str, GroupResult]:
    return {r.group: r for r in report.results}
