"""Live reset under attack (issue 31, items A, B, C): a signed request is good for one cluster
and one life, and the control topic cannot be used to slow an application down or forge its
logs. Against the session's brokers (two clusters for the replay)."""

from __future__ import annotations

import json
import logging
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTP

from cli import run_cli
from kafkatools import committed, create_topic, produce_n
from offsetkeeper.consumer import CONTROL_TOPIC, CommitPolicy, OffsetConsumer
from offsetkeeper.consumer.live import LiveResetRequest, decode_record, encode_request
from offsetkeeper.consumer.live_auth import generate_key, load_signer
from offsetkeeper.models import TopicPartition

pytestmark = pytest.mark.integration


class _GatedApp:
    """An application on OffsetConsumer whose record handling can be made to block (a member
    that stays in the group but does not poll), e.g. while it waits for a slow database."""

    def __init__(self, bootstrap: str, group: str, topic: str, trusted: str, *,
                 control_topic: str = CONTROL_TOPIC) -> None:
        self.seen: list[tuple[int, int]] = []
        self.gate, self.blocked = threading.Event(), threading.Event()
        self.gate.set()
        self.c = OffsetConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                                 "session.timeout.ms": 6000, "heartbeat.interval.ms": 500},
                                [topic], policy=CommitPolicy.batch(), auto_offset_reset="earliest",
                                live_reset_keys=[trusted], live_reset_topic=control_topic)
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        for m in self.c.records(0.1):
            if not self.gate.is_set():
                self.blocked.set()
                self.gate.wait()
            self.seen.append((m.partition(), m.offset()))

    @property
    def watcher(self):
        return self.c._watcher

    def close(self) -> None:
        self.gate.set()
        self.c.stop()
        self.t.join(10)
        self.c.close()


def _wait(pred, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def snapstore(tmp_path, monkeypatch):
    monkeypatch.setenv("OFFSETKEEPER_SNAPSHOT_STORE", str(tmp_path / "snaps"))
    return tmp_path / "snaps"


@pytest.fixture(scope="module")
def op_key(tmp_path_factory):
    path = tmp_path_factory.mktemp("live-keys") / "operator.key"
    generate_key(path)
    return path


def _produce(bootstrap: str, records, topic: str = CONTROL_TOPIC) -> int:
    """Write raw records; the offset of the last one."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    last: list[int] = []
    for k, v in records:
        p.produce(topic, key=k, value=v, partition=0,
                  on_delivery=lambda err, m: last.append(m.offset() if err is None else -1))
    assert p.flush(30) == 0
    return max(last)


def _cluster_id(bootstrap: str) -> str:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).cluster_id


def test_a_request_signed_for_one_cluster_does_nothing_on_another(
        bootstrap, dr_bootstrap, unique, op_key):
    """Invariant (issue 31 A): a signed live reset names the cluster it is for; the same signed
    record replayed onto another cluster's control topic is ignored there (counted as "request
    for another cluster"), and the group on that cluster keeps its offsets; the very same request
    made out for this cluster applies (the check is the cluster, nothing else)."""
    t, g = unique("live"), unique("g")
    create_topic(bootstrap, t, 2)
    produce_n(bootstrap, t, 2, 50)
    signer = load_signer(op_key)
    app = _GatedApp(bootstrap, g, t, signer.public)
    try:
        assert _wait(lambda: committed(bootstrap, g, t, 2) == {0: 50, 1: 50})
        assert _wait(lambda: app.watcher.cluster_id is not None)
        now = int(time.time() * 1000)
        offsets = {TopicPartition(t, 0): 12, TopicPartition(t, 1): 12}
        other = _cluster_id(dr_bootstrap)
        assert other and other != app.watcher.cluster_id
        replay = LiveResetRequest("lr-0000000a0001", g, offsets, now, now + 60_000, None, other)
        _produce(bootstrap, [encode_request(replay, signer)])
        assert _wait(lambda: app.watcher.ignored["request for another cluster"] == 1)
        time.sleep(1)  # several polls of the application
        assert app.c.metrics().live_resets_applied == 0
        assert committed(bootstrap, g, t, 2) == {0: 50, 1: 50}
        here = LiveResetRequest("lr-0000000a0002", g, offsets, now, now + 60_000, None,
                                app.watcher.cluster_id)
        _produce(bootstrap, [encode_request(here, signer)])
        assert _wait(lambda: committed(bootstrap, g, t, 2) == {0: 12, 1: 12})
        assert app.c.metrics().live_resets_applied == 2
    finally:
        app.close()
        _produce(bootstrap, [(json.dumps(["reset", g]).encode(), None)])


def _request_record(bootstrap: str, group: str) -> tuple[bytes, bytes]:
    """The last request record published for `group` (what an attacker would capture)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "capture", "enable.auto.commit": False})
    c.assign([CkTP(CONTROL_TOPIC, 0, 0)])
    end = c.get_watermark_offsets(CkTP(CONTROL_TOPIC, 0), timeout=10, cached=False)[1]
    found = None
    try:
        pos = -1
        while pos + 1 < end:
            for m in c.consume(500, 1):
                if m.error():
                    continue
                pos = m.offset()
                rec = decode_record(m.key(), m.value())
                if isinstance(rec, tuple) and rec[0] == "reset" and rec[1].request.group == group:
                    found = (m.key(), m.value())
    finally:
        c.close()
    assert found is not None
    return found


