"""History, status and the exporter sample share groups (KIP-932) on Apache Kafka 4.4.0: the
start offset as the group's position and the broker's lag (KIP-1226), checked against
kafka-share-groups.sh --describe."""

from __future__ import annotations

import subprocess
import time
import uuid

import pytest

from offsetkeeper.devbroker import dist
from offsetkeeper.history.exporter import LagCollector
from offsetkeeper.history.read import status
from offsetkeeper.history.sample_cycle import SampleScope
from offsetkeeper.history.sampler import Sampler, SamplerConfig
from offsetkeeper.history.status import Status
from offsetkeeper.history.store import open_store
from offsetkeeper.kafka import jvm
from offsetkeeper.models import TopicPartition
from tests.cli import run_cli
from tests.jvm_apps import JvmApp
from tests.kafkatools import create_topic, produce_n

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not jvm.available(), reason="the JVM admin helper is not built "
                                 "(scripts/setup.sh)")]
WINDOW = 3


def describe(bootstrap: str, group: str) -> dict[tuple[str, int], tuple[str, str]]:
    """kafka-share-groups.sh --describe: (topic, partition) -> (START-OFFSET, LAG)."""
    out = subprocess.run(dist.tool_command("kafka-share-groups", "--bootstrap-server", bootstrap,
                                           "--describe", "--group", group),
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL).stdout
    rows = [ln.split() for ln in out.splitlines() if ln.strip()]
    return {(r[1], int(r[2])): (r[3], r[4]) for r in rows if r[0] == group}


@pytest.fixture
def sampler_for(admin):
    made = []

    def make(scope: SampleScope):
        store = open_store("memory://")
        s = Sampler(admin, store, SamplerConfig(scope=scope, interval_ms=200, window=WINDOW))
        made.append(s)
        return s, store

    yield make
    for s in made:
        s.finish()


def test_share_group_sampled_with_start_offset_and_broker_lag(bootstrap, admin, unique,
                                                              sampler_for, capsys, tmp_path):
    """A share group without members, start offsets 4 and 10 of 10 records: the samples hold
    the start offsets and KIP-1226's lag (as kafka-share-groups.sh shows them), status says
    STOP for the partition nobody consumes and OK for the done one, the exporter publishes the
    lag, and `history record --all-groups` finds the group without being told its name."""
    topic, g = unique("sh"), unique("shg")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 10)
    res = admin.alter_share_group_offsets(g, {TopicPartition(topic, 0): 4,
                                              TopicPartition(topic, 1): 10})
    assert not any(res.values()), res
    sampler, store = sampler_for(SampleScope(groups=(g,)))
    col = LagCollector(sampler.recent, cluster_name="c")
    sampler.listeners.append(col.prepare)
    for _ in range(WINDOW + 5):
        out = sampler.run_once()
        assert out.ok and out.stored, out.message
        # a partition's first cycles may come before the share coordinator knows its start
        # offset (Kafka 4.4): sample until the window is full, INCOMPLETE until then
        (gs,) = status(store, [g], window=WINDOW)
        if gs.status is not Status.INCOMPLETE:
            break
    samples = {(s.topic, s.partition): s for s in store.latest(g)}
    theirs = describe(bootstrap, g)
    assert {k: (str(s.committed), str(s.lag)) for k, s in samples.items()} == theirs
    assert samples[(topic, 0)].lag == 6 and samples[(topic, 0)].state == "empty"
    by = {(p.topic, p.partition): p.status for p in gs.partitions}
    assert gs.status == Status.ERR and by == {(topic, 0): Status.STOP, (topic, 1): Status.OK}, gs
    text = col.render().decode()
    lags = {ln.split('partition="')[1][0]: ln.rsplit(" ", 1)[1] for ln in text.splitlines()
            if ln.startswith(f'kafka_consumergroup_group_lag{{cluster_name="c",group="{g}",')}
    assert lags == {"0": "6.0", "1": "0.0"}, text

    db = str(tmp_path / "h.db")
    r = run_cli(capsys, "history", "record", "--all-groups", "--once", "--store", db,
                "-b", bootstrap)
    assert r.code == 0, r.err
    r = run_cli(capsys, "history", "show", g, "--store", db, "-o", "json")
    assert r.code == 0, r.err
    assert {(x["topic"], x["partition"], x["committed"], x["lag"]) for x in r.json()} == \
        {(topic, 0, 4, 6), (topic, 1, 10, 0)}


def test_acknowledged_queue_is_ok_even_when_its_start_offset_lags(bootstrap, unique,
                                                                  sampler_for):
    """Invariant: a share group that acknowledged every record is OK, whatever its start
    offset says. The share coordinator moves the start offset lazily (it may stay at 0 after
    every record is acknowledged); the status judges the broker's lag, not log end - start."""
    topic, g = unique("sq"), f"sqg-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 10)
    subprocess.run(dist.tool_command("kafka-configs", "--bootstrap-server", bootstrap, "--alter",
                                     "--entity-type", "groups", "--entity-name", g, "--add-config",
                                     "share.auto.offset.reset=earliest"),
                   capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    app = JvmApp({"bootstrap.servers": bootstrap}, "share-consume",
                 {"group": g, "topics": [topic]})
    try:
        app.wait_for("acknowledged", count=20)
        deadline = time.monotonic() + 60
        while {v[1] for v in describe(bootstrap, g).values()} != {"0"}:
            assert time.monotonic() < deadline, describe(bootstrap, g)
            time.sleep(0.5)
        sampler, store = sampler_for(SampleScope(all_groups=True))
        for _ in range(WINDOW):
            out = sampler.run_once()
            assert out.ok and out.stored, out.message
        latest = store.latest(g)
        assert {(s.topic, s.partition) for s in latest} == {(topic, 0), (topic, 1)}
        assert all(s.lag == 0 and s.members == 1 and s.state == "stable" for s in latest), latest
        (gs,) = status(store, [g], window=WINDOW)
        assert gs.status == Status.OK, gs
    finally:
        app.stop()
