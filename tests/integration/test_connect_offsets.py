"""Kafka Connect connectors' offsets against a real distributed worker (connect-runtime 4.3.1)
with the FileStream connectors: rewinding a source re-emits exactly the records after the
target, resetting a sink re-delivers exactly from the target, and each rolls back."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from offsetkeeper.connect.offsets_topic import read_all_source_offsets
from offsetkeeper.connect.rest import ConnectClient, ConnectError, parse_target
from offsetkeeper.errors import UsageError
from offsetkeeper.ops import connect as ops_connect
from offsetkeeper.ops.reset import ResetRequest
from offsetkeeper.ops.targets import TargetKind, TargetSpec
from tests.unit.test_output_contract import _check_times
from waiting import wait_for as _wait

pytestmark = pytest.mark.integration




def _values(bootstrap: str, topic: str) -> list[str]:
    """Every record value of partition 0, read by an independent consumer."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "t-reader", "enable.auto.commit": False})
    try:
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        if hi <= lo:
            return []
        c.assign([TopicPartition(topic, 0, lo)])
        out: list[str] = []
        while len(out) < hi - lo:
            for m in c.consume(100, 1.0):
                if not m.error():
                    out.append(m.value().decode())
        return out
    finally:
        c.close()


@pytest.fixture
def client(connect_worker) -> ConnectClient:
    return ConnectClient(parse_target(connect_worker.url))


@pytest.fixture(autouse=True)
def _no_connector_left(connect_worker):
    """Each test's connectors are deleted after it: a sink connector's group stays active while
    its task runs, and other tests on the shared cluster reset `--all-groups`."""
    yield
    c = ConnectClient(parse_target(connect_worker.url))
    for name in c.connectors():
        with contextlib.suppress(ConnectError):  # gone already
            c.request("DELETE", f"/connectors/{name}", connector=name)
    _wait("no connector left", lambda: not c.connectors(), timeout=60)


def _source(client, tmp_path: Path, name: str, topic: str, lines: list[str]) -> Path:
    src = tmp_path / f"{name}.txt"
    src.write_text("".join(f"{x}\n" for x in lines))
    client.create(name, {"connector.class": "FileStreamSource", "file": str(src),
                         "topic": topic, "tasks.max": "1"})
    return src


def _position(client, name: str):
    got = client.offsets(name)["offsets"]
    return got[0]["offset"]["position"] if got else None


def test_source_rewind_reemits_exactly_the_records_after_the_target(
        client, connect_worker, bootstrap, admin, unique, tmp_path):
    """A FileStream source rewound to the byte position after line 5 re-emits lines 6..10
    exactly once more (and nothing else); the offsets topic, read independently, agrees."""
    name, topic = unique("src"), unique("src-topic")
    lines = [f"line-{i}" for i in range(1, 11)]
    admin.create_topic(topic, 1)
    src = _source(client, tmp_path, name, topic, lines)
    _wait("10 records", lambda: len(_values(bootstrap, topic)) == 10)
    end = src.stat().st_size
    _wait("position flushed", lambda: _position(client, name) == end)
    after5 = len("".join(f"{x}\n" for x in lines[:5]).encode())
    target = tmp_path / "target.json"
    target.write_text(json.dumps({"offsets": [{"partition": {"filename": str(src)},
                                                "offset": {"position": after5}}]}))
    req = ops_connect.ConnectResetRequest(names=(name,), to_file=target)
    dry = ops_connect.reset_connectors(client, admin, req)
    assert dry.report is None
    [cp] = dry.plan.connectors
    assert cp.refused is None and [c.after for c in cp.changes] == [{"position": after5}]
    assert [c.before for c in cp.changes] == [{"position": end}]
    assert _position(client, name) == end  # the dry run changed nothing

    from dataclasses import replace
    out = ops_connect.reset_connectors(
        client, admin, replace(req, execute=True,
                               offsets_topic=connect_worker.offsets_topic))
    assert out.ok, out.as_dict()
    [res] = out.report.results
    assert res.readback == "rest+offsets-topic" and res.state_after == "RUNNING"
    assert out.report.snapshot_id.startswith("csnap-")
    _wait("re-emitted records", lambda: len(_values(bootstrap, topic)) >= 15)
    _wait("position flushed", lambda: _position(client, name) == end)
    assert _values(bootstrap, topic) == lines + lines[5:]
    # the independent reader sees what the worker says
    [entry] = read_all_source_offsets(admin.conn.client_config(), connect_worker.offsets_topic,
                                      {name})[name]
    assert entry.offset == {"position": end}


