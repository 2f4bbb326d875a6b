"""Regression tests for issue 22, "Hardening, round two" (unit level: no broker)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from tests.cli import run_cli

SRC = Path(__file__).resolve().parents[2] / "src" / "offsetkeeper"

# -- item 3: secrets in store URLs, DSNs and destinations -------------------------------------

# (URL or DSN, the secret that must never be shown)
SECRET_FORMS = [
    ("postgresql://app:hunter2xyz@db.example/ok", "hunter2xyz"),
    ("postgresql://db.example/ok?user=app&password=hunter2xyz", "hunter2xyz"),
    ("postgresql://db.example/ok?sslmode=require&password=hunter2xyz&application_name=x",
     "hunter2xyz"),
    ("host=db.example dbname=ok user=app password=hunter2xyz", "hunter2xyz"),
    ("host=db.example password='hunter2 xyz' dbname=ok", "hunter2 xyz"),
    ("postgresql://app:hun@ter2xyz@db.example/ok", "hun@ter2xyz"),
    ("postgresql://app:hunter2 xyz@db.example/ok", "hunter2 xyz"),
    ("s3://AKIAKEYID:wJalrSECRETxyz@bucket/snapshots", "wJalrSECRETxyz"),
    ("gs://bucket/snapshots?token=ya29SECRETtoken", "ya29SECRETtoken"),
    ("redis://:hunter2xyz@cache:6379/0", "hunter2xyz"),
    ("rediss://default:hunter2xyz@cache:6380/0?prefix=ok", "hunter2xyz"),
]


def _renderers():
    """Every path that renders a store or destination, as (name, url -> shown text)."""
    from offsetkeeper.consumer.stores import redact_url as consumer_redact
    from offsetkeeper.errors import OffsetkeeperError, StoreError
    from offsetkeeper.history.store import redact_url as history_redact
    from offsetkeeper.history.store.memory import MemoryStore
    from offsetkeeper.ops import history_view as web_data
    from offsetkeeper.ops import itemerr as web_itemerr
    from offsetkeeper.snapshots.store import SnapshotStore
    from offsetkeeper.web import core as web_core
    from offsetkeeper.web.backups import safe_list, shown

    def memory(url: str) -> str:
        # fsspec's in-memory filesystem stands in for s3/gs (no credentials are checked)
        return "memory://" + url.split("://", 1)[-1]

    def snapshot_store(url: str) -> str:
        st = SnapshotStore(memory(url))
        return " ".join([st.display_url, st.display(st.path("snap-20261121T194501.123Z-1a2b")),
                         repr(st)])

    def history_display(url: str) -> str:
        store = MemoryStore(url)
        return store.display_url

    def error_message(url: str) -> str:
        return OffsetkeeperError(f"cannot open {url}: driver said {url!r}").message

    def web_backup_list(url: str) -> str:
        return repr(safe_list([memory(url)]))

    def failing(exc):
        def fn():
            raise exc
        return fn

    return [
        ("history.store.redact_url", history_redact),
        ("HistoryStore.display_url", history_display),
        ("consumer.stores.redact_url", consumer_redact),
        ("web.backups.shown", shown),
        ("web.backups.safe_list", web_backup_list),
        ("ops.itemerr.message",   # every page's per-item error (checkpoints, backups, history)
         lambda u: web_itemerr.message(OSError(f"no such file {u}"), known=u)),
        ("web.core.safe_call", lambda u: web_core.safe_call(failing(OSError(u)), None)[1]),
        ("ops.history_view.safe", lambda u: web_data.safe(failing(StoreError(f"down: {u}")), None)[1]),
        ("SnapshotStore", snapshot_store),
        ("OffsetkeeperError.message", error_message),
    ]


@pytest.mark.parametrize("url,secret", SECRET_FORMS, ids=[u for u, _ in SECRET_FORMS])
def test_every_store_renderer_masks_every_secret_form(url, secret):
    """Invariant: no path that renders a store or destination (history/offset/snapshot stores,
    backup destinations, checkpoint locations, error messages, dashboard helpers) shows a
    password, whatever its form: URL userinfo (also with a raw '@' or a space), a secret query
    parameter, a libpq key=value DSN, an fsspec URL with credentials."""
    for name, render in _renderers():
        text = render(url)
        assert secret not in text, f"{name} showed the secret: {text!r}"
        for piece in re.split(r"[@ ]", secret):
            if len(piece) >= 4:
                assert piece not in text, f"{name} showed part of the secret: {text!r}"


def test_one_masking_function():
    """Invariant: credential masking lives in redact.py only; no module keeps a regex of its own
    (the old copies disagreed about a raw '@' and query parameters)."""
    offenders = []
    for path in SRC.rglob("*.py"):
        if path.name == "redact.py":
            continue
        text = path.read_text()
        if re.search(r"_CRED\s*=|\[\^:/@\]|\[\^@/\]", text):
            offenders.append(str(path.relative_to(SRC)))
    assert offenders == []


def test_mask_url_keeps_what_is_not_secret():
    """Invariant: masking hides passwords only: hosts, users, paths and other parameters stay
    readable, and URLs without credentials are unchanged."""
    from offsetkeeper.redact import mask_url

    assert mask_url("postgresql://app:pw123@db/ok?sslmode=require") == \
        "postgresql://app:******@db/ok?sslmode=require"
    for plain in ["s3://bucket/path@v1", "/var/lib/offsetkeeper/history.db",
                  "postgresql://app@db/ok", "redis://cache:6379/0", "file:///tmp/x"]:
        assert mask_url(plain) == plain


def test_malformed_url_in_driver_error_is_masked():
    """Invariant: a driver's error that quotes a malformed URL (psycopg on a space in the
    password) shows no part of the password."""
    from offsetkeeper.errors import UsageError
    from offsetkeeper.history.store import open_store

    with pytest.raises(UsageError) as exc:
        open_store("postgresql://app:hunter2 xyz@127.0.0.1:1/ok")
    assert "hunter2" not in exc.value.message and "xyz" not in exc.value.message


def test_raw_at_in_postgres_password_is_refused():
    """Invariant: a PostgreSQL URL whose password holds a raw '@' is refused before connecting
    (libpq would print the password's tail as the host name), exit 2, nothing shown."""
    from offsetkeeper.consumer.stores import open_store as open_offset_store
    from offsetkeeper.errors import UsageError
    from offsetkeeper.history.store import open_store

    with pytest.raises(UsageError) as exc:
        open_store("postgresql://app:hun@ter2xyz@127.0.0.1:1/ok", check=False)
    assert "%40" in exc.value.message and "ter2xyz" not in exc.value.message
    with pytest.raises(UsageError) as exc:
        open_offset_store("postgresql://app:hun@ter2xyz@127.0.0.1:1/ok")
    assert "ter2xyz" not in exc.value.message


def test_libpq_dsn_is_never_a_sqlite_path(tmp_path, monkeypatch, capsys):
    """Invariant: a libpq key=value DSN given as a history or offset store is PostgreSQL, never
    a SQLite file name: a read-only command creates no file or directory named after it, and
    the password is masked in the error."""
    from offsetkeeper.history.store import open_store
    from offsetkeeper.history.store.postgres import PostgresStore

    monkeypatch.chdir(tmp_path)
    dsn = "host=127.0.0.1 port=1 dbname=ok password=hunter2/xyz connect_timeout=1"
    assert isinstance(open_store(dsn, check=False), PostgresStore)
    r = run_cli(capsys, "history", "show", "payments", "--store", dsn)
    assert r.code == 1, r
    assert "hunter2" not in r.err + r.out
    assert list(tmp_path.iterdir()) == []


# -- item 9: SQL history stores refuse a newer schema -----------------------------------------

def test_sqlite_history_store_refuses_newer_schema(tmp_path, capsys):
    """Invariant: a SQL history store whose schema version is newer than this offsetkeeper
    knows is neither written to nor migrated: one line, exit 1, the version row unchanged."""
    from offsetkeeper.history.store import SCHEMA_VERSION, StoreUnavailable, open_store

    path = tmp_path / "h.db"
    open_store(str(path)).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    db.commit()
    db.close()
    with pytest.raises(StoreUnavailable) as exc:
        open_store(str(path))
    assert f"schema version {SCHEMA_VERSION + 1}" in exc.value.message
    r = run_cli(capsys, "history", "show", "payments", "--store", str(path))
    assert r.code == 1 and "newer" in r.err and len(r.err.strip().splitlines()) == 1, r
    db = sqlite3.connect(path)
    assert db.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION + 1,)]


