"""Safety rules of planning and execution that need no cluster: group states, new groups,
deletes, offsets moved by another writer, and error texts."""

from dataclasses import replace

import pytest

from offsetkeeper.kafka.errors import ADVICE, RECEIVABLE, partition_error
from offsetkeeper.models import CommittedOffset, GroupInfo, TopicPartition, Watermarks
from offsetkeeper.reset.apply import _Job, _moved
from offsetkeeper.reset.plan import (
    GroupFacts,
    PlanKind,
    RefusalReason,
    ResetFacts,
    ResetScope,
    TopicSpec,
    plan_delete,
    plan_reset,
)
from offsetkeeper.reset.targets import FromOffsets, ToEarliest, ToOffset

T0, T1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
WM = {T0: Watermarks(0, 100), T1: Watermarks(0, 100)}
SCOPE = ResetScope(groups=("g",), topics=(TopicSpec("orders"),))


def facts(state="empty", committed=None, *, allow_unknown=False):
    return ResetFacts(groups={"g": GroupFacts(GroupInfo("g", state),
                                              {tp: CommittedOffset(o) for tp, o in (committed or {}).items()})},
                      topic_partitions={"orders": (0, 1)}, watermarks=WM,
                      allow_unknown_state=allow_unknown)


def test_unknown_state_is_refused_unless_allowed():
    """Invariant: only Empty and Dead count as inactive; "unknown" (a joining consumer on some
    brokers) is refused unless --allow-unknown-state says the broker never reports states."""
    plan = plan_reset(facts("unknown", {T0: 5}), SCOPE, ToEarliest())
    assert plan.groups[0].refused.reason is RefusalReason.UNKNOWN_STATE
    assert "--allow-unknown-state" in plan.groups[0].refused.message
    assert plan_reset(facts("unknown", {T0: 5}, allow_unknown=True), SCOPE, ToEarliest()).groups[0].refused is None


@pytest.mark.parametrize("state", ["stable", "preparingrebalance", "completingrebalance", "assigning"])
def test_other_states_are_refused_as_active(state):
    plan = plan_reset(facts(state, {T0: 5}), SCOPE, ToEarliest())
    assert plan.groups[0].refused.reason is RefusalReason.ACTIVE


def test_a_group_that_does_not_exist_is_marked_new():
    """Invariant: a plan shows which groups --execute would create, and which it may not."""
    plan = plan_reset(facts("dead"), SCOPE, ToOffset(3))
    g = plan.groups[0]
    assert g.new_group and not g.may_create and plan.uncreatable == ["g"]
    assert all("--execute needs --create-groups" in p.note for p in g.partitions)
    allowed = plan_reset(replace(facts("dead"), may_create=frozenset({"g"})), SCOPE, ToOffset(3))
    assert allowed.uncreatable == [] and "new group: created by --execute" in allowed.groups[0].partitions[0].note


def test_provider_notes_reach_the_plan():
    target = FromOffsets({"g": {T0: 7}}, source="history", notes={"g": {T0: "sample 4m old"}})
    [p] = plan_reset(facts("empty", {T0: 1}), ResetScope(groups=("g",)), target).partitions()
    assert p.target == 7 and "sample 4m old" in p.note


def test_delete_plan_changes_only_committed_partitions():
    plan = plan_delete(facts("empty", {T0: 5}), SCOPE, whole_groups=False)
    assert plan.kind is PlanKind.DELETE_OFFSETS
    changes = {p.tp: p.changes for p in plan.partitions()}
    assert changes == {T0: True, T1: False}


def test_delete_of_a_missing_group_is_refused_as_not_found():
    plan = plan_delete(facts("dead"), SCOPE, whole_groups=True)
    assert plan.groups[0].refused.reason is RefusalReason.NOT_FOUND


def test_moved_offsets_are_detected_but_own_earlier_attempt_is_not():
    """Invariant: right before committing, a group whose offsets another writer moved since
    planning is refused (two concurrent resets must not both report SUCCESS); an offset equal to
    the plan's own target (a previous attempt of this run) is not a move."""
    plan = plan_reset(facts("empty", {T0: 50, T1: 60}), SCOPE, ToOffset(10))
    job = _Job(plan.groups[0], dict(plan.groups[0].offsets))
    assert _moved(job, {T0: CommittedOffset(50), T1: CommittedOffset(60)}) is None
    assert _moved(job, {T0: CommittedOffset(10), T1: CommittedOffset(60)}) is None
    msg = _moved(job, {T0: CommittedOffset(51), T1: CommittedOffset(60)})
    assert msg and "group g" in msg and "orders:0" in msg and "50" in msg and "51" in msg
    gone = _moved(job, {T1: CommittedOffset(60)})
    assert gone and "none" in gone


def test_partition_errors_name_the_group_not_the_partition():
    """Invariant (issue 8.25): the executor's text says "group payments has active members",
    never "group orders:0 has active members"."""
    text = partition_error("UNKNOWN_MEMBER_ID", group="payments", tp=T0)
    assert "group payments has active members" in text and "group orders:0" not in text
    assert partition_error("OFFSET_METADATA_TOO_LARGE", group="payments", tp=T0).startswith("orders:0")


def test_every_receivable_kafka_error_has_advice():
    """Invariant: every error code our requests can receive is translated to one sentence."""
    assert sorted(RECEIVABLE - set(ADVICE)) == []


def test_every_receivable_error_name_is_a_real_librdkafka_code():
    from confluent_kafka import KafkaError

    names = {n for n in dir(KafkaError) if n.isupper() or n.startswith("_")}
    missing = sorted(n for n in RECEIVABLE if n not in names)
    assert missing == []


def test_api_versions_are_parsed_from_librdkafka_feature_lines():
    from offsetkeeper.kafka.apiversions import parse_api_versions

    lines = [
        "APIVERSION [rdkafka#producer-1] [thrd:h:9092/bootstrap]: h:9092/bootstrap:   ApiKey Produce (0) Versions 0..9",
        "APIVERSION [rdkafka#producer-1] [thrd:h:9092/bootstrap]: h:9092/bootstrap:   ApiKey OffsetDeleteRequest (47) Versions 0..0",
        "unrelated line",
    ]
    assert parse_api_versions(lines) == {"h:9092/bootstrap": {0: (0, 9), 47: (0, 0)}}


def test_refusal_renders_as_its_message():
    plan = plan_reset(facts("stable", {T0: 1}), SCOPE, ToEarliest())
    assert str(plan.groups[0].refused) == plan.groups[0].refused.message
    assert replace(plan.groups[0], refused=None).refused is None
