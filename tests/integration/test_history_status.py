"""Status from real consumers driven at known rates: STOP, STALL, REWIND, WARN and the idle OK."""

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
from tests.kafkatools import LiveConsumer, commit, create_topic, produce

pytestmark = pytest.mark.integration
WINDOW = 4


def _produce(bootstrap, topic, n):
    produce(bootstrap, topic, ((0, None, f"v{i}".encode()) for i in range(n)))


class Committer:
    """A member of the group that consumes and commits exactly what the test says."""

    def __init__(self, bootstrap, group, topic):
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                           "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        self.c.subscribe([topic])
        self.topic = topic
        deadline = time.monotonic() + 20
        while not self.c.assignment() and time.monotonic() < deadline:
            self.c.poll(0.1)
        assert self.c.assignment()

    def commit(self, offset):
        self.c.poll(0)
        self.c.commit(offsets=[CkTP(self.topic, 0, offset)], asynchronous=False)

    def close(self):
        self.c.close()


def _cycles(sampler, n, between=None):
    for _ in range(n):
        if between is not None:
            between()
        out = sampler.run_once()
        assert out.ok and out.stored, out.message


@pytest.fixture
def sampler_for(admin):
    made = []

    def make(*groups, store_url="memory://"):
        store = open_store(store_url)
        s = Sampler(admin, store, SamplerConfig(scope=SampleScope(groups=groups), interval_ms=200,
                                                window=WINDOW))
        made.append(s)
        return s, store

    yield make
    for s in made:
        s.finish()


def test_idle_topic_with_a_caught_up_consumer_is_ok(bootstrap, unique, sampler_for):
    """Invariant (Burrow #38/#140/#287): nobody commits on an idle topic, the group is caught
    up -> OK, with or without members, however long it stays idle."""
    topic, live, gone = unique("t"), unique("g"), unique("g")
    create_topic(bootstrap, topic, 1)
    _produce(bootstrap, topic, 20)
    member = Committer(bootstrap, live, topic)
    member.commit(20)
    commit(bootstrap, gone, {(topic, 0): 20})
    sampler, store = sampler_for(live, gone)
    try:
        _cycles(sampler, WINDOW + 2)
    finally:
        member.close()
    result = {g.group: g for g in status(store, [live, gone], window=WINDOW)}
    assert result[live].status is Status.OK and result[gone].status is Status.OK
    assert result[live].partitions[0].consumer_id  # it had an owner all along


def test_stopped_consumer_is_stop_and_stuck_member_is_stall(bootstrap, unique, sampler_for):
    topic, stopped, stuck = unique("t"), unique("g"), unique("g")
    create_topic(bootstrap, topic, 1)
    _produce(bootstrap, topic, 10)
    commit(bootstrap, stopped, {(topic, 0): 10})  # committed, then went away
    commit(bootstrap, stuck, {(topic, 0): 5})
    member = LiveConsumer(bootstrap, stuck, [topic])  # polls, never commits
    try:
        sampler, store = sampler_for(stopped, stuck)
        _cycles(sampler, WINDOW + 1, between=lambda: _produce(bootstrap, topic, 3))
        result = {g.group: g for g in status(store, [stopped, stuck], window=WINDOW)}
    finally:
        member.stop()
    assert result[stopped].partitions[0].status is Status.STOP
    assert result[stuck].partitions[0].status is Status.STALL
    assert result[stopped].status is Status.ERR and result[stuck].status is Status.ERR
    assert "no consumer" in result[stopped].reason and "has not moved" in result[stuck].reason


def test_rewinding_consumer_is_rewind_and_slow_one_is_warn(bootstrap, unique, sampler_for):
    topic, rewinder, slow = unique("t"), unique("g"), unique("g")
    create_topic(bootstrap, topic, 1)
    _produce(bootstrap, topic, 100)
    a, b = Committer(bootstrap, rewinder, topic), Committer(bootstrap, slow, topic)
    steps = iter(range(100))
    rewinds = iter([50, 60, 70, 80, 30, 40])
    sampler, store = sampler_for(rewinder, slow)

    def step():
        i = next(steps)
        _produce(bootstrap, topic, 10)       # 10 records per cycle in ...
        a.commit(next(rewinds))
        b.commit(10 + 5 * i)                 # ... 5 consumed per cycle: lag grows every cycle

    try:
        _cycles(sampler, WINDOW + 2, between=step)
    finally:
        a.close()
        b.close()
    result = {g.group: g for g in status(store, [rewinder, slow], window=WINDOW)}
    assert result[rewinder].partitions[0].status is Status.REWIND
    assert "went back from 80 to 30" in result[rewinder].reason
    assert result[slow].status is Status.WARN and result[slow].partitions[0].status is Status.WARN


def test_lag_status_cli_exit_codes(bootstrap, unique, capsys, tmp_path):
    """`lag status` works as a check: exit 0 when OK, 1 when any group is ERR, 2 on bad input."""
    topic, ok, bad = unique("t"), unique("g"), unique("g")
    create_topic(bootstrap, topic, 1)
    _produce(bootstrap, topic, 10)
    commit(bootstrap, ok, {(topic, 0): 10})
    commit(bootstrap, bad, {(topic, 0): 2})
    db = str(tmp_path / "h.db")
    for _ in range(3):
        r = run_cli(capsys, "history", "record", "-g", ok, "-g", bad, "--once", "--store", db,
                    "-b", bootstrap)
        assert r.code == 0, r.err
        _produce(bootstrap, topic, 1)
    commit(bootstrap, ok, {(topic, 0): 13})
    run_cli(capsys, "history", "record", "-g", ok, "--once", "--store", db, "-b", bootstrap)
    assert run_cli(capsys, "lag", "status", ok, "--store", db, "--window", "3").code == 0
    r = run_cli(capsys, "lag", "status", ok, bad, "--store", db, "--window", "3", "-o", "json")
    assert r.code == 1
    by = {g["group"]: g for g in r.json()}
    assert by[bad]["status"] == "ERR" and by[bad]["partitions"][0]["status"] == "STOP"
    assert by[ok]["status"] == "OK"
    r = run_cli(capsys, "lag", "status", "--all-groups", "--store", db, "--window", "3",
                "--partitions", "-o", "csv")
    assert r.code == 1 and r.out.splitlines()[0].startswith("group,topic,partition,status")
    assert run_cli(capsys, "lag", "status", "nope", "--store", db).code == 2
    r = run_cli(capsys, "lag", "status", ok, "--store", db, "--window", "1")
    assert r.code == 2 and "--window 1 is too small" in r.err