def test_source_rollback_restores_the_position_exactly(
        client, connect_worker, bootstrap, admin, unique, tmp_path):
    """A stopped source connector rewound, then rolled back to the snapshot taken before, stays
    STOPPED through both and, resumed, emits only the new line (no re-emission)."""
    name, topic = unique("srb"), unique("srb-topic")
    lines = [f"r-{i}" for i in range(1, 6)]
    admin.create_topic(topic, 1)
    src = _source(client, tmp_path, name, topic, lines)
    _wait("5 records", lambda: len(_values(bootstrap, topic)) == 5)
    end = src.stat().st_size
    _wait("position flushed", lambda: _position(client, name) == end)
    client.stop(name)
    _wait("stopped", lambda: client.status(name)["connector"]["state"] == "STOPPED")
    out = ops_connect.reset_connectors(client, admin, ops_connect.ConnectResetRequest(
        names=(name,), to_none=True, execute=True, offsets_topic=connect_worker.offsets_topic))
    assert out.ok, out.as_dict()
    assert out.report.results[0].state_after == "STOPPED"
    assert client.offsets(name)["offsets"] == []
    back = ops_connect.rollback_connectors(client, admin, ops_connect.ConnectRollbackRequest(
        out.report.snapshot_id, execute=True, offsets_topic=connect_worker.offsets_topic))
    assert back.ok, back.as_dict()
    assert _position(client, name) == end
    with src.open("a") as f:
        f.write("r-6\n")
    client.resume(name)
    _wait("the new line", lambda: len(_values(bootstrap, topic)) >= 6)
    time.sleep(2)  # a wrong position would re-emit r-1..r-5 now; give it the chance
    assert _values(bootstrap, topic) == [*lines, "r-6"]


def _produce(bootstrap: str, topic: str, values: list[str]) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for v in values:
        p.produce(topic, v.encode(), partition=0)
    assert p.flush(30) == 0


def _sink(client, tmp_path: Path, name: str, topic: str) -> Path:
    out = tmp_path / f"{name}.out"
    client.create(name, {"connector.class": "FileStreamSink", "file": str(out),
                         "topics": topic, "tasks.max": "1"})
    return out


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _to_offset(n: int) -> ResetRequest:
    return ResetRequest(target=TargetSpec(TargetKind.TO_OFFSET, str(n)))


