"""Regression tests for the dashboard items of issue 22, "Hardening, round two", against the
real broker (and a real redis-server): a bad item is a row with its error, never a failed page;
the groups page filters, sorts and pages on the server; `ui` reads the store `history record`
writes; the wizard, charts, snapshots and checkpoints pages say what they mean."""

from __future__ import annotations

import json
import logging
import re
import time
import warnings

import pytest

from offsetkeeper.web.checkpoints import CheckpointEntry
from tests.kafkatools import commit, create_topic, produce_n
from tests.streaming_support import jvm_checkpoint
from tests.web_support import confirm_data, csrf_of, fill_history, make_app

warnings.filterwarnings("ignore", message=".*httpx.*", category=DeprecationWarning)
from starlette.testclient import TestClient  # noqa: E402

pytestmark = pytest.mark.integration
DEEP = "[" * 100_000 + "]" * 100_000   # deeper than any JSON parser's recursion limit
RLO = "\u202e"                          # RIGHT-TO-LEFT OVERRIDE


def client(app) -> TestClient:
    # raise_server_exceptions=False: a 500 must reach the test as a response, like a browser.
    return TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False)


@pytest.fixture
def topic(bootstrap, unique):
    name = unique("hard")
    create_topic(bootstrap, name, 2, {"retention.ms": "-1"})
    produce_n(bootstrap, name, 2, 20)
    return name


# -- item 7: one bad item is a row with its error; every failure is logged ------------------------

def test_bad_items_are_rows_with_their_error(bootstrap, topic, tmp_path, caplog):
    """Invariant: a checkpoint with a 26-digit or negative offset or absurdly nested JSON, a
    snapshot file nested beyond the parser's limit, and an s3:// backup destination without
    s3fs each become a row (or line) with its error on an HTTP 200 page — the other items are
    still shown — and each failure is logged."""
    pytest.importorskip("fsspec")
    try:
        import s3fs  # noqa: F401
        pytest.skip("s3fs is installed: the missing-package case cannot happen here")
    except ImportError:
        pass
    good = jvm_checkpoint(tmp_path / "good", {0: {topic: {"0": 20, "1": 20}}}, commits=[0])
    big = jvm_checkpoint(tmp_path / "big", {0: {topic: {"0": 10**25, "1": 7}}}, commits=[0])
    neg = jvm_checkpoint(tmp_path / "neg", {0: {topic: {"0": -5, "1": 7}}}, commits=[0])
    nested = tmp_path / "nested"
    (nested / "offsets").mkdir(parents=True)
    (nested / "metadata").write_text('{"id":"q-1"}')
    (nested / "offsets" / "0").write_text("v1\n" + DEEP + "\n" + DEEP)
    snaps = tmp_path / "snapshots"
    snaps.mkdir()
    (snaps / "snap-20260101T000000.000Z-abcd.json").write_text(DEEP)
    local_backups = tmp_path / "backups"
    local_backups.mkdir()
    cks = (CheckpointEntry("good", good), CheckpointEntry("big", big),
           CheckpointEntry("neg", neg), CheckpointEntry("nested", str(nested)))
    c = client(make_app(bootstrap, tmp_path, checkpoints=cks, snapshot_store=str(snaps),
                        backup_destinations=("s3://no-such-bucket/backups", str(local_backups))))
    caplog.set_level(logging.WARNING, logger="offsetkeeper.web")

    r = c.get("/checkpoints?format=json")
    assert r.status_code == 200, r.text
    rows = {x["name"]: x for x in r.json()["checkpoints"]}
    assert rows["good"]["status"] == "OK" and rows["good"]["error"] is None
    assert rows["big"]["status"] == "ERROR" and "2^63" in rows["big"]["error"]
    assert rows["neg"]["status"] == "ERROR" and "-5" in rows["neg"]["error"]
    assert rows["nested"]["status"] == "ERROR" and rows["nested"]["error"]
    assert c.get("/checkpoints").status_code == 200
    for i in range(4):
        d = c.get(f"/checkpoints/{i}?format=json")
        assert d.status_code == 200, (i, d.text)

    r = c.get("/c/default/snapshots?format=json")
    assert r.status_code == 200, r.text
    (snap,) = r.json()["snapshots"]
    assert snap["error"] and "nested too deeply" in snap["error"]
    assert c.get("/c/default/snapshots").status_code == 200
    assert c.get("/c/default/reset").status_code == 200      # lists snapshots too

    r = c.get("/backups?format=json")
    assert r.status_code == 200, r.text
    s3, local = r.json()["destinations"]
    assert "s3fs" in s3["error"] and s3["backups"] == []
    assert local["error"] is None
    assert "s3fs" in c.get("/backups").text

    logged = "\n".join(r.getMessage() for r in caplog.records)
    for name in ("'big'", "'neg'", "'nested'", "backup destination s3://"):
        assert name in logged, name
    assert "Traceback" not in c.get("/backups").text

    # The diff of that one snapshot cannot be shown: a 500 with one sentence, and logged.
    caplog.clear()
    d = c.get("/c/default/snapshots/snap-20260101T000000.000Z-abcd")
    assert d.status_code == 500 and "nested too deeply" in d.text and "Traceback" not in d.text
    assert any(r.levelno >= logging.WARNING and "/snapshots/snap-20260101" in r.getMessage()
               for r in caplog.records)