# -- item 4: "no committed offset" is a state a rollback restores -----------------------------

def _facts(committed: dict):
    from offsetkeeper.models import CommittedOffset, GroupInfo, TopicPartition, Watermarks
    from offsetkeeper.reset.plan import GroupFacts, ResetFacts

    tps = [TopicPartition("t", p) for p in range(3)]
    info = GroupInfo("g", "empty")
    return ResetFacts(
        groups={"g": GroupFacts(info, {TopicPartition("t", p): CommittedOffset(o, "")
                                       for p, o in committed.items()})},
        topic_partitions={"t": (0, 1, 2)}, watermarks={tp: Watermarks(0, 10) for tp in tps})


def test_snapshot_records_uncommitted_and_rollback_plans_offset_delete():
    """Invariant: the partitions a reset commits to that had no committed offset are recorded
    in its snapshot (schema version 2, read back), and a rollback to that snapshot plans an
    OffsetDelete for each of them that has a commit now, noted in the plan; the executor's
    snapshot function is told which partitions those are."""
    from offsetkeeper.models import CommittedOffset, TopicPartition
    from offsetkeeper.reset.apply import uncommitted_partitions
    from offsetkeeper.reset.plan import ResetScope, TopicSpec, plan_reset
    from offsetkeeper.reset.render import plan_script
    from offsetkeeper.reset.targets import ToEarliest
    from offsetkeeper.snapshots.model import GroupSnapshot, Snapshot
    from offsetkeeper.snapshots.rollback import rollback_groups, rollback_target

    t = [TopicPartition("t", p) for p in range(3)]
    reset = plan_reset(_facts({0: 7}), ResetScope(groups=("g",), topics=(TopicSpec("t"),)),
                       ToEarliest())
    assert uncommitted_partitions(reset) == {"g": [t[1], t[2]]}

    snap = Snapshot("snap-20261121T194501.123Z-1a2b", "2026-11-21T19:45:01.123Z", "c", "b:9092",
                    "before reset", {"g": GroupSnapshot("empty", {t[0]: CommittedOffset(7, "")},
                                                        frozenset({t[1], t[2]}))})
    doc = json.loads(snap.to_json())
    assert doc["schema_version"] == 2
    assert Snapshot.from_json(snap.to_json()) == snap
    assert rollback_groups(snap) == ("g",)

    plan = plan_reset(_facts({0: 0, 1: 0}), ResetScope(groups=("g",), all_topics=True),
                      rollback_target(snap))
    by = {p.partition: p for p in plan.groups[0].partitions}
    assert by[0].target == 7 and not by[0].delete
    assert by[1].delete and by[1].changes and "OffsetDelete" in by[1].note
    assert by[2].delete and not by[2].changes  # no commit now either: unchanged
    assert plan.groups[0].deletes == [t[1]]
    script = plan_script(plan, bootstrap_servers="b:9092")
    assert "--delete-offsets --topic t:1" in script