def test_sink_reset_redelivers_exactly_from_the_target_and_rolls_back(
        client, bootstrap, admin, unique, tmp_path):
    """A FileStream sink reset to offset 4 (through the group executor, connector stopped
    around it) writes records 4..9 again, once; its rollback puts the group back at 10 so the
    resumed connector writes only the new record."""
    name, topic = unique("snk"), unique("snk-topic")
    admin.create_topic(topic, 1)
    values = [f"v-{i}" for i in range(10)]
    _produce(bootstrap, topic, values)
    out = _sink(client, tmp_path, name, topic)
    _wait("10 lines", lambda: len(_lines(out)) == 10)
    _wait("sink offsets", lambda: client.offsets(name)["offsets"] and client.offsets(name)[
        "offsets"][0]["offset"]["kafka_offset"] == 10)
    view = ops_connect.show_connector(client, admin, name)
    assert view.type == "sink" and view.group == f"connect-{name}"
    assert [(p.offset, p.log_end, p.lag) for p in view.sink] == [(10, 10, 0)]

    req = ops_connect.ConnectResetRequest(names=(name,), group_request=_to_offset(4))
    dry = ops_connect.reset_connectors(client, admin, req)
    [(_, gout)] = dry.group_outcomes.items()
    assert [p.target for g in gout.plan.groups for p in g.partitions] == [4]

    from dataclasses import replace
    done = ops_connect.reset_connectors(client, admin, replace(req, execute=True))
    assert done.ok, done.as_dict()
    [(_, gout)] = done.group_outcomes.items()
    snap = gout.report.snapshot_id
    assert snap
    _wait("re-delivered lines", lambda: len(_lines(out)) >= 16)
    assert _lines(out) == values + values[4:]

    # rollback: stop, move back to 4 (connector stays stopped), roll back to 10, resume
    client.stop(name)
    _wait("stopped", lambda: client.status(name)["connector"]["state"] == "STOPPED")
    _wait("sink offsets", lambda: client.offsets(name)["offsets"][0]["offset"]["kafka_offset"] == 10)
    again = ops_connect.reset_connectors(client, admin, replace(req, execute=True))
    assert again.ok
    [(_, gout2)] = again.group_outcomes.items()
    assert client.offsets(name)["offsets"][0]["offset"]["kafka_offset"] == 4
    back = ops_connect.rollback_connectors(client, admin, ops_connect.ConnectRollbackRequest(
        gout2.report.snapshot_id, execute=True))
    assert back.ok, back.as_dict()
    assert client.offsets(name)["offsets"][0]["offset"]["kafka_offset"] == 10
    _produce(bootstrap, topic, ["v-10"])
    client.resume(name)
    _wait("the new record", lambda: len(_lines(out)) >= 17)
    time.sleep(2)
    assert _lines(out) == values + values[4:] + ["v-10"]


def test_a_failed_connector_is_refused_and_an_unknown_one_is_bad_input(client, admin, unique):
    """Offsets of a connector the worker does not have: bad input naming it; nothing changes."""
    with pytest.raises(UsageError, match="no connector 'nope-"):
        ops_connect.reset_connectors(client, admin, ops_connect.ConnectResetRequest(
            names=(unique("nope"),), to_none=True, execute=True))
    with pytest.raises(ConnectError) as exc:
        client.stop(unique("missing"))
    assert exc.value.status == 404


def test_cli_list_export_import_and_rollback(connect_worker, bootstrap, admin, unique, tmp_path,
                                             capsys):
    """The `connect` commands end to end: list shows the source position, export writes
    Connect's shape, import is a dry run until --execute, rollback undoes it; a password in
    the worker URL never reaches output."""
    from cli import run_cli

    client = ConnectClient(parse_target(connect_worker.url))
    name, topic = unique("cli"), unique("cli-topic")
    admin.create_topic(topic, 1)
    src = _source(client, tmp_path, name, topic, ["a", "b", "c"])
    _wait("position flushed", lambda: _position(client, name) == src.stat().st_size)
    url = connect_worker.url.replace("http://", "http://ops:hunter2secret@")
    common = ("--connect-url", url, "-b", bootstrap)

    r = run_cli(capsys, "connect", "list", "--pattern", name, *common, "-o", "json")
    assert r.code == 0, r.err
    [view] = r.json()
    assert _check_times(r.json()) == []  # the output contract: epoch ms beside every ISO time
    assert view["connector"] == name and view["type"] == "source"
    assert view["offsets"] == [{"partition": {"filename": str(src)},
                                "offset": {"position": 6}}]

    exported = tmp_path / "exported.json"
    r = run_cli(capsys, "connect", "offsets", "export", name, "-f", str(exported),
                "--connect-url", url)
    assert r.code == 0, r.err
    doc = json.loads(exported.read_text())
    assert doc == {"offsets": [{"partition": {"filename": str(src)}, "offset": {"position": 6}}]}
    doc["offsets"][0]["offset"]["position"] = 2
    exported.write_text(json.dumps(doc))

    r = run_cli(capsys, "connect", "offsets", "import", name, str(exported), *common)
    assert r.code == 0, r.err
    assert "dry run" in r.err and _position(client, name) == 6
    client.stop(name)
    _wait("stopped", lambda: client.status(name)["connector"]["state"] == "STOPPED")
    r = run_cli(capsys, "connect", "offsets", "import", name, str(exported), "--execute",
                "--offsets-topic", connect_worker.offsets_topic, *common, "-o", "json")
    assert r.code == 0, r.err
    out = r.json()
    assert _check_times(out) == []
    assert out["report"]["connectors"][0]["readback"] == "rest+offsets-topic"
    assert _position(client, name) == 2
    snap = out["report"]["snapshot"]
    r = run_cli(capsys, "connect", "rollback", snap, "--execute", *common)
    assert r.code == 0, r.err
    assert _position(client, name) == 6
    assert "hunter2secret" not in r.out + r.err


