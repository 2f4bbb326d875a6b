"""The executor's waves, retries, deadline and failure reporting, against an in-memory cluster
(tests/fake_admin.py). Each test's docstring states the invariant it protects."""

from __future__ import annotations

import pytest

from offsetkeeper.models import CommittedOffset, TopicPartition
from offsetkeeper.reset.apply import ApplyOptions, GroupStatus, ReportStatus
from offsetkeeper.reset.options import ExecuteOptions
from offsetkeeper.reset.plan import PlanKind
from offsetkeeper.reset.targets import ToOffset
from tests.fake_admin import FATAL, RETRIABLE, TIMEOUT, UNREACHABLE
from tests.unit.executor_support import (
    FAST,
    TOPIC,
    by_group,
    cluster,
    delete_plan,
    install_clock,
    reset_plan,
    run,
)


@pytest.fixture
def clock(monkeypatch):
    return install_clock(monkeypatch)


def test_a_clean_run_commits_every_group_and_reads_it_back(clock):
    """Invariant: with no faults every group ends at its target, the report is SUCCESS and says
    how many partitions changed, and each group was committed once and read back once."""
    admin = cluster({"a": {0: 10, 1: 20}, "b": {0: 30, 1: 50}})
    report = run(admin, reset_plan(admin))
    assert report.status is ReportStatus.SUCCESS
    assert {g: r.status for g, r in by_group(report).items()} == {"a": GroupStatus.SUCCESS,
                                                                 "b": GroupStatus.SUCCESS}
    assert by_group(report)["b"].partitions_changed == 1      # partition 1 was already at 50
    assert admin.committed("a") == admin.committed("b") == {
        tp: 50 for tp in admin.committed("a")}
    assert admin.count("alter_offsets_async") == 2
    # one re-check, one read-back, one confirmation once the run is done (issue 31 J)
    assert admin.count("committed_offsets_each") == 3
    assert admin.reconnects == 0


@pytest.mark.parametrize("groups, max_concurrent, waves", [
    (1, 100, 1),
    (5, 2, 3),
    (6, 3, 2),
    (7, 1, 7),
])
def test_groups_run_in_waves_of_at_most_max_concurrent(clock, groups, max_concurrent, waves):
    """Invariant: each wave sends one ping, one batched state re-check and one batched offset
    read for at most `max_concurrent` groups; every group is in exactly one wave."""
    admin = cluster({f"g{i}": {0: 1, 1: 1} for i in range(groups)})
    report = run(admin, reset_plan(admin), max_concurrent=max_concurrent)
    assert report.status is ReportStatus.SUCCESS
    assert admin.count("ping") == waves
    describes = [ids for call, ids in admin.calls if call == "describe_groups_each"]
    assert len(describes) == waves and max(map(len, describes)) <= max_concurrent
    assert sorted(g for ids in describes for g in ids) == sorted(admin.groups)


def test_results_follow_the_plan_order_whatever_finished_first(clock):
    """Invariant: the report lists groups in plan order, even when some were retried."""
    admin = cluster({"a": {0: 1}, "b": {0: 1}, "c": {0: 1}}, partitions=1)
    admin.fail("alter_result", RETRIABLE, group="a")
    report = run(admin, reset_plan(admin), max_concurrent=1)
    assert [r.group for r in report.results] == ["a", "b", "c"]
    assert by_group(report)["a"].attempts == 2


