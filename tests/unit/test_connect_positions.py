"""Kafka Connect source positions in the history store and the exporter, and the dashboard's
worker and MM2 settings (issue 33 item 4), at unit level: pure logic and the SQLite store.
The real worker: tests/integration/test_connect_ui.py."""

from __future__ import annotations

import json
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetkeeper.connect.model import canonical
from offsetkeeper.errors import StoreError, UsageError
from offsetkeeper.history.exporter import LABEL_LIMIT, LagCollector, partition_label
from offsetkeeper.history.model import Position
from offsetkeeper.history.store import RetentionPolicy, open_store
from offsetkeeper.web.connectors import mm2_entries, worker_entries

HOSTILE = 'f<script>alert("x")</script>\n\\q\'é\u202e'


def _parsed(text: str) -> dict:
    from prometheus_client.parser import text_string_to_metric_families

    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in out, f"duplicate series {key}"
            out[key] = s.value
    return out


def _collector(positions, workers, *, stale_after_ms=None):
    return LagCollector(lambda: {}, cluster_name="c", stale_after_ms=stale_after_ms,
                        positions=lambda: (positions, workers))


def test_numeric_fields_are_gauges_and_the_rest_is_counted():
    """Invariant: only finite numbers of an offset map become gauges; strings, booleans, maps,
    lists and null are skipped and counted; an offset that is not a map is one skipped value."""
    p = Position(1, "w", "c", "{}", json.dumps({"position": 42, "lsn": 1.5, "file": "x",
                                                 "snapshot": True, "nested": {"a": 1},
                                                 "none": None}))
    assert p.numeric_fields() == ({"position": 42.0, "lsn": 1.5}, 4)
    assert Position(1, "w", "c", "{}", "null").numeric_fields() == ({}, 1)


@given(st.text(min_size=0, max_size=600))
@settings(max_examples=200, deadline=None)
def test_partition_labels_are_bounded_stable_and_keep_long_maps_apart(text):
    """Invariant: a partition label is at most LABEL_LIMIT characters, the same for the same
    map, the map itself when it fits, and two long maps with the same start stay two labels."""
    label = partition_label(text)
    assert len(label) <= LABEL_LIMIT and label == partition_label(text)
    if len(text) <= LABEL_LIMIT:
        assert label == text
    else:
        assert partition_label(text + "x") != label


def test_exporter_serves_source_positions_escaped_and_equal_to_the_collector():
    """Invariant: hostile connector names and partition maps (quotes, newlines, backslashes,
    markup, bidi) come out of a scrape as the exact label values (Prometheus escaping), each
    numeric offset value is one gauge, non-numeric values are counted, a failed worker is
    up 0, and the fast text equals prometheus-client's rendering of `collect()`."""
    from prometheus_client.exposition import generate_latest
    from prometheus_client.registry import CollectorRegistry

    part = canonical({"filename": f"/tmp/{HOSTILE}.txt"})
    long_a = canonical({"k": "a" * 500 + "1"})
    long_b = canonical({"k": "a" * 500 + "2"})
    positions = [Position(10**15, "http://w:8083", HOSTILE, part,
                          canonical({"position": 1234, "name": "x"})),
                 Position(10**15, "http://w:8083", "long", long_a, canonical({"position": 1})),
                 Position(10**15, "http://w:8083", "long", long_b, canonical({"position": 2}))]
    col = _collector(positions, {"http://w:8083": "", "http://down:1": "refused"})
    got = _parsed(col.render().decode())
    key = ("offsetkeeper_connect_source_offset",
           tuple(sorted({"cluster_name": "c", "worker": "http://w:8083", "connector": HOSTILE,
                         "partition": part, "field": "position"}.items())))
    assert got[key] == 1234
    assert got[("offsetkeeper_connect_source_offset_skipped",
                tuple(sorted({"cluster_name": "c", "worker": "http://w:8083",
                              "connector": HOSTILE}.items())))] == 1
    longs = {dict(k[1])["partition"]: v for k, v in got.items()
             if k[0] == "offsetkeeper_connect_source_offset" and dict(k[1])["connector"] == "long"}
    assert sorted(longs.values()) == [1, 2] and all(len(x) <= LABEL_LIMIT for x in longs)
    ups = {dict(k[1])["worker"]: v for k, v in got.items()
           if k[0] == "offsetkeeper_connect_worker_up"}
    assert ups == {"http://w:8083": 1, "http://down:1": 0}
    reg = CollectorRegistry()
    reg.register(col)
    assert _parsed(generate_latest(reg).decode()) == got


def test_stale_positions_are_not_served_as_current():
    """Invariant: a position older than the stale limit is left out, like stale lag."""
    col = _collector([Position(1, "w", "old", "{}", canonical({"position": 5}))], {"w": ""},
                     stale_after_ms=60_000)
    assert not [k for k in _parsed(col.render().decode())
                if k[0] == "offsetkeeper_connect_source_offset"]


