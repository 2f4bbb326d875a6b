"""Lag on transactional topics, with a real transactional producer (confluent-kafka with
`transactional.id`) on Apache Kafka: committed, aborted and open transactions.

Lag is what a read_committed consumer still has to read: against the last stable offset (LSO),
0 when only commit/abort markers (or aborted records) lie between the committed offset and the
end; `lag_raw` keeps `log end - committed` beside it (librdkafka #2539: stuck at 1 or more).
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer

from offsetkeeper.describe import describe_offsets
from offsetkeeper.history.exporter import LagCollector
from offsetkeeper.history.sample_cycle import CycleSampler, SampleScope
from offsetkeeper.history.status import Status, evaluate_status
from offsetkeeper.models import TopicPartition
from tests.cli import run_cli
from tests.kafkatools import commit, create_topic

pytestmark = pytest.mark.integration


def _txn_producer(bootstrap: str, tid: str) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5})
    p.init_transactions(60)
    return p


def _transaction(p: Producer, topic: str, values: list[bytes], *, commit_it: bool) -> None:
    p.begin_transaction()
    for v in values:
        p.produce(topic, v, partition=0)
    p.flush(30)
    if commit_it:
        p.commit_transaction(30)
    else:
        p.abort_transaction(30)


def _settled(admin, tp: TopicPartition, end: int) -> None:
    """Wait until the transaction markers are written (the LSO reaches the log end)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        lo = admin.log_offsets([tp])[tp]
        if lo.log_end >= end and lo.lso == lo.log_end:
            return
        time.sleep(0.1)
    raise AssertionError(f"LSO of {tp} did not reach the log end: {admin.log_offsets([tp])}")