# (call, code, group-scoped, times, final status, attempts)
RETRY_TABLE = [
    ("ping", UNREACHABLE, False, 2, GroupStatus.SUCCESS, 3),
    ("describe_groups_each", RETRIABLE, True, 1, GroupStatus.SUCCESS, 2),
    ("committed_offsets_each", TIMEOUT, True, 2, GroupStatus.SUCCESS, 3),
    ("alter_offsets_async", RETRIABLE, True, 1, GroupStatus.SUCCESS, 2),
    ("alter_result", TIMEOUT, True, 3, GroupStatus.SUCCESS, 4),        # retries=3: the last try
    # one fault too many: the answer is lost for good, but the commit was made; the group read
    # back says so (issue 31 D: never "nothing changed" without looking)
    ("alter_result", TIMEOUT, True, 4, GroupStatus.SUCCESS, 4),
    ("ping", FATAL, False, 1, GroupStatus.FAILED, 1),
    ("describe_groups_each", FATAL, True, 1, GroupStatus.FAILED, 1),
    ("alter_offsets_async", FATAL, True, 1, GroupStatus.FAILED, 1),
]


@pytest.mark.parametrize("call, code, scoped, times, status, attempts", RETRY_TABLE)
def test_retriable_errors_are_retried_up_to_retries_and_fatal_ones_are_not(
        clock, call, code, scoped, times, status, attempts):
    """Invariant: a retriable error at any step of a wave (ping, re-check, offset read, commit
    or its answer) retries the group, at most `retries` times after the first attempt, on a
    fresh client connection; a non-retriable error fails the group at once with its message."""
    admin = cluster()
    plan = reset_plan(admin)
    admin.fail(call, code, group="g" if scoped else None, times=times)
    result = by_group(run(admin, plan))["g"]
    assert (result.status, result.attempts) == (status, attempts)
    assert admin.reconnects == attempts - 1
    if status is GroupStatus.SUCCESS:
        assert set(admin.committed("g").values()) == {50}
    else:
        assert result.error and "fake call" in result.error


def test_a_retry_waits_a_jittered_backoff_bounded_by_backoff_max(clock, monkeypatch):
    """Invariant: retries wait between 0 and min(backoff_max_s, backoff_base_s * 2**attempt)
    (full jitter) instead of hammering a struggling coordinator."""
    from offsetkeeper.reset import apply

    bounds = []
    monkeypatch.setattr(apply.random, "uniform", lambda lo, hi: bounds.append((lo, hi)) or hi)
    admin = cluster()
    plan = reset_plan(admin)
    admin.fail("alter_result", RETRIABLE, group="g", times=3)
    opts = ApplyOptions(ExecuteOptions(backoff_base_s=1.0, backoff_max_s=3.0, retries=5,
                                       deadline_s=None))
    assert run(admin, plan, opts).status is ReportStatus.SUCCESS
    assert bounds == [(0, 2.0), (0, 3.0), (0, 3.0)]
    assert clock.slept == [2.0, 3.0, 3.0]


def test_groups_not_done_by_the_deadline_fail_with_the_reason(clock):
    """Invariant: a run against a cluster that keeps failing ends at `deadline_s`: every group
    still queued or waiting for a retry is FAILED with a message naming the deadline, and groups
    finished before it keep their result."""
    admin = cluster({"ok": {0: 1}, "stuck": {0: 1}, "late": {0: 1}}, partitions=1)
    plan = reset_plan(admin)
    admin.fail("alter_result", UNREACHABLE, group="stuck", times=1000)
    admin.after("ping", lambda a: clock.advance(10), times=1000)
    report = run(admin, plan, max_concurrent=2, retries=1000, deadline_s=25)
    res = by_group(report)
    assert res["ok"].status is GroupStatus.SUCCESS
    assert res["stuck"].status is GroupStatus.FAILED and "deadline of 25s" in res["stuck"].error
    assert res["late"].status is GroupStatus.SUCCESS      # wave 2 started before the deadline
    assert report.status is ReportStatus.PARTIAL_SUCCESS


def test_a_queued_group_past_the_deadline_is_never_sent(clock):
    """Invariant: after the deadline nothing more is sent: groups still queued fail without a
    single request (attempts 0) and keep their committed offsets."""
    admin = cluster({"a": {0: 1}, "b": {0: 1}}, partitions=1)
    plan = reset_plan(admin)
    admin.after("ping", lambda a: clock.advance(100))
    report = run(admin, plan, max_concurrent=1, deadline_s=50)
    res = by_group(report)
    assert res["a"].status is GroupStatus.SUCCESS
    assert (res["b"].status, res["b"].attempts) == (GroupStatus.FAILED, 0)
    assert admin.committed("b") == {TopicPartition(TOPIC, 0): 1}