def test_snapshot_of_only_uncommitted_partitions_can_be_rolled_back():
    """Invariant: a snapshot of a group that had no commit at all on the reset's partitions
    still rolls back (it deletes them), instead of "nothing to roll back"."""
    from offsetkeeper.models import TopicPartition
    from offsetkeeper.snapshots.model import GroupSnapshot, Snapshot
    from offsetkeeper.snapshots.rollback import rollback_target

    snap = Snapshot("snap-20261121T194501.123Z-1a2b", "2026-11-21T19:45:01.123Z", "c", "b:9092",
                    "", {"g": GroupSnapshot("dead", {}, frozenset({TopicPartition("t", 0)}))})
    assert rollback_target(snap).deletes_for("g") == {TopicPartition("t", 0)}


# -- item 5: names read back exactly ---------------------------------------------------------

@pytest.mark.parametrize("name", [' "q" ', " lead", "trail ", "#hash", "a,b", 'x"y', "\ufeffbom",
                                  "line\nbreak", "  "])
def test_export_csv_reads_back_exactly(name):
    """Invariant: every group and topic name written by --export is read back by --from-file
    byte for byte (RFC 4180 quoting; no whitespace stripped, no comment taken)."""
    from offsetkeeper.models import TopicPartition
    from offsetkeeper.reset.parse import csv_line, parse_offsets_csv

    text = csv_line([name, name, "0", "5"]) + "\n" + csv_line(["other", "t", "1", "6"]) + "\n"
    got = parse_offsets_csv(text).offsets
    assert got[name] == {TopicPartition(name, 0): 5}
    assert got["other"] == {TopicPartition("t", 1): 6}