def _consume_all_and_commit(bootstrap: str, topic: str, group: str, expect: int) -> list[bytes]:
    """A read_committed consumer (librdkafka's default) reads every record it can and commits
    where it stands, as an application would."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    got: list[bytes] = []
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 30
        while len(got) < expect and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
        # a few more polls: nothing else is readable (and the position settles)
        for _ in range(4):
            m = c.poll(0.3)
            if m is not None and m.error() is None:
                got.append(m.value())
        c.commit(asynchronous=False)
    finally:
        c.close()
    return got


@pytest.fixture
def txn_topic(bootstrap, admin, unique):
    """A one-partition topic with a committed (3 records), an aborted (2) and another committed
    transaction (2): offsets 0-2 data, 3 COMMIT, 4-5 aborted, 6 ABORT, 7-8 data, 9 COMMIT."""
    topic = unique("tx")
    create_topic(bootstrap, topic, 1)
    p = _txn_producer(bootstrap, unique("tid"))
    _transaction(p, topic, [b"c0", b"c1", b"c2"], commit_it=True)
    _transaction(p, topic, [b"a0", b"a1"], commit_it=False)
    _transaction(p, topic, [b"c3", b"c4"], commit_it=True)
    tp = TopicPartition(topic, 0)
    _settled(admin, tp, 10)
    return topic, tp, p


def test_a_consumer_that_read_everything_has_lag_0_though_markers_follow(bootstrap, admin, unique,
                                                                       txn_topic):
    """Invariant: a read_committed consumer that has read every committed record shows lag 0,
    with the raw offset difference (the markers) kept as lag_raw."""
    topic, _tp, _ = txn_topic
    group = unique("g")
    got = _consume_all_and_commit(bootstrap, topic, group, 5)
    assert got == [b"c0", b"c1", b"c2", b"c3", b"c4"]            # aborted records never read
    [row] = describe_offsets(admin, [group])
    assert row.log_end_offset == 10 and row.last_stable_offset == 10
    assert row.current_offset in (9, 10)           # librdkafka commits before the last marker
    assert row.lag == 0
    assert row.lag_raw == 10 - row.current_offset
    assert row.open_transaction_since is None and row.note is None


@pytest.mark.parametrize("committed, lag, raw", [
    (0, 5, 10),    # nothing read: 3 + 2 committed records (markers and aborted records skipped)
    (3, 2, 7),     # after the first transaction: its marker, the aborted records and their
                   # ABORT marker are skipped, records 7 and 8 remain
    (4, 2, 6),     # inside the aborted transaction: same
    (8, 1, 2),     # one committed record left
    (9, 0, 1),     # only the COMMIT marker left
    (10, 0, 0),
])
def test_lag_counts_readable_records_only(admin, unique, txn_topic, bootstrap, committed, lag, raw):
    topic, _tp, _ = txn_topic
    group = unique("g")
    commit(bootstrap, group, {(topic, 0): committed})
    [row] = describe_offsets(admin, [group])
    assert (row.current_offset, row.lag_raw, row.lag) == (committed, raw, lag)


def test_far_behind_lag_is_lso_minus_committed(admin, unique, txn_topic, bootstrap, monkeypatch):
    """Beyond PROBE_MAX_RAW_LAG offsets from the LSO nothing is fetched: lag = LSO - committed
    (an upper bound on transactional topics, by at most one marker per transaction)."""
    from offsetkeeper.kafka import stable

    topic, _tp, _ = txn_topic
    group = unique("g")
    commit(bootstrap, group, {(topic, 0): 0})
    monkeypatch.setattr(stable, "PROBE_MAX_RAW_LAG", 4)
    monkeypatch.setattr(stable.wants_count, "__defaults__", (4,))
    [row] = describe_offsets(admin, [group])
    assert (row.lag, row.lag_raw) == (10, 10)


def test_an_open_transaction_holds_the_lso_and_shows_since_when(bootstrap, admin, unique, txn_topic,
                                                                capsys):
    """Invariant: an open transaction is shown (LSO < log end, since the time of its first
    record); a consumer caught up to the LSO has lag 0 (waiting there is not its fault), and
    `lag status` says so."""
    topic, tp, p = txn_topic
    group = unique("g")
    commit(bootstrap, group, {(topic, 0): 10})
    before = int(time.time() * 1000)
    p.begin_transaction()
    p.produce(topic, b"open-1", partition=0)
    p.produce(topic, b"open-2", partition=0)
    p.flush(30)
    try:
        [row] = describe_offsets(admin, [group])
        assert row.log_end_offset == 12 and row.last_stable_offset == 10
        assert row.lag == 0 and row.lag_raw == 2
        assert row.open_transaction_since is not None
        assert before - 5_000 <= row.open_transaction_since <= int(time.time() * 1000)
        assert "open transaction since" in row.note and "not the consumer's fault" in row.note

        r = run_cli(capsys, "groups", "describe", group, "-b", bootstrap, "-o", "json")
        assert r.code == 0, r.err
        [doc] = r.json()
        assert (doc["lag"], doc["lag_raw"], doc["last_stable_offset"]) == (0, 2, 10)
        assert doc["open_transaction_since"] == row.open_transaction_since
        assert doc["open_transaction_since_iso"].endswith("Z")
        r = run_cli(capsys, "groups", "describe", group, "-b", bootstrap)
        assert r.code == 0 and "LAG-RAW" in r.out
        assert "open transaction since" in r.err

        from offsetkeeper.ops.group_pages import group_view  # the dashboard's group page

        [part] = group_view(admin, group, None).partitions
        assert (part["lag"], part["lag_raw"], part["last_stable_offset"]) == (0, 2, 10)
        assert part["note"].startswith("open transaction since")

        # the history: samples carry the LSO and the open transaction; status and exporter
        cs = CycleSampler(admin, SampleScope(groups=(group,)))
        try:
            cycles = [cs.sample(), cs.sample()]
        finally:
            cs.close()
        s = cycles[-1].samples[0]
        assert (s.lso, s.log_end, s.lag, s.lag_raw) == (10, 12, 0, 2)
        assert s.open_txn_since == row.open_transaction_since
        assert s.time_lag_ms == 0
        st = evaluate_status([x for c in cycles for x in c.samples], window=2)
        assert st.status is Status.OK
        assert "open transaction" in st.reason and "not the consumer's fault" in st.reason
        assert "open transaction" in st.partitions[0].reason

        metrics = {m.name: m for m in LagCollector(
            lambda: {group: [x for c in cycles for x in c.samples]}, cluster_name="t").collect()}
        assert metrics["kafka_partition_open_transaction"].samples[0].value == 1
        assert metrics["kafka_partition_last_stable_offset"].samples[0].value == 10
        assert metrics["kafka_partition_open_transaction_age_seconds"].samples[0].value >= 0
        assert metrics["kafka_consumergroup_group_lag"].samples[0].value == 0
        assert metrics["kafka_consumergroup_group_lag_raw"].samples[0].value == 2
    finally:
        p.commit_transaction(30)
    _settled(admin, tp, 13)
    [row] = describe_offsets(admin, [group])
    assert (row.lag, row.last_stable_offset, row.open_transaction_since) == (2, 13, None)


def test_sampler_lag_behind_markers_only_is_zero(bootstrap, admin, unique, txn_topic):
    """The history's lag is the describe's: 0 behind markers, with exact time lag 0."""
    topic, _tp, _ = txn_topic
    group = unique("g")
    commit(bootstrap, group, {(topic, 0): 9})
    cs = CycleSampler(admin, SampleScope(groups=(group,)))
    try:
        [s] = cs.sample().samples
        [s2] = cs.sample().samples                  # "no record before the end" is not cached
    finally:
        cs.close()
    for x in (s, s2):
        assert (x.committed, x.lso, x.lag, x.lag_raw, x.time_lag_ms) == (9, 10, 0, 1, 0)
        assert x.open_txn_since is None