def _redis_history(redis_url: str, unique, topic: str):
    """A Redis history store (own prefix) with two groups, one of them with a malformed
    member; returns (url, good group, bad group)."""
    import redis as redis_client

    prefix = unique("hist")
    url = f"{redis_url}?prefix={prefix}"
    good, bad = f"{prefix}-good", f"{prefix}-bad"   # one name filter shows both
    fill_history(url, good, topic, cycles=12)
    fill_history(url, bad, topic, cycles=12)
    r = redis_client.Redis.from_url(redis_url)
    r.zadd(f"{prefix}:g:{bad}", {'{"ts": "not a sample"': time.time() * 1000})
    return url, good, bad


def test_malformed_redis_member_is_the_groups_row(bootstrap, topic, tmp_path, redis_url,
                                                 unique, caplog):
    """Invariant: one malformed history record in Redis is its group's error (a row saying
    its history is unreadable, logged); the groups page of all groups is 200 with every other
    group's status, the group's own page is 200, and the history warmer keeps running."""
    url, good, bad = _redis_history(redis_url, unique, topic)
    for g in (good, bad):
        commit(bootstrap, g, {(topic, 0): 5})
    app = make_app(bootstrap, tmp_path, history_url=url)
    dash = app.state.dash
    caplog.set_level(logging.WARNING, logger="offsetkeeper.web")
    dash.history.start_warming(every_s=0.05)
    try:
        c = client(app)
        prefix = good.removesuffix("-good")
        r = c.get("/c/default/groups", params={"format": "json", "q": prefix})
        assert r.status_code == 200, r.text
        rows = {x["group"]: x for x in r.json()["groups"]}
        assert rows[good]["status"] in ("OK", "WARN") and rows[good]["error"] is None
        assert rows[bad]["status"] is None and "unreadable" in rows[bad]["error"]
        page = c.get("/c/default/groups", params={"q": bad})
        assert page.status_code == 200 and "history unreadable" in page.text
        gp = c.get("/c/default/group", params={"g": bad})
        assert gp.status_code == 200 and 'id="history-error"' in gp.text
        assert c.get("/c/default/group", params={"g": good}).status_code == 200
        time.sleep(0.5)  # several warmer rounds over the bad group
        assert dash.history._warmer.is_alive()
        assert any(bad in r.getMessage() for r in caplog.records)
    finally:
        dash.history.close()


def test_unreachable_history_store_on_group_page(bootstrap, topic, tmp_path, unique):
    """Invariant: when the history store stops answering, the group page is still 200 with the
    cluster's facts and says the store failed (no charts, no 500); so is the groups page."""
    from tests.services import start_redis, stop_process

    proc, url = start_redis(tmp_path / "redis")
    g = unique("grp")
    commit(bootstrap, g, {(topic, 0): 5})
    fill_history(url, g, topic, cycles=5)
    app = make_app(bootstrap, tmp_path, history_url=url)
    c = client(app)
    assert c.get("/c/default/group", params={"g": g}).status_code == 200
    stop_process(proc)
    try:
        r = c.get("/c/default/group", params={"g": g})
        assert r.status_code == 200, r.text
        assert 'id="history-error"' in r.text and "not reachable" in r.text
        assert 'id="total-lag"' in r.text and "chart-line" not in r.text
        j = c.get("/c/default/group", params={"g": g, "format": "json"})
        assert j.status_code == 200 and j.json()["group"]["history_error"]
        gr = c.get("/c/default/groups", params={"q": g})
        assert gr.status_code == 200 and "not reachable" in gr.text
    finally:
        app.state.dash.history.close()


