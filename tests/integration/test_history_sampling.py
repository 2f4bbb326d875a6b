"""Sampling against the real broker: what a cycle reads, time lag vs produced timestamps, the
commands that read the history back, and `offsets reset --to-history`."""

from __future__ import annotations

import time

import pytest

from offsetkeeper.history.sample_cycle import CycleSampler, SampleScope
from offsetkeeper.history.store import open_store
from tests.cli import run_cli
from tests.kafkatools import commit, committed, create_topic, produce, produce_n

pytestmark = pytest.mark.integration


def test_cycle_reads_offsets_metadata_and_exact_time_lag(bootstrap, admin, unique):
    """Exact time lag = sample time - timestamp of the record at the committed offset; 0 when
    caught up; the next record's timestamp is fetched once per offset (cached)."""
    topic, group = unique("t"), unique("g")
    create_topic(bootstrap, topic, 2, {"retention.ms": "-1"})
    t0 = int(time.time() * 1000) - 3_600_000
    produce_n(bootstrap, topic, 2, 10, timestamp_ms=lambda p, i: t0 + p * 100_000 + i * 1000)
    commit(bootstrap, group, {(topic, 0): 4, (topic, 1): 10})
    cs = CycleSampler(admin, SampleScope(groups=(group,)))
    try:
        first = cs.sample()
        second = cs.sample()
    finally:
        cs.close()
    p0, p1 = sorted(first.samples, key=lambda s: s.partition)
    assert (p0.committed, p0.log_start, p0.log_end, p0.lag) == (4, 0, 10, 6)
    assert p0.next_ts == t0 + 4 * 1000                      # the produced timestamp of offset 4
    assert p0.time_lag_ms == p0.ts - (t0 + 4000)
    assert (p1.lag, p1.next_ts, p1.time_lag_ms, p1.time_lag_s) == (0, None, 0, 0.0)
    assert p0.state == "empty" and p0.members == 0 and p0.consumer_id == ""
    assert cs.next_times.fetched == 1                        # second cycle: from the cache
    # samples come in no particular partition order
    assert min(second.samples, key=lambda s: s.partition).next_ts == p0.next_ts


def test_next_record_fetches_are_batched_exact_and_the_cache_stays_bounded(bootstrap, admin, unique):
    """Regression (issue 10, RSS grew over an hour of 1 s sampling): the next-record fetches of
    many lagging partitions are split into batches bounded by their expected tails (the
    development broker returns whole tails, ignoring fetch limits), every timestamp is still the
    produced one, and as committed offsets advance the offset cache keeps one entry per
    partition (nothing accumulates per offset)."""
    topic, group = unique("t"), unique("g")
    parts = 6
    create_topic(bootstrap, topic, parts, {"retention.ms": "-1"})
    t0 = int(time.time() * 1000) - 3_600_000
    produce_n(bootstrap, topic, parts, 30, timestamp_ms=lambda p, i: t0 + p * 100_000 + i * 1000)
    cs = CycleSampler(admin, SampleScope(groups=(group,)))
    cs.next_times.BATCH_RECORDS = 50   # tails of 30, 29, ... records: one or two per batch
    try:
        for step in range(4):
            commit(bootstrap, group, {(topic, p): step * 5 + p for p in range(parts)})
            res = cs.sample()
            for s in res.samples:
                assert s.next_ts == t0 + s.partition * 100_000 + s.committed * 1000, s
                assert s.time_lag_ms == s.ts - s.next_ts
            assert len(cs.next_times._cache) == parts
    finally:
        cs.close()
    assert cs.next_times.fetched == 4 * parts                # one fetch per partition and offset
    assert cs.next_times.batches >= 4 * 3                    # never all six tails in one answer


def test_interpolated_time_lag_tracks_the_produce_times(bootstrap, admin, unique):
    """The interpolated estimate comes from sampled log ends only; checked against the real
    produce timestamps (within the sampling resolution)."""
    topic, group = unique("t"), unique("g")
    create_topic(bootstrap, topic, 1)
    commit(bootstrap, group, {(topic, 0): 0})
    cs = CycleSampler(admin, SampleScope(groups=(group,)), time_lag=False)
    stamps = []
    try:
        cs.sample()
        for i in range(6):
            produce(bootstrap, topic, [(0, None, f"v{i}-{j}".encode()) for j in range(5)])
            stamps.append(int(time.time() * 1000))
            cs.sample()
            time.sleep(0.2)
        commit(bootstrap, group, {(topic, 0): 12})          # offset 12 was produced in batch 2
        s = cs.sample().samples[0]
    finally:
        cs.close()
    assert s.time_lag_ms is None and s.lag == 30 - 12
    produced_at = stamps[2]
    true_lag = s.ts - produced_at
    # the estimate is bounded by the two samples around the produce time
    assert abs(s.time_lag_interp_ms - true_lag) < 700, (s.time_lag_interp_ms, true_lag)


def _record(capsys, store, group, bootstrap):
    r = run_cli(capsys, "history", "record", "-g", group, "--once", "--store", store, "-b", bootstrap)
    assert r.code == 0, r.err
    return r