def test_offset_consumer_refuses_group_id_with_leading_whitespace():
    """Invariant: OffsetConsumer never silently joins another group than the one named
    (librdkafka drops a group.id's leading whitespace): such a group.id is refused."""
    from offsetkeeper.consumer import OffsetConsumer
    from offsetkeeper.errors import ConsumerConfigError

    with pytest.raises(ConsumerConfigError, match="whitespace"):
        OffsetConsumer({"bootstrap.servers": "127.0.0.1:1", "group.id": " lead"}, ["t"])


# -- item 6: every offset read from anywhere is validated ------------------------------------

BAD_OFFSETS = [-5, -1, 2**63, 10**25, True, "7"]


@pytest.mark.parametrize("bad", BAD_OFFSETS, ids=repr)
def test_from_offsets_refuses_invalid_offsets_from_any_source(bad):
    """Invariant: no offset outside 0 <= offset < 2^63 (or not an integer) reaches a plan,
    whatever produced it (file, checkpoint, ZooKeeper, mapping, snapshot, history, commit
    history all build a FromOffsets): refused naming the input, group and partition (exit 2)."""
    from offsetkeeper.errors import UsageError
    from offsetkeeper.models import TopicPartition
    from offsetkeeper.reset.targets import FromOffsets

    with pytest.raises(UsageError) as exc:
        FromOffsets({"g": {TopicPartition("t", 3): bad}}, source="zookeeper zk:2181")
    assert exc.value.exit_code == 2
    assert "zookeeper zk:2181" in exc.value.message and "t:3" in exc.value.message
    FromOffsets({"g": {TopicPartition("t", 3): 2**63 - 1}}, source="ok")  # the largest is fine


@pytest.mark.parametrize("text,msg", [
    ("t,0,9223372036854775808\n", "line 1: offset 9223372036854775808 is not below 2^63"),
    ("g,t,0,5\ng,t,1,-5\n", "line 2: offset '-5' is not a non-negative integer"),
    ("t,0,99999999999999999999999999\n", "not below 2^63"),
])
def test_offsets_file_refuses_out_of_range_offsets_with_line(text, msg):
    """Invariant: an offsets CSV holding an offset outside [0, 2^63) is refused naming the line."""
    from offsetkeeper.errors import UsageError
    from offsetkeeper.reset.parse import parse_offsets_csv

    with pytest.raises(UsageError, match=re.escape(msg)):
        parse_offsets_csv(text, source="plan.csv")


def test_to_offset_refuses_2_pow_63():
    """Invariant: --to-offset accepts only offsets below 2^63."""
    from offsetkeeper.errors import UsageError
    from offsetkeeper.reset.parse import parse_offset

    assert parse_offset(str(2**63 - 1)) == 2**63 - 1
    with pytest.raises(UsageError, match="2\\^63"):
        parse_offset(str(2**63))


@pytest.mark.parametrize("field,value", [("offset", -5), ("offset", 2**63), ("partition", -1)])
def test_snapshot_with_invalid_offset_is_corrupt(field, value):
    """Invariant: a snapshot file holding an offset or partition outside [0, 2^63) is refused
    as corrupt (never shown, diffed or rolled back to)."""
    from offsetkeeper.errors import SnapshotFormatError
    from offsetkeeper.snapshots.model import Snapshot

    o = {"topic": "t", "partition": 0, "offset": 5, "metadata": ""}
    o[field] = value
    doc = {"schema_version": 1, "id": "snap-20261121T194501.123Z-1a2b",
           "created_at": "2026-11-21T19:45:01.123Z", "groups": {"g": {"state": "empty",
                                                                      "offsets": [o]}},
           "partitions": []}
    with pytest.raises(SnapshotFormatError, match=field):
        Snapshot.from_dict(doc)
    doc["schema_version"] = 99
    with pytest.raises(SnapshotFormatError, match="newer"):
        Snapshot.from_dict(doc)