@pytest.mark.parametrize("errors, status, changed, message", [
    ({0: "OFFSET_METADATA_TOO_LARGE"}, GroupStatus.FAILED, 1, "1 partition(s) failed"),
    ({0: "TOPIC_AUTHORIZATION_FAILED", 1: "TOPIC_AUTHORIZATION_FAILED"}, GroupStatus.FAILED, 0,
     "not authorized"),
    ({0: "REBALANCE_IN_PROGRESS"}, GroupStatus.SUCCESS, 2, None),       # retriable: retried
])
def test_partition_errors_are_reported_per_partition(clock, errors, status, changed, message):
    """Invariant: a commit answered with errors for some partitions reports those partitions
    (and does not count them as changed); when every partition is refused by the ACLs with one
    error the group gets one line saying so; an all-retriable answer retries the whole group."""
    admin = cluster()
    plan = reset_plan(admin, target=ToOffset(60))
    for p, code in errors.items():
        admin.fail_partition("g", (TOPIC, p), code)
    result = by_group(run(admin, plan))["g"]
    assert (result.status, result.partitions_changed) == (status, changed)
    if message:
        assert message in result.error
    if status is GroupStatus.FAILED and changed:
        assert list(result.partition_errors) == [f"{TOPIC}:0"]
        assert admin.committed("g") == {TopicPartition(TOPIC, 0): 10, TopicPartition(TOPIC, 1): 60}


def test_partial_failure_reports_each_group_and_the_run_as_partial(clock):
    """Invariant: one group failing does not stop the others; the report's status is
    PARTIAL_SUCCESS when some group succeeded and FAILED when none did, and its JSON form names
    every group with its status and error."""
    admin = cluster({"a": {0: 1}, "b": {0: 1}}, partitions=1)
    plan = reset_plan(admin)
    admin.fail("alter_offsets_async", FATAL, group="b")
    report = run(admin, plan)
    assert report.status is ReportStatus.PARTIAL_SUCCESS
    assert (report.succeeded, report.failed) == (1, 1)
    rows = {g["group"]: g for g in report.to_dict()["groups"]}
    assert rows["a"]["status"] == "success" and rows["b"]["status"] == "failed"
    assert "not authorized" in rows["b"]["error"]

    admin2 = cluster({"a": {0: 1}}, partitions=1)
    plan2 = reset_plan(admin2)
    admin2.fail("alter_offsets_async", FATAL, group="a")
    assert run(admin2, plan2).status is ReportStatus.FAILED


def test_the_snapshot_is_taken_once_before_anything_changes(clock):
    """Invariant: `snapshot_fn` is called once, before the first request of the executor, with
    the groups about to change; when it raises nothing is changed and the error propagates."""
    admin = cluster({"a": {0: 1}, "same": {0: 50}}, partitions=1)
    plan = reset_plan(admin)
    seen = []

    def snap(adm, groups, description, *, uncommitted):
        seen.append((list(groups), len(adm.calls)))
        return "snap-1"
    report = run(admin, plan, snapshot_fn=snap)
    assert seen == [(["a"], 0)] and report.snapshot_id == "snap-1"

    admin2 = cluster({"a": {0: 1}}, partitions=1)
    plan2 = reset_plan(admin2)

    def broken(*a, **k):
        raise OSError("disk full")
    with pytest.raises(OSError):
        run(admin2, plan2, snapshot_fn=broken)
    assert admin2.calls == [] and admin2.committed("a") == {TopicPartition(TOPIC, 0): 1}