def test_sqlite_store_keeps_positions_migrates_a_version_4_file_and_prunes(tmp_path):
    """Invariant: positions written are read back exactly (by connector and time range),
    rewriting them changes nothing, a store of schema 4 gains the table when opened, and
    retention deletes old positions."""
    db = str(tmp_path / "h.db")
    with open_store(db):
        pass
    con = sqlite3.connect(db)
    con.execute("DROP TABLE connect_positions")
    con.execute("UPDATE schema_version SET version = 4")
    con.commit()
    con.close()
    with open_store(db) as st:
        assert st.schema_version() == 5
        check_positions(st)


def check_positions(st) -> None:
    """Positions written are read back exactly (by connector and time range), rewriting them
    changes nothing, retention deletes old ones (any store that keeps positions)."""
    part = canonical({"filename": HOSTILE})
    ps = [Position(ts, "http://w", name, part, canonical({"position": ts}))
          for ts in (1000, 2000) for name in ("a", HOSTILE)]
    st.write_positions(ps)
    st.write_positions(ps)
    assert st.positions(HOSTILE) == [p for p in ps if p.connector == HOSTILE]
    assert st.positions(since=1500) == [p for p in ps if p.ts == 2000]
    st.prune(RetentionPolicy(retain_ms=1000, downsample_after_ms=None), now=2500)
    assert st.positions() == [p for p in ps if p.ts == 2000]


def test_a_store_without_positions_refuses_a_connect_url():
    """Invariant: asking a store that cannot keep positions to keep them is an error, never a
    silent loss."""
    from offsetkeeper.history.store.base import HistoryStore

    class NoPositions(HistoryStore):
        url = "x://"
        check = schema_version = close = write = write_gap = prune = groups = at = \
            recent = series = cycles = gaps = log_end_points = lambda *a, **k: None

    with pytest.raises(StoreError, match="does not keep Kafka Connect"):
        NoPositions().write_positions([])


def test_dashboard_worker_and_mm2_settings():
    """Invariant: `--connect-url [NAME=]URL` and ui.connect give named workers with the
    password kept out of every rendered value; `--mm2 ALIAS[,target=..][,source=..]` gives
    flows; malformed values, unknown clusters and duplicate names are bad input (exit 2)
    naming the masked value."""
    ws = worker_entries([], ("main=http://bob:s3cret@connect:8083", "http://other:8083"),
                        ["prod", "dr"])
    assert [(w.name, w.display_url, w.cluster) for w in ws] == [
        ("main", "http://connect:8083", None), ("other:8083", "http://other:8083", None)]
    assert "s3cret" not in repr(ws) and ws[0].target.password == "s3cret"
    with pytest.raises(UsageError) as exc:
        worker_entries([], ("ftp://bob:s3cret@x",), ["prod"])
    assert "s3cret" not in exc.value.message and "ftp://" in exc.value.message
    with pytest.raises(UsageError, match="given twice"):
        worker_entries([], ("a=http://x:1", "a=http://y:1"), ["prod"])
    flows = mm2_entries([], ("A,target=dr,source=prod", "B"), ["prod", "dr"], "prod")
    assert [(f.name, f.source_alias, f.target, f.source) for f in flows] == [
        ("A->dr", "A", "dr", "prod"), ("B->prod", "B", None, None)]
    for bad, what in (("A,target=nope", "not configured"), ("A,color=red", "color=red"),
                      ("a.b", "not a cluster alias")):
        with pytest.raises(UsageError, match=what):
            mm2_entries([], (bad,), ["prod", "dr"], "prod")


@pytest.mark.parametrize("args, message", [
    (["ui", "-b", "127.0.0.1:1", "--connect-url", "w=ftp://bob:s3cret@x:1"],
     "--connect-url 'ftp://bob:******@x:1' is not a Connect REST URL"),
    (["ui", "-b", "127.0.0.1:1", "--mm2", "A,colour=red"], "'colour=red' is not target=CLUSTER"),
    (["ui", "-b", "127.0.0.1:1", "--mm2", "A,target=nowhere"], "cluster 'nowhere' is not configured"),
    (["history", "record", "--once", "--all-groups", "-b", "127.0.0.1:1",
      "--connect-url", "ftp://bob:s3cret@x:1"], "is not a Connect REST URL"),
    (["exporter", "-b", "127.0.0.1:1", "--connect-url", "nope"], "is not a Connect REST URL"),
])
def test_bad_connect_and_mm2_options_are_one_line_exit_2(capsys, tmp_path, args, message):
    """Invariant: a malformed --connect-url or --mm2 is refused before anything starts: exit 2,
    one line naming the value (its password masked)."""
    from tests.cli import run_cli

    r = run_cli(capsys, *args, *(["--store", str(tmp_path / "h.db")] if "record" in args else []))
    assert r.code == 2, (r.out, r.err)
    assert message in r.err and "s3cret" not in r.err + r.out and "Traceback" not in r.err