@pytest.mark.parametrize("text,msg", [
    ('v1\n{}\n{"orders":{"0":-5}}', "offset -5 is negative"),
    ('v1\n{}\n{"orders":{"0":9223372036854775808}}', "not below 2^63"),
    ('v1\n{}\n{"orders":{"-1":5}}', "partition -1"),
    ('v99\n{}\n{"orders":{"0":5}}', "'v99'"),
])
def test_checkpoint_with_invalid_offset_or_version_is_refused(text, msg):
    """Invariant: a streaming checkpoint's offsets file with an offset outside [0, 2^63), a
    negative partition or an unknown version is refused naming the file (never shown, reset
    or committed to a group)."""
    from offsetkeeper.errors import StoreError
    from offsetkeeper.streaming.checkpoint import parse_offset_log

    with pytest.raises(StoreError, match=re.escape(msg)) as exc:
        parse_offset_log(3, text)
    assert "offsets/3" in exc.value.message


def test_checkpoint_with_negative_offset_cli_exits_1(tmp_path, capsys):
    """Invariant: `streaming show` refuses a checkpoint holding a negative offset (exit 1, one
    line naming the file) instead of showing it."""
    from streaming_support import jvm_checkpoint

    ck = jvm_checkpoint(tmp_path / "ck", {0: {"orders": {"0": 4}}, 1: {"orders": {"0": -5}}},
                        commits=[0, 1])
    r = run_cli(capsys, "streaming", "show", ck)
    assert r.code == 1 and "offsets/1" in r.err and "negative" in r.err, r
    assert len(r.err.strip().splitlines()) == 1


def test_mapping_with_negative_offset_is_corrupt():
    """Invariant: an offset mapping holding a negative source or target offset is corrupt."""
    from offsetkeeper.errors import StoreError
    from offsetkeeper.models import TopicPartition
    from offsetkeeper.restore.mapping import _increasing

    with pytest.raises(StoreError, match="negative"):
        _increasing([-3, 4, 9], "source offset", TopicPartition("t", 0))


# -- item 8: names the Kafka client cannot take ---------------------------------------------

@pytest.mark.parametrize("name,ok", [("payments", True), ("päyments ✓", True), (" lead", True),
                                     ("a\udcffb", False), ("\ud800", False), ("a\x00b", False)])
def test_name_problem(name, ok):
    """Invariant: only names that encode as UTF-8 without NUL are handed to the client; the
    planner's gates (FromOffsets, --topic) refuse the others with exit 2."""
    from offsetkeeper.errors import UsageError
    from offsetkeeper.models import TopicPartition, name_problem
    from offsetkeeper.reset.parse import parse_topic_spec
    from offsetkeeper.reset.targets import FromOffsets

    assert (name_problem(name) is None) is ok
    if not ok:
        with pytest.raises(UsageError):
            FromOffsets({name: {TopicPartition("t", 0): 1}})
        with pytest.raises(UsageError):
            FromOffsets({"g": {TopicPartition(name, 0): 1}})
        with pytest.raises(UsageError):
            parse_topic_spec(name)


# -- item 19: fail fast when nothing listens or the name does not resolve ----------------------

@pytest.mark.parametrize("text,servers", [
    ("localhost:9092", [("localhost", 9092)]),
    ("a:1, PLAINTEXT://b:2", [("a", 1), ("b", 2)]),
    ("[::1]:9092", [("::1", 9092)]),
    ("nohost", None), ("a:99999", None), ("a:x", None),
])
def test_split_servers(text, servers):
    """Invariant: bootstrap lists are split into (host, port); anything else is left to the
    client (None), never guessed."""
    from offsetkeeper.kafka.reach import split_servers

    assert split_servers(text) == servers


def test_certainly_unreachable_only_when_certain():
    """Invariant: the fast answer is given only when every bootstrap server refuses the
    connection or does not resolve; one that listens leaves the decision to the client."""
    import socket

    from offsetkeeper.kafka.reach import certainly_unreachable

    assert "connection refused" in certainly_unreachable("127.0.0.1:1")
    assert "does not resolve" in certainly_unreachable("nosuch-broker.invalid:9092")
    srv = socket.create_server(("127.0.0.1", 0))
    try:
        assert certainly_unreachable(f"127.0.0.1:1,127.0.0.1:{srv.getsockname()[1]}") is None
    finally:
        srv.close()


@pytest.mark.parametrize("bootstrap,why", [("127.0.0.1:1", "connection refused"),
                                           ("nosuch-broker.invalid:9092", "does not resolve")])
