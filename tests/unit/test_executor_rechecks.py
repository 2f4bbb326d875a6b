"""The executor's safety re-checks right before it changes anything, and its read-back, against
an in-memory cluster where "another client" acts between the planner's and the executor's
steps (tests/fake_admin.py hooks). Each test's docstring states the invariant it protects."""

from __future__ import annotations

import pytest

from offsetkeeper.models import TopicPartition
from offsetkeeper.reset.apply import GroupStatus, ReportStatus
from tests.fake_admin import RETRIABLE, TIMEOUT
from tests.unit.executor_support import (
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

P0, P1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)


# (members joining after planning, state, allow_unknown_state, expected status)
MEMBER_TABLE = [
    (1, "stable", False, GroupStatus.REFUSED),
    (3, "stable", False, GroupStatus.REFUSED),
    (0, "preparingrebalance", False, GroupStatus.REFUSED),
    (0, "unknown", False, GroupStatus.REFUSED),
    (0, "unknown", True, GroupStatus.SUCCESS),
    (0, "dead", False, GroupStatus.SUCCESS),
]


@pytest.mark.parametrize("members, state, allow_unknown, status", MEMBER_TABLE)
def test_a_group_that_became_active_after_planning_is_refused_untouched(
        clock, members, state, allow_unknown, status):
    """Invariant: the executor describes every group right before committing; a group that
    gained members or left Empty/Dead since planning is REFUSED with the planner's sentence and
    its offsets are not touched (no commit is even sent)."""
    admin = cluster()
    plan = reset_plan(admin)

    def join(a):
        a.set_members("g", members)
        a.groups["g"].state = state
    admin.before("ping", join)
    result = by_group(run(admin, plan, allow_unknown_state=allow_unknown))["g"]
    assert result.status is status
    if status is GroupStatus.REFUSED:
        assert admin.count("alter_offsets_async") == 0
        assert admin.committed("g") == {P0: 10, P1: 20}
        assert result.error
    else:
        assert admin.committed("g") == {P0: 50, P1: 50}


def test_a_consumer_joining_during_a_retry_is_refused_on_that_retry(clock):
    """Invariant: the member re-check runs on every attempt, not only the first: a consumer
    that joins while a retry waits makes the retry REFUSED, not a commit under its feet."""
    admin = cluster()
    plan = reset_plan(admin)
    admin.fail("alter_offsets_async", RETRIABLE, group="g")
    pings = []

    def join_before_the_retry(a):
        pings.append(1)
        if len(pings) == 2:
            a.set_members("g", 1)
    admin.before("ping", join_before_the_retry, times=2)
    result = by_group(run(admin, plan))["g"]
    assert (result.status, result.attempts) == (GroupStatus.REFUSED, 2)
    assert admin.committed("g") == {P0: 10, P1: 20}


# (offsets another client commits after planning, expected status)
MOVED_TABLE = [
    ({P0: 11}, GroupStatus.REFUSED),           # moved away from CURRENT
    ({P1: 0}, GroupStatus.REFUSED),
    ({P0: 50}, GroupStatus.SUCCESS),           # already at TARGET: counts as not moved
    ({P0: 10}, GroupStatus.SUCCESS),           # rewritten with the same value
]


@pytest.mark.parametrize("moved, status", MOVED_TABLE)
def test_offsets_moved_by_another_client_after_planning_refuse_the_group(clock, moved, status):
    """Invariant: right before committing, each partition's live offset must be the plan's
    CURRENT (or its TARGET); otherwise another writer is active, the group is REFUSED with a
    message naming the partition and both offsets, and nothing is committed (last writer must
    not silently win)."""
    admin = cluster()
    plan = reset_plan(admin)
    admin.commit("g", moved)
    result = by_group(run(admin, plan))["g"]
    assert result.status is status
    if status is GroupStatus.REFUSED:
        tp, now = next(iter(moved.items()))
        assert f"{tp}" in result.error and f"now {now}" in result.error
        assert "plan again" in result.error
        assert admin.count("alter_offsets_async") == 0


def test_a_new_commit_on_a_partition_planned_as_uncommitted_is_a_move(clock):
    """Invariant: "no committed offset" is a planned CURRENT too: a commit that appears there
    after planning refuses the group."""
    admin = cluster({"g": {0: 10}})
    plan = reset_plan(admin)
    admin.commit("g", {P1: 7})
    result = by_group(run(admin, plan))["g"]
    assert result.status is GroupStatus.REFUSED and "planned from no offset" in result.error


def test_our_own_commit_from_a_lost_answer_is_not_taken_for_another_writer(clock):
    """Invariant: when a commit reached the cluster but its answer was lost (timeout), the retry
    finds the TARGET committed and completes instead of refusing the group as moved."""
    admin = cluster()
    plan = reset_plan(admin)
    admin.fail("alter_result", TIMEOUT, group="g")
    result = by_group(run(admin, plan))["g"]
    assert (result.status, result.attempts) == (GroupStatus.SUCCESS, 2)


def test_a_move_between_the_recheck_and_the_commit_is_overwritten(clock):
    """Invariant (a documented limit): Kafka has no compare-and-set for commits, so a writer
    acting between the executor's re-check read and its commit loses; the re-check narrows the
    window to one round trip, it cannot close it. The read-back then matches the plan."""
    admin = cluster()
    plan = reset_plan(admin)
    admin.after("committed_offsets_each", lambda a: a.commit("g", {P0: 77}))
    result = by_group(run(admin, plan))["g"]
    assert result.status is GroupStatus.SUCCESS
    assert admin.committed("g") == {P0: 50, P1: 50}