# -- item 25: filter, sort and pages on the server --------------------------------------------------

def test_groups_page_filters_sorts_and_pages(bootstrap, topic, tmp_path, unique):
    """Invariant: the groups page filters by name and state, sorts by any column and cuts
    pages on the server: `matched` counts the filter's groups, pages hold at most `per` rows
    in the requested order with no group lost or repeated, a page past the end shows the last,
    and a malformed page, size or sort is 400."""
    prefix = unique("pg")
    names = [f"{prefix}-{i:02d}" for i in range(7)]
    for i, g in enumerate(names):
        commit(bootstrap, g, {(topic, 0): 20 - i})     # lag i on partition 0
    c = client(make_app(bootstrap, tmp_path))

    def page(**params):
        r = c.get("/c/default/groups", params={"format": "json", "q": prefix, **params})
        assert r.status_code == 200, r.text
        return r.json()

    first = page(per=3)
    assert (first["matched"], first["pages"], first["page"]) == (7, 3, 1)
    assert first["total"] >= 7
    seen = []
    for p in (1, 2, 3):
        seen += [x["group"] for x in page(per=3, page=p)["groups"]]
    assert seen == names                                  # by name, nothing lost or repeated
    assert [x["group"] for x in page(per=3, page=99)["groups"]] == names[6:]
    by_lag = []
    for p in (1, 2, 3):
        by_lag += [x["lag"] for x in page(per=3, page=p, sort="lag", dir="desc")["groups"]]
    assert by_lag == [6, 5, 4, 3, 2, 1, 0]
    desc = page(per=3, dir="desc")
    assert [x["group"] for x in desc["groups"]] == names[::-1][:3]
    assert page(q=f"{prefix}-0", per=100)["matched"] == 7
    assert page(q=f"{prefix}-03")["matched"] == 1
    assert page(state="stable")["matched"] == 0
    assert page(state="empty")["matched"] == 7
    html = c.get("/c/default/groups", params={"q": prefix, "per": "3", "page": "2"}).text
    assert html.count('<tr data-name="') == 3 and 'id="pager"' in html and "page 2 of 3" in html
    for bad in ({"per": "0"}, {"per": "100000"}, {"page": "x"}, {"sort": "nonsense"}):
        assert c.get("/c/default/groups", params=bad).status_code == 400, bad


# -- item 15: ui reads the store history record writes ---------------------------------------------

def test_empty_history_store_is_said(bootstrap, topic, tmp_path, unique):
    """Invariant: a history store without any sample is said so on the groups and group pages
    (a mistyped path used to open a new, empty store silently)."""
    g = unique("grp")
    commit(bootstrap, g, {(topic, 0): 5})
    c = client(make_app(bootstrap, tmp_path, history_url=str(tmp_path / "empty.db")))
    assert 'id="empty-store"' in c.get("/c/default/groups", params={"q": g}).text
    assert 'id="empty-store"' in c.get("/c/default/group", params={"g": g}).text
    fill_history(str(tmp_path / "empty.db"), g, topic, cycles=3)
    assert 'id="empty-store"' not in c.get("/c/default/groups", params={"q": g}).text


# -- item 22: what the pages say ------------------------------------------------------------------

