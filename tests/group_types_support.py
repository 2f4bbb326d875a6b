"""Groups of every Kafka 4 type for the dashboard tests: a classic group (committed offsets
only), a consumer-protocol group (a member with group.protocol=consumer), a share group (a
running KafkaShareConsumer) and a streams group (a running Kafka Streams application), all named
with one token so a name filter keeps exactly them. The Java clients run through the admin
helper, as in tests/integration/test_share_streams_groups.py."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from tests.integration.test_share_streams_groups import set_group_config, wait_until
from tests.jvm_apps import JvmApp
from tests.kafkatools import commit, create_topic, produce_n


@dataclass
class TypedGroups:
    token: str
    topic: str
    classic: str
    consumer: str
    share: str
    streams: str
    streams_input: str
    share_app: JvmApp
    streams_app: JvmApp


@contextlib.contextmanager
def typed_groups(bootstrap: str, token: str, state_dir: str):
    """The four groups, running; stopped on exit."""
    from confluent_kafka import Consumer

    topic, src, out = f"{token}-t", f"{token}-in", f"{token}-out"
    create_topic(bootstrap, topic, 3)
    produce_n(bootstrap, topic, 3, 10)
    create_topic(bootstrap, src, 2)
    create_topic(bootstrap, out, 2)
    produce_n(bootstrap, src, 2, 5)
    classic, consumer = f"{token}-classic", f"{token}-consumer"
    share, streams = f"{token}-share", f"{token}-streams"
    commit(bootstrap, classic, {(topic, 0): 4})
    set_group_config(bootstrap, share, share_auto_offset_reset="earliest")
    apps: list[JvmApp] = []
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": consumer,
                  "group.protocol": "consumer", "enable.auto.commit": False})
    try:
        sh = JvmApp({"bootstrap.servers": bootstrap}, "share-consume",
                    {"group": share, "topics": [topic]})
        apps.append(sh)
        st = JvmApp({"bootstrap.servers": bootstrap}, "streams-app",
                    {"application_id": streams, "input": src, "output": out,
                     "state_dir": state_dir})
        apps.append(st)
        c.subscribe([topic])
        wait_until("an assignment", lambda: c.poll(0.2) is None and c.assignment())
        sh.wait_for("acknowledged", count=30)
        st.wait_for("state-running")
        yield TypedGroups(token, topic, classic, consumer, share, streams, src, sh, st)
    finally:
        c.close()
        for a in apps:
            a.stop()

