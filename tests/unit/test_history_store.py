"""The HistoryStore contract, run here on SQLite and memory and in the integration tests on
PostgreSQL and Redis (same function, real servers)."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from offsetkeeper.errors import UsageError
from offsetkeeper.history.model import Cycle, Gap, Sample
from offsetkeeper.history.store import (
    SCHEMA_VERSION,
    RetentionPolicy,
    StoreUnavailable,
    open_store,
    redact_url,
)
from offsetkeeper.models import TopicPartition

NAMES = ["payments", "we'ird\n<script>[/]", "g-2"]


def cycle_samples(ts, group, committed, log_end, *, parts=2, topic="orders"):
    return [Sample(ts=ts, group=group, topic=topic, partition=p, committed=committed + p,
                   log_start=0, log_end=log_end + p, metadata="m", state="stable", members=1,
                   consumer_id="c-1", client_id="cl", host="h", next_ts=ts - 500 if log_end > committed else None,
                   time_lag_ms=500 if log_end > committed else 0, time_lag_interp_ms=400)
            for p in range(parts)]


def check_contract(store):
    """Every backend answers the read API the same way."""
    assert store.schema_version() == SCHEMA_VERSION
    for i in range(5):
        ts = 1_000_000 + i * 1000
        for g in NAMES:
            store.write(cycle_samples(ts, g, 10 * i, 10 * i + 3), Cycle(ts, 1000, len(NAMES), 6, 12))
    # rewriting a cycle (a buffered retry) changes nothing
    store.write(cycle_samples(1_004_000, NAMES[1], 40, 43), Cycle(1_004_000, 1000, 3, 6, 12))
    store.write_gap(Gap(1_005_000, 1_009_000, "cluster unreachable: x"))

    assert {g.group for g in store.groups()} == set(NAMES)
    assert all(g.first_ts == 1_000_000 and g.last_ts == 1_004_000 for g in store.groups())
    g = NAMES[1]
    latest = store.latest(g)
    assert [(s.partition, s.committed, s.ts) for s in latest] == [(0, 40, 1_004_000), (1, 41, 1_004_000)]
    assert latest[0].group == g and latest[0].metadata == "m" and latest[0].consumer_id == "c-1"
    assert latest[0].time_lag_ms == 500 and latest[0].next_ts == 1_003_500
    at = store.at(g, 1_002_500)
    assert {s.ts for s in at} == {1_002_000} and at[0].committed == 20
    assert store.at(g, 999_999) == []
    rec = store.recent(g, 3)
    assert sorted({s.ts for s in rec}) == [1_002_000, 1_003_000, 1_004_000] and len(rec) == 6
    ser = store.series(g, since=1_001_000, until=1_003_000)
    assert [s.ts for s in ser] == [1_001_000, 1_001_000, 1_002_000, 1_002_000, 1_003_000, 1_003_000]
    assert store.series(g, topic="nope") == []
    assert len(store.series(g, topic="orders")) == 10
    assert [c.ts for c in store.cycles(since=1_003_000)] == [1_003_000, 1_004_000]
    assert store.gaps(since=1_000_000) == [Gap(1_005_000, 1_009_000, "cluster unreachable: x")]
    pts = store.log_end_points(1_003_000)
    assert pts[TopicPartition("orders", 0)] == [(1_003_000, 33), (1_004_000, 43)]
    assert store.recent("unknown", 3) == [] and store.latest("unknown") == []
    check_transaction_fields(store)


def check_transaction_fields(store):
    """Schema 4: the last stable offset, the counted readable records and the open
    transaction's start are stored and read back (None where not read)."""
    txn = [Sample(ts=2_000_000, group="txn", topic="tx", partition=p, committed=9, log_start=0,
                  log_end=12, lso=10 if p == 0 else None, readable=0 if p == 0 else None,
                  open_txn_since=1_999_000 if p == 0 else None) for p in range(2)]
    store.write(txn, Cycle(2_000_000, 1000, 1, 2, 1))
    back = store.latest("txn")
    assert back == txn
    assert [(s.lag, s.lag_raw, s.open_transaction) for s in back] == [(0, 3, True), (3, 3, False)]


def check_prune(store):
    """Retention deletes old samples; downsampling keeps the last sample per bucket per group."""
    for i in range(20):  # one cycle a second for 20 s
        store.write(cycle_samples(i * 1000, "g", i, i + 1, parts=1), Cycle(i * 1000, 1000, 1, 1, 1))
    res = store.prune(RetentionPolicy(retain_ms=100_000 - 5_000, downsample_after_ms=100_000 - 15_000,
                                      bucket_ms=5_000), now=100_000)
    kept = [s.ts for s in store.series("g")]
    # < 5 s deleted; 5..14.999 s thinned to the last of each 5 s bucket; >= 15 s untouched
    assert kept == [9_000, 14_000, 15_000, 16_000, 17_000, 18_000, 19_000]
    assert res.deleted == 5 and res.downsampled == 8
    assert [(g.group, g.first_ts, g.last_ts) for g in store.groups()] == [("g", 9_000, 19_000)]