@pytest.mark.parametrize("whole_groups, kind", [(False, PlanKind.DELETE_OFFSETS),
                                                (True, PlanKind.DELETE_GROUPS)])
def test_deletes_go_through_the_same_waves(clock, whole_groups, kind):
    """Invariant: deleting offsets or whole groups uses the same waves as a reset (re-check,
    change, read back) and retries a retriable failure of the delete."""
    admin = cluster({"a": {0: 1, 1: 2}})
    plan = delete_plan(admin, whole_groups=whole_groups)
    assert plan.kind is kind
    call = "delete_groups" if whole_groups else "delete_offsets"
    admin.fail(call, RETRIABLE, group="a")
    result = by_group(run(admin, plan))["a"]
    assert (result.status, result.attempts) == (GroupStatus.SUCCESS, 2)
    assert admin.committed("a") == {}


def test_options_defaults_bound_a_run():
    """Invariant: by default a run retries (5 times), verifies, and ends within 300 s."""
    opts = ApplyOptions().options
    assert (opts.retries, opts.verify, opts.deadline_s) == (5, True, 300.0)
    assert FAST.options.deadline_s is not None


def _snapshot_taking_reads(seen: list, *, clock=None, slow_s: float = 0.0):
    def snap(adm, groups, description, *, uncommitted, reads=None):
        seen.append((list(groups), reads, list(adm.calls)))
        if clock is not None:
            clock.advance(slow_s)
        return "snap-1"

    snap.takes_reads = True
    return snap


def test_the_snapshot_and_the_re_checks_share_one_read(clock):
    """Invariant (issue 32, bulk reset fixed costs): with a snapshot_fn that takes reads, the
    executor reads every group's state and offsets once, before anything changes; the snapshot
    is made from exactly that read and the waves that start while it is fresh re-check against
    it (no second read); every group is read back."""
    admin = cluster({f"g{i}": {0: 1, 1: 2} for i in range(5)})
    seen: list = []
    report = run(admin, reset_plan(admin), max_concurrent=2, snapshot_fn=_snapshot_taking_reads(seen))
    assert report.status is ReportStatus.SUCCESS and report.snapshot_id == "snap-1"
    [(groups, reads, calls_before)] = seen
    assert sorted(groups) == [f"g{i}" for i in range(5)]
    described, committed = reads
    assert set(described) == set(committed) == set(groups)
    assert committed["g0"] == {TopicPartition(TOPIC, 0): CommittedOffset(1),
                               TopicPartition(TOPIC, 1): CommittedOffset(2)}
    # nothing was changed before the snapshot: only the two reads
    assert [c for c, _ in calls_before] == ["describe_groups_each", "committed_offsets_each"]
    describes = [ids for call, ids in admin.calls if call == "describe_groups_each"]
    # the shared read (5 groups) only: the fake clock stands still, so all three waves
    # (2 + 2 + 1 groups) start within SNAPSHOT_READS_FRESH_S of it
    assert [len(ids) for ids in describes] == [5]
    assert admin.count("alter_offsets_async") == 5
    # read back per wave (3), confirmed once at the end, besides the shared read
    assert admin.count("committed_offsets_each") == 1 + 3 + 1


def test_a_wave_starting_after_the_reads_went_stale_reads_again(clock):
    """Invariant: a wave that starts more than SNAPSHOT_READS_FRESH_S after the shared read
    re-checks with its own read, right before its change: a group that gained a member while
    the first wave ran is refused, the others succeed."""
    from offsetkeeper.reset import apply

    admin = cluster({f"g{i}": {0: 1, 1: 2} for i in range(4)})
    plan = reset_plan(admin)
    # the first wave's read-back takes long, and g3 gains a member meanwhile
    admin.after("alter_result", lambda adm: clock.advance(apply.SNAPSHOT_READS_FRESH_S + 0.5),
                times=1)
    admin.after("alter_result", lambda adm: adm.set_members("g3", 1), times=1)
    report = run(admin, plan, max_concurrent=2, snapshot_fn=_snapshot_taking_reads([]))
    describes = [ids for call, ids in admin.calls if call == "describe_groups_each"]
    assert [sorted(ids) for ids in describes] == [["g0", "g1", "g2", "g3"], ["g2", "g3"]]
    assert {g: r.status for g, r in by_group(report).items()} == {
        "g0": GroupStatus.SUCCESS, "g1": GroupStatus.SUCCESS, "g2": GroupStatus.SUCCESS,
        "g3": GroupStatus.REFUSED}
    assert admin.committed("g3") == {TopicPartition(TOPIC, 0): 1, TopicPartition(TOPIC, 1): 2}


