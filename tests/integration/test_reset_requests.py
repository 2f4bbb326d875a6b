"""How many Kafka requests a bulk reset makes (issue 32: the whole command's fixed costs).

librdkafka sends one request per group for each describe, offset read and commit, so the
number of reads per group is what a bulk reset costs beyond the commit itself.
"""

from __future__ import annotations

from collections import Counter

import pytest

from offsetkeeper.config import Connection
from offsetkeeper.kafka.admin import KafkaAdmin, LibrdkafkaAdmin
from offsetkeeper.models import TopicPartition
from offsetkeeper.ops.reset import ExecuteOptions, ResetRequest, reset_offsets
from offsetkeeper.ops.targets import TargetKind, TargetSpec
from offsetkeeper.reset.plan import ResetScope, TopicSpec
from offsetkeeper.snapshots.store import SnapshotStore
from tests.kafkatools import commit, committed, create_topic, produce_n

pytestmark = pytest.mark.integration

PER_GROUP = ("describe_consumer_groups", "list_consumer_group_offsets",
             "alter_consumer_group_offsets")


class _CountingClient:
    def __init__(self, inner, counts: Counter) -> None:
        self._inner, self._counts = inner, counts

    def __getattr__(self, name):
        attr = getattr(self._inner, name)
        if name not in PER_GROUP:
            return attr

        def call(first, *a, **kw):
            self._counts[name] += len(first)  # one request per group (librdkafka)
            return attr(first, *a, **kw)

        return call


# (how long reads stand for the re-check, describes per group, offset reads per group)
FRESHNESS = [
    # planning's read is the snapshot's and the re-check: read once to plan, then the
    # read-back and the confirming read at the end
    pytest.param(3600.0, 1, 3, id="executed-straight-after-planning"),
    # every read already stale when used (a loaded machine, a slow store): the snapshot reads
    # the groups, and the re-check reads them again right before the commit
    pytest.param(-1.0, 3, 5, id="every-read-stale"),
]


@pytest.mark.parametrize("fresh_s, describes, reads", FRESHNESS)
def test_a_bulk_reset_reads_each_group_no_more_than_its_checks_need(
        bootstrap, unique, tmp_path, monkeypatch, fresh_s, describes, reads):
    """Invariant: a reset of N groups with a snapshot makes, per group, one describe and one
    offset read to plan, one commit, one read-back and one confirming read at the end; the
    snapshot and the re-check before the commit use planning's read while it is fresh
    (SNAPSHOT_READS_FRESH_S, pinned here: the machine's speed must not decide the count), else
    reads of their own — no describe is repeated before an offset read that just had
    one (issue 32: 13 requests per group, then 8, now 5). The snapshot holds the offsets from
    before, every group ends at the target."""
    from offsetkeeper.reset import apply

    monkeypatch.setattr(apply, "SNAPSHOT_READS_FRESH_S", fresh_s)
    topic = unique("reqs")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 6)
    groups = [unique("rq") for _ in range(6)]
    for g in groups:
        commit(bootstrap, g, {(topic, 0): 2, (topic, 1): 3})
    counts: Counter = Counter()

    # the facade's librdkafka half sends every group request through its AdminClient
    real = LibrdkafkaAdmin.admin.fget
    monkeypatch.setattr(LibrdkafkaAdmin, "admin",
                        property(lambda self: _CountingClient(real(self), counts)))

    store = tmp_path / "snaps"
    req = ResetRequest(target=TargetSpec(TargetKind.TO_OFFSET, "5"),
                       scope=ResetScope(groups=tuple(groups), topics=(TopicSpec(topic),)),
                       execute=True,
                       options=ExecuteOptions(snapshot_store=str(store)))
    with KafkaAdmin(Connection(bootstrap)) as admin:
        outcome = reset_offsets(admin, req)
    assert outcome.ok and outcome.report.partitions_changed == 12
    n = len(groups)
    assert dict(counts) == {"describe_consumer_groups": describes * n,
                            "list_consumer_group_offsets": reads * n,
                            "alter_consumer_group_offsets": n}
    snap = SnapshotStore(str(store)).load(outcome.report.snapshot_id)
    for g in groups:
        assert {tp: c.offset for tp, c in snap.groups[g].offsets.items()} == {
            TopicPartition(topic, 0): 2, TopicPartition(topic, 1): 3}
        assert committed(bootstrap, g, topic, 2) == {0: 5, 1: 5}


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_consumer_joining_after_planning_within_the_window_keeps_its_group_unchanged(
        bootstrap, unique, tmp_path, monkeypatch, protocol):
    """Invariant: when planning's read stands for the re-check (the window pinned open here), a
    consumer that joins its group after that read still leaves the group as it was: Kafka
    refuses an admin commit to a group with members, the group is not reported SUCCESS, its
    offsets are unchanged, and the other group is reset."""
    from offsetkeeper.reset import apply
    from offsetkeeper.reset.apply import GroupStatus
    from tests.kafkatools import LiveConsumer

    monkeypatch.setattr(apply, "SNAPSHOT_READS_FRESH_S", 3600.0)
    topic = unique("join")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 6)
    quiet, joined = unique("quiet"), unique("joined")
    for g in (quiet, joined):
        commit(bootstrap, g, {(topic, 0): 2, (topic, 1): 3})
    consumers: list = []
    real = apply.uncommitted_partitions

    def join_then(plan):
        # after the executor decided to use planning's read, before its first commit
        if not consumers:
            consumers.append(LiveConsumer(bootstrap, joined, [topic], protocol=protocol))
        return real(plan)

    monkeypatch.setattr(apply, "uncommitted_partitions", join_then)
    req = ResetRequest(target=TargetSpec(TargetKind.TO_OFFSET, "5"),
                       scope=ResetScope(groups=(quiet, joined), topics=(TopicSpec(topic),)),
                       execute=True,
                       options=ExecuteOptions(snapshot_store=str(tmp_path / "snaps"), retries=2,
                                              backoff_base_s=0.05))
    try:
        with KafkaAdmin(Connection(bootstrap)) as admin:
            outcome = reset_offsets(admin, req)
        assert consumers and consumers[0].wait_assigned(0), "the consumer never joined"
        results = {r.group: r for r in outcome.report.results}
        assert results[quiet].status is GroupStatus.SUCCESS
        assert results[joined].status is GroupStatus.FAILED, results[joined]
        assert results[joined].partitions_changed == 0
        # Kafka's refusal, said as the planner's own check says it
        assert all("has active members" in e for e in results[joined].partition_errors.values())
        assert committed(bootstrap, quiet, topic, 2) == {0: 5, 1: 5}
        assert committed(bootstrap, joined, topic, 2) == {0: 2, 1: 3}
    finally:
        for c in consumers:
            c.stop()
