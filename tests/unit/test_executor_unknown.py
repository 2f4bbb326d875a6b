"""Issue 31 D: when a change request was sent and its answer lost (the admin helper died, a
timeout outlived the retries), the executor reads the group back before saying what changed,
and "unknown" is a status of its own when it cannot read it either. In-memory cluster."""

from __future__ import annotations

from offsetkeeper.models import TopicPartition
from offsetkeeper.reset.apply import GroupStatus, ReportStatus
from tests.fake_admin import TIMEOUT
from tests.unit.executor_support import (
    FAST,
    TOPIC,
    by_group,
    cluster,
    install_clock,
    reset_plan,
    run,
)

HELPER_DIED = "_HELPER_FAILED"


def test_a_lost_answer_after_the_change_is_reported_from_the_read_back(monkeypatch):
    """Invariant: the helper dying after the alter (the change made, its answer lost, not
    retriable) is reported from the group read back: SUCCESS with the partitions changed,
    never "FAILED, 0 partitions changed" while the offsets moved."""
    install_clock(monkeypatch)
    admin = cluster({"g": {0: 10, 1: 20}})
    plan = reset_plan(admin)
    admin.fail("alter_result", HELPER_DIED, group="g")  # the fake committed; the answer is lost
    rep = run(admin, plan, FAST)
    r = by_group(rep)["g"]
    assert r.status is GroupStatus.SUCCESS and r.partitions_changed == 2, r
    assert set(admin.committed("g").values()) == {50}


def test_a_lost_answer_and_a_failed_read_back_is_unknown_not_nothing(monkeypatch):
    """Invariant: when the read-back fails too, the group's status is UNKNOWN (the run's too,
    exit 1) with a message saying the change may have been made and how to look — never a
    count of 0 partitions changed presented as the truth."""
    install_clock(monkeypatch)
    admin = cluster({"g": {0: 10, 1: 20}, "h": {0: 10, 1: 20}})
    plan = reset_plan(admin)
    admin.fail("alter_result", HELPER_DIED, group="g")
    admin.after("alter_offsets_async", lambda a: a.fail("committed_offsets_each", HELPER_DIED,
                                                        group="g", times=10), group="g")
    rep = run(admin, plan, FAST)
    r = by_group(rep)["g"]
    assert r.status is GroupStatus.UNKNOWN
    assert "outcome unknown" in r.error and "may have been made" in r.error
    assert "groups describe g" in r.error
    assert rep.status is ReportStatus.UNKNOWN and rep.summary()["groups_unknown"] == 1
    assert by_group(rep)["h"].status is GroupStatus.SUCCESS


def test_a_change_that_did_not_happen_is_said_per_partition(monkeypatch):
    """Invariant: when the read-back shows the change was not made (the request never reached
    the cluster), each partition says "not changed" with the error, and the group is FAILED
    with 0 partitions changed — now a fact, read from the group."""
    install_clock(monkeypatch)
    admin = cluster({"g": {0: 10, 1: 20}})
    plan = reset_plan(admin)
    admin.fail("alter_offsets_async", TIMEOUT, group="g", times=10)
    rep = run(admin, plan, FAST)
    r = by_group(rep)["g"]
    assert r.status is GroupStatus.FAILED and r.partitions_changed == 0
    assert set(r.partition_errors) == {str(TopicPartition(TOPIC, 0)), str(TopicPartition(TOPIC, 1))}
    assert all(e.startswith("not changed") for e in r.partition_errors.values())
    assert "read back: 0 of 2 partition(s) changed" in r.error
