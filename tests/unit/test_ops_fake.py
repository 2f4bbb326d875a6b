"""The operations (`offsetkeeper.ops`) against the in-memory cluster (tests/fake_admin.py): the
same request objects the command line and the dashboard build, the real planner, executor and
snapshot store (in a temporary directory); only the cluster is fake. Table-driven."""

from __future__ import annotations

import pytest

from offsetkeeper.models import TopicPartition
from offsetkeeper.ops.reset import (
    ExecuteOptions,
    ResetRequest,
    RollbackRequest,
    reset_offsets,
    rollback,
)
from offsetkeeper.ops.snapshots import create_snapshot
from offsetkeeper.ops.targets import TargetKind, TargetSpec
from offsetkeeper.reset.apply import ReportStatus
from offsetkeeper.reset.plan import ResetScope, TopicSpec
from offsetkeeper.snapshots.store import SnapshotStore
from tests.fake_admin import FakeAdmin

TOPIC = "orders"
P0, P1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)


def cluster() -> FakeAdmin:
    """`orders`: partition 0 holds offsets 5..100, partition 1 0..80; group `g` at 10 and 20."""
    admin = FakeAdmin(topics={TOPIC: [(5, 100), (0, 80)]})
    admin.add_group("g", committed={P0: 10, P1: 20})
    return admin


def request(tmp_path, kind: TargetKind, value: str | None = None, **kw) -> ResetRequest:
    opts = ExecuteOptions(snapshot_store=str(tmp_path / "snapshots"), retries=0)
    return ResetRequest(target=TargetSpec(kind, value),
                        scope=ResetScope(groups=("g",), topics=(TopicSpec(TOPIC),)),
                        options=opts, **kw)


@pytest.mark.parametrize("kind, value, expected, note", [
    (TargetKind.TO_EARLIEST, None, {P0: 5, P1: 0}, ""),
    (TargetKind.TO_LATEST, None, {P0: 100, P1: 80}, ""),
    (TargetKind.TO_CURRENT, None, {P0: 10, P1: 20}, "unchanged"),
    (TargetKind.TO_OFFSET, "50", {P0: 50, P1: 50}, ""),
    (TargetKind.TO_OFFSET, "90", {P0: 90, P1: 80}, "clamp"),     # past partition 1's log end
    (TargetKind.SHIFT_BY, "-8", {P0: 5, P1: 12}, "clamp"),       # before partition 0's log start
    (TargetKind.SHIFT_BY, "+30", {P0: 40, P1: 50}, ""),
])
def test_reset_plans_then_executes_exactly_the_plan(tmp_path, kind, value, expected, note):
    """Invariant: a dry run changes nothing and plans the targets (clamped to the log, with a
    note); --execute snapshots first (when anything changes), commits exactly the plan, and
    rolling back to the snapshot undoes it."""
    admin = cluster()
    dry = reset_offsets(admin, request(tmp_path, kind, value))
    assert dry.report is None and dry.ok
    assert {p.tp: p.target for g in dry.plan.groups for p in g.partitions} == expected
    assert admin.committed("g") == {P0: 10, P1: 20}
    notes = " ".join(p.note for g in dry.plan.groups for p in g.partitions).lower()
    assert (note in notes) if note else "clamp" not in notes

    done = reset_offsets(admin, request(tmp_path, kind, value, execute=True))
    assert done.report is not None and done.report.status is ReportStatus.SUCCESS
    assert admin.committed("g") == expected
    if expected == {P0: 10, P1: 20}:
        assert done.report.snapshot_id is None  # nothing changed: no snapshot to undo
        return
    assert done.report.snapshot_id is not None
    before = SnapshotStore(str(tmp_path / "snapshots")).load(done.report.snapshot_id)
    assert {tp: c.offset for tp, c in before.groups["g"].offsets.items()} == {P0: 10, P1: 20}

    undo = rollback(admin, RollbackRequest(done.report.snapshot_id, execute=True,
                                           options=request(tmp_path, kind).options))
    assert undo.ok and admin.committed("g") == {P0: 10, P1: 20}


@pytest.mark.parametrize("members, execute, exit_code", [
    (0, True, 0),
    (2, False, 1),   # the plan already says the group is refused
    (2, True, 1),
])
def test_a_group_with_members_is_refused_and_left_alone(tmp_path, members, execute, exit_code):
    """Invariant: offsets of a group with active members are never changed; the outcome says so
    (exit 1) and nothing is committed."""
    admin = cluster()
    admin.set_members("g", members)
    out = reset_offsets(admin, request(tmp_path, TargetKind.TO_OFFSET, "50", execute=execute))
    assert out.exit_code == exit_code
    refused = [g.group for g in out.plan.groups if g.refused]
    assert refused == (["g"] if members else [])
    assert admin.committed("g") == ({P0: 50, P1: 50} if not members and execute
                                    else {P0: 10, P1: 20})


def test_from_group_copies_another_groups_offsets(tmp_path):
    admin = cluster()
    admin.add_group("template", committed={P0: 70, P1: 3})
    out = reset_offsets(admin, request(tmp_path, TargetKind.FROM_GROUP, "template", execute=True))
    assert out.ok and admin.committed("g") == {P0: 70, P1: 3}


def test_snapshot_create_records_the_cluster_as_it_is(tmp_path):
    admin = cluster()
    admin.add_group("other", committed={P1: 7})
    store = str(tmp_path / "snapshots")
    loaded = SnapshotStore(store).load(create_snapshot(admin, ["g", "other"], store=store))
    assert {g: {tp: c.offset for tp, c in s.offsets.items()} for g, s in loaded.groups.items()} \
        == {"g": {P0: 10, P1: 20}, "other": {P1: 7}}
    assert loaded.cluster_id == "fake-cluster"
