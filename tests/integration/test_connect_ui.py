"""Kafka Connect on the dashboard, in the history store and in the exporter (issue 33 item 4),
against the real distributed worker (connect-runtime 4.3.1, FileStream connectors): one source
and one sink connector with hostile names, set up once, checked on every surface."""

from __future__ import annotations

import contextlib
import json
import re
import threading
import urllib.request
import warnings

import pytest
from confluent_kafka import Producer

from offsetkeeper.connect.model import canonical
from offsetkeeper.connect.rest import ConnectClient, ConnectError, parse_target
from offsetkeeper.history.service import record
from offsetkeeper.history.store import open_store
from offsetkeeper.ops.history import SamplerSettings, TimeRange, history_positions
from offsetkeeper.web.connectors import worker_entries
from tests.web_support import make_app
from waiting import wait_for as _wait

warnings.filterwarnings("ignore", message=".*httpx.*", category=DeprecationWarning)
from starlette.testclient import TestClient  # noqa: E402

pytestmark = pytest.mark.integration

HOSTILE = '<script>"q\''




@pytest.fixture
def two_connectors(connect_worker, bootstrap, admin, unique, tmp_path):
    """A FileStream source (10 lines, a file name with markup, quotes and a newline) and a
    FileStream sink (7 records), both caught up; deleted afterwards (only these two)."""
    client = ConnectClient(parse_target(connect_worker.url))
    src_name, snk_name = f"{unique('uisrc')}{HOSTILE}", f"{unique('uisnk')}{HOSTILE}"
    src_topic, snk_topic = unique("uisrc-topic"), unique("uisnk-topic")
    admin.create_topic(src_topic, 1)
    admin.create_topic(snk_topic, 1)
    src = tmp_path / 'in<script>"x\'\nz.txt'
    src.write_text("".join(f"line-{i}\n" for i in range(10)))
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(7):
        p.produce(snk_topic, f"v-{i}".encode(), partition=0)
    assert p.flush(30) == 0
    try:
        client.create(src_name, {"connector.class": "FileStreamSource", "file": str(src),
                                 "topic": src_topic, "tasks.max": "1"})
        client.create(snk_name, {"connector.class": "FileStreamSink",
                                 "file": str(tmp_path / "out.txt"), "topics": snk_topic,
                                 "tasks.max": "1"})
        size = src.stat().st_size

        def caught_up():
            s, k = client.offsets(src_name)["offsets"], client.offsets(snk_name)["offsets"]
            return (s and s[0]["offset"] == {"position": size}
                    and k and k[0]["offset"] == {"kafka_offset": 7})
        _wait("both connectors caught up", caught_up)
        yield {"url": connect_worker.url, "source": src_name, "sink": snk_name,
               "file": str(src), "size": size, "sink_topic": snk_topic,
               "group": f"connect-{snk_name}"}
    finally:
        for name in (src_name, snk_name):
            with contextlib.suppress(ConnectError):  # never created, or gone already
                client.request("DELETE", f"/connectors/{urllib.request.quote(name, safe='')}",
                               connector=name)
        _wait("the test's connectors deleted",
              lambda: not {src_name, snk_name} & set(client.connectors()), timeout=60)


