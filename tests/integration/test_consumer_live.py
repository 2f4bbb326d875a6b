"""`offsets reset --live`: a running group built on OffsetConsumer is reset without stopping it,
and only by an operator it trusts; what the control topic says is checked, never believed."""

from __future__ import annotations

import json
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTP

from cli import run_cli
from kafkatools import LiveConsumer, committed, create_topic, produce_n
from offsetkeeper.consumer import CONTROL_TOPIC, CommitPolicy, OffsetConsumer
from offsetkeeper.consumer.live import (
    LiveAck,
    decode_record,
    encode_ack,
    encode_request,
    ensure_control_topic,
)
from offsetkeeper.consumer.live_auth import generate_key, load_signer

pytestmark = pytest.mark.integration


class _App:
    """An application: consumes in its own thread with OffsetConsumer, remembers what it saw."""

    def __init__(self, bootstrap: str, group: str, topic: str, trusted: str, *,
                 protocol: str = "classic") -> None:
        self.seen: list[tuple[int, int]] = []
        conf = {"bootstrap.servers": bootstrap, "group.id": group}
        # KIP-848: session and heartbeat times are the group's, not the client's
        conf.update({"group.protocol": "consumer"} if protocol == "consumer" else
                    {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
        self.c = OffsetConsumer(conf, [topic], policy=CommitPolicy.batch(),
                                auto_offset_reset="earliest", live_reset_keys=[trusted])
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        for m in self.c.records(0.1):
            self.seen.append((m.partition(), m.offset()))

    def close(self) -> None:
        self.c.stop()
        self.t.join(10)
        self.c.close()


def _wait(pred, timeout: float = 20) -> bool:
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
    """The operator's signing key file (the apps below trust its public line)."""
    path = tmp_path_factory.mktemp("live-keys") / "operator.key"
    generate_key(path)
    return path


def _produce_raw(bootstrap: str, records: list[tuple[bytes | None, bytes | None]]) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for k, v in records:
        p.produce(CONTROL_TOPIC, key=k, value=v, partition=0)
    assert p.flush(15) == 0


def test_live_reset_rewinds_a_running_consumer(bootstrap, unique, capsys, snapstore, op_key):
    """Invariant: a signed live reset moves the running members; "applied" is reported from the
    group's committed offsets read back, and the printed undo is a complete command."""
    t, g = unique("live"), unique("g")
    create_topic(bootstrap, t, 2)
    produce_n(bootstrap, t, 2, 20)
    app = _App(bootstrap, g, t, load_signer(op_key).public)
    try:
        assert _wait(lambda: len(app.seen) == 40 and committed(bootstrap, g, t, 2) == {0: 20, 1: 20})
        # Without --live the group is refused: it has an active member.
        r = run_cli(capsys, "offsets", "reset", "-g", g, "-t", t, "--to-offset", "5", "--execute",
                    "-b", bootstrap)
        assert r.code == 1 and "active member" in r.err
        r = run_cli(capsys, "offsets", "reset", "-g", g, "-t", t, "--to-offset", "5", "--live",
                    "--execute", "--live-timeout", "30", "-b", bootstrap, "-o", "json",
                    "--signing-key", op_key)
        assert r.code == 0, r.err
        rep = r.json()["report"]
        assert rep["status"] == "SUCCESS" and rep["snapshot_id"]
        assert [(p["partition"], p["status"], p["target"]) for p in r.json()["partitions"]] == \
            [(0, "applied", 5), (1, "applied", 5)]
        assert all(p["member"] for p in r.json()["partitions"])
        undo = next(line for line in r.err.splitlines() if "undo while running" in line)
        assert "..." not in undo and f"--signing-key {op_key}" in undo and bootstrap in undo
        import shlex

        args = shlex.split(undo[undo.index("offsetkeeper offsets"):].rstrip(")"))[1:]
        dry = run_cli(capsys, *[a for a in args if a != "--execute"], "-o", "json")
        assert dry.code == 0, dry.err
        assert {p["partition"]: p["target"] for p in dry.json()["groups"][0]["partitions"]} == \
            {0: 20, 1: 20}
        # The running consumer read from offset 5 again, and committed its progress after that.
        assert _wait(lambda: len(app.seen) == 70)
        assert app.seen[40:] and {o for _p, o in app.seen[40:]} == set(range(5, 20))
        assert _wait(lambda: committed(bootstrap, g, t, 2) == {0: 20, 1: 20})
        assert app.c.metrics().live_resets_applied == 2
        # The snapshot taken first holds the offsets from before the reset.
        from offsetkeeper.snapshots.store import SnapshotStore

        snap = SnapshotStore(str(snapstore)).load(rep["snapshot_id"])
        assert {tp.partition: c.offset for tp, c in snap.groups[g].offsets.items()} == {0: 20, 1: 20}
    finally:
        app.close()


def test_live_reset_of_a_consumer_protocol_group(bootstrap, unique, capsys, snapstore, op_key):
    """Invariant (group.protocol=consumer, KIP-848): a signed live reset moves a running
    consumer-protocol group of two members, each applying it to the partitions the broker
    assigned it; "applied" is confirmed from the group (current member + committed offset read
    back), and the members go on from the target."""
    t, g = unique("live"), unique("g")
    create_topic(bootstrap, t, 2)
    produce_n(bootstrap, t, 2, 20)
    public = load_signer(op_key).public
    apps = [_App(bootstrap, g, t, public, protocol="consumer")]
    try:
        assert _wait(lambda: len(apps[0].seen) == 40 and committed(bootstrap, g, t, 2) == {0: 20, 1: 20})
        apps.append(_App(bootstrap, g, t, public, protocol="consumer"))
        assert _wait(lambda: all(len(a.c.assignment()) == 1 for a in apps))
        r = run_cli(capsys, "groups", "describe", g, "--state", "-b", bootstrap, "-o", "json")
        assert r.code == 0, r.err
        assert [(x["state"], x["group_type"], x["members"]) for x in r.json()] == [("stable", "consumer", 2)]
        r = run_cli(capsys, "offsets", "reset", "-g", g, "-t", t, "--to-offset", "5", "--live",
                    "--execute", "--live-timeout", "30", "-b", bootstrap, "-o", "json",
                    "--signing-key", op_key)
        assert r.code == 0, r.err
        parts = r.json()["partitions"]
        assert [(p["partition"], p["status"], p["target"]) for p in parts] == \
            [(0, "applied", 5), (1, "applied", 5)]
        assert len({p["member"] for p in parts}) == 2  # one partition each
        assert _wait(lambda: sum(a.c.metrics().live_resets_applied for a in apps) == 2)
        assert _wait(lambda: sorted(o for a in apps for _p, o in a.seen[40 if a is apps[0] else 0:])
                     == sorted(list(range(5, 20)) * 2))
        assert _wait(lambda: committed(bootstrap, g, t, 2) == {0: 20, 1: 20})
    finally:
        for a in apps:
            a.close()


def test_live_reset_reports_partitions_nobody_acknowledged(bootstrap, unique, capsys, snapstore,
                                                          op_key):
    """A member that does not use offsetkeeper.consumer never acknowledges: exit 1, per partition."""
    t, g = unique("live"), unique("g")
    create_topic(bootstrap, t, 1)
    produce_n(bootstrap, t, 1, 5)
    other = LiveConsumer(bootstrap, g, [t])
    try:
        r = run_cli(capsys, "offsets", "reset", "-g", g, "-t", t, "--to-earliest", "--live",
                    "--execute", "--live-timeout", "2", "-b", bootstrap, "--signing-key", op_key)
        assert r.code == 1
        assert "no member acknowledged" in r.err and "FAILED: 0/1" in r.err
        # nothing moved: the snapshot taken first is not left behind as an undo point
        assert "was removed" in r.err and "undo" not in r.err
        assert not any(snapstore.rglob("*.json"))
    finally:
        other.stop()


def test_live_reset_of_a_group_without_members_is_refused(bootstrap, unique, capsys, snapstore,
                                                          op_key):
    from kafkatools import commit

    t, g = unique("live"), unique("g")
    create_topic(bootstrap, t, 1)
    commit(bootstrap, g, {(t, 0): 0})
    r = run_cli(capsys, "offsets", "reset", "-g", g, "-t", t, "--to-latest", "--live", "--execute",
                "-b", bootstrap, "--signing-key", op_key)
    assert r.code == 1 and "no active members" in r.err


def test_a_live_reset_without_a_usable_key_is_bad_input(bootstrap, unique, capsys, snapstore,
                                                        tmp_path):
    """Invariant: --live --execute without a signing key, or with one others can read, exits 2
    and changes nothing: no snapshot, no request on the control topic, offsets as they were."""
    import os

    from kafkatools import commit

    t, g = unique("live"), unique("g")
    create_topic(bootstrap, t, 1)
    produce_n(bootstrap, t, 1, 5)
    commit(bootstrap, g, {(t, 0): 3})
    loose = tmp_path / "loose.key"
    generate_key(loose)
    os.chmod(loose, 0o644)
    for extra, msg in (((), "needs --signing-key"), (("--signing-key", loose), "readable by others"),
                       (("--signing-key", tmp_path / "nope.key"), "cannot read signing key")):
        r = run_cli(capsys, "offsets", "reset", "-g", g, "-t", t, "--to-earliest", "--live",
                    "--execute", "-b", bootstrap, *extra)
        assert r.code == 2 and msg in r.err and "Traceback" not in r.err
    assert committed(bootstrap, g, t, 1) == {0: 3}
    assert not snapstore.exists() or not any(snapstore.rglob("*.json"))


def test_hostile_control_records_are_ignored_and_the_consumer_keeps_running(
        bootstrap, unique, op_key, tmp_path):
    """Invariant: no record on the control topic stops a consumer or moves it unless signed by a
    trusted key with offsets inside the log: 1e400, deep nesting, unsigned and untrusted forgeries,
    key/value naming different groups and a signed 2^62 are ignored (counted) or refused, and
    the consumer still starts afterwards (compaction keeps such records forever)."""
    from offsetkeeper.consumer.live import LiveResetRequest
    from offsetkeeper.models import TopicPartition

    t, g = unique("live"), unique("g")
    create_topic(bootstrap, t, 1)
    produce_n(bootstrap, t, 1, 30)
    trusted = load_signer(op_key)
    generate_key(tmp_path / "attacker.key")
    attacker = load_signer(tmp_path / "attacker.key")
    app = _App(bootstrap, g, t, trusted.public)
    try:
        assert _wait(lambda: committed(bootstrap, g, t, 1) == {0: 30})
        now = int(time.time() * 1000)
        from confluent_kafka.admin import AdminClient

        cid = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).cluster_id

        def req(group, offset, rid):
            return LiveResetRequest(rid, group, {TopicPartition(t, 0): offset}, now, now + 60_000,
                                    None, cid)

        key = json.dumps(["reset", g]).encode()
        unsigned = json.loads(encode_request(req(g, 0, "lr-00000000000a"), trusted)[1])
        unsigned.pop("sig")
        _produce_raw(bootstrap, [
            (key, b'{"v":2,"type":"reset","id":"lr-000000000001","group":"%s","expires_at_ms":1e400}'
             % g.encode()),
            (b"[" * 3000 + b"]" * 3000, b"{}"),
            (key, b"[" * 50_000 + b"]" * 50_000),
            (key, json.dumps(unsigned).encode()),
            encode_request(req(g, 0, "lr-00000000000b"), attacker),
            (json.dumps(["reset", unique("other")]).encode(),
             encode_request(req(g, 0, "lr-00000000000c"), trusted)[1]),
        ])
        assert _wait(lambda: app.c.metrics().live_reset_records_ignored >= 5, 30), app.c.metrics()
        # a request signed by the trusted key, but far beyond the log: refused by the member
        _produce_raw(bootstrap, [encode_request(req(g, 2**62, "lr-00000000000d"), trusted)])
        acks = _acks_of(bootstrap, g, "lr-00000000000d", 1, 30)
        assert acks and acks[0].status == "failed" and "outside the log" in acks[0].error
        time.sleep(1)
        assert app.c.metrics().live_resets_applied == 0
        assert committed(bootstrap, g, t, 1) == {0: 30}
        assert app.t.is_alive() and len(app.seen) == 30
    finally:
        app.close()
    _produce_raw(bootstrap, [(json.dumps(["reset", g]).encode(), None)])
    again = _App(bootstrap, g, t, trusted.public)  # restarts over the same compacted records
    try:
        produce_n(bootstrap, t, 1, 2)
        assert _wait(lambda: committed(bootstrap, g, t, 1) == {0: 32}, 30)
        assert again.t.is_alive() and again.c.metrics().live_resets_applied == 0
    finally:
        again.close()


def _acks_of(bootstrap: str, group: str, rid: str, n: int, timeout: float) -> list[LiveAck]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "live-test-reader",
                  "enable.auto.commit": False})
    c.assign([CkTP(CONTROL_TOPIC, 0, 0)])
    out: list[LiveAck] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < n and time.monotonic() < deadline:
            for m in c.consume(100, 0.5):
                if m.error():
                    continue
                rec = decode_record(m.key(), m.value())
                if isinstance(rec, tuple) and rec[0] == "ack" and rec[1].id == rid \
                        and rec[1].group == group:
                    out.append(rec[1])
    finally:
        c.close()
    return out