def test_wizard_preselects_nothing_and_shows_the_uploaded_name(bootstrap, topic, tmp_path,
                                                              unique):
    """Invariant: the wizard preselects no target (a POST without one is 400), its time
    fields are ISO 8601 text in UTC (not the browser's 12-hour locale picker), and an uploaded
    file is named by its own name — never its temporary path — in the plan, the report and
    the snapshot's description; the snapshots page says which cluster each snapshot is of."""
    g = unique("grp")
    commit(bootstrap, g, {(topic, 0): 3, (topic, 1): 3})
    c = client(make_app(bootstrap, tmp_path))
    form = c.get("/c/default/reset", params={"g": g}).text
    assert not re.search(r'name="kind"[^>]*checked', form)
    assert 'type="datetime-local"' not in form and "UTC" in form and "24-hour" in form
    tok = csrf_of(form)
    r = c.post("/c/default/reset/preview", data={"csrf": tok, "groups": g})
    assert r.status_code == 400 and "choose a reset target" in r.text

    r = c.post("/c/default/reset/preview", data={"csrf": tok, "groups": g, "kind": "from-file"},
               files={"value_from-file": ("my offsets.csv", f"{topic},0,7\n".encode())})
    assert r.status_code == 200, r.text
    assert "my offsets.csv (uploaded)" in r.text
    assert "offsetkeeper-ui-" not in r.text and "/tmp" not in r.text
    pid = re.search(r"/plans/([A-Za-z0-9_-]+)/execute", r.text).group(1)
    rep = c.post(f"/c/default/plans/{pid}/execute", data=confirm_data(r.text, tok))
    assert rep.status_code == 200 and "offsetkeeper-ui-" not in rep.text
    snaps = c.get("/c/default/snapshots", params={"format": "json"}).json()["snapshots"]
    mine = [s for s in snaps if "my offsets.csv" in s["description"]]
    assert mine and all("offsetkeeper-ui-" not in s["description"] for s in snaps)
    html = c.get("/c/default/snapshots").text
    assert "<th>cluster</th>" in html and mine[0]["cluster_id"] in html


def test_charts_ticks_and_time_lag_unit(bootstrap, topic, tmp_path, unique):
    """Invariant: the lag chart's value ticks are whole numbers, and time lag is shown in one
    human unit on both the chart and the page header (no '(seconds)' next to minutes)."""
    g = unique("grp")
    commit(bootstrap, g, {(topic, 0): 5})
    hist = str(tmp_path / "h.db")
    fill_history(hist, g, topic, cycles=40)   # lag up to 200 per partition, 20 s time lag
    c = client(make_app(bootstrap, tmp_path, history_url=hist))
    html = c.get("/c/default/group", params={"g": g}).text
    ticks = re.findall(r'class="chart-axis">([^<]+)</text>', html)
    values = [t for t in ticks if not re.fullmatch(r"\d\d:\d\d", t)]
    assert values, ticks
    lag_ticks, tlag_ticks = values[:3], values[3:]
    assert all(re.fullmatch(r"\d+k?", t) for t in lag_ticks), lag_ticks
    assert all(re.fullmatch(r"\d+(\.\d)?[smhd]", t) for t in tlag_ticks), tlag_ticks
    assert "(seconds)" not in html


def test_names_escaped_like_the_cli(bootstrap, topic, tmp_path, unique):
    """Invariant: a group name with a bidi override (U+202E) is shown escaped, as the CLI
    prints it (`\\u202e`), on the groups page, the group page and in its chart labels; the
    JSON keeps the exact name."""
    g = f"{unique('bidi')}{RLO}gpj.exe"
    commit(bootstrap, g, {(topic, 0): 5})
    hist = str(tmp_path / "h.db")
    fill_history(hist, g, topic, cycles=3)
    c = client(make_app(bootstrap, tmp_path, history_url=hist))
    for html in (c.get("/c/default/groups", params={"q": g[:15]}).text,
                 c.get("/c/default/group", params={"g": g}).text):
        assert RLO not in html and "\\u202egpj.exe" in html
    j = c.get("/c/default/group", params={"g": g, "format": "json"}).json()
    assert j["group"]["group"] == g


def test_stopped_query_with_lag_is_not_ok(bootstrap, topic, tmp_path):
    """Invariant: a streaming checkpoint whose query stopped with records waiting (lag 526
    here, no batch file for an hour) is STALLED, never OK; caught up it is OK."""
    t = topic
    produce_n(bootstrap, t, 2, 263)   # 283 records per partition
    stopped = jvm_checkpoint(tmp_path / "stopped", {0: {t: {"0": 20, "1": 20}}}, commits=[0])
    done = jvm_checkpoint(tmp_path / "done", {0: {t: {"0": 283, "1": 283}}}, commits=[0])
    c = client(make_app(bootstrap, tmp_path, checkpoints=(CheckpointEntry("stopped", stopped),
                                                         CheckpointEntry("done", done))))
    rows = {x["name"]: x for x in c.get("/checkpoints?format=json").json()["checkpoints"]}
    assert rows["stopped"]["total_lag"] == 526 and rows["stopped"]["status"] == "STALLED"
    assert rows["done"]["total_lag"] == 0 and rows["done"]["status"] == "OK"
    assert json.dumps(rows)  # plain data