def _planned(admin, clock, *, age_s: float):
    """A plan and the reads it was made from, as if read `age_s` before the executor starts."""
    from offsetkeeper.reset.facts import plan_with_reads
    from offsetkeeper.reset.plan import GroupReads, ResetScope, TopicSpec

    plan, reads = plan_with_reads(admin, ResetScope(groups=tuple(sorted(admin.groups)),
                                                    topics=(TopicSpec(TOPIC),)), ToOffset(50))
    assert reads is not None
    return plan, GroupReads(reads.described, reads.committed, clock.monotonic() - age_s)


def test_fresh_planning_reads_are_the_snapshot_and_the_re_check(clock):
    """Invariant (issue 32): a plan executed within SNAPSHOT_READS_FRESH_S of its reads (`offsets
    reset --execute` without a prompt) is snapshotted from exactly those reads and re-checked
    against them: nothing is read between planning and the first commit, and every group is
    still read back and confirmed."""
    from dataclasses import replace

    from offsetkeeper.reset.apply import apply_plan

    admin = cluster({"a": {0: 1, 1: 2}, "b": {0: 3, 1: 4}})
    plan, reads = _planned(admin, clock, age_s=0.2)
    seen: list = []
    admin.calls.clear()
    report = apply_plan(admin, plan, replace(FAST, snapshot_fn=_snapshot_taking_reads(seen)),
                        reads=reads)
    assert report.status is ReportStatus.SUCCESS and report.snapshot_id == "snap-1"
    [(groups, snap_reads, calls_before)] = seen
    assert sorted(groups) == ["a", "b"]
    assert snap_reads == (reads.described, reads.committed)
    assert calls_before == []
    first_commit = [c for c, _ in admin.calls].index("alter_offsets_async")
    assert not any(c in ("describe_groups_each", "committed_offsets_each")
                   for c, _ in admin.calls[:first_commit])
    assert admin.count("committed_offsets_each") == 2  # the read-back and the confirmation
    assert admin.committed("a") == {TopicPartition(TOPIC, 0): 50, TopicPartition(TOPIC, 1): 50}


@pytest.mark.parametrize("with_snapshot", [True, False])
def test_stale_planning_reads_are_read_again(clock, with_snapshot):
    """Invariant: planning reads older than SNAPSHOT_READS_FRESH_S (a plan confirmed at a prompt)
    are not used: the executor reads the groups itself before the snapshot and the first
    commit, and refuses a group that gained a member since planning."""
    from dataclasses import replace

    from offsetkeeper.reset import apply
    from offsetkeeper.reset.apply import apply_plan

    admin = cluster({"a": {0: 1, 1: 2}, "b": {0: 3, 1: 4}})
    plan, reads = _planned(admin, clock, age_s=apply.SNAPSHOT_READS_FRESH_S + 0.1)
    admin.set_members("b", 1)
    seen: list = []
    admin.calls.clear()
    opts = replace(FAST, snapshot_fn=_snapshot_taking_reads(seen)) if with_snapshot else FAST
    report = apply_plan(admin, plan, opts, reads=reads)
    assert [c for c, _ in admin.calls if c != "ping"][:2] == ["describe_groups_each",
                                                               "committed_offsets_each"]
    if with_snapshot:
        assert seen[0][1] is not None and seen[0][1] != (reads.described, reads.committed)
    assert by_group(report)["a"].status is GroupStatus.SUCCESS
    assert by_group(report)["b"].status is GroupStatus.REFUSED
    assert admin.committed("b") == {TopicPartition(TOPIC, 0): 3, TopicPartition(TOPIC, 1): 4}


