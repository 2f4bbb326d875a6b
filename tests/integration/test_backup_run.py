"""Backups against the real broker and real local Spark: what was backed up equals what an
independent confluent-kafka consumer reads, byte for byte; snapshot, incremental, gaps, groups."""

from __future__ import annotations

import pytest

from backup_support import SPECIAL, delete_records, independent_read, produce_transactions, rows_of
from cli import run_cli
from kafkatools import commit, create_topic, produce, produce_n
from offsetkeeper.backup import run as run_mod
from offsetkeeper.backup.config import BackupConfig
from offsetkeeper.backup.manifest import load_manifest, read_backup_records
from offsetkeeper.backup.run import run_backup

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _backed_up(spark, dest, backup_id, topic):
    return rows_of(read_backup_records(spark, dest, backup_id).where(f"topic = '{topic}'"))


@pytest.mark.spark_oldest
def test_backup_plain_compacted_transactional_and_special_records(spark, bootstrap, conn, unique,
                                                                 tmp_path, capsys, monkeypatch):
    prefix = unique("bk")
    plain, compacted, tx = f"{prefix}-plain", f"{prefix}-compacted", f"{prefix}-tx"
    create_topic(bootstrap, plain, 3)
    create_topic(bootstrap, compacted, 1, {"cleanup.policy": "compact", "retention.ms": "-1",
                                           "min.cleanable.dirty.ratio": "0.01", "segment.ms": "100"})
    create_topic(bootstrap, tx, 1)
    create_topic(bootstrap, f"{prefix}-skip", 1)
    produce(bootstrap, plain, SPECIAL + [(2, f"k{i}".encode(), f"v{i}".encode()) for i in range(15)])
    produce(bootstrap, compacted, [(0, f"k{i % 4}".encode(), f"v{i}".encode()) for i in range(20)])
    produce(bootstrap, compacted, [(0, b"k1", None), (0, b"k2", None)])
    produce_transactions(bootstrap, tx, unique("txid"))
    produce_n(bootstrap, f"{prefix}-skip", 1, 3)
    group = unique("g")
    commit(bootstrap, group, {(plain, 0): 2, (plain, 2): 10, (tx, 0): 7})

    dest = str(tmp_path / "backups")
    monkeypatch.setenv("OFFSETKEEPER_CONFIG", str(tmp_path / "none.yaml"))
    (tmp_path / "none.yaml").write_text("{}\n")
    r = run_cli(capsys, "backup", "run", "-b", bootstrap, "-t", f"{prefix}-*",
                "--exclude", "*-skip", "--dest", dest, "--id", "full", "-o", "json")
    assert r.code == 0, r.err
    summary = r.json()
    assert summary["topics"] == [compacted, plain, tx] and summary["gaps"] == []

    for topic, n in ((plain, 3), (compacted, 1), (tx, 1)):
        assert _backed_up(spark, dest, "full", topic) == independent_read(bootstrap, topic, n), topic
    m = load_manifest(dest, "full")
    assert summary["records"] == m.record_count == len(SPECIAL) + 15 + len(
        independent_read(bootstrap, compacted, 1)) + 9
    t = m.topic(tx)
    p = t.partition(0)
    assert (p.start_offset, p.end_offset, p.record_count) == (0, 20, 9)  # 5 markers, 6 aborted
    assert m.topic(compacted).configs["cleanup.policy"] == "compact"
    assert m.topic(plain).partition_count == 3
    assert {o.partition: o.offset for g in m.groups if g.group == group
            for o in g.offsets if o.topic == plain} == {0: 2, 2: 10}
    # per partition checksum equals the one recomputed independently from the same rows
    from offsetkeeper.backup.checksum import record_checksums
    sums = record_checksums(read_backup_records(spark, dest, "full"))
    assert sums[(plain, 2)] == (15, m.topic(plain).partition(2).checksum)
    p2 = [r for r in independent_read(bootstrap, plain, 3) if r[0] == 2]
    entry = m.topic(plain).partition(2)
    assert (entry.first_timestamp, entry.last_timestamp) == (p2[0][2], p2[-1][2])
    assert (entry.segments[0].first_offset, entry.segments[0].last_offset) == (p2[0][1], p2[-1][1])

    # the CLI shows it
    r = run_cli(capsys, "backups", "list", "--dest", dest)
    assert r.code == 0 and "full" in r.out
    r = run_cli(capsys, "backups", "describe", "full", "--dest", dest)
    assert r.code == 0 and tx in r.out and group in r.out
    r = run_cli(capsys, "backups", "describe", "nope", "--dest", dest)
    assert r.code == 2 and "backup 'nope' not found" in r.err  # bad input (issue 22 item 20)