def test_unreachable_cluster_fails_fast_in_one_line(bootstrap, why, capsys):
    """Invariant: with connection refused on every bootstrap server, or names that do not
    resolve, a command fails at once (before librdkafka's probe timeout) in one line saying
    which, exit 1."""
    r = run_cli(capsys, "groups", "list", "-b", bootstrap)
    assert r.code == 1 and why in r.err and bootstrap in r.err
    assert len(r.err.strip().splitlines()) == 1


# -- item 14: lag status on an incomplete window -------------------------------------------

def _idle_group_samples(n: int, *, ts0: int):
    from offsetkeeper.history.model import Sample

    return [Sample(ts=ts0 + i * 10_000, group="idle", topic="t", partition=0, committed=5,
                   log_start=0, log_end=9, state="empty") for i in range(n)]


def test_lag_status_says_not_enough_samples(tmp_path, capsys):
    """Invariant: a group with lag whose window is not full yet is never called "consumers
    moving" nor OK: its status is INCOMPLETE, the reason says `not enough samples (4/10)`;
    `lag status` exits 3 ("no verdict", issue 31 item 4) for it, and 1 with `--fail-on
    incomplete` (documented). With a full window the verdict is given."""
    import time

    from offsetkeeper.history.model import Cycle
    from offsetkeeper.history.status import Status, evaluate_status
    from offsetkeeper.history.store import open_store

    g = evaluate_status(_idle_group_samples(4, ts0=0), window=10)
    assert g.status is Status.INCOMPLETE and g.undecided
    assert "not enough samples (4/10)" in g.reason and "moving" not in g.reason
    full = evaluate_status(_idle_group_samples(10, ts0=0), window=10)
    assert full.status is Status.ERR and not full.undecided  # STOP: nobody consumes it

    db = str(tmp_path / "h.db")
    now = int(time.time() * 1000) - 40_000
    with open_store(db) as st:
        for s in _idle_group_samples(4, ts0=now):
            st.write([s], Cycle(s.ts, 10_000, 1, 1, 5))
    r = run_cli(capsys, "lag", "status", "idle", "--store", db)
    assert r.code == 3 and "not enough samples (4/10)" in r.out, r
    assert "INCOMPLETE" in r.out and "OK" not in r.out.replace("INCOMPLETE", ""), r.out
    r = run_cli(capsys, "lag", "status", "idle", "--store", db, "--fail-on", "incomplete")
    assert r.code == 1, r


# -- item 10: the exporter never hides an outage ---------------------------------------------

def _scrape(collector) -> str:
    from prometheus_client import generate_latest
    from prometheus_client.registry import CollectorRegistry

    reg = CollectorRegistry(auto_describe=False)
    reg.register(collector)
    return generate_latest(reg).decode()


def test_exporter_shows_outage_and_never_serves_stale_lag_as_current():
    """Invariant: /metrics carries the sampler's health (up 0/1, last success time, sample age);
    lag of samples older than the staleness limit (three intervals) is not served, so a broker
    outage shows as up 0 with a growing age instead of the last values with status OK."""
    import time

    from offsetkeeper.history.exporter import LagCollector
    from offsetkeeper.history.model import Sample

    now = int(time.time() * 1000)

    def samples(ts):
        return {"payments": [Sample(ts=ts, group="payments", topic="t", partition=0, committed=5,
                                    log_start=0, log_end=9, state="stable", members=1)]}

    fresh = _scrape(LagCollector(lambda: samples(now), cluster_name="c", up=lambda: True,
                                 last_success_ms=lambda: now, stale_after_ms=30_000))
    assert 'kafka_consumergroup_group_lag{' in fresh and 'offsetkeeper_sampler_up{cluster_name="c"} 1.0' in fresh
    assert "offsetkeeper_sample_age_seconds" in fresh

    old = now - 100_000
    down = _scrape(LagCollector(lambda: samples(old), cluster_name="c", up=lambda: False,
                                last_success_ms=lambda: old, stale_after_ms=30_000))
    assert 'offsetkeeper_sampler_up{cluster_name="c"} 0.0' in down
    assert "kafka_consumergroup_group_lag{" not in down
    assert "kafka_consumergroup_group_status{" not in down
    age = float(next(line for line in down.splitlines()
                     if line.startswith("offsetkeeper_sample_age_seconds{")).split()[-1])
    assert age >= 100
    last = float(next(line for line in down.splitlines() if line.startswith(
        "offsetkeeper_sampler_last_success_timestamp_seconds{")).split()[-1])
    assert last == pytest.approx(old / 1000, abs=1)