def test_planning_reads_with_an_error_are_read_again(clock):
    """Invariant: planning reads that hold an error for a group about to change are not a
    re-check; the executor reads the groups itself."""
    from offsetkeeper.errors import KafkaOperationError
    from offsetkeeper.reset.apply import apply_plan
    from offsetkeeper.reset.plan import GroupReads

    admin = cluster({"a": {0: 1, 1: 2}})
    plan, reads = _planned(admin, clock, age_s=0.0)
    bad = GroupReads(reads.described, {"a": KafkaOperationError("boom")}, reads.at)
    admin.calls.clear()
    report = apply_plan(admin, plan, FAST, reads=bad)
    assert [c for c, _ in admin.calls if c != "ping"][:2] == ["describe_groups_each",
                                                               "committed_offsets_each"]
    assert report.status is ReportStatus.SUCCESS


def test_a_slow_snapshot_makes_the_first_wave_read_again(clock):
    """Invariant: when saving the snapshot took longer than SNAPSHOT_READS_FRESH_S after the
    shared read (a remote store), the first wave re-checks with a fresh read, so the re-check
    stays right before the change; a group that gained a member meanwhile is refused."""
    from offsetkeeper.reset import apply

    admin = cluster({"a": {0: 1, 1: 2}, "b": {0: 1, 1: 2}})
    seen: list = []
    snap = _snapshot_taking_reads(seen, clock=clock, slow_s=apply.SNAPSHOT_READS_FRESH_S + 1)
    admin.after("committed_offsets_each", lambda adm: adm.set_members("b", 1), times=1)
    report = run(admin, reset_plan(admin), snapshot_fn=snap)
    describes = [ids for call, ids in admin.calls if call == "describe_groups_each"]
    assert len(describes) == 2  # the shared read, and the first wave's own
    assert by_group(report)["a"].status is GroupStatus.SUCCESS
    assert by_group(report)["b"].status is GroupStatus.REFUSED


def test_a_failed_shared_read_leaves_the_snapshot_to_read_for_itself(clock, monkeypatch):
    """Invariant: when the shared read fails for any group (after its retries: none here), the
    snapshot gets no reads (it reads itself, and fails the run as before) and the first wave
    reads again."""
    from offsetkeeper.reset import facts

    monkeypatch.setattr(facts, "READ_RETRY_FOR_S", 0.0)
    admin = cluster({"a": {0: 1}, "b": {0: 1}}, partitions=1)
    plan = reset_plan(admin)
    admin.fail("committed_offsets_each", TIMEOUT, group="b")
    seen: list = []
    report = run(admin, plan, snapshot_fn=_snapshot_taking_reads(seen))
    assert seen[0][1] is None
    assert report.status is ReportStatus.SUCCESS


def test_a_shared_read_failing_while_the_coordinator_moves_is_read_again(clock, monkeypatch):
    """Invariant: a retriable failure of the shared read (a coordinator moving) is read again,
    and the snapshot then gets the reads like any other run."""
    from offsetkeeper.reset import facts

    monkeypatch.setattr(facts, "READ_RETRY_PAUSES_S", (0.0,))
    admin = cluster({"a": {0: 1}, "b": {0: 1}}, partitions=1)
    plan = reset_plan(admin)
    admin.fail("committed_offsets_each", TIMEOUT, group="b")
    seen: list = []
    report = run(admin, plan, snapshot_fn=_snapshot_taking_reads(seen))
    assert seen[0][1] is not None
    assert report.status is ReportStatus.SUCCESS