def test_cli_bad_input_exits_2_and_changes_nothing(connect_worker, unique, tmp_path, capsys):
    """A file that is not Connect's offsets shape, or an unknown connector: one line, exit 2."""
    from cli import run_cli

    bad = tmp_path / "bad.json"
    bad.write_text('{"offsets": [{"offset": {"position": 1}}]}')
    client = ConnectClient(parse_target(connect_worker.url))
    name = unique("bad")
    src = _source(client, tmp_path, name, unique("bad-topic"), ["x"])
    r = run_cli(capsys, "connect", "reset", name, "--to-file", str(bad), "--execute",
                "--connect-url", connect_worker.url)
    assert r.code == 2 and 'has no "partition"' in r.err and "Traceback" not in r.err
    r = run_cli(capsys, "connect", "reset", unique("ghost"), "--to-none",
                "--connect-url", connect_worker.url)
    assert r.code == 2 and "no connector 'ghost-" in r.err
    assert src.exists()


def test_sink_to_file_goes_through_connects_patch_and_redelivers(
        client, bootstrap, admin, unique, tmp_path, capsys):
    """A sink connector given a file (Connect's shape) is changed by the worker itself (PATCH,
    KIP-875): exported at 6, imported at 2, it writes records 2..5 again; `connect list` shows
    its group partition with log end and lag."""
    from cli import run_cli

    name, topic = unique("snkf"), unique("snkf-topic")
    admin.create_topic(topic, 1)
    values = [f"w-{i}" for i in range(6)]
    _produce(bootstrap, topic, values)
    out = _sink(client, tmp_path, name, topic)
    _wait("6 lines", lambda: len(_lines(out)) == 6)
    _wait("sink offsets", lambda: client.offsets(name)["offsets"] and client.offsets(name)[
        "offsets"][0]["offset"]["kafka_offset"] == 6)
    url = client.target.url
    r = run_cli(capsys, "connect", "list", "--pattern", name, "--connect-url", url,
                "-b", bootstrap, "-o", "csv")
    assert r.code == 0, r.err
    assert r.out.splitlines()[1:] == [f"{name},sink,RUNNING,RUNNING,{topic}:0,6,6,0"]
    exported = tmp_path / "sink.json"
    r = run_cli(capsys, "connect", "offsets", "export", name, "-f", str(exported),
                "--connect-url", url)
    doc = json.loads(exported.read_text())
    assert doc == {"offsets": [{"partition": {"kafka_topic": topic, "kafka_partition": 0},
                                "offset": {"kafka_offset": 6}}]}
    doc["offsets"][0]["offset"]["kafka_offset"] = 2
    exported.write_text(json.dumps(doc))
    r = run_cli(capsys, "connect", "offsets", "import", name, str(exported), "--execute",
                "--connect-url", url, "-o", "json")
    assert r.code == 0, r.err
    res = r.json()["report"]["connectors"][0]
    assert res["readback"] == "rest" and res["state_after"] == "RUNNING"
    _wait("re-delivered lines", lambda: len(_lines(out)) >= 10)
    assert _lines(out) == values + values[2:]


def _failed_connector(client, name: str, bootstrap: str) -> None:
    """A connector the worker marks FAILED: MirrorMaker 2's heartbeat connector (on the
    worker's class path) given a forwarding admin class it cannot instantiate passes config
    validation and throws in Connector.start()."""
    client.create(name, {"connector.class": "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
                         "source.cluster.alias": "A", "target.cluster.alias": "B",
                         "source.cluster.bootstrap.servers": bootstrap,
                         "target.cluster.bootstrap.servers": bootstrap,
                         "forwarding.admin.class": "java.lang.Object", "tasks.max": "1"})

    def failed() -> bool:
        try:
            return client.status(name)["connector"]["state"] == "FAILED"
        except ConnectError as exc:  # 404 until the worker has written its first status
            assert exc.status == 404, exc
            return False
    _wait(f"{name} FAILED", failed)