def test_record_show_at_and_reset_to_history(bootstrap, unique, capsys, tmp_path):
    """`--to-history T` puts the group back where it was at T (checked with an independent
    client), through the one executor: plan first, --execute applies."""
    topic, group = unique("t"), unique("g")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 50)
    db = str(tmp_path / "h.db")
    commit(bootstrap, group, {(topic, 0): 10, (topic, 1): 20})
    _record(capsys, db, group, bootstrap)
    time.sleep(0.05)
    t_mid = int(time.time() * 1000)
    time.sleep(0.05)
    commit(bootstrap, group, {(topic, 0): 40, (topic, 1): 45})
    _record(capsys, db, group, bootstrap)

    r = run_cli(capsys, "history", "show", group, "--store", db, "-o", "json")
    assert r.code == 0
    rows = r.json()
    assert [(x["partition"], x["committed"], x["lag"]) for x in rows] == \
        [(0, 10, 40), (1, 20, 30), (0, 40, 10), (1, 45, 5)]
    assert rows[2]["rate"] > 0 and rows[0]["rate"] is None
    r = run_cli(capsys, "history", "show", group, "--topic", topic, "--store", db, "-o", "csv")
    assert r.out.splitlines()[0] == ("time,time_iso,topic,partition,committed,log_end,lag,lag_raw,"
                                     "time_lag_s,time_lag_interp_s,rate,open_txn_since,open_txn_since_iso")

    t_iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t_mid / 1000)) + f".{t_mid % 1000:03d}Z"
    r = run_cli(capsys, "history", "at", group, "--time", t_iso, "--store", db, "-o", "json")
    assert r.code == 0, r.err
    assert [(x["partition"], x["committed"]) for x in r.json()] == [(0, 10), (1, 20)]
    assert r.json()[0]["sample_age_s"] >= 0

    plan = run_cli(capsys, "offsets", "reset", "-g", group, "--to-history", t_iso,
                   "--history-store", db, "-b", bootstrap, "-o", "json")
    assert plan.code == 0, plan.err
    assert committed(bootstrap, group, topic, 2) == {0: 40, 1: 45}   # dry run changed nothing
    r = run_cli(capsys, "offsets", "reset", "-g", group, "--to-history", t_iso,
                "--history-store", db, "-b", bootstrap, "--execute", "--no-snapshot")
    assert r.code == 0, r.err
    assert "history sample of" in r.out
    assert committed(bootstrap, group, topic, 2) == {0: 10, 1: 20}


def test_to_history_bad_input_exits_2(bootstrap, unique, capsys, tmp_path):
    topic, group = unique("t"), unique("g")
    create_topic(bootstrap, topic, 1)
    produce_n(bootstrap, topic, 1, 20)
    db = str(tmp_path / "h.db")
    commit(bootstrap, group, {(topic, 0): 5})
    _record(capsys, db, group, bootstrap)
    for args, msg in [
        (["--to-history", "yesterday-ish"], "--to-history 'yesterday-ish'"),
        (["--to-history", "2000-01-01T00:00:00Z"], "history starts at"),
        (["--to-history", "1m", "--history-store", "bogus://x"], "unknown scheme"),
        (["--to-history", "now", "--to-latest"], "conflicting reset targets"),
    ]:
        # the test's store unless the case names another (one value per option: given twice
        # with two values is refused)
        store = [] if "--history-store" in args else ["--history-store", db]
        r = run_cli(capsys, "offsets", "reset", "-g", group, *store, "-b", bootstrap, *args)
        assert r.code == 2 and msg in r.err, (args, r.err)
    r = run_cli(capsys, "offsets", "reset", "--to-history", "1m", "--history-store", db, "-b", bootstrap)
    assert r.code == 2 and "--group" in r.err
    assert committed(bootstrap, group, topic, 1) == {0: 5}


def test_no_commit_at_the_time_keeps_the_partition_with_a_note(bootstrap, unique, capsys, tmp_path):
    from offsetkeeper.history.target import history_target

    topic, group = unique("t"), unique("g")
    create_topic(bootstrap, topic, 2)
    db = str(tmp_path / "h.db")
    store = open_store(db)
    from offsetkeeper.history.model import Cycle, Sample
    now = int(time.time() * 1000)
    store.write([Sample(now - 60_000, group, topic, 0, 5, 0, 9)], Cycle(now - 60_000, 1000, 1, 1, 1))
    store.write([Sample(now - 1000, group, topic, 0, 8, 0, 9), Sample(now - 1000, group, topic, 1, 3, 0, 9)],
                Cycle(now - 1000, 1000, 1, 2, 1))
    target = history_target("30s", store_url=db, groups=[group])
    from offsetkeeper.models import TopicPartition as TP
    assert target.for_group(group) == {TP(topic, 0): 5, TP(topic, 1): 3}
    assert "older than two sampling intervals" in target.note_for(group, TP(topic, 0))
    assert target.note_for(group, TP(topic, 1)).startswith("no commit at")


def test_bad_input_exits_2(bootstrap, capsys, tmp_path):
    db = str(tmp_path / "h.db")
    for args, msg in [
        (["history", "record", "--once", "-b", bootstrap, "--store", db], "no group given"),
        (["history", "record", "-g", "x", "--interval", "0s", "-b", bootstrap], "greater than zero"),
        (["history", "record", "-g", "x", "--store", "nope://", "-b", bootstrap], "unknown scheme"),
        (["history", "record", "-g", "x", "--exporter", "localhost", "-b", bootstrap], "--exporter 'localhost' is not HOST:PORT"),
        (["history", "show", "g", "--since", "yesterday-ish", "--store", db], "--since"),
        (["history", "at", "g", "--time", "soon", "--store", db], "--time"),
        (["history", "plot", "g", "--out", str(tmp_path / "x.jpg"), "--store", db], ".png"),
    ]:
        r = run_cli(capsys, *args)
        assert r.code == 2, (args, r.err)
        assert msg in r.err and "Traceback" not in r.err
        assert len(r.err.strip().splitlines()) == 1, r.err
