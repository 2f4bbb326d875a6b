"""The pure reset planner: targets, clamping, notes, refusals."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetkeeper.models import CommittedOffset, GroupInfo, MemberInfo, TopicPartition, Watermarks
from offsetkeeper.reset.plan import GroupFacts, ResetFacts, ResetScope, TopicSpec, plan_reset
from offsetkeeper.reset.targets import (
    FromOffsets,
    ShiftBy,
    ToCurrent,
    ToDatetime,
    ToEarliest,
    ToLatest,
    ToOffset,
)

T0, T1 = TopicPartition("orders", 0), TopicPartition("orders", 1)


def facts(committed=None, *, state="empty", members=(), time_offsets=None, wm=None):
    wm = wm or {T0: Watermarks(10, 100), T1: Watermarks(0, 50)}
    return ResetFacts(
        groups={"g": GroupFacts(GroupInfo("g", state, members=members),
                                {tp: CommittedOffset(o) for tp, o in (committed or {}).items()})},
        topic_partitions={"orders": (0, 1)}, watermarks=wm, time_offsets=time_offsets or {})


SCOPE = ResetScope(groups=("g",), topics=(TopicSpec("orders"),))


def by_tp(plan):
    return {p.tp: p for p in plan.partitions()}


@pytest.mark.parametrize("target,committed,expected,note", [
    (ToEarliest(), {T0: 50}, {T0: 10, T1: 0}, ""),
    (ToLatest(), {T0: 50}, {T0: 100, T1: 50}, ""),
    (ToCurrent(), {T0: 50}, {T0: 50, T1: 50}, "no committed offset; log end"),
    (ToCurrent(), {T0: 5}, {T0: 10, T1: 50}, "clamped to log start (asked 5)"),
    (ToOffset(60), {T0: 50}, {T0: 60, T1: 50}, "clamped to log end (asked 60)"),
    (ToOffset(3), {}, {T0: 10, T1: 3}, "clamped to log start (asked 3)"),
    (ShiftBy(-20), {T0: 50, T1: 10}, {T0: 30, T1: 0}, "clamped to log start (asked -10)"),
    (ShiftBy(+70), {T0: 50, T1: 10}, {T0: 100, T1: 50}, "clamped to log end (asked 120)"),
])
def test_targets(target, committed, expected, note):
    plan = plan_reset(facts(committed), SCOPE, target)
    got = by_tp(plan)
    assert {tp: p.target for tp, p in got.items()} == expected
    if note:
        assert any(note in p.note for p in got.values()), [p.note for p in got.values()]


def test_unchanged_note():
    plan = plan_reset(facts({T0: 50, T1: 7}), SCOPE, ToCurrent())
    assert all("unchanged" in p.note for p in plan.partitions())
    assert not any(p.changes for p in plan.partitions())


def test_shift_without_commit_is_partition_error():
    plan = plan_reset(facts({T0: 50}), SCOPE, ShiftBy(-1))
    got = by_tp(plan)
    assert got[T0].target == 49 and got[T0].error is None
    assert got[T1].target is None and "no committed offset" in got[T1].error
    assert plan.has_errors
    assert plan.groups[0].offsets == {T0: 49}


def test_datetime_without_record_goes_to_log_end():
    plan = plan_reset(facts({}, time_offsets={T0: 42, T1: None}), SCOPE, ToDatetime(1))
    got = by_tp(plan)
    assert got[T0].target == 42
    assert got[T1].target == 50 and "no record at or after the time; log end" in got[T1].note


def test_active_group_refused():
    m = MemberInfo("m-1", "c", "h", assignment=(T0,))
    plan = plan_reset(facts({T0: 50}, state="stable", members=(m,)), SCOPE, ToEarliest())
    assert plan.groups[0].refused and "1 active member" in plan.groups[0].refused.message
    assert plan.has_errors


@pytest.mark.parametrize("state", ["stable", "preparingrebalance", "completingrebalance"])
def test_non_empty_states_refused_even_without_members(state):
    plan = plan_reset(facts({T0: 50}, state=state), SCOPE, ToEarliest())
    assert plan.groups[0].refused


def test_all_topics_uses_committed_partitions_only():
    plan = plan_reset(facts({T1: 5}), ResetScope(groups=("g",), all_topics=True), ToEarliest())
    assert [p.tp for p in plan.partitions()] == [T1]


def test_partition_subset():
    scope = ResetScope(groups=("g",), topics=(TopicSpec("orders", (1,)),))
    plan = plan_reset(facts({T0: 50}), scope, ToEarliest())
    assert [p.tp for p in plan.partitions()] == [T1]


def test_from_offsets_only_listed_partitions_and_group_entry_wins():
    target = FromOffsets({None: {T0: 20, T1: 1}, "g": {T1: 30}})
    plan = plan_reset(facts({T0: 50}), ResetScope(groups=("g",)), target)
    assert {p.tp: p.target for p in plan.partitions()} == {T0: 20, T1: 30}


def test_unknown_partition_in_file_is_error():
    target = FromOffsets({None: {TopicPartition("orders", 7): 1}})
    plan = plan_reset(facts({}), ResetScope(groups=("g",)), target)
    assert plan.has_errors and "unknown partition" in next(plan.partitions()).error


@given(low=st.integers(0, 1000), span=st.integers(0, 1000), committed=st.integers(0, 3000),
       target=st.one_of(st.builds(ToOffset, st.integers(0, 5000)), st.builds(ShiftBy, st.integers(-3000, 3000)),
                        st.just(ToCurrent()), st.just(ToEarliest()), st.just(ToLatest())))
def test_target_always_inside_log(low, span, committed, target):
    """Invariant: a planned target is never outside [log start, log end]."""
    wm = {T0: Watermarks(low, low + span), T1: Watermarks(low, low + span)}
    plan = plan_reset(facts({T0: committed, T1: committed}, wm=wm), SCOPE, target)
    for p in plan.partitions():
        assert p.error is None
        assert low <= p.target <= low + span
        if "clamped" not in p.note and not isinstance(target, (ToEarliest, ToLatest)):
            expected = {ToOffset: lambda: target.offset, ShiftBy: lambda: committed + target.delta,
                        ToCurrent: lambda: committed}[type(target)]()
            assert p.target == expected
