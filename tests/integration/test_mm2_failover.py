"""MirrorMaker 2 failover against real clusters: "prod" (alias A) mirrored to "dr" (alias B) by
MM2 in dedicated mode (connect-mirror 4.3.1). offsetkeeper's translation, read from the
checkpoints itself, must equal RemoteClusterUtils.translateOffsets partition by partition; the
reset through the executor lands the group on the record it had reached, and rolls back."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as CTP

from offsetkeeper.config import Connection
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.mm2.records import latest_checkpoints, latest_offset_syncs
from offsetkeeper.mm2.target import translations
from offsetkeeper.models import TopicPartition
from offsetkeeper.ops.mm2 import mm2_status
from tests.jvm_apps import mm2_translation
from tests.unit.test_output_contract import _check_times
from waiting import wait_for as _wait

pytestmark = pytest.mark.integration




def _value_at(bootstrap: str, topic: str, partition: int, offset: int) -> str:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "t-peek", "enable.auto.commit": False})
    try:
        c.assign([CTP(topic, partition, offset)])
        while True:
            for m in c.consume(1, 1.0):
                if not m.error():
                    return m.value().decode()
    finally:
        c.close()


def test_failover_agrees_with_remote_cluster_utils_resumes_on_the_same_record_and_rolls_back(
        mm2, bootstrap, dr_bootstrap, unique, capsys):
    """For every partition, offsetkeeper's --from-mm2 target equals RemoteClusterUtils'
    translateOffsets; after the reset on the target the group's next record there is the
    record it was about to read on the source (by content); the rollback removes the commits."""
    from cli import run_cli

    topic, group = unique("mm2-orders"), unique("mm2-payments")
    remote = f"A.{topic}"
    with KafkaAdmin(Connection(bootstrap_servers=bootstrap)) as src:
        src.create_topic(topic, 2)
    p = Producer({"bootstrap.servers": bootstrap})
    with KafkaAdmin(Connection(bootstrap_servers=dr_bootstrap)) as dr:
        p.produce(topic, b"0-0", partition=0)
        p.produce(topic, b"1-0", partition=1)
        assert p.flush(30) == 0
        def mirrored():
            c = Consumer({"bootstrap.servers": dr_bootstrap, "group.id": "t-peek"})
            try:
                return all(c.get_watermark_offsets(CTP(remote, n), timeout=5)[1] == 1
                           for n in (0, 1))
            except KafkaException:
                return False
            finally:
                c.close()
        _wait("the topic mirrored", mirrored)
    # one record at a time once MM2 mirrors the topic: each gets its own offset sync
    for i in range(1, 30):
        for part in (0, 1):
            p.produce(topic, f"{part}-{i}".encode(), partition=part)
        assert p.flush(30) == 0
        time.sleep(0.05)
    committed = {0: 26, 1: 29}
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    c.commit(offsets=[CTP(topic, n, off) for n, off in committed.items()], asynchronous=False)
    c.close()

    with KafkaAdmin(Connection(bootstrap_servers=dr_bootstrap)) as dr:
        def checkpointed():
            latest, _ = latest_checkpoints(dr.conn.client_config(), "A")
            got = {p: latest[(group, remote, p)].upstream for p in (0, 1)
                   if (group, remote, p) in latest}
            return got == committed
        _wait("MM2 checkpoints of the group", checkpointed)
        latest, skipped = latest_checkpoints(dr.conn.client_config(), "A")
        ours = translations(latest, "A", {group})[group]
        oracle = mm2_translation(dr.conn.client_config(), "A", (group,))[group]
        assert ours == oracle  # partition by partition, MM2's own answer
        assert skipped == 0

        with KafkaAdmin(Connection(bootstrap_servers=bootstrap)) as src:
            report = mm2_status(dr, "A", source_admin=src, groups=(group,))
        rows = {r.partition: r for r in report.rows}
        assert {n: rows[n].translated for n in (0, 1)} == {n: ours[TopicPartition(remote, n)]
                                                            for n in (0, 1)}
        assert {n: rows[n].source_committed for n in (0, 1)} == committed
        assert all(rows[n].reread_past_checkpoint == 0 and rows[n].target_committed is None
                   for n in (0, 1))
        from tests.integration.test_connect_ui import check_mm2_page

        check_mm2_page(bootstrap, dr_bootstrap, group, report.rows)  # the dashboard's MM2 page

        r = run_cli(capsys, "mm2", "status", "--source-alias", "A", "-g", group,
                    "-b", dr_bootstrap, "--source-bootstrap", bootstrap, "-o", "json")
        assert r.code == 0, r.err
        assert _check_times(r.json()) == []  # checkpoint times as epoch ms beside ISO
        assert {(x["topic"], x["partition"]): x["translated"] for x in r.json()} == {
            (tp.topic, tp.partition): off for tp, off in ours.items()}

        # offset syncs beside the checkpoints: each partition's latest sync pairs a source
        # offset with the target offset of the same record (checked by content)
        def synced():
            got, _ = latest_offset_syncs(Connection(bootstrap_servers=bootstrap).client_config(),
                                         "B")
            return all((topic, n) in got for n in (0, 1)) and got
        syncs = _wait("MM2 offset syncs of both partitions", synced)
        r = run_cli(capsys, "mm2", "status", "--source-alias", "A", "-g", group,
                    "-b", dr_bootstrap, "--source-bootstrap", bootstrap, "-o", "json")
        assert r.code == 0, r.err
        assert "offset syncs not read" not in r.err, r.err
        for x in r.json():
            n = x["partition"]
            assert x["sync_upstream"] >= syncs[(topic, n)].upstream  # the newest sync or later
            assert x["sync_age_s"] is not None and x["sync_age_s"] >= 0
            assert _value_at(bootstrap, topic, n, x["sync_upstream"]) == _value_at(
                dr_bootstrap, remote, n, x["sync_downstream"])
        r = run_cli(capsys, "mm2", "status", "--source-alias", "A", "-g", group,
                    "--target-alias", "B", "-b", dr_bootstrap, "--source-bootstrap", bootstrap,
                    "-o", "csv")
        assert r.code == 0, r.err
        header, *lines = r.out.splitlines()
        assert {"sync_upstream", "sync_downstream", "sync_age_s"} <= set(header.split(","))
        assert len(lines) == 2 and "offset syncs not read" not in r.err
        r = run_cli(capsys, "mm2", "status", "--source-alias", "A", "-g", group,
                    "--target-alias", "C", "-b", dr_bootstrap, "--source-bootstrap", bootstrap)
        assert r.code == 0 and "no topic mm2-offset-syncs.C.internal" in r.err

        r = run_cli(capsys, "offsets", "reset", "-g", group, "--from-mm2", "--source-alias", "A",
                    "--execute", "-b", dr_bootstrap, "-o", "json")
        assert r.code == 0, r.err
        now = dr.committed_offsets(group)
        assert {tp: co.offset for tp, co in now.items()} == ours
        for n, off in committed.items():
            # by content: the group's next record on the target is the one it was about to read
            # on the source, or (MM2 translates conservatively) an earlier one — never a later
            nxt = _value_at(dr_bootstrap, remote, n, ours[TopicPartition(remote, n)])
            assert _value_at(bootstrap, topic, n, off) == f"{n}-{off}"
            assert nxt.startswith(f"{n}-") and int(nxt.split("-")[1]) <= off
            print(f"partition {n}: source offset {off}, resumes on the target at {nxt}")
        snap = r.json()["report"]["snapshot_id"]

        r = run_cli(capsys, "snapshots", "rollback", snap, "--execute", "-b", dr_bootstrap)
        assert r.code == 0, r.err
        assert dr.committed_offsets_each([group])[group] in ({},) or \
            isinstance(dr.committed_offsets_each([group])[group], Exception)


def test_from_mm2_without_alias_is_bad_input(bootstrap, capsys):
    """--from-mm2 names no alias: one line, exit 2."""
    from cli import run_cli

    r = run_cli(capsys, "offsets", "reset", "-g", "g", "--from-mm2", "-b", bootstrap)
    assert r.code == 2 and "--from-mm2 needs --source-alias" in r.err