def test_a_withdrawn_request_never_applies_even_when_replayed(
        bootstrap, unique, capsys, snapstore, op_key):
    """Invariant (issue 31 B): a live reset that no member applied withdraws its request for
    good: the same signed record replayed within its lifetime moves nothing — not on the member
    that was busy while the command ran, not on a member that starts afterwards — so removing
    the unused snapshot never leaves an applied reset without its undo point."""
    t, g = unique("live"), unique("g")
    create_topic(bootstrap, t, 1)
    produce_n(bootstrap, t, 1, 40)
    public = load_signer(op_key).public
    app = _GatedApp(bootstrap, g, t, public)
    later = None
    try:
        assert _wait(lambda: committed(bootstrap, g, t, 1) == {0: 40})
        app.gate.clear()  # the next record blocks the application: a member that does not poll
        produce_n(bootstrap, t, 1, 1)
        assert app.blocked.wait(30)
        r = run_cli(capsys, "offsets", "reset", "-g", g, "-t", t, "--to-offset", "3", "--live",
                    "--execute", "--live-timeout", "3", "-b", bootstrap, "--signing-key", op_key)
        assert r.code == 1 and "FAILED: 0/1" in r.err, r.err
        assert "was removed" in r.err  # nothing moved, and nothing can any more
        key, value = _request_record(bootstrap, g)
        replayed_at = _produce(bootstrap, [(key, value)])  # within the request's lifetime
        app.gate.set()  # the member polls again, and sees request, withdrawal, replay
        assert _wait(lambda: app.watcher._read_to >= replayed_at)
        assert _wait(lambda: len(app.seen) == 41)
        time.sleep(1)
        assert app.c.metrics().live_resets_applied == 0
        later = _GatedApp(bootstrap, unique("g2"), t, public)  # reads the topic from its start
        assert _wait(lambda: later.watcher._read_to >= replayed_at)
        assert not later.watcher.pending({TopicPartition(t, 0)})
        assert committed(bootstrap, g, t, 1) == {0: 41}
        assert not any(snapstore.rglob("*.json"))
    finally:
        app.close()
        if later is not None:
            later.close()


def test_a_flood_of_junk_costs_the_application_nothing_and_forges_no_log_line(
        bootstrap, unique, op_key, caplog, admin):
    """Invariant (issue 31 C): 20,000 junk records with distinct keys and values (newlines and
    ever-new format versions among them) and 40 oversized unsigned requests are read off the
    application's path: the application keeps consuming, the ignored records make a few fixed
    reasons (a handful of WARNING lines, none quoting a record, no forged line), and a live
    reset right after succeeds."""
    from offsetkeeper.consumer import live_reset
    from offsetkeeper.reset.facts import build_plan
    from offsetkeeper.reset.plan import ResetScope, TopicSpec
    from offsetkeeper.reset.targets import ToOffset

    t, g, ctl = unique("live"), unique("g"), unique("ctl")
    create_topic(bootstrap, t, 1)
    create_topic(bootstrap, ctl, 1, {"cleanup.policy": "compact"})
    produce_n(bootstrap, t, 1, 20)
    key = json.dumps(["reset", g]).encode()
    junk = [(json.dumps(["reset", g, i]).encode(),
             json.dumps({"v": f"9{i}\nWARNING forged line {i}", "type": "reset"}).encode())
            for i in range(10_000)]
    junk += [(json.dumps(["ack", g, f"lr-{i:012x}", t, 0]).encode(),
              b'{"v":3,"type":"ack","status":"applied\\nINFO forged %d"}' % i) for i in range(10_000)]
    big = json.dumps({"v": 3, "type": "reset", "group": g, "cluster_id": "x",
                      "offsets": [{"topic": t, "partition": p, "offset": 1} for p in range(15_000)],
                      "key_id": None, "sig": None}).encode()
    junk += [(key, big)] * 40
    _produce(bootstrap, junk, ctl)
    caplog.set_level(logging.INFO, logger="offsetkeeper.consumer.live")
    app = _GatedApp(bootstrap, g, t, load_signer(op_key).public, control_topic=ctl)
    try:
        assert _wait(lambda: committed(bootstrap, g, t, 1) == {0: 20}, 60)
        assert _wait(lambda: app.watcher._ready(), 120)
        reasons = dict(app.watcher.ignored)
        assert sum(reasons.values()) == len(junk), reasons
        assert len(reasons) <= 4, reasons
        lines = [r.getMessage() for r in caplog.records if r.name == "offsetkeeper.consumer.live"]
        assert len(lines) <= 4 and not any("forged" in line for line in lines), lines
        # the application's counter follows at its next polls
        assert _wait(lambda: app.c.metrics().live_reset_records_ignored == len(junk))
        plan = build_plan(admin, ResetScope(groups=(g,), topics=(TopicSpec(t),), live=True),
                          ToOffset(5))
        rep = live_reset(admin, plan, signer=load_signer(op_key), timeout_s=30, snapshot=False,
                         topic=ctl)
        assert str(rep.status) == "SUCCESS", rep.to_dict()
        assert _wait(lambda: len(app.seen) == 35)
    finally:
        app.close()
