"""Commit metadata read from confluent-kafka is untrusted (issue 31 item 2)."""

from __future__ import annotations

import pytest

from offsetkeeper.kafka.admin import commit_metadata
from offsetkeeper.models import CommittedOffset, TopicPartition


class _Binding:
    """A partition as confluent-kafka 2.16.1 hands it over: its `metadata` getter decodes a C
    string that may run past the metadata's end (the bytes after it are whatever follows)."""

    def __init__(self, raw: bytes | None) -> None:
        self.raw = raw

    @property
    def metadata(self):
        return None if self.raw is None else self.raw.decode("utf-8")


@pytest.mark.parametrize(("raw", "want"), [
    (None, ""),
    (b"", ""),
    (b"AgAAAZPi0fQ=", "AgAAAZPi0fQ="),
    (b"line\nbreak\x1b[31m", "line\nbreak\x1b[31m"),  # kept exactly; rendering escapes it
    (b"AgAAAZPi0fQ=\xd0\x8f\xff", None),   # bytes past the end: not the metadata
    (b"\xff", None),
])
def test_commit_metadata_never_raises_and_never_invents(raw, want):
    """Invariant: reading a partition's commit metadata never raises (a Kafka Streams group
    crashed describe and reset at random with UnicodeDecodeError); metadata the client cannot
    read is None (unreadable), never a guess."""
    assert commit_metadata(_Binding(raw)) == want


# -- carried exactly through resets and rollbacks ---------------------------------------------

def _facts(committed):
    from offsetkeeper.models import GroupInfo, Watermarks
    from offsetkeeper.reset.plan import GroupFacts, ResetFacts

    return ResetFacts(groups={"g": GroupFacts(GroupInfo("g", "empty"), committed)},
                      topic_partitions={"t": (0, 1, 2)},
                      watermarks={TopicPartition("t", p): Watermarks(0, 100) for p in range(3)})


T0, T1, T2 = (TopicPartition("t", p) for p in range(3))
STREAMS = "AgAAAZPi0fQ="  # Kafka Streams: base64 of a version byte and the partition time


def test_a_reset_keeps_each_partitions_metadata_and_a_rollback_restores_the_snapshots():
    """Invariant: a reset commits each partition it moves with the commit metadata that
    partition has (kafka-consumer-groups.sh commits none; docs/oracle.md says why we keep it),
    an unreadable one (None) is committed without it and says so; a rollback target commits
    the snapshot's metadata exactly, and a partition whose offset is already where the snapshot
    says but whose metadata differs is changed (restored), never reported as unchanged."""
    from offsetkeeper.reset.plan import ResetScope, plan_reset
    from offsetkeeper.reset.targets import FromOffsets, ToEarliest

    committed = {T0: CommittedOffset(50, STREAMS), T1: CommittedOffset(40, None),
                 T2: CommittedOffset(30, "")}
    scope = ResetScope(groups=("g",), all_topics=True)
    parts = {p.tp: p for p in plan_reset(_facts(committed), scope, ToEarliest()).partitions()}
    assert {tp: (p.target, p.metadata) for tp, p in parts.items()} == {
        T0: (0, STREAMS), T1: (0, ""), T2: (0, "")}
    assert "commit metadata unreadable" in parts[T1].note
    assert "metadata" not in parts[T0].note + parts[T2].note

    # after the reset: every partition at 0 with the metadata kept; the snapshot had 50/40/30
    now = {T0: CommittedOffset(0, STREAMS), T1: CommittedOffset(0, ""),
           T2: CommittedOffset(30, "x\n")}
    back = FromOffsets({"g": {T0: 50, T1: 40, T2: 30}},
                       metadata={"g": {T0: STREAMS, T2: ""}})  # T1: unreadable in the snapshot
    parts = {p.tp: p for p in plan_reset(_facts(now), scope, back).partitions()}
    assert {tp: (p.target, p.metadata, p.changes) for tp, p in parts.items()} == {
        T0: (50, STREAMS, True), T1: (40, "", True), T2: (30, "", True)}
    assert parts[T2].note == "same offset; commit metadata restored"
    # exactly where the snapshot says, metadata included: nothing to do
    same = {T0: CommittedOffset(50, STREAMS), T2: CommittedOffset(30, "")}
    back = FromOffsets({"g": {T0: 50, T2: 30}}, metadata={"g": {T0: STREAMS, T2: ""}})
    assert not any(p.changes for p in plan_reset(_facts(same), scope, back).partitions())