@pytest.mark.spark_oldest
def test_incremental_run_appends_only_new_records(spark, bootstrap, conn, unique, tmp_path,
                                                  monkeypatch):
    topic = unique("inc")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 5)
    cfg = BackupConfig(connection=conn, include=(topic,), destination=str(tmp_path), backup_id="inc")
    first = run_backup(cfg, spark=spark)
    assert (first.run, first.records) == (1, 10)
    again = run_backup(cfg, spark=spark)  # nothing new
    assert (again.run, again.records, again.partitions) == (2, 0, 0)
    produce(bootstrap, topic, [(1, b"new", f"n{i}".encode()) for i in range(3)])
    third = run_backup(cfg, spark=spark)
    assert (third.run, third.records, third.partitions) == (3, 3, 1)
    m = load_manifest(str(tmp_path), "inc")
    p1 = m.topic(topic).partition(1)
    assert [(s.run, s.start_offset, s.end_offset, s.record_count) for s in p1.segments] == [
        (1, 0, 5, 5), (3, 5, 8, 3)]
    assert p1.record_count == 8 and p1.end_offset == 8
    assert _backed_up(spark, str(tmp_path), "inc", topic) == independent_read(bootstrap, topic, 2)


def test_snapshot_end_is_fixed_at_start(spark, bootstrap, conn, unique, tmp_path, monkeypatch):
    """Records produced after the run planned its end offsets belong to the next run."""
    topic = unique("snap")
    create_topic(bootstrap, topic, 1)
    produce_n(bootstrap, topic, 1, 4)
    real = run_mod.plan_run

    def plan_then_produce(*a, **kw):
        plan = real(*a, **kw)
        produce(bootstrap, topic, [(0, b"late", b"late")])
        return plan

    monkeypatch.setattr(run_mod, "plan_run", plan_then_produce)
    cfg = BackupConfig(connection=conn, include=(topic,), destination=str(tmp_path), backup_id="s")
    r = run_backup(cfg, spark=spark)
    assert r.records == 4
    assert load_manifest(str(tmp_path), "s").topic(topic).partition(0).end_offset == 4


def test_log_start_advancing_between_planning_and_reading_is_a_gap(spark, bootstrap, conn, unique,
                                                                  tmp_path, monkeypatch):
    topic = unique("ret")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 10)
    real = run_mod.plan_run

    def plan_then_delete(*a, **kw):
        plan = real(*a, **kw)
        delete_records(bootstrap, topic, 1, 6)  # retention strikes after planning
        return plan

    monkeypatch.setattr(run_mod, "plan_run", plan_then_delete)
    cfg = BackupConfig(connection=conn, include=(topic,), destination=str(tmp_path), backup_id="g")
    r = run_backup(cfg, spark=spark)
    assert r.records == 14
    assert [(t, p, g.start, g.end) for t, p, g in r.gaps] == [(topic, 1, 0, 6)]
    p1 = load_manifest(str(tmp_path), "g").topic(topic).partition(1)
    assert [(g.start, g.end) for g in p1.gaps] == [(0, 6)]
    assert (p1.start_offset, p1.end_offset, p1.record_count) == (0, 10, 4)
    assert _backed_up(spark, str(tmp_path), "g", topic) == independent_read(bootstrap, topic, 2)


def test_backup_run_usage_errors(capsys, tmp_path, bootstrap, monkeypatch):
    monkeypatch.setenv("OFFSETKEEPER_CONFIG", str(tmp_path / "none.yaml"))
    (tmp_path / "none.yaml").write_text("{}\n")
    r = run_cli(capsys, "backup", "run", "-b", bootstrap, "--dest", str(tmp_path), "--id", "x")
    assert r.code == 2 and "no topics given" in r.err
    r = run_cli(capsys, "backup", "run", "-b", bootstrap, "-t", "no-such-topic-*", "--dest",
                str(tmp_path), "--id", "x")
    assert r.code == 2 and "no topic matches no-such-topic-*" in r.err
    r = run_cli(capsys, "backup", "run", "-b", bootstrap, "-t", "a", "--dest", str(tmp_path),
                "--id", "x", "--conf", "novalue")
    assert r.code == 2 and "--conf 'novalue' is not key=value" in r.err
    r = run_cli(capsys, "backup", "run", "-b", bootstrap, "-t", "a", "--dest", str(tmp_path),
                "--id", "../x")
    assert r.code == 2 and "backup id '../x' is invalid" in r.err
