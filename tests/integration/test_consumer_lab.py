"""Delivery guarantees measured: consumers SIGKILLed 20 times each at random points of real
progress, restarted, and an independent ledger counted (offsetkeeper.consumer.lab)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from cli import run_cli
from offsetkeeper.consumer.lab import LabConfig, run_delivery_lab

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CRASHES = 20
AT_LEAST_ONCE = [("record", False), ("batch", True), ("time", False), ("count", True),
                 ("count_time", False), ("manual", True), ("manual_immediate", False), ("auto", False)]


def test_every_commit_after_processing_policy_loses_nothing(bootstrap):
    """Invariant (at-least-once): whatever the kill point, no record is lost — sync and async
    commits, out-of-order acks from a thread pool (manual), librdkafka auto commit (auto)."""
    with ThreadPoolExecutor(4) as pool:  # labs are mostly waiting on child start-ups
        results = list(pool.map(
            lambda pa: run_delivery_lab(bootstrap, LabConfig(pa[0], crashes=CRASHES, asynchronous=pa[1])),
            AT_LEAST_ONCE))
    for r in results:
        assert r.crashes == CRASHES and r.processed >= r.records
        assert r.lost == 0, r
    # The crashes really hit between processing and committing somewhere.
    assert sum(r.duplicated for r in results) > 0


def test_commit_before_processing_never_duplicates(bootstrap):
    """Invariant (at-most-once): the offsets are committed before processing, so a record is
    never processed twice — and crashes while processing lose records."""
    r = run_delivery_lab(bootstrap, LabConfig("before_processing", crashes=CRASHES))
    assert r.duplicated == 0, r
    assert r.processed + r.lost == r.records


@pytest.mark.parametrize("rebalance", [False, True], ids=["alone", "with-joiner"])
def test_store_transaction_is_exactly_once_on_sqlite(bootstrap, rebalance):
    """Invariant (exactly-once): results and offsets commit in one transaction, and a consumer
    that lost its partition is fenced — 0 lost, 0 duplicated, also while a second consumer
    joins and leaves (rebalances) during the run."""
    r = run_delivery_lab(bootstrap, LabConfig("store", crashes=CRASHES, rebalance=rebalance))
    assert (r.lost, r.duplicated, r.processed) == (0, 0, r.records), r


def test_store_transaction_is_exactly_once_on_postgres(bootstrap, postgres_url):
    r = run_delivery_lab(bootstrap, LabConfig("store", crashes=CRASHES, store_url=postgres_url,
                                              rebalance=True))
    assert (r.lost, r.duplicated, r.processed) == (0, 0, r.records), r


def test_at_least_once_with_rebalances(bootstrap):
    """Revoke commits and lost-partition handling keep at-least-once while members come and go."""
    r = run_delivery_lab(bootstrap, LabConfig("batch", crashes=CRASHES, rebalance=True))
    assert r.lost == 0, r


def test_lab_cli_prints_the_measurement(bootstrap, capsys):
    r = run_cli(capsys, "lab", "delivery", "--policy", "manual-immediate", "--crashes", "3",
                "--records", "60", "-b", bootstrap, "-o", "json")
    assert r.code == 0, r.err
    row = r.json()[0]
    assert row["policy"] == "manual_immediate" and row["crashes"] == 3 and row["lost"] == 0
    assert row["protocol"] == "classic"
    assert row["guarantee"] == "at-least-once" and row["holds"] is True
    bad = run_cli(capsys, "lab", "delivery", "--policy", "store", "--async", "-b", bootstrap)
    assert bad.code == 2 and "asynchronous commits do not apply to the store policy" in bad.err
    bad = run_cli(capsys, "lab", "delivery", "--policy", "batch", "--protocol", "streams", "-b", bootstrap)
    assert bad.code == 2 and "--protocol" in bad.err


def test_guarantees_hold_under_the_consumer_protocol(bootstrap, postgres_url):
    """Invariant (group.protocol=consumer, KIP-848: the broker assigns incrementally, a killed
    member keeps its partitions until its session expires): BATCH loses nothing; the store
    transaction loses and duplicates nothing on SQLite, and on PostgreSQL while a second
    consumer joins and leaves."""
    runs = [LabConfig("batch", crashes=10, protocol="consumer"),
            LabConfig("store", crashes=10, protocol="consumer"),
            LabConfig("store", crashes=10, protocol="consumer", rebalance=True,
                      store_url=postgres_url)]
    with ThreadPoolExecutor(3) as pool:
        batch, store, store_joiner = pool.map(lambda cfg: run_delivery_lab(bootstrap, cfg), runs)
    assert batch.protocol == "consumer" and batch.crashes == 10
    assert batch.lost == 0 and batch.processed >= batch.records, batch
    for r in (store, store_joiner):
        assert (r.lost, r.duplicated, r.processed) == (0, 0, r.records), r


def test_final_consumer_reads_partitions_a_dead_member_still_holds(bootstrap, tmp_path):
    """Under the consumer protocol two killed members keep their partitions until their sessions
    expire, one after the other. The last process gets the first partition when its holder
    expires and must not stop when that one is read: the topic ends where every partition ends.
    (Stopping at the end of the owned partitions lost a third of the records in a full run.)"""
    import dataclasses
    import signal
    import time
    from pathlib import Path

    from offsetkeeper.consumer.lab import _Lab

    cfg = LabConfig("batch", crashes=0, records=400, partitions=2, protocol="consumer", work_ms=40)
    lab = _Lab(bootstrap, cfg, tmp_path, None)
    try:
        lab.setup()

        def start_and_wait_for_assignment():
            p, trace = lab._child("main")
            ready, deadline = Path(str(trace) + ".ready"), time.monotonic() + 30
            while not ready.exists():
                assert p.poll() is None and time.monotonic() < deadline, "no assignment in 30 s"
                time.sleep(0.05)
            return p

        a = start_and_wait_for_assignment()
        b = start_and_wait_for_assignment()  # ready once `a` revoked one of its two partitions
        a.send_signal(signal.SIGKILL)
        a.wait()
        time.sleep(3.5)  # `a` expires 3.5 s before `b`: the final process owns one partition first
        b.send_signal(signal.SIGKILL)
        b.wait()
        lab.cfg = dataclasses.replace(cfg, work_ms=0.2)
        lab.final_run()
        seen = set(lab.read_ledger())
    finally:
        lab.cleanup()
    assert seen == set(range(400)), f"{400 - len(seen)} records never processed"
