"""The dashboard shows groups of every Kafka 4 type (issue 23): the groups page with TYPE,
PROTOCOL and real states (as `groups list`), the share and streams groups' own pages (as
`share-groups describe` / `streams-groups describe`), the page without the JVM helper, a group
held by an open transaction, and the groups page sorted by lag without describing every group
(issue 25). Real Apache Kafka 4.4.0, real Java share and streams clients."""

from __future__ import annotations

import time
import uuid
import warnings

import pytest

from offsetkeeper.history.model import Cycle, Sample
from offsetkeeper.history.store import open_store
from offsetkeeper.kafka import jvm
from tests.cli import run_cli
from tests.group_types_support import typed_groups
from tests.integration.test_share_streams_groups import wait_until
from tests.kafkatools import commit, create_topic, produce_n
from tests.web_support import make_app

warnings.filterwarnings("ignore", message=".*httpx.*", category=DeprecationWarning)
from starlette.testclient import TestClient  # noqa: E402

pytestmark = pytest.mark.integration
needs_helper = pytest.mark.skipif(not jvm.available(), reason="the JVM admin helper is not built "
                                  "(scripts/setup.sh)")


def client(app) -> TestClient:
    return TestClient(app, base_url="http://127.0.0.1")


@pytest.fixture(scope="module")
def groups4(bootstrap, tmp_path_factory):
    if not jvm.available():
        pytest.skip("the JVM admin helper is not built (scripts/setup.sh)")
    token = f"w{uuid.uuid4().hex[:8]}"
    with typed_groups(bootstrap, token, str(tmp_path_factory.mktemp("streams-state"))) as tg:
        yield tg


@pytest.fixture
def web(bootstrap, tmp_path):
    return client(make_app(bootstrap, tmp_path))


def _rows(c: TestClient, **params) -> dict:
    r = c.get("/c/default/groups", params={"format": "json", **params})
    assert r.status_code == 200, r.text
    return r.json()


@needs_helper
def test_groups_page_shows_every_type_as_groups_list(web, groups4, bootstrap, capsys):
    """Invariant: the groups page lists classic, consumer, share and streams groups with the
    type, protocol and real state `groups list` gives (the same library call), their members
    and lag; the type filter keeps one type; a bad type is 400."""
    tg = groups4

    def all_four():
        doc = _rows(web, q=tg.token)
        got = {x["group"]: x for x in doc["groups"]}
        return got if len(got) == 4 and got[tg.streams]["members"] == 1 else None

    got = wait_until("four groups on the page", all_four)
    r = run_cli(capsys, "groups", "list", "-b", bootstrap, "-o", "json")
    cli = {g["group_id"]: g for g in r.json() if g["group_id"].startswith(tg.token)}
    assert set(cli) == set(got)
    for g, x in got.items():
        assert (x["group_type"], x["protocol"], x["state"]) == \
            (cli[g]["group_type"], cli[g]["protocol"], cli[g]["state"]), (x, cli[g])
    assert {g: got[g]["group_type"] for g in got} == {
        tg.classic: "classic", tg.consumer: "consumer", tg.share: "share", tg.streams: "streams"}
    assert got[tg.classic]["protocol"] == ""
    assert (got[tg.share]["members"], got[tg.share]["partitions"]) == (1, 3)
    assert (got[tg.streams]["members"], got[tg.streams]["partitions"]) == (1, 2)
    assert got[tg.consumer]["members"] == 1 and got[tg.consumer]["state"] == "stable"
    assert got[tg.classic]["lag"] == 6          # 10 records, committed 4

    only = _rows(web, q=tg.token, type="share")
    assert [x["group"] for x in only["groups"]] == [tg.share]
    assert [x["group"] for x in _rows(web, q=tg.token, sort="type")["groups"]] == \
        [tg.classic, tg.consumer, tg.share, tg.streams]
    html = web.get("/c/default/groups", params={"q": tg.token}).text
    assert "<th>protocol</th>" in html and 'id="filter-type"' in html
    assert f'g={tg.share}&amp;type=share"' in html and f'g={tg.streams}&amp;type=streams"' in html
    assert web.get("/c/default/groups", params={"type": "sharing"}).status_code == 400


