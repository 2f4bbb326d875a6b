"""Status that holds its verdicts (issue 32, goal 4) on Apache Kafka: real members commit,
the sampler records into SQLite, `lag status` judges. A rewound consumer-protocol group stays
REWIND while it re-reads, for longer than a window, and says how far back it has come; a
consumer whose lag stays small and bounded is OK, not WARN."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CkTP

from offsetkeeper.history.read import status
from offsetkeeper.history.sample_cycle import SampleScope
from offsetkeeper.history.sampler import Sampler, SamplerConfig
from offsetkeeper.history.status import Status
from offsetkeeper.history.store import open_store
from tests.cli import run_cli
from tests.kafkatools import create_topic, produce

pytestmark = pytest.mark.integration
WINDOW = 4


def _produce(bootstrap, topic, n):
    produce(bootstrap, topic, ((0, None, f"v{i}".encode()) for i in range(n)))


class Member:
    """A member of the group (`protocol`: classic or consumer) that commits what it is told."""

    def __init__(self, bootstrap, group, topic, protocol="classic"):
        conf = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                "auto.offset.reset": "earliest"}
        if protocol == "consumer":
            conf["group.protocol"] = "consumer"
        self.c = Consumer(conf)
        self.c.subscribe([topic])
        self.topic = topic
        deadline = time.monotonic() + 30
        while not self.c.assignment() and time.monotonic() < deadline:
            self.c.poll(0.1)
        assert self.c.assignment()

    def commit(self, offset):
        self.c.poll(0)
        self.c.commit(offsets=[CkTP(self.topic, 0, offset)], asynchronous=False)

    def close(self):
        self.c.close()


def test_rewound_consumer_protocol_group_stays_rewind_until_it_passes_its_old_offset(
        bootstrap, admin, unique, tmp_path, capsys):
    topic, group = unique("t"), unique("g")
    create_topic(bootstrap, topic, 1)
    _produce(bootstrap, topic, 200)
    db = str(tmp_path / "history.db")
    store = open_store(db)
    sampler = Sampler(admin, store, SamplerConfig(scope=SampleScope(groups=(group,)),
                                                  interval_ms=200, window=WINDOW))
    member = Member(bootstrap, group, topic, protocol="consumer")
    # 40 .. 100, then back to 20 and re-reading 10 a cycle: 7 cycles below 100 (> a window)
    offsets = [40, 60, 80, 100, 20, 30, 40, 50, 60, 70, 80]
    seen = []
    try:
        for o in offsets:
            member.commit(o)
            out = sampler.run_once()
            assert out.ok and out.stored, out.message
            seen.append(status(store, [group], window=WINDOW)[0])
        assert [g.partitions[0].status for g in seen[4:]] == [Status.REWIND] * 7
        last = seen[-1]
        assert last.status is Status.ERR
        assert "went back from 100 to 20" in last.reason
        assert "re-reading: 60 of 80 back (75%)" in last.reason
        r = run_cli(capsys, "lag", "status", group, "--store", db, "--window", str(WINDOW),
                    "-o", "json")
        assert r.code == 1 and "re-reading: 60 of 80 back" in r.json()[0]["reason"]
        member.commit(120)  # past its offset from before the rewind
        assert sampler.run_once().stored
        assert status(store, [group], window=WINDOW)[0].partitions[0].status is not Status.REWIND
    finally:
        member.close()
        sampler.finish()
        store.close()


def test_small_bounded_lag_is_ok_not_warn(bootstrap, admin, unique, tmp_path):
    """Invariant: a member that keeps 2-3 records behind while producers write 10 per sample
    is OK (Burrow's rule alone says WARN: the lag never decreased)."""
    topic, group = unique("t"), unique("g")
    create_topic(bootstrap, topic, 1)
    store = open_store(str(tmp_path / "history.db"))
    sampler = Sampler(admin, store, SamplerConfig(scope=SampleScope(groups=(group,)),
                                                  interval_ms=200, window=WINDOW))
    member = Member(bootstrap, group, topic)
    try:
        end = 0
        for i in range(WINDOW + 3):
            _produce(bootstrap, topic, 10)
            end += 10
            member.commit(end - (2 if i < 3 else 3))
            assert sampler.run_once().stored
        st = status(store, [group], window=WINDOW)[0]
        assert st.partitions[0].lag == 3 and st.status is Status.OK, st.reason
    finally:
        member.close()
        sampler.finish()
        store.close()


def test_rewind_lookback_shorter_than_the_window_is_bad_input(capsys, tmp_path):
    r = run_cli(capsys, "lag", "status", "g", "--store", str(tmp_path / "h.db"), "--window", "10",
                "--rewind-lookback", "5")
    assert r.code == 2
    assert "--rewind-lookback 5 is shorter than --window 10" in r.err
    assert not (tmp_path / "h.db").exists()  # bad input changes nothing