def test_the_executor_commits_the_plans_metadata():
    """Invariant: the one executor commits each offset with the commit metadata its plan
    gives (a bare offset when it has none), so a rollback puts metadata back exactly."""
    from offsetkeeper.reset.apply import _Job, _with_metadata
    from offsetkeeper.reset.plan import GroupPlan, PartitionPlan

    parts = (PartitionPlan("g", "t", 0, 0, 50, 0, 100, metadata=STREAMS),
             PartitionPlan("g", "t", 1, 0, 40, 0, 100))
    job = _Job(GroupPlan("g", "empty", 0, parts), {T0: 50, T1: 40}, [])
    assert _with_metadata(job) == {T0: CommittedOffset(50, STREAMS), T1: 40}


def test_clear_metadata_commits_none_like_kafka_consumer_groups():
    """Invariant: with `--clear-metadata` (ResetScope.clear_metadata) a reset commits every
    partition it moves without metadata, as kafka-consumer-groups.sh does; a partition whose
    offset stays but whose metadata goes is a change (so `--to-current --clear-metadata`
    clears it); metadata an input names (a rollback's snapshot) still wins."""
    from offsetkeeper.reset.plan import ResetScope, plan_reset
    from offsetkeeper.reset.targets import FromOffsets, ToCurrent, ToEarliest

    committed = {T0: CommittedOffset(50, STREAMS), T1: CommittedOffset(40, None),
                 T2: CommittedOffset(30, "")}
    scope = ResetScope(groups=("g",), all_topics=True, clear_metadata=True)
    parts = {p.tp: p for p in plan_reset(_facts(committed), scope, ToEarliest()).partitions()}
    assert {tp: p.metadata for tp, p in parts.items()} == {T0: "", T1: "", T2: ""}
    assert not any("metadata" in p.note for p in parts.values())
    parts = {p.tp: p for p in plan_reset(_facts(committed), scope, ToCurrent()).partitions()}
    assert {tp: (p.changes, p.note) for tp, p in parts.items()} == {
        T0: (True, "same offset; commit metadata cleared"), T1: (False, "unchanged"),
        T2: (False, "unchanged")}
    back = FromOffsets({"g": {T0: 50}}, metadata={"g": {T0: STREAMS}})
    [p] = plan_reset(_facts({T0: CommittedOffset(0, "")}), scope, back).partitions()
    assert (p.target, p.metadata) == (50, STREAMS)


def test_reset_then_rollback_through_the_executor_restores_offsets_and_metadata():
    """Invariant: through the one executor, a reset keeps each partition's commit metadata and
    a rollback to the snapshot taken before it puts offsets and metadata back exactly, also
    where another writer changed only the metadata in between."""
    from offsetkeeper.snapshots.capture import take_snapshot
    from offsetkeeper.snapshots.rollback import rollback_target
    from tests.unit.executor_support import TOPIC, cluster, reset_plan, run

    admin = cluster({"g": {0: 10, 1: 20}})
    a, b = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
    admin.groups["g"].committed.update({a: CommittedOffset(10, STREAMS),
                                        b: CommittedOffset(20, "x\n")})
    before = dict(admin.groups["g"].committed)
    snap = take_snapshot(admin, ["g"])
    assert run(admin, reset_plan(admin)).partitions_changed == 2
    assert admin.groups["g"].committed == {a: CommittedOffset(50, STREAMS),
                                           b: CommittedOffset(50, "x\n")}
    admin.groups["g"].committed[b] = CommittedOffset(20, "other")  # offset right, metadata not
    report = run(admin, reset_plan(admin, target=rollback_target(snap)))
    assert report.partitions_changed == 2 and admin.groups["g"].committed == before


def test_a_reset_whose_metadata_reads_back_different_is_not_a_success():
    """Invariant: the executor's read-back checks the commit metadata too: a partition at the
    target offset whose metadata is not what the plan committed is reported (never SUCCESS)."""
    from tests.unit.executor_support import TOPIC, cluster, reset_plan, run

    admin = cluster({"g": {0: 10}}, partitions=1)
    a = TopicPartition(TOPIC, 0)
    admin.groups["g"].committed[a] = CommittedOffset(10, STREAMS)
    plan = reset_plan(admin)
    real = admin.committed_offsets_each

    def read_back(groups, **kw):  # the commit lost its metadata on the way
        return {g: {tp: CommittedOffset(c.offset, "") for tp, c in offs.items()}
                for g, offs in real(groups, **kw).items()}

    admin.committed_offsets_each = read_back
    [r] = run(admin, plan).results
    assert str(r.status) == "failed" and "commit metadata reads back as ''" in r.partition_errors[str(a)]
