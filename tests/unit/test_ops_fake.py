"""The operations (`offsetkeeper.ops`) against the in-memory cluster (tests/fake_admin.py): the
same request objects the command line and the dashboard build, the real planner, executor,
share view, sampler and stores (in a temporary directory); only the cluster is fake.
Table-driven: resets, snapshots, share group resets and deletes, the share group page, history
sampling."""

from __future__ import annotations

from dataclasses import replace

import pytest

from offsetkeeper.config import Connection
from offsetkeeper.errors import KafkaOperationError, UnknownGroupError, UsageError
from offsetkeeper.models import TopicPartition
from offsetkeeper.ops.history import RecordRequest, SamplerSettings, history_rows, record_history
from offsetkeeper.ops.reset import (
    DeleteRequest,
    ExecuteOptions,
    ResetRequest,
    RollbackRequest,
    reset_offsets,
    rollback,
)
from offsetkeeper.ops.share_reset import delete_share_offsets, reset_share_group
from offsetkeeper.ops.snapshots import create_snapshot
from offsetkeeper.ops.targets import TargetKind, TargetSpec
from offsetkeeper.reset.apply import ReportStatus
from offsetkeeper.reset.plan import ResetScope, TopicSpec
from offsetkeeper.snapshots.store import SnapshotStore
from tests.fake_admin import FATAL, RETRIABLE, FakeAdmin

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


@pytest.mark.parametrize("create", [False, True])
def test_a_missing_group_is_created_only_when_the_scope_says_so(tmp_path, create):
    """Invariant: a reset never creates a named group the cluster lacks (a typo) unless its
    scope allows it (`ResetScope.create_groups`, --create-groups): refused as bad input before
    anything is committed, or created with exactly the planned offsets."""
    admin = cluster()
    req = request(tmp_path, TargetKind.TO_OFFSET, "50", execute=True)
    req = replace(req, scope=replace(req.scope, groups=("fresh",), create_groups=create))
    if not create:
        with pytest.raises(UnknownGroupError, match="--create-groups"):
            reset_offsets(admin, req)
        assert "fresh" not in admin.groups and admin.count("alter_offsets_async") == 0
        return
    out = reset_offsets(admin, req)
    assert out.ok and admin.committed("fresh") == {P0: 50, P1: 50}


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


# -- share groups: the product's share view over the fake, through the one executor ----------
SG = "sg"


def share_cluster(members: int = 0) -> FakeAdmin:
    """`orders` as above; share group `sg` with start offsets 10 and 20 (3 records unacked)."""
    admin = FakeAdmin(topics={TOPIC: [(5, 100), (0, 80)]})
    admin.add_share_group(SG, members=members, start={P0: 10, P1: 20}, lag={P0: 3, P1: 0})
    return admin


def share_request(tmp_path, kind: TargetKind, value: str | None = None, **kw) -> ResetRequest:
    opts = ExecuteOptions(snapshot_store=str(tmp_path / "snapshots"), retries=0)
    return ResetRequest(target=TargetSpec(kind, value), scope=ResetScope(groups=(SG,)), options=opts, **kw)


@pytest.mark.parametrize("kind, value, expected, back", [
    (TargetKind.TO_EARLIEST, None, {P0: 5, P1: 0}, True),
    (TargetKind.TO_LATEST, None, {P0: 100, P1: 80}, False),
    (TargetKind.TO_OFFSET, "50", {P0: 50, P1: 50}, False),
    (TargetKind.SHIFT_BY, "-8", {P0: 5, P1: 12}, True),     # partition 0 clamped to its log start
])
def test_share_reset_moves_start_offsets_through_the_executor(tmp_path, kind, value, expected,
                                                             back):
    """Invariant: a share group's start offsets are planned and changed like committed offsets
    (dry run first, snapshot, apply, rollback), through the share view; moving a start offset
    back says that records will be delivered again."""
    admin = share_cluster()
    dry = reset_share_group(admin, share_request(tmp_path, kind, value))
    assert dry.report is None and dry.plan.group_type == "share"
    assert {p.tp: p.target for g in dry.plan.groups for p in g.partitions} == expected
    assert admin.share_start(SG) == {P0: 10, P1: 20}
    notes = " ".join(p.note for g in dry.plan.groups for p in g.partitions)
    assert ("delivered again" in notes) is back

    done = reset_share_group(admin, share_request(tmp_path, kind, value, execute=True))
    assert done.report is not None and done.report.status is ReportStatus.SUCCESS
    assert admin.share_start(SG) == expected
    snap = SnapshotStore(str(tmp_path / "snapshots")).load(done.report.snapshot_id)
    assert snap.groups[SG].group_type == "share"
    assert {tp: c.offset for tp, c in snap.groups[SG].offsets.items()} == {P0: 10, P1: 20}

    undo = rollback(admin, RollbackRequest(done.report.snapshot_id, execute=True,
                                           options=share_request(tmp_path, kind).options))
    assert undo.ok and admin.share_start(SG) == {P0: 10, P1: 20}