def test_connectors_page_exporter_and_history_show_source_and_sink_offsets(
        two_connectors, bootstrap, conn, tmp_path):
    """Invariants: the Connectors page (HTML and JSON) shows the source connector's partition
    and offset maps exactly as the worker reports them and the sink connector's group with
    offset, log end and lag, every name escaped, and a worker that is down as one line without
    its password (status 200); `history record --connect-url` stores the source position
    (read back by `history positions`) and samples the sink connector's group like any
    consumer group; the exporter serves the position as a gauge with the byte position."""
    c = two_connectors
    workers = worker_entries([], (f"w={c['url']}", "down=http://bob:s3cret@127.0.0.1:9"),
                             ["default"])
    web = TestClient(make_app(bootstrap, tmp_path, connect_workers=workers),
                     base_url="http://127.0.0.1")

    r = web.get("/connectors", params={"format": "json"})
    assert r.status_code == 200, r.text
    live, down = r.json()["workers"]
    assert down["error"] and "s3cret" not in r.text and down["url"] == "http://127.0.0.1:9"
    by = {v["connector"]: v for v in live["connectors"]}
    src, snk = by[c["source"]], by[c["sink"]]
    assert src["type"] == "source" and src["state"] == "RUNNING" and src["tasks"] == ["RUNNING"]
    assert src["offsets"] == [{"partition": {"filename": c["file"]},
                               "offset": {"position": c["size"]}}]
    assert snk["type"] == "sink" and snk["group"] == c["group"]
    assert snk["sink"] == [{"topic": c["sink_topic"], "partition": 0, "offset": 7,
                            "log_end": 7, "lag": 0}]

    html = web.get("/connectors").text
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert html.count('class="error worker-error"') == 1 and "s3cret" not in html
    # the partition map as canonical JSON (the newline as \n), escaped once
    shown = canonical({"filename": c["file"]}).replace("&", "&amp;").replace("<", "&lt;") \
        .replace(">", "&gt;").replace('"', "&#34;").replace("'", "&#39;")
    assert shown in html
    href = "/c/default/group?g=" + urllib.request.quote(c["group"], safe="")
    assert f'href="{href}"' in html
    assert web.get(href).status_code == 200  # the sink connector's group page

    # history record + exporter, one process: the sink group through --all-groups
    db = str(tmp_path / "h.db")
    settings = SamplerSettings(all_groups=True, track_allow=(re.escape(c["group"]),),
                               interval="1s", connect_urls=(c["url"],))
    stop, ready, failed = threading.Event(), [], []

    def run():
        try:
            record(conn, db, settings.config(), listen="127.0.0.1:0", stop=stop,
                   on_ready=ready.append, positions=settings.position_reader())
        except Exception as exc:  # shown by the assertion below
            failed.append(exc)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    _wait("the exporter", lambda: ready or failed)
    assert not failed, failed
    url = f"http://127.0.0.1:{ready[0].port}/metrics"
    want = ("offsetkeeper_connect_source_offset{", f'connector="{_esc(c["source"])}"',
            f'partition="{_esc(canonical({"filename": c["file"]}))}"', 'field="position"')

    def scrape():
        text = urllib.request.urlopen(url, timeout=10).read().decode()
        line = [x for x in text.splitlines() if all(w in x for w in want)]
        group = [x for x in text.splitlines() if x.startswith(
            "kafka_consumergroup_group_offset{") and f'group="{_esc(c["group"])}"' in x]
        return (line, group, text) if line and group else None
    try:
        line, group, text = _wait("source position and sink group in a scrape", scrape, 60)
    finally:
        stop.set()
        t.join(60)
    assert not failed, failed
    assert float(line[0].rsplit(" ", 1)[1]) == c["size"]
    assert float(group[0].rsplit(" ", 1)[1]) == 7
    assert f'offsetkeeper_connect_worker_up{{cluster_name="{conn.bootstrap_servers}",' \
           f'worker="{c["url"]}"}} 1.0' in text

    with open_store(db) as st:
        stored = st.positions(c["source"])
        assert stored and {(p.partition, p.offset) for p in stored} == {
            (canonical({"filename": c["file"]}), canonical({"position": c["size"]}))}
        assert [s.committed for s in st.latest(c["group"])] == [7]
    rows = history_positions(c["source"], store=db, window=TimeRange("1h"))
    assert len(rows) == len(stored) and json.loads(rows[-1]["offset"]) == {"position": c["size"]}


def _esc(v: str) -> str:
    return v.replace("\\", r"\\").replace("\n", r"\n").replace('"', r'\"')



def check_mm2_page(bootstrap: str, dr_bootstrap: str, group: str, want) -> None:
    """The MM2 page (HTML and JSON) of the flow prod (alias A) -> dr shows `group` with what
    `mm2 status` reports (`want`: its rows), the records a failover would re-read, and links
    the group on the target cluster. Called by tests/integration/test_mm2_failover.py on its
    checkpointed group (mirroring a new topic takes MM2 about a minute here: one set-up)."""
    from offsetkeeper.config import ConfigFile
    from offsetkeeper.config.file import ClusterModel
    from offsetkeeper.web.app import UiSettings, create_app
    from offsetkeeper.web.clusters import Clusters
    from offsetkeeper.web.connectors import mm2_entries

    cfg = ConfigFile(clusters={"prod": ClusterModel(bootstrap_servers=bootstrap),
                               "dr": ClusterModel(bootstrap_servers=dr_bootstrap)},
                     default_cluster="dr")
    clusters = Clusters(cfg)
    flows = mm2_entries([], ("A,target=dr,source=prod",), clusters.names, clusters.default)
    web = TestClient(create_app(UiSettings(mm2_flows=flows, allowed_hosts=("127.0.0.1",)),
                                clusters, None), base_url="http://127.0.0.1")
    try:
        r = web.get("/mm2", params={"format": "json"})
        assert r.status_code == 200, r.text
        [flow] = r.json()["flows"]
        assert flow["error"] is None and flow["name"] == "A->dr"
        [line] = [g for g in flow["groups"] if g["group"] == group]
        assert line["partitions"] == len(want) and line["max_checkpoint_age_s"] is not None
        assert line["reread"] == sum(w.reread_past_checkpoint for w in want)
        got = {(x["topic"], x["partition"]): (x["translated"], x["source_committed"])
               for x in flow["rows"] if x["group"] == group}
        assert got == {(w.topic, w.partition): (w.translated, w.source_committed) for w in want}
        html = web.get("/mm2").text
        assert f'href="/c/dr/group?g={urllib.request.quote(group, safe="")}"' in html
        assert html.count('class="mm2-group"') == len(flow["groups"])
    finally:
        clusters.close()
