"""Bulk resets: many groups at once, partial failure reporting, retries across a broker restart."""

from __future__ import annotations

import threading
import time

import pytest

from offsetkeeper import devbroker
from offsetkeeper.config import Connection
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.reset.apply import ApplyOptions, apply_plan
from offsetkeeper.reset.facts import build_plan
from offsetkeeper.reset.options import ExecuteOptions
from offsetkeeper.reset.plan import ResetScope, TopicSpec
from offsetkeeper.reset.targets import ToEarliest
from tests.cli import run_cli
from tests.kafkatools import LiveConsumer, commit, committed, create_topic, produce_n

pytestmark = pytest.mark.integration


def test_bulk_with_one_active_group(capsys, bootstrap, unique, tmp_path):
    """Invariant: one active group is refused and reported; the others all succeed; exit 1."""
    topic = unique("bulk")
    create_topic(bootstrap, topic, 4)
    produce_n(bootstrap, topic, 4, 5)
    groups = [unique("bg") for _ in range(40)]
    for g in groups:
        commit(bootstrap, g, {(topic, p): 3 for p in range(4)})
    live = groups[7]
    consumer = LiveConsumer(bootstrap, live, [topic])
    try:
        args = [a for g in groups for a in ("-g", g)]
        r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, *args, "-t", topic, "--to-latest",
                    "--execute", "--max-concurrent", "8", "--snapshot-store", tmp_path, "-o", "json")
    finally:
        consumer.stop()
    assert r.code == 1
    report = r.json()["report"]
    assert report["status"] == "PARTIAL_SUCCESS"
    assert (report["groups_total"], report["groups_succeeded"], report["groups_failed"]) == (40, 39, 1)
    assert report["partitions_changed"] == 39 * 4
    assert report["offsets_per_s"] > 0 and report["latency_p99_ms"] >= report["latency_p50_ms"]
    refused = [g for g in report["groups"] if g["status"] != "success"]
    assert [(g["group"], g["status"]) for g in refused] == [(live, "refused")]
    assert f"group {live} has" in r.err
    assert report["snapshot_id"]
    for g in groups:
        want = 3 if g == live else 5
        assert committed(bootstrap, g, topic, 4) == {p: want for p in range(4)}, g


def test_retriable_fault_recovered_by_retries(unique, tmp_path):
    """Invariant: a broker that goes away mid-run and comes back costs retries, not failures."""
    data = tmp_path / "flaky"
    port = devbroker.free_port()
    st = devbroker.start(port, data, tied=True)
    try:
        topic = unique("flaky")
        create_topic(st.bootstrap, topic, 2)
        produce_n(st.bootstrap, topic, 2, 4)
        groups = [unique("fg") for _ in range(10)]
        for g in groups:
            commit(st.bootstrap, g, {(topic, 0): 4, (topic, 1): 4})
        with KafkaAdmin(Connection(st.bootstrap), timeout=2.0) as admin:
            plan = build_plan(admin, ResetScope(groups=tuple(groups), topics=(TopicSpec(topic),)),
                              ToEarliest())
            devbroker.stop(data)  # the cluster goes away after planning...

            def come_back():
                time.sleep(5.0)
                devbroker.start(port, data)  # not tied: this thread ends at once

            t = threading.Thread(target=come_back)
            t.start()
            report = apply_plan(admin, plan, ApplyOptions(ExecuteOptions(retries=8, backoff_base_s=0.3)))
            t.join()
        assert report.status == "SUCCESS", report.results
        assert max(r.attempts for r in report.results) > 1
        for g in groups:
            assert committed(st.bootstrap, g, topic, 2) == {0: 0, 1: 0}
    finally:
        devbroker.stop(data)


def test_exhausted_retries_reported_per_group(unique, bootstrap):
    """A cluster that never comes back: each group fails after its retries, with a reason."""
    dead = Connection("127.0.0.1:1")
    topic = unique("nr")
    create_topic(bootstrap, topic, 1)
    with KafkaAdmin(Connection(bootstrap)) as admin:
        plan = build_plan(admin, ResetScope(groups=(unique("g"),), topics=(TopicSpec(topic),),
                                            create_groups=True), ToEarliest())
    with KafkaAdmin(dead, timeout=0.5) as admin:
        report = apply_plan(admin, plan, ApplyOptions(ExecuteOptions(retries=1, backoff_base_s=0.01)))
    assert report.status == "FAILED"
    r = report.results[0]
    assert r.status == "failed" and r.attempts == 2 and "connection" in r.error