@pytest.mark.parametrize("members, execute", [(1, False), (1, True), (3, True)])
def test_share_reset_of_a_group_with_members_is_refused(tmp_path, members, execute):
    """Invariant: start offsets of a share group with members are never changed (exit 1)."""
    admin = share_cluster(members)
    out = reset_share_group(admin, share_request(tmp_path, TargetKind.TO_OFFSET, "50",
                                                 execute=execute))
    assert out.exit_code == 1 and [g.group for g in out.plan.groups if g.refused] == [SG]
    assert admin.share_start(SG) == {P0: 10, P1: 20}
    assert admin.count("alter_share_group_offsets") == 0


@pytest.mark.parametrize("group, error", [
    ("nosuch", UnknownGroupError),   # the share view's describe: no such share group
    ("", UsageError),
])
def test_share_reset_of_a_missing_group_is_one_error(tmp_path, group, error):
    admin = share_cluster()
    with pytest.raises(error):
        reset_share_group(admin, ResetRequest(target=TargetSpec(TargetKind.TO_EARLIEST, None),
                                              scope=ResetScope(groups=(group,)),
                                              options=ExecuteOptions(snapshot=False)))


@pytest.mark.parametrize("members", [0, 2])
def test_share_group_page_rows(members):
    """Invariant: the share group page's data (ops, not web/) holds per partition the start
    offset, log start/end and the broker's lag, the total lag, and every member."""
    from offsetkeeper.ops.typed_group_pages import share_group_page

    v = share_group_page(share_cluster(members), SG)
    assert (v.group, v.group_type, v.error) == (SG, "share", None)
    assert v.state == ("Stable" if members else "Empty")
    assert [(p["partition"], p["start_offset"], p["log_start"], p["log_end"], p["lag"])
            for p in v.partitions] == [(0, 10, 5, 100, 3), (1, 20, 0, 80, 0)]
    assert v.total_lag == 3
    assert [m["client_id"] for m in v.members] == [f"share-client-{i}" for i in range(members)]


def test_typed_group_page_without_the_jvm_helper_is_its_sentence():
    """Invariant: without the JVM helper a share or streams group page is the group's name and
    the helper's one sentence, never an exception."""
    from offsetkeeper.errors import JvmHelperUnavailable
    from offsetkeeper.ops.typed_group_pages import share_group_page, streams_group_page

    def missing(_admin):
        raise JvmHelperUnavailable("the JVM admin helper is not installed")

    admin = share_cluster()
    admin.before("describe_share_groups", missing)
    admin.before("describe_streams_groups", missing)
    for page, kind in ((share_group_page, "share"), (streams_group_page, "streams")):
        v = page(admin, SG)
        assert (v.group, v.group_type, v.error) == (SG, kind, "the JVM admin helper is not installed")
        assert v.partitions == [] and v.total_lag == 0


def test_share_delete_removes_a_topics_start_offsets(tmp_path):
    admin = share_cluster()
    req = DeleteRequest(ResetScope(groups=(SG,), topics=(TopicSpec(TOPIC),)), execute=True,
                        options=ExecuteOptions(snapshot_store=str(tmp_path / "s"), retries=0))
    out = delete_share_offsets(admin, req)
    assert out.ok and admin.share_start(SG) == {}


