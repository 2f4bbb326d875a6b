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
