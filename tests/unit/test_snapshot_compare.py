"""Diff logic, rollback target and the cluster-id check (pure, no broker)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetkeeper.errors import UsageError
from offsetkeeper.models import CommittedOffset, TopicPartition
from offsetkeeper.reset.targets import FromOffsets
from offsetkeeper.snapshots.compare import Live, OffsetDiff, diff
from offsetkeeper.snapshots.model import GroupSnapshot, Snapshot
from offsetkeeper.snapshots.rollback import cluster_mismatch, rollback_groups, rollback_target

A, B = TopicPartition("t", 0), TopicPartition("t", 1)


def snap(groups: dict[str, dict[TopicPartition, int]], cluster: str = "c1",
         sid: str = "snap-20260101T000000.000Z-0000") -> Snapshot:
    return Snapshot(sid, "2026-01-01T00:00:00.000Z", cluster, "b", "",
                    {g: GroupSnapshot("empty", {tp: CommittedOffset(o) for tp, o in offs.items()})
                     for g, offs in groups.items()})


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ({"g": {A: 5}}, {"g": {A: 5}}, []),
        ({"g": {A: 5}}, {"g": {A: 9}}, [("g", A, 5, 9, "changed", 4)]),
        ({"g": {A: 5}}, {"g": {A: 2}}, [("g", A, 5, 2, "changed", -3)]),
        ({"g": {A: 5}}, {"g": {A: 5, B: 1}}, [("g", B, None, 1, "added", None)]),
        ({"g": {A: 5, B: 1}}, {"g": {A: 5}}, [("g", B, 1, None, "removed", None)]),
        ({"g": {A: 5}}, {}, [("g", A, 5, None, "removed", None)]),
        ({}, {"h": {A: 1}}, [("h", A, None, 1, "added", None)]),
        ({"g": {A: 1}, "h": {A: 1}}, {"g": {A: 2}, "h": {A: 3}},
         [("g", A, 1, 2, "changed", 1), ("h", A, 1, 3, "changed", 2)]),
    ],
)
def test_diff_table(a, b, expected):
    got = [(d.group, d.tp, d.before, d.after, d.change, d.delta) for d in diff(snap(a), snap(b))]
    assert got == expected


def test_metadata_differences_are_not_offset_differences():
    a = snap({"g": {A: 5}})
    b = Snapshot(a.id, a.created_at, "c1", "b", "",
                 {"g": GroupSnapshot("stable", {A: CommittedOffset(5, "other")})})
    assert diff(a, b) == []


def test_diff_limited_to_groups_and_against_live():
    a = snap({"g": {A: 5}})
    live = Live({"g": GroupSnapshot("empty", {A: CommittedOffset(6)}),
                 "other": GroupSnapshot("empty", {A: CommittedOffset(1)})})
    assert diff(a, live, groups=["g"]) == [OffsetDiff("g", A, 5, 6)]
    assert len(diff(a, live)) == 2


def test_diff_row():
    assert OffsetDiff("g", A, 5, 9).as_row() == {
        "group": "g", "topic": "t", "partition": 0, "before": 5, "after": 9, "delta": 4,
        "change": "changed"}


offset_maps = st.dictionaries(
    st.sampled_from(["g1", "g2", "g3"]),
    st.dictionaries(st.builds(TopicPartition, st.sampled_from(["x", "y"]), st.integers(0, 3)),
                    st.integers(0, 20), max_size=6),
    max_size=3,
)


@given(offset_maps, offset_maps)
def test_applying_the_diff_to_a_gives_b(a, b):
    state = {g: dict(o) for g, o in a.items()}
    for d in diff(snap(a), snap(b)):
        if d.after is None:
            del state[d.group][d.tp]
        else:
            state.setdefault(d.group, {})[d.tp] = d.after
    norm = lambda m: {g: o for g, o in m.items() if o}  # noqa: E731
    assert norm(state) == norm(b)


@given(offset_maps, offset_maps)
def test_diff_is_antisymmetric_and_empty_on_itself(a, b):
    assert diff(snap(a), snap(a)) == []
    forward = {(d.group, d.tp): (d.before, d.after) for d in diff(snap(a), snap(b))}
    backward = {(d.group, d.tp): (d.after, d.before) for d in diff(snap(b), snap(a))}
    assert forward == backward


def test_rollback_target_holds_the_snapshot_offsets():
    s = snap({"g": {A: 5, B: 7}, "empty": {}})
    target = rollback_target(s)
    assert isinstance(target, FromOffsets)
    assert target.for_group("g") == {A: 5, B: 7}
    assert target.groups() == ["g"]
    assert s.id in target.source
    assert rollback_groups(s) == ("g",)


def test_rollback_of_a_snapshot_without_offsets_is_refused():
    with pytest.raises(UsageError, match="no committed offsets"):
        rollback_target(snap({"g": {}}))


def test_cluster_check():
    s = snap({"g": {A: 1}}, cluster="c1")
    assert cluster_mismatch(s, "c1") is None
    with pytest.raises(UsageError, match="--allow-cluster-mismatch") as e:
        cluster_mismatch(s, "c2")
    assert "c1" in e.value.message and "c2" in e.value.message
    note = cluster_mismatch(s, "c2", allow_mismatch=True)
    assert "c1" in note and "c2" in note
    # A missing cluster id skips nothing any more: refused unless allowed (issue 8, item 21).
    with pytest.raises(UsageError, match="cannot tell"):
        cluster_mismatch(snap({"g": {A: 1}}, cluster=""), "c2")
    assert "cannot tell" in cluster_mismatch(snap({"g": {A: 1}}, cluster=""), "c2",
                                             allow_mismatch=True)