def test_a_store_that_keeps_no_positions_refuses_connect_urls(monkeypatch):
    """Invariant: `history record --connect-url` into a store that cannot keep positions
    (Redis) is refused (exit 2) before any cluster is contacted, never a silent loss."""
    from offsetkeeper.history.service import record
    from offsetkeeper.history.store.memory import MemoryStore
    from offsetkeeper.history.store.redis import RedisStore

    assert RedisStore.keeps_positions is False
    monkeypatch.setattr(MemoryStore, "keeps_positions", False)  # a store like Redis, no server
    with pytest.raises(UsageError, match="does not keep Kafka Connect source positions"):
        record(None, "memory://", None, positions=lambda ts: ([], {}))


def test_sampler_keeps_positions_through_a_store_outage_and_a_failed_worker():
    """Invariants: a read of source positions is written with its cycle's time; while the
    store is down it is kept in memory and written when the store answers again; a worker
    that fails is its error (served as up 0), never the cycle's failure."""
    from offsetkeeper.history.sample_cycle import SampleScope
    from offsetkeeper.history.sampler import Sampler, SamplerConfig
    from offsetkeeper.history.store.base import StoreUnavailable
    from offsetkeeper.history.store.memory import MemoryStore
    from tests.fake_admin import FakeAdmin

    class Flaky(MemoryStore):
        down = False

        def write_positions(self, positions):
            if self.down:
                raise StoreUnavailable("history store memory:// is not reachable: down")
            super().write_positions(positions)

    admin = FakeAdmin(topics={"orders": [(0, 10)]})
    admin.add_group("g", committed={("orders", 0): 4})
    store = Flaky()
    reads = iter([(True, ""), (True, ""), (False, "refused")])

    def reader(ts):
        ok, err = next(reads)
        return ([Position(ts, "http://w", "src", '{"f":"a"}', f'{{"position":{ts}}}')]
                if ok else []), {"http://w": err}

    s = Sampler(admin, store, SamplerConfig(scope=SampleScope(groups=("g",)), time_lag=False,
                                            retention=None), positions=reader)
    first = s.run_once()
    assert first.ok and first.stored
    store.down = True
    second = s.run_once()
    assert second.ok and not second.stored  # the positions wait in memory
    assert [p.ts for p in store.positions()] == [first.ts]
    store.down = False
    third = s.run_once()
    assert third.ok and third.stored
    assert [p.ts for p in store.positions()] == [first.ts, second.ts]
    positions, errors = s.latest_positions()
    assert positions == () and errors == {"http://w": "refused"}


def test_config_file_names_workers_and_flows(tmp_path, monkeypatch):
    """Invariant: ui.connect and ui.mm2 in the config file give the dashboard's workers (the
    password from the environment, never in a rendered value) and flows, before the flags'."""
    from offsetkeeper.config import load_config_file

    monkeypatch.setenv("T_CONNECT_PW", "pw-from-env")
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(
        "clusters:\n  prod: {bootstrap_servers: 'k:9092'}\n  dr: {bootstrap_servers: 'd:9092'}\n"
        "ui:\n  connect:\n    - {name: main, url: 'https://connect:8083', username: ops,\n"
        "       password: '${T_CONNECT_PW}', cluster: prod, verify: false}\n"
        "  mm2:\n    - {source_alias: A, target: dr, source: prod}\n")
    cfg = load_config_file(cfg_file)
    [w, extra] = worker_entries(cfg.ui.connect, ("http://x:1",), ["prod", "dr"])
    assert (w.name, w.display_url, w.cluster) == ("main", "https://connect:8083", "prod")
    assert (w.target.username, w.target.password, w.target.verify) == ("ops", "pw-from-env", False)
    assert "pw-from-env" not in repr(cfg) + repr(w) and extra.name == "x:1"
    [f] = mm2_entries(cfg.ui.mm2, (), ["prod", "dr"], "prod")
    assert (f.name, f.source_alias, f.target, f.source) == ("A->dr", "A", "dr", "prod")


def test_sampler_workers_take_basic_auth_from_the_options_and_hide_it():
    """Invariant: --connect-user/--connect-password reach every worker as a basic-auth header
    (what the `connect` commands send), and the password is in no repr of the settings."""
    import base64
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from offsetkeeper.ops.history import SamplerSettings

    seen = []

    class Worker(BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append((self.path, self.headers.get("Authorization")))
            body = b"{}"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Worker)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        settings = SamplerSettings(all_groups=True, connect_urls=(url,), connect_user="ops",
                                   connect_password="pw-secret")
        assert "pw-secret" not in repr(settings)
        assert settings.position_reader()(5) == ([], {url: ""})
        token = base64.b64encode(b"ops:pw-secret").decode()
        assert seen == [("/connectors?expand=info", f"Basic {token}")]
    finally:
        srv.shutdown()
        srv.server_close()