def test_a_failed_connector_is_refused_per_connector_and_the_others_change(
        connect_worker, client, bootstrap, admin, unique, tmp_path, capsys):
    """Invariant: a FAILED connector is refused on its own (exit 1, the reason named, left
    FAILED), and a bulk reset over a pattern that matches it still changes the other
    connectors — partial failure reported per connector, never hidden behind success. A
    consumer-group target over a pattern that matches a non-sink connector is bad input that
    changes nothing, not even the sink connectors checked before it."""
    from cli import run_cli

    prefix = unique("fl")
    sink, bad, ok = f"{prefix}-a-sink", f"{prefix}-b-bad", f"{prefix}-c-ok"
    sink_topic, ok_topic = unique("fl-sink"), unique("fl-src")
    admin.create_topic(sink_topic, 1)
    admin.create_topic(ok_topic, 1)
    _produce(bootstrap, sink_topic, [f"s-{i}" for i in range(5)])
    out = _sink(client, tmp_path, sink, sink_topic)
    src = _source(client, tmp_path, ok, ok_topic, ["x", "y", "z"])
    _failed_connector(client, bad, bootstrap)
    _wait("sink offsets", lambda: client.offsets(sink)["offsets"] and client.offsets(sink)[
        "offsets"][0]["offset"]["kafka_offset"] == 5)
    _wait("source position flushed", lambda: _position(client, ok) == src.stat().st_size)
    common = ("--connect-url", connect_worker.url, "-b", bootstrap)

    # one FAILED connector: refused with its reason, exit 1, still FAILED
    r = run_cli(capsys, "connect", "reset", bad, "--to-none", "--execute", *common, "-o", "json")
    assert r.code == 1, r.err
    [res] = r.json()["report"]["connectors"]
    assert res["status"] == "refused" and f"connector {bad} is FAILED" in res["message"]
    assert client.status(bad)["connector"]["state"] == "FAILED"

    # a consumer-group target over the pattern: the FAILED source connector makes it bad
    # input before the sink (first by name) is touched. The sink is stopped so that a reset
    # would stay visible (a running sink would consume back to 5 at once).
    client.stop(sink)
    _wait("sink stopped", lambda: client.status(sink)["connector"]["state"] == "STOPPED")
    r = run_cli(capsys, "connect", "reset", "--pattern", f"{prefix}-*", "--to-earliest",
                "--execute", *common)
    assert r.code == 2 and f"connector {bad} is a source connector" in r.err, r.err
    assert client.offsets(sink)["offsets"][0]["offset"]["kafka_offset"] == 5
    client.resume(sink)
    _wait("sink running", lambda: client.status(sink)["connector"]["state"] == "RUNNING")

    # bulk over the pattern: the FAILED one refused, the two others changed and read back
    r = run_cli(capsys, "connect", "reset", "--pattern", f"{prefix}-*", "--to-none", "--execute",
                "--offsets-topic", connect_worker.offsets_topic, *common, "-o", "json")
    assert r.code == 1, r.err
    results = {x["connector"]: x for x in r.json()["report"]["connectors"]}
    assert results[bad]["status"] == "refused" and "is FAILED" in results[bad]["message"]
    assert results[ok]["status"] == "success" and results[ok]["readback"] == "rest+offsets-topic"
    assert results[sink]["status"] == "success" and results[sink]["state_after"] == "RUNNING"
    assert client.status(bad)["connector"]["state"] == "FAILED"
    # the source starts over: its three lines are emitted again (the independent check)
    _wait("the source re-emitted", lambda: len(_values(bootstrap, ok_topic)) >= 6)
    assert _values(bootstrap, ok_topic) == ["x", "y", "z"] * 2
    # the sink's group lost its commits: it re-delivers from the log start
    _wait("the sink re-delivered", lambda: len(_lines(out)) >= 10)
    assert _lines(out) == [f"s-{i}" for i in range(5)] * 2