@needs_helper
def test_share_group_page_is_share_groups_describe(web, groups4, bootstrap, capsys):
    """Invariant: a share group's page shows per partition the start offset, log end and lag
    (KIP-1226) as `share-groups describe` does, its member with the assignment and its state;
    the page is found from the link's type and without it (the cluster says the type)."""
    tg = groups4

    def acknowledged():
        r = web.get("/c/default/group", params={"g": tg.share, "type": "share",
                                                "format": "json"})
        assert r.status_code == 200, r.text
        doc = r.json()["group"]
        return doc if [p["lag"] for p in doc["partitions"]] == [0, 0, 0] else None

    doc = wait_until("every record acknowledged", acknowledged)
    r = run_cli(capsys, "share-groups", "describe", tg.share, "-b", bootstrap, "-o", "json")
    cli = {(x["topic"], x["partition"]): x for x in r.json()}
    for p in doc["partitions"]:
        x = cli[(p["topic"], p["partition"])]
        assert (p["start_offset"], p["lag"], p["log_end"]) == \
            (x["start_offset"], x["lag"], x["log_end_offset"])
        assert p["log_end"] == 10 and p["assigned_to"]
    assert doc["state"] == "Stable" and doc["group_type"] == "share"
    (m,) = doc["members"]
    assert m["assignment"] == [f"{tg.topic}:{p}" for p in range(3)]
    html = web.get("/c/default/group", params={"g": tg.share}).text   # no type: found out
    assert "Share group" in html and 'id="partitions-table"' in html and "start offset" in html
    assert 'id="group-state"' in html and ">Stable<" in html


@needs_helper
def test_streams_group_page_is_streams_groups_describe(web, groups4, bootstrap, capsys):
    """Invariant: a streams group's page shows its member with process and tasks, the
    topology's input topics, committed offsets and lag on them, and its state."""
    tg = groups4

    def committed():
        r = web.get("/c/default/group", params={"g": tg.streams, "format": "json"})
        assert r.status_code == 200, r.text
        doc = r.json()["group"]
        return doc if [p["committed"] for p in doc["partitions"]] == [5, 5] else None

    doc = wait_until("the streams app to commit", committed)
    assert [(p["topic"], p["partition"], p["log_end"], p["lag"]) for p in doc["partitions"]] == \
        [(tg.streams_input, 0, 5, 0), (tg.streams_input, 1, 5, 0)]
    assert doc["input_topics"] == [tg.streams_input] and doc["state"] == "Stable"
    r = run_cli(capsys, "streams-groups", "describe", tg.streams, "--members", "-b", bootstrap,
                "-o", "json")
    (cm,) = r.json()
    (m,) = doc["members"]
    assert (m["member_id"], m["process_id"], m["active"]) == \
        (cm["member_id"], cm["process_id"], cm["active_tasks"]) == \
        (cm["member_id"], cm["process_id"], "0:[0,1]")
    (proc,) = doc["processes"]
    assert (proc["process_id"], proc["members"], proc["active_tasks"]) == (m["process_id"], 1, 2)
    html = web.get("/c/default/group", params={"g": tg.streams, "type": "streams"}).text
    for part in ('id="topology-table"', 'id="processes-table"', "0:[0,1]", tg.streams_input):
        assert part in html, part
    # names are data: a hostile name on the typed page is escaped and a 404, never markup
    for kind in ("share", "streams"):
        r = web.get("/c/default/group", params={"g": "<script>x</script>\u202e", "type": kind})
        assert r.status_code == 404 and "<script>x" not in r.text and "&lt;script&gt;" in r.text


@needs_helper
def test_without_the_helper_the_pages_say_so(bootstrap, tmp_path, groups4, monkeypatch):
    """Invariant: without the JVM helper the groups page still lists classic and consumer
    groups with the note, and a share or streams group's page shows the helper's one sentence
    (linked with its type: 200; named alone: 404 saying so), never a 500."""
    tg = groups4
    monkeypatch.setenv(jvm.HELPER_ENV, str(tmp_path / "nothing-here"))
    c = client(make_app(bootstrap, tmp_path))
    doc = _rows(c, q=tg.token)
    assert "JVM admin helper is not installed" in doc["note"]
    names = {x["group"] for x in doc["groups"]}
    assert tg.classic in names and tg.share not in names and tg.streams not in names
    assert 'id="listing-note"' in c.get("/c/default/groups", params={"q": tg.token}).text
    for g, kind in ((tg.share, "share"), (tg.streams, "streams")):
        r = c.get("/c/default/group", params={"g": g, "type": kind})
        assert r.status_code == 200 and 'id="helper-error"' in r.text, r.text[:500]
        assert "JVM admin helper is not installed" in r.text and "scripts/setup.sh" in r.text
    # named alone: librdkafka sees no share group at all, and a streams group as a member-less
    # Dead classic group with its committed offsets; both pages say what is missing
    r = c.get("/c/default/group", params={"g": tg.share})
    assert r.status_code == 404 and "JVM admin helper is not installed" in r.text
    r = c.get("/c/default/group", params={"g": tg.streams})
    assert r.status_code == 200 and 'id="helper-error"' in r.text
    assert "JVM admin helper is not installed" in r.text


