"""Share groups in the reset pipeline without a cluster: the admin facade's share view over a
fake Java part, the plan's group type, share snapshots (schema 3) and the share script."""

from __future__ import annotations

import pytest

from offsetkeeper.errors import KafkaOperationError, SnapshotFormatError, UnknownGroupError
from offsetkeeper.kafka.group_types import ShareGroupDetail, ShareMember, SharePartitionOffset
from offsetkeeper.kafka.share_offsets import ShareGroupsView, error_code
from offsetkeeper.models import CommittedOffset, GroupType, TopicPartition
from offsetkeeper.reset.plan import GroupPlan, PartitionPlan, ResetPlan
from offsetkeeper.reset.render import plan_csv, plan_script
from offsetkeeper.snapshots.model import GroupSnapshot, Snapshot

T0, T1, U0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)


class FakeJvm:
    """The Java part of KafkaAdmin: start offsets per group, as the broker keeps them."""

    def __init__(self, offsets: dict[TopicPartition, int], members: int = 0) -> None:
        self.offsets, self.members, self.calls = dict(offsets), members, []

    def describe_share_groups(self, ids):
        return {g: (ShareGroupDetail(g, "Empty" if not self.members else "Stable", "c", 1, 1,
                                     tuple(ShareMember(f"m{i}", "c", "h", None, 1, (T0,))
                                           for i in range(self.members))) if g == "g"
                    else UnknownGroupError("nope", group=g)) for g in ids}

    def share_group_offsets(self, ids):
        return {g: [SharePartitionOffset(tp.topic, tp.partition, o, 0, 0)
                    for tp, o in sorted(self.offsets.items())] for g in ids}

    def alter_share_group_offsets(self, group, offsets):
        self.calls.append(("alter", dict(offsets)))
        self.offsets.update(offsets)
        return {tp: None for tp in offsets}

    def delete_share_group_offsets(self, group, topics):
        self.calls.append(("delete", sorted(topics)))
        self.offsets = {tp: o for tp, o in self.offsets.items() if tp.topic not in topics}
        return {t: None for t in topics}

    def for_group_type(self, t):
        return ShareGroupsView(self) if t == GroupType.SHARE else self


def test_view_reads_members_and_start_offsets_as_the_pipeline_reads_groups():
    view = ShareGroupsView(FakeJvm({T0: 4, T1: 7}, members=1))
    info = view.describe_groups_each(["g"])["g"]
    assert (info.state, info.group_type, len(info.members)) == ("stable", "share", 1)
    assert info.refusal() is not None  # a member: offsets must not change
    assert view.committed_offsets_each(["g"])["g"] == {T0: CommittedOffset(4), T1: CommittedOffset(7)}
    assert isinstance(view.describe_groups_each(["x"])["x"], UnknownGroupError)
    assert "share group 'x' does not exist" in str(view.describe_groups_each(["x"])["x"])


def test_deleting_some_partitions_of_a_topic_sets_the_others_back():
    """Invariant: DeleteShareGroupOffsets deletes whole topics; deleting one partition's start
    offset leaves the topic's other partitions (and other topics) as they were."""
    jvm = FakeJvm({T0: 4, T1: 7, U0: 2})
    view = ShareGroupsView(jvm)
    assert view.delete_offsets("g", [T1]) == {T1: None}
    assert jvm.offsets == {T0: 4, U0: 2}
    assert jvm.calls == [("delete", ["t"]), ("alter", {T0: 4})]


def test_error_codes_for_the_executor():
    assert error_code(None) is None
    assert error_code(UnknownGroupError("x")) == "GROUP_ID_NOT_FOUND"
    assert error_code(KafkaOperationError("x", code="NOT_COORDINATOR")) == "NOT_COORDINATOR"


def test_apply_plan_uses_the_view_of_the_plan_group_type():
    from offsetkeeper.reset.apply import admin_for

    jvm = FakeJvm({})
    plan = ResetPlan("--to-earliest", (), group_type=GroupType.SHARE)
    assert isinstance(admin_for(jvm, plan), ShareGroupsView)
    assert admin_for(jvm, ResetPlan("--to-earliest", ())) is jvm
    assert ResetPlan("x", (), group_type=GroupType.SHARE).to_dict()["group_type"] == "share"
    assert "group_type" not in ResetPlan("x", ()).to_dict()


def test_share_snapshot_round_trips_as_schema_3():
    snap = Snapshot("snap-1", "2026-11-26T00:00:00.000Z", "c", "b", "before reset --to-latest",
                    groups={"g": GroupSnapshot("empty", {T0: CommittedOffset(3)},
                                               uncommitted=frozenset({T1}),
                                               group_type=GroupType.SHARE)})
    doc = snap.to_dict()
    assert doc["schema_version"] == 3 and doc["groups"]["g"]["type"] == "share"
    back = Snapshot.from_dict(doc)
    assert back.groups["g"] == snap.groups["g"]
    doc["groups"]["g"]["type"] = "queue"
    with pytest.raises(SnapshotFormatError, match="'type' 'queue'"):
        Snapshot.from_dict(doc)


def _plan(target: str, parts: list[PartitionPlan]) -> ResetPlan:
    return ResetPlan(target, (GroupPlan("g", "empty", 0, tuple(parts)),), group_column=False,
                     group_type=GroupType.SHARE)


def test_share_script_uses_the_tool_for_every_plan():
    """Invariant (issue 31 item 11): a share plan's --script is kafka-share-groups.sh commands
    only — exact start offsets through its --from-file (Kafka 4.4), never a claim that the tool
    cannot set them."""
    earliest = _plan("--to-earliest", [PartitionPlan("g", "t", 0, 5, 0, 0, 10),
                                       PartitionPlan("g", "t", 1, 6, 0, 0, 10)])
    text = plan_script(earliest, bootstrap_servers="b:9092")
    assert ("kafka-share-groups.sh --bootstrap-server \"$BOOTSTRAP\" --group g --reset-offsets "
            "--to-earliest --topic t:0,1 --execute") in text
    assert "offsetkeeper share-groups" not in text
    exact = _plan("rollback to snap-1", [PartitionPlan("g", "t", 0, 5, 3, 0, 10),
                                         PartitionPlan("g", "t", 1, 6, None, 0, 10, delete=True)])
    text = plan_script(exact, bootstrap_servers="b:9092")
    lines = text.splitlines()
    delete = next(i for i, ln in enumerate(lines) if "--delete-offsets --topic t" in ln)
    reset = next(i for i, ln in enumerate(lines)
                 if "kafka-share-groups.sh" in ln and "--reset-offsets --from-file" in ln)
    assert delete < reset and "t,0,3" in text and "t,1," not in text
    assert "offsetkeeper share-groups" not in text and "cannot set" not in text
    assert plan_csv(exact) == "t,0,3\n"
