"""KafkaAdmin's one committed-offsets reader and one watermarks reader, through every entry
point that uses them (issue 10 merged the history sampler's copies into them)."""

from __future__ import annotations

import pytest

from offsetkeeper.models import TopicPartition
from tests.kafkatools import commit, create_topic, produce_n

pytestmark = pytest.mark.integration


def test_committed_offsets_each_many_and_all_agree(bootstrap, admin, unique):
    """Invariant: _each, _many and _all return the same offsets for the same groups; _all keeps
    only the requested topics and leaves out groups with none of them."""
    t1, t2, g1, g2 = unique("t"), unique("t"), unique("g"), unique("g")
    create_topic(bootstrap, t1, 2)
    create_topic(bootstrap, t2, 1)
    produce_n(bootstrap, t1, 2, 5)
    produce_n(bootstrap, t2, 1, 5)
    commit(bootstrap, g1, {(t1, 0): 1, (t1, 1): 2})
    commit(bootstrap, g2, {(t2, 0): 3})
    each = admin.committed_offsets_each([g1, g2, g1])
    many = admin.committed_offsets_many([g1, g2])
    assert list(each) == [g1, g2] and each == many
    assert {tp: o.offset for tp, o in many[g1].items()} == {TopicPartition(t1, 0): 1,
                                                           TopicPartition(t1, 1): 2}
    everything = admin.committed_offsets_all()
    assert everything[g1] == many[g1] and everything[g2] == many[g2]
    only_t2 = admin.committed_offsets_all([t2])
    assert g1 not in only_t2 and only_t2[g2] == many[g2]


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
