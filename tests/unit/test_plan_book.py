"""The plan book of the operations layer (`ops.plans`): plan -> show -> confirm with the plan's
fingerprint -> execute, as the dashboard runs a reset or a rollback."""

from __future__ import annotations

import pytest

from offsetkeeper.errors import UsageError
from offsetkeeper.ops.plans import PlanBook
from offsetkeeper.ops.reset import ExecuteOptions, PlannedChange
from offsetkeeper.reset.plan import GroupPlan, PartitionPlan, ResetPlan


def _change(target: int, *, at: str = "2026-11-20T09:40:00.000Z") -> PlannedChange:
    part = PartitionPlan(group="g", topic="orders", partition=0, current=5, target=target,
                         log_start=0, log_end=10)
    plan = ResetPlan(target="--to-offset", groups=(GroupPlan("g", "Empty", 0, (part,)),),
                     created_at=at)
    return PlannedChange(plan, ExecuteOptions(), "before reset --to-offset")


def test_plan_book_hands_out_a_plan_once_per_cluster_and_only_with_its_fingerprint():
    """Invariant: a previewed plan is executed at most once, only on its cluster, and only when
    the confirmation repeats the fingerprint of the plan shown; a refused confirmation leaves
    the plan in the book."""
    book = PlanBook()
    change = _change(3)
    pid, entry = book.put("prod", change)
    assert entry.plan is change.plan and entry.kind == "reset"
    with pytest.raises(UsageError, match="unknown"):
        book.take(pid, "dr", change.fingerprint)
    with pytest.raises(UsageError, match="fingerprint"):
        book.take(pid, "prod", "")
    with pytest.raises(UsageError, match="not the plan's"):
        book.take(pid, "prod", _change(4).fingerprint)
    assert book.take(pid, "prod", change.fingerprint).cluster == "prod"
    with pytest.raises(UsageError, match="already executed"):
        book.take(pid, "prod", change.fingerprint)


def test_the_fingerprint_follows_the_plan_not_the_object():
    """Invariant: the same plan gives the same fingerprint; another target offset (or another
    planning time) gives another one."""
    assert _change(3).fingerprint == _change(3).fingerprint
    assert _change(3).fingerprint != _change(4).fingerprint
    assert _change(3).fingerprint != _change(3, at="2026-11-20T09:41:00.000Z").fingerprint
    assert len(_change(3).fingerprint) == 16