def test_open_transaction_is_shown_and_not_the_consumers_fault(bootstrap, tmp_path, unique):
    """Invariant: a group caught up to the last stable offset while a producer keeps a
    transaction open shows, on its page, since when the transaction holds it and that it is
    not the consumer's fault (lag 0, the records behind the LSO counted apart), and the groups
    page marks the row."""
    from confluent_kafka import Producer

    topic, group = unique("tx"), unique("txg")
    create_topic(bootstrap, topic, 1)
    produce_n(bootstrap, topic, 1, 3)
    commit(bootstrap, group, {(topic, 0): 3})
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("tid")})
    p.init_transactions(60)
    before = int(time.time() * 1000)
    p.begin_transaction()
    p.produce(topic, b"open-1", partition=0)
    p.produce(topic, b"open-2", partition=0)
    p.flush(30)
    c = client(make_app(bootstrap, tmp_path))
    try:
        r = c.get("/c/default/group", params={"g": group, "format": "json"})
        doc = r.json()["group"]
        tx = doc["transaction"]
        assert doc["total_lag"] == 0 and tx["partitions"] == [f"{topic}:0"]
        assert before - 5_000 <= tx["since"] <= int(time.time() * 1000)
        assert tx["behind_lso"] == 2 and tx["waiting_at_lso"] == 1
        html = c.get("/c/default/group", params={"g": group}).text
        assert 'id="txn-banner"' in html and f'id="txn-since">{tx["since_iso"]}<' in html
        assert "not the consumer&#39;s fault" in html and "look at the producer" in html
        row = c.get("/c/default/groups", params={"q": group, "format": "json"}).json()
        assert row["groups"][0]["txn_since"] == tx["since"] and row["groups"][0]["lag"] == 0
        assert "open txn" in c.get("/c/default/groups", params={"q": group}).text
    finally:
        p.commit_transaction(30)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        doc = c.get("/c/default/group", params={"g": group, "format": "json"}).json()["group"]
        if doc["transaction"] is None:
            break
        time.sleep(0.2)
    assert doc["transaction"] is None and doc["total_lag"] == 2
    assert 'id="txn-banner"' not in c.get("/c/default/group", params={"g": group}).text


def test_lag_sort_uses_the_history_store_or_says_it_sorts_the_page(bootstrap, tmp_path, unique,
                                                                  monkeypatch):
    """Invariant (issue 25): sorting by lag does not describe every group. With a history
    store the order is each group's lag in its last sampled cycle (said on the page), without
    one it is exact and live up to LIVE_SORT_MAX groups, and beyond that only the page is
    sorted, which the page says."""
    from offsetkeeper.ops import group_pages as service

    prefix = unique("ls")
    topic = unique("lst")
    create_topic(bootstrap, topic, 1)
    produce_n(bootstrap, topic, 1, 20)
    names = [f"{prefix}-{i}" for i in range(4)]
    for i, g in enumerate(names):
        commit(bootstrap, g, {(topic, 0): 20 - i})      # live lag 0, 1, 2, 3
    hist = str(tmp_path / "history.db")
    # The store says otherwise: lag (in its last cycle) grows the other way round, so the
    # order shows which source it came from. names[3] has no samples.
    now = int(time.time() * 1000)
    with open_store(hist) as st:
        for i, g in enumerate(names[:3]):
            lag = 100 * (3 - i)                          # 300, 200, 100
            st.write([Sample(ts=now, group=g, topic=topic, partition=0, committed=1000,
                             log_start=0, log_end=1000 + lag, state="empty", members=0)],
                     Cycle(now, 60_000, 1, 1, 5))
    with_store = client(make_app(bootstrap, tmp_path, history_url=hist))
    described: list[int] = []
    real = service.overview

    def counting(admin, history, ids=None, listed=None):
        described.append(len(ids or []))
        return real(admin, history, ids, listed)
    monkeypatch.setattr(service, "overview", counting)

    doc = _rows(with_store, q=prefix, sort="lag", dir="desc", per=2)
    assert doc["order"] == "history" and "last sampled cycle" in doc["order_note"]
    assert [x["group"] for x in doc["groups"]] == [names[0], names[1]]
    assert described == [2]                          # the page's groups only
    assert [x["lag"] for x in doc["groups"]] == [0, 1]   # live numbers
    page2 = _rows(with_store, q=prefix, sort="lag", dir="desc", per=2, page=2)
    assert [x["group"] for x in page2["groups"]] == [names[2], names[3]]   # no samples: last
    html = with_store.get("/c/default/groups",
                          params={"q": prefix, "sort": "lag", "dir": "desc"}).text
    assert 'id="order-note"' in html and "last sampled cycle" in html

    described.clear()
    live = client(make_app(bootstrap, tmp_path))
    doc = _rows(live, q=prefix, sort="lag", dir="desc", per=2)
    assert doc["order"] == "live" and described == [4]
    assert [x["lag"] for x in doc["groups"]] == [3, 2]
    monkeypatch.setattr(service, "LIVE_SORT_MAX", 3)
    described.clear()
    doc = _rows(live, q=prefix, sort="lag", dir="desc", per=2)
    assert doc["order"] == "page" and described == [2]
    assert [x["group"] for x in doc["groups"]] == [names[1], names[0]]   # page 1 by name, sorted
    html = live.get("/c/default/groups", params={"q": prefix, "sort": "lag", "dir": "desc"}).text
    assert 'id="order-note"' in html and "within this page only" in html