def check_recent_many(store):
    """Invariant: recent_many(groups, N)[g] == recent(g, N) for every group with samples, in
    one call; groups without samples are absent. Groups sampled at different times, a group
    with fewer than N cycles, names with quotes/newlines/SQL, and more groups than one
    statement takes (SQL stores chunk the list) all answer the same as one by one."""
    odd = ["we'ird\n<script>[/]", "x'); DROP TABLE samples; --", 'q"uote%_', "ümlaut:g:*"]
    names = [*odd, *[f"g-{i:02d}" for i in range(7)]]
    for i in range(6):
        for k, g in enumerate(names):
            if k == 4 and i < 4:
                continue  # g-00 has only 2 cycles
            ts = 2_000_000 + i * 1000 + k  # every group at its own times
            store.write(cycle_samples(ts, g, 10 * i, 10 * i + 3 + k, parts=1 + k % 3),
                        Cycle(ts, 1000, 1, 3, 1))
    if hasattr(store, "MANY_CHUNK"):
        store.MANY_CHUNK = 3  # several statements for these 11 groups
    asked = [*reversed(names), "unknown", names[0], ""]
    many = store.recent_many(asked, 4)
    assert set(many) == set(names)
    for g in names:
        one = store.recent(g, 4)
        assert many[g] == one and one, g
        assert all(s.group == g for s in many[g])
    assert len({s.ts for s in many["g-00"]}) == 2
    assert len({s.ts for s in many[odd[0]]}) == 4 and len(many[odd[0]]) == 4
    assert store.recent_many([], 4) == {} and store.recent_many(["unknown"], 4) == {}
    assert {g: len(v) for g, v in store.recent_many(odd, 1).items()} == \
        {g: 1 + k % 3 for k, g in enumerate(odd)}
    assert len(store.groups()) == len(names)  # the odd names did not break anything


def test_sqlite_recent_many(tmp_path):
    with open_store(str(tmp_path / "m.db")) as s:
        check_recent_many(s)


def test_memory_recent_many():
    check_recent_many(open_store("memory://"))


def test_sqlite_contract(tmp_path):
    with open_store(str(tmp_path / "h.db")) as s:
        check_contract(s)
    with open_store(f"sqlite://{tmp_path}/p.db") as s:
        check_prune(s)


def test_memory_contract():
    check_contract(open_store("memory://"))


def test_sqlite_migrates_a_version_1_file(tmp_path):
    """Invariant: a store written by an older schema is upgraded in place, data kept."""
    from offsetkeeper.history.store.sql import MIGRATIONS

    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    for stmt in MIGRATIONS[0]:
        db.execute(stmt)
    db.execute("INSERT INTO schema_version VALUES (1)")
    db.execute("INSERT INTO samples (ts, grp, topic, part, committed, log_start, log_end) "
               "VALUES (5, 'g', 't', 0, 7, 0, 9)")
    db.commit()
    db.close()
    with open_store(str(path)) as s:
        assert s.schema_version() == SCHEMA_VERSION
        assert s.latest("g")[0].committed == 7
        assert [(g.group, g.first_ts, g.last_ts) for g in s.groups()] == [("g", 5, 5)]  # migration 3
        s.write_gap(Gap(1, 2, "x"))  # the table added by migration 2 exists
        assert s.gaps() == [Gap(1, 2, "x")]
        old = s.latest("g")[0]                    # migration 4: transaction columns, NULL
        assert (old.lso, old.readable, old.open_txn_since, old.lag) == (None, None, None, 2)


def test_sqlite_readers_while_a_writer_writes(tmp_path):
    """WAL: a reader on another connection never fails while the sampler writes."""
    path = str(tmp_path / "h.db")
    writer, reader = open_store(path), open_store(path)
    errors = []

    def write():
        for i in range(200):
            writer.write(cycle_samples(i, "g", i, i + 5, parts=8))

    t = threading.Thread(target=write)
    t.start()
    while t.is_alive():
        try:
            reader.latest("g")
            reader.groups()
        except Exception as exc:  # pragma: no cover - the failure we guard against
            errors.append(exc)
    t.join()
    assert not errors and reader.latest("g")[0].ts == 199


@pytest.mark.parametrize("url,fragment", [
    ("foo://x", "unknown scheme 'foo'"),
    ("sqlite://", "names no file"),
])
def test_bad_store_urls(url, fragment):
    with pytest.raises(UsageError, match=fragment):
        open_store(url)


def test_unreachable_sqlite_names_the_store(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreUnavailable, match="history store .*not reachable"):
        open_store(str(tmp_path / "file" / "h.db"))


def test_passwords_are_masked_in_store_urls():
    assert redact_url("postgresql://ops:s3cret@db:5432/h") == "postgresql://ops:******@db:5432/h"
    assert redact_url("redis://:s3cret@cache:6379/0") == "redis://:******@cache:6379/0"