# -- history sampling: `history record --once` through the fake --------------------------------
def history_cluster() -> FakeAdmin:
    """Log ends 1,000 and 800; every committed offset is either at the log end or more than
    64 offsets behind it (closer, the sampler would count records with a real consumer)."""
    admin = FakeAdmin(topics={TOPIC: [(5, 1000), (0, 800)]})
    admin.add_group("g", committed={P0: 10, P1: 20})
    admin.add_group("idle", committed={P0: 1000, P1: 800})
    admin.add_share_group(SG, start={P0: 500, P1: 700}, lag={P0: 42, P1: 0})
    return admin


G_ROWS = {("g", P0): (10, 1000, 990), ("g", P1): (20, 800, 780)}
IDLE_ROWS = {("idle", P0): (1000, 1000, 0), ("idle", P1): (800, 800, 0)}
# a share group's lag is the broker's (records not acknowledged), not log end - start offset
SG_ROWS = {(SG, P0): (500, 1000, 42), (SG, P1): (700, 800, 0)}


@pytest.mark.parametrize("settings, expected", [
    (SamplerSettings(groups=("g",), time_lag=False), G_ROWS),
    (SamplerSettings(groups=("g", SG), time_lag=False), {**G_ROWS, **SG_ROWS}),
    (SamplerSettings(all_groups=True, time_lag=False), {**G_ROWS, **IDLE_ROWS, **SG_ROWS}),
    (SamplerSettings(all_groups=True, time_lag=False, track_deny=("idle", "s.*")), G_ROWS),
])
def test_history_record_once_samples_the_groups_in_scope(tmp_path, monkeypatch, settings,
                                                         expected):
    """Invariant: one recorded cycle holds, per group in scope and partition, the committed
    offset (a share group's start offset), the log end and the lag, read back from the store."""
    from offsetkeeper.kafka import jvm

    monkeypatch.setattr(jvm, "available", lambda: True)  # share groups are listed through it
    admin = history_cluster()
    store = str(tmp_path / "history.db")
    out = record_history(Connection("fake:9092"),
                         RecordRequest(sampler=settings, store=store, once=True), admin=admin)
    assert out.exit_code == 0 and out.summary.last is not None and out.summary.last.ok
    groups = {g for g, _ in expected}
    got = {(g, TopicPartition(r["topic"], r["partition"])): (r["committed"], r["log_end"], r["lag"])
           for g in sorted(groups | {"g", "idle", SG}) for r in _rows(g, store)}
    assert got == expected
    assert ("close", ()) not in admin.calls  # the caller's admin is left open


def _rows(group: str, store: str) -> list[dict]:
    try:
        return history_rows(group, store=store)
    except UnknownGroupError:
        return []


@pytest.mark.parametrize("code, exit_code, raises", [
    (FATAL, 1, None),                       # denied: recorded without it, reported (exit 1)
    (RETRIABLE, None, KafkaOperationError),  # the only group unreadable: nothing recorded
])
def test_history_record_once_reports_a_group_it_cannot_read(tmp_path, code, exit_code, raises):
    """Invariant: a group whose offsets cannot be read is reported, never recorded as lag 0;
    when no group of the cycle answers, `--once` fails (exit 1) instead of recording nothing."""
    admin = history_cluster()
    admin.fail("committed_offsets_each", code, group="g")
    groups = ("g", "idle") if raises is None else ("g",)
    req = RecordRequest(sampler=SamplerSettings(groups=groups, time_lag=False),
                        store=str(tmp_path / "h.db"), once=True)
    if raises is not None:
        with pytest.raises(raises, match="nothing recorded"):
            record_history(Connection("fake:9092"), req, admin=admin)
        return
    out = record_history(Connection("fake:9092"), req, admin=admin)
    assert out.exit_code == exit_code and list(out.denied) == ["g"]
    assert _rows("g", str(tmp_path / "h.db")) == []
    assert len(_rows("idle", str(tmp_path / "h.db"))) == 2