def test_forged_acknowledgements_never_make_a_success(bootstrap, unique, capsys, snapstore, op_key):
    """Invariant: "applied" comes from the group, not from the topic: acknowledgements forged
    by anyone who can write the control topic — naming a real member or an invented one — end
    in exit 1 with the partition's true committed offset, never SUCCESS."""
    t, g = unique("live"), unique("g")
    create_topic(bootstrap, t, 2)
    produce_n(bootstrap, t, 2, 10)
    plain = LiveConsumer(bootstrap, g, [t])  # a member that is not built on offsetkeeper
    assert plain.wait_assigned(30)
    plain.call(lambda c: c.commit(offsets=[CkTP(t, 0, 10), CkTP(t, 1, 10)], asynchronous=False))
    member = plain.call(lambda c: c.memberid())
    stop, ready = threading.Event(), threading.Event()

    ensure_control_topic({"bootstrap.servers": bootstrap}, CONTROL_TOPIC)

    def forge() -> None:
        reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "forger",
                           "enable.auto.commit": False, "auto.offset.reset": "latest"})
        end = reader.get_watermark_offsets(CkTP(CONTROL_TOPIC, 0), timeout=10, cached=False)[1]
        reader.assign([CkTP(CONTROL_TOPIC, 0, end)])  # only the request to come
        ready.set()
        p = Producer({"bootstrap.servers": bootstrap})
        try:
            while not stop.is_set():
                for m in reader.consume(50, 0.2):
                    rec = None if m.error() else decode_record(m.key(), m.value())
                    if isinstance(rec, tuple) and rec[0] == "reset" and rec[1].request.group == g:
                        r = rec[1].request
                        for i, tp in enumerate(sorted(r.offsets)):
                            who = member if i == 0 else "forged-member"
                            k, v = encode_ack(LiveAck(r.id, g, tp, r.offsets[tp], "applied", who,
                                                      None, int(time.time() * 1000)))
                            p.produce(CONTROL_TOPIC, key=k, value=v, partition=0)
                        p.flush(5)
        finally:
            reader.close()

    forger = threading.Thread(target=forge, daemon=True)
    forger.start()
    try:
        assert ready.wait(20)
        r = run_cli(capsys, "offsets", "reset", "-g", g, "-t", t, "--to-offset", "2", "--live",
                    "--execute", "--live-timeout", "10", "-b", bootstrap, "-o", "json",
                    "--signing-key", op_key)
        assert r.code == 1, r.out
        parts = {p["partition"]: p for p in r.json()["partitions"]}
        assert r.json()["report"]["status"] == "FAILED"
        assert parts[0]["status"] == "failed" and "committed offset is 10, not 2" in parts[0]["error"]
        assert parts[1]["status"] == "failed" and "not a member" in parts[1]["error"]
        assert committed(bootstrap, g, t, 2) == {0: 10, 1: 10}
    finally:
        stop.set()
        forger.join(10)
        plain.stop()
