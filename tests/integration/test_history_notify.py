"""Notifications and the status endpoint on Apache Kafka (issue 32, goal 5): the exporter's
sampler judges a real group, a real local HTTP server receives the webhooks; a restart on the
same store sends nothing twice; /status serves `lag status` as JSON over HTTP."""

from __future__ import annotations

import json
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from offsetkeeper.config import Connection
from offsetkeeper.history.sample_cycle import SampleScope
from offsetkeeper.history.sampler import SamplerConfig
from offsetkeeper.history.service import record
from offsetkeeper.ops.history import NotifySettings
from tests.kafkatools import commit, create_topic, produce

pytestmark = pytest.mark.integration
WINDOW = 3


class Hooks:
    """A webhook receiver: every POST body, parsed."""

    def __init__(self, code: int = 200) -> None:
        self.bodies: list[dict] = []
        self.code = code
        hooks = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers["Content-Length"])
                hooks.bodies.append(json.loads(self.rfile.read(n)))
                self.send_response(hooks.code)
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hooks():
    h = Hooks()
    yield h
    h.close()


def _run(bootstrap, db, group, url, cycles, *, on_ready=None, template="generic", stop=None):
    cfg = SamplerConfig(scope=SampleScope(groups=(group,)), interval_ms=200, window=WINDOW,
                        time_lag=False)
    return record(Connection(bootstrap), db, cfg, max_cycles=cycles,
                  stop=stop or threading.Event(),
                  notify=NotifySettings(url, template), on_ready=on_ready,
                  listen="127.0.0.1:0" if on_ready else None)


def test_open_and_close_events_once_across_restarts(bootstrap, unique, tmp_path, hooks):
    topic, group = unique("t"), unique("g")
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, ((0, None, b"v") for _ in range(10)))
    commit(bootstrap, group, {(topic, 0): 5})   # no member, the offset never moves: STOP
    db = str(tmp_path / "history.db")
    _run(bootstrap, db, group, hooks.url, WINDOW + 2)
    assert [(b["event"], b["group"], b["status"]) for b in hooks.bodies] == [("open", group, "ERR")]
    assert "STOP" in hooks.bodies[0]["reason"]
    _run(bootstrap, db, group, hooks.url, 3)    # a restart: still ERR, nothing sent again
    assert len(hooks.bodies) == 1
    commit(bootstrap, group, {(topic, 0): 10})  # caught up
    _run(bootstrap, db, group, hooks.url, 2)
    assert [(b["event"], b["status"]) for b in hooks.bodies] == [("open", "ERR"), ("close", "OK")]


def test_undelivered_event_is_sent_again(bootstrap, unique, tmp_path):
    """Invariant: a webhook that fails (HTTP 500) changes no state: the event is sent again on
    the next cycle, and once delivered, not after."""
    topic, group = unique("t"), unique("g")
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, ((0, None, b"v") for _ in range(4)))
    commit(bootstrap, group, {(topic, 0): 1})
    h = Hooks(code=500)
    try:
        db = str(tmp_path / "history.db")
        _run(bootstrap, db, group, h.url, WINDOW + 1, template="slack")
        failed = len(h.bodies)
        assert failed >= 2 and all(b["attachments"][0]["color"] == "danger" for b in h.bodies)
        h.code = 200
        _run(bootstrap, db, group, h.url, 2, template="slack")
        assert len(h.bodies) == failed + 1
    finally:
        h.close()


def test_status_endpoint_serves_lag_status_json(bootstrap, unique, tmp_path, hooks):
    topic, group = unique("t"), unique("g")
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, ((0, None, b"v") for _ in range(3)))
    commit(bootstrap, group, {(topic, 0): 3})
    got: dict = {}
    done = threading.Event()

    def on_ready(server):
        def ask():
            base = f"http://127.0.0.1:{server.port}"
            import time

            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and "one" not in got:
                try:
                    with urllib.request.urlopen(f"{base}/status/{group}", timeout=5) as r:
                        got["one"] = json.loads(r.read())
                    with urllib.request.urlopen(f"{base}/status", timeout=5) as r:
                        got["all"] = json.loads(r.read())
                except OSError:
                    time.sleep(0.2)
            try:
                urllib.request.urlopen(f"{base}/status/no-such-group", timeout=5)
            except urllib.error.HTTPError as exc:
                got["missing"] = (exc.code, json.loads(exc.read()))
            finally:
                done.set()  # the sampler stops once the answers are in
        threading.Thread(target=ask, daemon=True).start()

    _run(bootstrap, str(tmp_path / "h.db"), group, hooks.url, 300, on_ready=on_ready, stop=done)
    assert got["one"]["group"] == group and got["one"]["status"] == "OK"
    assert got["one"]["partitions"][0]["committed"] == 3
    assert [g["group"] for g in got["all"]] == [group]
    assert got["missing"][0] == 404 and "not tracked" in got["missing"][1]["error"]