@pytest.mark.parametrize("call", ["describe_groups_each", "committed_offsets_each"])
def test_a_read_failing_while_the_coordinator_moves_is_read_again(tmp_path, monkeypatch, call):
    """Invariant: a group whose describe or offset read fails with a retriable error (its
    coordinator moving after a broker died) while a reset reads it is read again, so one
    group's failover does not fail the run; the plan and the commit are as without the fault."""
    from offsetkeeper.reset import facts

    monkeypatch.setattr(facts, "READ_RETRY_PAUSES_S", (0.0,))
    admin = cluster()
    admin.fail(call, RETRIABLE, group="g", times=2)
    done = reset_offsets(admin, request(tmp_path, TargetKind.TO_OFFSET, "50", execute=True))
    assert done.report is not None and done.report.status is ReportStatus.SUCCESS
    assert admin.committed("g") == {P0: 50, P1: 50}


def test_a_read_that_stays_failing_or_fails_for_good_ends_the_run_before_any_change(
        tmp_path, monkeypatch):
    """Invariant: a retriable read error that outlasts the retry time, and a non-retriable
    one at once, fail the run before any change (the group named in the error)."""
    from offsetkeeper.reset import facts

    monkeypatch.setattr(facts, "READ_RETRY_PAUSES_S", (0.0,))
    monkeypatch.setattr(facts, "READ_RETRY_FOR_S", 0.0)
    for code in (RETRIABLE, "UNKNOWN_SERVER_ERROR"):  # (denied is a refusal of its own)
        admin = cluster()
        admin.fail("committed_offsets_each", code, group="g", times=50)
        before = admin.count("committed_offsets_each")
        with pytest.raises(KafkaOperationError, match="g"):
            reset_offsets(admin, request(tmp_path, TargetKind.TO_OFFSET, "50", execute=True))
        assert admin.committed("g") == {P0: 10, P1: 20}
        assert admin.count("committed_offsets_each") - before == 1


def test_execute_right_after_planning_reads_each_group_once_before_the_commit(tmp_path, monkeypatch):
    """Invariant (issue 32): `reset --execute` without a prompt plans and executes within
    SNAPSHOT_READS_FRESH_S, so planning's read of the group is also the snapshot's and the
    re-check: one describe and one offset read before the commit (then the read-back and the
    confirmation), and the snapshot still holds the offsets from before."""
    from offsetkeeper.reset import apply, facts
    from tests.fake_admin import FakeClock

    clock = FakeClock()
    monkeypatch.setattr(apply, "time", clock)
    monkeypatch.setattr(facts, "time", clock)
    admin = cluster()
    admin.calls.clear()
    done = reset_offsets(admin, request(tmp_path, TargetKind.TO_OFFSET, "50", execute=True))
    assert done.report is not None and done.report.status is ReportStatus.SUCCESS
    calls = [c for c, _ in admin.calls]
    first_commit = calls.index("alter_offsets_async")
    assert calls[:first_commit].count("describe_groups_each") == 1
    assert calls[:first_commit].count("committed_offsets_each") == 1
    assert calls.count("committed_offsets_each") == 3
    snap = SnapshotStore(str(tmp_path / "snapshots")).load(done.report.snapshot_id)
    assert {tp: c.offset for tp, c in snap.groups["g"].offsets.items()} == {P0: 10, P1: 20}
    assert admin.committed("g") == {P0: 50, P1: 50}


def test_a_previewed_plan_is_read_again_when_confirmed_however_soon(tmp_path, monkeypatch):
    """Invariant: a plan shown before it is executed (the dashboard's preview, then its
    confirmation: `prepare_reset`, `execute_planned`) is re-checked against a new read of the
    groups, even when the confirmation comes within SNAPSHOT_READS_FRESH_S: offsets another
    writer moved in between are refused, never overwritten."""
    from offsetkeeper.ops.reset import execute_planned, prepare_reset
    from offsetkeeper.reset import apply, facts
    from tests.fake_admin import FakeClock

    clock = FakeClock()
    monkeypatch.setattr(apply, "time", clock)
    monkeypatch.setattr(facts, "time", clock)
    admin = cluster()
    planned = prepare_reset(admin, request(tmp_path, TargetKind.TO_OFFSET, "50", execute=True))
    admin.commit("g", {P0: 12})
    report = execute_planned(admin, planned)
    assert report.status is not ReportStatus.SUCCESS
    assert "changed since planning" in (report.results[0].error or "")
    assert admin.committed("g") == {P0: 12, P1: 20}