def test_a_move_after_the_commit_shows_in_the_read_back(clock):
    """Invariant: the read-back compares every partition with the plan: another writer that
    commits right after the executor makes that partition fail with "moved by another writer"
    (what this run committed, what the group has), the group FAILED and the run not SUCCESS."""
    admin = cluster()
    plan = reset_plan(admin)
    admin.after("alter_result", lambda a: a.commit("g", {P1: 99}))
    report = run(admin, plan)
    result = by_group(report)["g"]
    assert result.status is GroupStatus.FAILED
    assert list(result.partition_errors) == [str(P1)]
    assert result.partition_errors[str(P1)].startswith(
        "moved by another writer while this run committed it: this run committed 50, the group "
        "now has 99")
    assert result.partitions_changed == 1
    assert report.status is ReportStatus.FAILED


def test_a_concurrent_run_that_commits_after_the_read_back_is_not_a_success(clock):
    """Invariant (issue 31 J): Kafka has no compare-and-set for offsets, so two concurrent
    resets of one group can each read back their own commit; the run reads the group again
    once it is done, and a group that no longer holds this run's target is FAILED "moved by
    another writer after this run committed it", never SUCCESS."""
    admin = cluster()
    plan = reset_plan(admin)
    seen = []

    def other_run(a):
        seen.append(1)
        if len(seen) == 2:  # right after this run's read-back: the other run commits 33
            a.commit("g", {P0: 33, P1: 33})
    admin.after("committed_offsets_each", other_run, times=2)
    report = run(admin, plan)
    result = by_group(report)["g"]
    assert result.status is GroupStatus.FAILED and report.status is ReportStatus.FAILED
    assert set(result.partition_errors) == {str(P0), str(P1)}
    assert all(e.startswith("moved by another writer after this run committed it: this run "
                            "committed 50, the group now has 33")
               for e in result.partition_errors.values())
    assert result.partitions_changed == 0


def test_a_failed_read_back_is_reported_as_applied_but_unverified(clock):
    """Invariant: when the commit succeeded but reading it back failed, the group is FAILED
    with "applied, but reading back failed" (not retried: the change is already made)."""
    admin = cluster()
    plan = reset_plan(admin)
    admin.after("alter_result", lambda a: a.fail("committed_offsets_each", TIMEOUT, group="g"))
    result = by_group(run(admin, plan))["g"]
    assert result.status is GroupStatus.FAILED and result.attempts == 1
    assert result.partition_errors["*"].startswith("applied, but reading back failed")
    assert admin.committed("g") == {P0: 50, P1: 50}


def test_without_verify_nothing_is_read_back(clock):
    """Invariant: `verify=False` skips the read-back (one offset read per wave, the re-check)."""
    admin = cluster()
    plan = reset_plan(admin)
    admin.after("alter_result", lambda a: a.commit("g", {P1: 99}))
    result = by_group(run(admin, plan, verify=False))["g"]
    assert result.status is GroupStatus.SUCCESS
    assert admin.count("committed_offsets_each") == 1


def test_a_delete_that_left_an_offset_is_reported(clock):
    """Invariant: after deleting offsets the read-back must find none: a partition still
    committed (another writer, or a broker that ignored the delete) fails with "still
    committed"."""
    admin = cluster()
    plan = delete_plan(admin)
    admin.after("delete_offsets", lambda a: a.commit("g", {P0: 5}))
    result = by_group(run(admin, plan))["g"]
    assert result.status is GroupStatus.FAILED
    assert result.partition_errors == {str(P0): "still committed at 5 after the delete"}


def test_a_retried_delete_does_not_treat_its_own_deletion_as_a_move(clock):
    """Invariant: the moved-offset check of a delete runs on the first attempt only: a retry
    after a lost answer finds the offsets already gone and completes."""
    admin = cluster()
    plan = delete_plan(admin)
    # the delete reaches the cluster, its answer does not
    admin.before("delete_offsets", lambda a: a.groups["g"].committed.clear())
    admin.fail("delete_offsets", TIMEOUT, group="g")
    result = by_group(run(admin, plan))["g"]
    assert (result.status, result.attempts) == (GroupStatus.SUCCESS, 2)
    assert admin.committed("g") == {}


def test_deleting_a_group_that_gained_members_is_refused(clock):
    """Invariant: whole-group deletion re-checks membership like a reset: a group with members
    now is REFUSED and still exists."""
    admin = cluster()
    plan = delete_plan(admin, whole_groups=True)
    admin.set_members("g", 2)
    result = by_group(run(admin, plan))["g"]
    assert result.status is GroupStatus.REFUSED and "g" in admin.groups


def test_a_rollback_to_uncommitted_deletes_after_committing(clock):
    """Invariant: a reset plan that ends partitions with no committed offset (a rollback to a
    snapshot that recorded them uncommitted) commits the others, then deletes those, and the
    read-back checks both."""
    from offsetkeeper.reset.targets import FromOffsets

    admin = cluster()
    target = FromOffsets({"g": {P0: 3}}, source="snapshot s1", deletes={"g": frozenset({P1})})
    plan = reset_plan(admin, target=target)
    result = by_group(run(admin, plan))["g"]
    assert result.status is GroupStatus.SUCCESS, result
    assert admin.committed("g") == {P0: 3}
    assert admin.count("delete_offsets") == 1
