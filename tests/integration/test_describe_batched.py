"""Describing many groups at once (issue 32): the batched describe of member-less classic
groups answers exactly what the per-group describe answers, and leaves every other group to it."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from confluent_kafka import Consumer

from offsetkeeper.config import Connection
from offsetkeeper.kafka import admin as admin_mod
from offsetkeeper.kafka.admin import KafkaAdmin, LibrdkafkaAdmin
from tests.kafkatools import commit, create_topic, produce_n

pytestmark = pytest.mark.integration


def _member(bootstrap: str, group: str, topic: str, **conf) -> Consumer:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", **conf})
    c.subscribe([topic])
    return c


def _until_assigned(consumers: list[Consumer], deadline_s: float = 60.0) -> None:
    end = time.monotonic() + deadline_s
    while not all(c.assignment() for c in consumers):
        assert time.monotonic() < end, "consumers did not join within 60 s"
        for c in consumers:
            c.poll(0.2)


def test_the_batched_describe_answers_as_the_per_group_describe(bootstrap, unique, monkeypatch):
    """Invariant: for a bulk describe, member-less classic groups (never joined, or left) are
    described all at once, and their answers (state, coordinator, assignor, type, no member)
    equal the per-group describe's; a classic group with a member, a running consumer-protocol
    group (KIP-848: the batched DescribeGroups calls it Dead, member-less) and a group that
    does not exist are described one by one, exactly as before — so the executor's safety
    check (no active member) sees the same answers either way."""
    topic = unique("batchd")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 3)
    empty = [unique("bd-empty") for _ in range(admin_mod.BATCH_DESCRIBE_MIN)]
    for g in empty:
        commit(bootstrap, g, {(topic, 0): 1, (topic, 1): 2})
    left, active, kip848, missing = (unique("bd-left"), unique("bd-active"),
                                     unique("bd-848"), unique("bd-missing"))
    gone = _member(bootstrap, left, topic)
    _until_assigned([gone])
    gone.close()
    members = [_member(bootstrap, active, topic),
               _member(bootstrap, kip848, topic, **{"group.protocol": "consumer"})]
    try:
        _until_assigned(members)
        ids = [*empty, left, active, kip848, missing]
        # the shared test cluster holds other tests' groups: describe in batch whatever it holds
        monkeypatch.setattr(admin_mod, "BATCH_DESCRIBE_SPREAD", 10**9)
        sent: Counter = Counter()
        real = LibrdkafkaAdmin.admin.fget

        class Counting:
            def __init__(self, inner):
                self._inner = inner

            def __getattr__(self, name):
                attr = getattr(self._inner, name)
                if name != "describe_consumer_groups":
                    return attr

                def call(group_ids, *a, **kw):
                    sent.update(group_ids)
                    return attr(group_ids, *a, **kw)
                return call

        monkeypatch.setattr(LibrdkafkaAdmin, "admin", property(lambda self: Counting(real(self))))
        with KafkaAdmin(Connection(bootstrap)) as admin:
            batched = admin.describe_groups_each(ids)
        assert set(sent) == {active, kip848, missing}  # the others: all at once
        monkeypatch.setattr(admin_mod, "BATCH_DESCRIBE_MIN", 10**9)
        with KafkaAdmin(Connection(bootstrap)) as admin:
            one_by_one = admin.describe_groups_each(ids)
        assert set(sent) == set(ids)
        assert batched == one_by_one
        assert {batched[g].state for g in [*empty, left]} == {"empty"}
        assert batched[left].group_type == "classic" and batched[left].coordinator
        assert len(batched[active].members) == 1 and len(batched[kip848].members) == 1
        assert batched[kip848].group_type == "consumer" and batched[kip848].state == "stable"
    finally:
        for c in members:
            c.close()