# -- item 12: history gaps ----------------------------------------------------------------------

def test_partial_and_late_cycles_record_gaps():
    """Invariant: a cycle that could not read some groups (a coordinator or broker down) or
    that came long after the previous one leaves a gap in the history, never a silent hole;
    an ordinary cycle leaves none."""
    from offsetkeeper.history.sample_cycle import CycleResult
    from offsetkeeper.history.sampler import partial_gap

    ok = CycleResult(ts=20_000, samples=[], groups=24, duration_ms=100)
    assert partial_gap(10_000, ok, 10_000) is None
    partial = CycleResult(ts=20_000, samples=[], groups=14, duration_ms=100, missed=10,
                          missed_reason="coordinator not available")
    gap = partial_gap(10_000, partial, 10_000)
    assert (gap.start, gap.end) == (10_000, 20_000)
    assert "partial cycle: 10 group(s)" in gap.reason and "coordinator" in gap.reason
    late = CycleResult(ts=45_000, samples=[], groups=24, duration_ms=35_000)
    assert "no samples for 35s" in partial_gap(10_000, late, 10_000).reason


def test_list_groups_with_no_broker_answering_is_an_outage():
    """Invariant: a ListGroups answered by no broker (only errors) is an outage (retriable
    error), never an empty cluster: a sampling cycle then fails and records a gap instead of
    a successful cycle with 0 groups."""
    from types import SimpleNamespace

    from offsetkeeper.config import Connection
    from offsetkeeper.errors import KafkaOperationError
    from offsetkeeper.kafka.admin import KafkaAdmin

    class FakeFuture:
        def result(self, timeout=None):
            return SimpleNamespace(valid=[], errors=["KafkaError{code=_TRANSPORT}"])

    admin = KafkaAdmin(Connection("127.0.0.1:1"))
    admin.rd._admin = SimpleNamespace(list_consumer_groups=lambda **kw: FakeFuture())
    with pytest.raises(KafkaOperationError) as exc:
        admin.list_groups()
    assert exc.value.retriable


def test_unexpected_errors_are_masked_too(capsys, monkeypatch):
    """Invariant: even an error offsetkeeper did not expect (a driver's exception escaping)
    shows no password of a URL it quotes."""
    from offsetkeeper.cli import main as cli_main

    def boom(*a, **k):
        raise RuntimeError("could not connect to postgresql://app:hunter2xyz@db/ok")

    monkeypatch.setattr(cli_main, "lazy_command", lambda: boom)  # what main() runs
    r = run_cli(capsys, "groups", "list")
    assert r.code == 1 and "hunter2xyz" not in r.err and "******" in r.err


# -- issue 31 item 8: a starting cluster is waited for while it makes progress -----------------

def test_a_starting_cluster_is_given_up_only_when_it_stops_making_progress(tmp_path, monkeypatch):
    """Invariant: a dev-broker start is not bounded by a fixed clock (the demo's 180 s ran out
    at load 20-30 while the nodes were still starting): while a node's logs or data grow the
    wait goes on, past `stall` seconds in total; it is given up only after `stall` seconds
    without growth (or a cap for a node that logs forever without serving)."""
    from offsetkeeper.devbroker import cluster

    clock = [1000.0]
    monkeypatch.setattr(cluster.time, "monotonic", lambda: clock[0])
    node = tmp_path / "node-1"
    (node / "data").mkdir(parents=True)
    log = node / "server.log"
    log.write_text("starting\n")
    p = cluster._Progress(tmp_path, 1, stall=60)
    for _ in range(10):  # 10 x 50 s = 500 s in all, growing every time
        clock[0] += 50
        with log.open("a") as f:
            f.write("still loading\n")
        assert p.stuck() is None
    clock[0] += 59
    assert p.stuck() is None
    clock[0] += 2
    assert "no progress for 60s" in (p.stuck() or "")
    (node / "data" / "segment").write_bytes(b"x" * 10)  # the data directory counts too
    assert p.stuck() is None
    clock[0] += p.cap
    with log.open("a") as f:
        f.write("error, retrying\n")
    assert "did not serve within" in (p.stuck() or "")
