"""The facts `groups list` builds on to skip Kafka's Java client (issue 32, goal 7), on Apache
Kafka: librdkafka's typed listing says of classic and consumer groups what the Java client
says, and its older listing names the groups the typed one leaves out (share, streams)."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer

from offsetkeeper.groups.listing import GroupRow, librdkafka_rows, list_typed_groups
from offsetkeeper.kafka import jvm
from offsetkeeper.kafka.group_types import state_key
from tests.integration.test_share_streams_groups import share, streams, wait_until  # noqa: F401
from tests.kafkatools import commit, create_topic

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not jvm.available(), reason="the JVM admin helper is not built "
                                 "(scripts/setup.sh)")]


def test_librdkafka_rows_equal_the_java_listing(bootstrap, admin, unique):
    """Classic (offsets only) and consumer-protocol groups, running and closed: the rows built
    from librdkafka alone equal Kafka's Java client's, protocol included."""
    topic, classic, consumer = unique("t"), unique("classic"), unique("consumer")
    create_topic(bootstrap, topic, 2)
    commit(bootstrap, classic, {(topic, 0): 0})
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": consumer,
                  "group.protocol": "consumer", "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        wait_until("an assignment", lambda: c.poll(0.2) is None and c.assignment())

        def same(expect_state: str) -> bool:
            basic = [g for g in admin.list_groups() if g.group_id in (classic, consumer)]
            java = {g.group_id: g for g in admin.list_all_groups()}
            fast = {r.group_id: r for r in librdkafka_rows(basic)}
            want = {g: GroupRow(g, state_key(java[g].state), state_key(java[g].group_type),
                                java[g].protocol) for g in (classic, consumer)}
            return fast == want and fast[consumer].state == expect_state

        wait_until("a stable consumer group in both listings", lambda: same("stable"))
    finally:
        c.close()
    wait_until("an empty consumer group in both listings", lambda: same("empty"))
    assert same("empty")


def test_other_group_types_are_seen_without_java(admin, share, streams):  # noqa: F811
    """librdkafka's typed listing leaves share and streams groups out; its older listing names
    them, so `groups list` knows to ask the Java client, which then types them."""
    typed = {g.group_id for g in admin.list_groups()}
    every = admin.all_group_ids()
    for g in (share["group"], streams["group"]):
        assert g not in typed and g in every
    rows, note = list_typed_groups(admin, types={"share", "streams"})
    assert note is None
    got = {r.group_id: r.group_type for r in rows}
    assert got[share["group"]] == "share" and got[streams["group"]] == "streams"
