"""KafkaAdmin's one committed-offsets reader and one watermarks reader, through every entry
point that uses them (issue 10 merged the history sampler's copies into them)."""

from __future__ import annotations

import pytest

from offsetkeeper.models import TopicPartition
from tests.kafkatools import commit, create_topic, produce_n

pytestmark = pytest.mark.integration


def test_committed_offsets_one_and_each_agree(bootstrap, admin, unique):
    """Invariant: committed_offsets (one group, raises) and committed_offsets_each (many groups,
    errors as values, duplicates once, in the order asked) return the same offsets."""
    t1, t2, g1, g2 = unique("t"), unique("t"), unique("g"), unique("g")
    create_topic(bootstrap, t1, 2)
    create_topic(bootstrap, t2, 1)
    produce_n(bootstrap, t1, 2, 5)
    produce_n(bootstrap, t2, 1, 5)
    commit(bootstrap, g1, {(t1, 0): 1, (t1, 1): 2})
    commit(bootstrap, g2, {(t2, 0): 3})
    each = admin.committed_offsets_each([g1, g2, g1])
    assert list(each) == [g1, g2]
    assert each[g1] == admin.committed_offsets(g1) and each[g2] == admin.committed_offsets(g2)
    assert {tp: o.offset for tp, o in each[g1].items()} == {TopicPartition(t1, 0): 1,
                                                           TopicPartition(t1, 1): 2}


def test_watermarks_ordered_and_unordered_are_the_same_reads(bootstrap, admin, unique):
    topic = unique("t")
    create_topic(bootstrap, topic, 3)
    produce_n(bootstrap, topic, 3, 4)
    tps = [TopicPartition(topic, p) for p in (2, 0, 1, 0)]
    ordered = admin.watermarks(tps)
    unordered = admin.watermarks(tps, ordered=False)
    assert list(ordered) == sorted(set(tps)) and ordered == unordered
    assert all((w.low, w.high) == (0, 4) for w in ordered.values())
    assert admin.watermarks([]) == {}


def test_a_daemon_facade_reads_committed_offsets_through_java_alike(bootstrap, admin, unique):
    """Invariant: a daemon facade (sampler, exporter, dashboard) reads committed offsets with
    Kafka's Java client (librdkafka's admin OffsetFetch can crash a process during a coordinator
    move, #5040) and answers exactly as the librdkafka reader: same groups in the order asked,
    duplicates once, same offsets and commit metadata, a group without commits empty; and a
    cluster that does not answer gives each group its error instead of raising."""
    from offsetkeeper.config import Connection
    from offsetkeeper.devbroker import free_port
    from offsetkeeper.errors import OffsetkeeperError
    from offsetkeeper.kafka import jvm
    from offsetkeeper.kafka.admin import KafkaAdmin
    from offsetkeeper.models import CommittedOffset

    if not jvm.available():
        pytest.skip("the JVM admin helper is not built (scripts/setup.sh)")
    t, g1, g2, none = unique("t"), unique("g"), unique("g"), unique("g")
    create_topic(bootstrap, t, 2)
    produce_n(bootstrap, t, 2, 5)
    commit(bootstrap, g1, {(t, 0): 1, (t, 1): 4})
    # committed by the Java client: confluent-kafka would add a NUL byte to the metadata
    assert admin.java.alter_offsets_exact(
        g2, {TopicPartition(t, 1): CommittedOffset(3, "app-state\t'q'")}) == \
        {TopicPartition(t, 1): None}
    with KafkaAdmin(Connection(bootstrap), daemon=True) as daemon:
        read = daemon.committed_offsets_each([g2, g1, none, g2])
        assert daemon.java._session is not None  # answered by the Java client's process
    assert list(read) == [g2, g1, none]
    assert read == admin.committed_offsets_each([g2, g1, none])
    assert read[g2][TopicPartition(t, 1)].metadata == "app-state\t'q'"
    assert read[none] == {}
    with KafkaAdmin(Connection(f"127.0.0.1:{free_port()}"), timeout=2, daemon=True) as down:
        failed = down.committed_offsets_each([g1, g2])
    assert list(failed) == [g1, g2]
    assert all(isinstance(e, OffsetkeeperError) for e in failed.values())


def test_a_daemon_facade_describes_groups_through_java_alike(bootstrap, admin, unique):
    """Invariant: a daemon facade describes groups with Kafka's Java client and answers as the
    librdkafka reader does: the same state, type, coordinator, assignor and members with their
    assignments, for a group with a classic member, one with a consumer-protocol member, a
    group with commits only (empty) and one Kafka does not know (dead)."""
    from dataclasses import replace

    from offsetkeeper.config import Connection
    from offsetkeeper.kafka import jvm
    from offsetkeeper.kafka.admin import KafkaAdmin
    from tests.kafkatools import LiveConsumer

    if not jvm.available():
        pytest.skip("the JVM admin helper is not built (scripts/setup.sh)")
    t, classic, kip848, empty, none = (unique("t"), unique("g"), unique("g"), unique("g"),
                                       unique("g"))
    create_topic(bootstrap, t, 2)
    commit(bootstrap, empty, {(t, 0): 1})
    members = [LiveConsumer(bootstrap, classic, [t]),
               LiveConsumer(bootstrap, kip848, [t], protocol="consumer")]
    try:
        for m in members:
            assert m.wait_assigned(60)
        ids = [classic, kip848, empty, none]
        with KafkaAdmin(Connection(bootstrap), daemon=True) as daemon:
            read = daemon.describe_groups_each(ids)
            assert daemon.java._session is not None  # answered by the Java client's process
        rd = admin.describe_groups_each(ids)
        assert {g: read[g] for g in ids[:3]} == {g: rd[g] for g in ids[:3]}
        # the Java client is told "not found" without the coordinator's name
        assert read[none] == replace(rd[none], coordinator="")
        assert [read[g].state for g in ids] == ["stable", "stable", "empty", "dead"]
        assert [read[g].group_type for g in ids[:3]] == ["classic", "consumer", "classic"]
        assert all(len(read[g].members) == 1 for g in (classic, kip848))
    finally:
        for m in members:
            m.stop()
