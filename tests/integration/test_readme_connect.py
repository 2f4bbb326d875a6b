"""The README's "Kafka Connect and MirrorMaker 2" command blocks run as written against the
session's Connect worker and MirrorMaker 2 (tests/conftest.py: connect_worker, mm2), and their
outcomes are checked with independent clients.

Substituted: the worker URL, the cluster addresses, the offsets topic, and the names the README
assumes (`my-source`, `my-sink`, `jdbc-*`, the example snapshot id) by this test's own. Between
`offsets export` and the `--to-file` reset the test edits the exported file, as a user would.
The `dev-broker connect|mm2` block is not run here: a second MirrorMaker 2 between the
session's clusters would join the fixture's (same aliases, same internal topics); the demo
(`offsetkeeper demo`, demo/connect.py and demo/mm2.py) runs those commands. Nor is the
dashboard/history/exporter block (`ui` and `exporter` are servers).
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTP

from offsetkeeper.config import Connection
from offsetkeeper.connect.rest import ConnectClient, ConnectError, parse_target
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.mm2.records import latest_checkpoints
from tests.cli import run_cli
from waiting import wait_for as _wait

pytestmark = pytest.mark.integration

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "Kafka Connect and MirrorMaker 2"
SNAPSHOT_EXAMPLE = "csnap-20261127T051500.123Z-1a2b"


def _blocks() -> list[list[str]]:
    """The `offsetkeeper ...` lines of each fenced block of the section, block by block."""
    text = README.read_text()
    section = text[text.index(f"## {SECTION}\n"):]
    section = section[:section.index("\n## ", 1)]
    return [[ln.strip() for ln in block.splitlines() if ln.strip().startswith("offsetkeeper ")]
            for block in re.findall(r"```text\n(.*?)```", section, re.S)]


def _block(first: str) -> list[str]:
    """The section's block whose first command starts with `first`."""
    [block] = [b for b in _blocks() if b and b[0].startswith(first)]
    return block




def test_readme_section_has_the_blocks_this_test_runs():
    """Invariant: the section keeps its Connect block and its MM2 failover block (run below)
    and its dev-broker block (run by the demo)."""
    connect = _block("offsetkeeper connect list")
    assert len(connect) == 7 and all(c.startswith("offsetkeeper connect ") for c in connect)
    assert [c.split()[1] for c in _block("offsetkeeper mm2 status")] == [
        "mm2", "offsets", "snapshots"]
    assert all(c.startswith("offsetkeeper dev-broker ")
               for c in _block("offsetkeeper dev-broker connect start"))


def _run(capsys, line: str, subst: dict[str, str]):
    for a, b in subst.items():
        line = line.replace(a, b)
    r = run_cli(capsys, *shlex.split(line, comments=True)[1:])
    assert "Traceback" not in r.err, r.err
    return line, r


def test_readme_connect_block_runs_as_written(connect_worker, bootstrap, admin, unique,
                                              tmp_path, monkeypatch, capsys):
    """Invariant: every Connect command of the README runs as written (addresses and names
    substituted) and does what the README says: the rewind by file is applied and read back
    from the offsets topic, the sink's group moves to the datetime, the rollback restores."""
    client = ConnectClient(parse_target(connect_worker.url))
    prefix = unique("rdm")
    source, sink = f"{prefix}-source", f"{prefix}-sink"
    src_topic, sink_topic = unique("rdm-src"), unique("rdm-sink")
    admin.create_topic(src_topic, 1)
    admin.create_topic(sink_topic, 1)
    src = tmp_path / "orders.txt"
    src.write_text("a\nb\nc\n")
    client.create(source, {"connector.class": "FileStreamSource", "file": str(src),
                           "topic": src_topic, "tasks.max": "1"})
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(4):
        p.produce(sink_topic, f"s-{i}".encode(), partition=0)
    assert p.flush(30) == 0
    client.create(sink, {"connector.class": "FileStreamSink", "file": str(tmp_path / "out.txt"),
                         "topics": sink_topic, "tasks.max": "1"})

    def offsets(name):
        return client.offsets(name)["offsets"]
    _wait("source position", lambda: offsets(source) and offsets(source)[0]["offset"] == {
        "position": 6})
    _wait("sink offsets", lambda: offsets(sink) and offsets(sink)[0]["offset"] == {
        "kafka_offset": 4})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OFFSETKEEPER_CONNECT_URL", connect_worker.url)
    monkeypatch.setenv("OFFSETKEEPER_SNAPSHOT_STORE", str(tmp_path / "snapshots"))
    subst = {"http://127.0.0.1:8083": connect_worker.url, "127.0.0.1:9092": bootstrap,
             "connect-offsets": connect_worker.offsets_topic or "", "my-source": source,
             "my-sink": sink, "jdbc-*": f"{prefix}-*"}
    snapshot = None
    try:
        for line in _block("offsetkeeper connect list"):
            if SNAPSHOT_EXAMPLE in line:
                assert snapshot, "no connector snapshot before the README's rollback"
                subst[SNAPSHOT_EXAMPLE] = snapshot
            text, r = _run(capsys, line, subst)
            assert r.code == 0, f"{text}\nexit {r.code}\n{r.out}\n{r.err}"
            if " list " in text:
                assert source in r.out and sink in r.out and sink_topic in r.out, r.out
            elif " show " in text:
                assert '"position":6' in r.out.replace(" ", ""), r.out
            elif " export " in text:
                doc = json.loads((tmp_path / f"{source}.json").read_text())
                assert doc == {"offsets": [{"partition": {"filename": str(src)},
                                            "offset": {"position": 6}}]}
                doc["offsets"][0]["offset"]["position"] = 2  # the user's edit: after "a"
                (tmp_path / f"{source}.json").write_text(json.dumps(doc))
            elif "--to-file" in text:
                m = re.search(r"snapshot (csnap-\S+)", r.err)
                assert m, r.err
                snapshot = m.group(1)
                # resumed, the source re-emits b and c: its position is the end again
                _wait("re-emitted", lambda: offsets(source)[0]["offset"] == {"position": 6})
            elif "--to-none" in text:
                assert "dry run" in r.err and offsets(source)[0]["offset"] == {"position": 6}
            elif "--to-datetime" in text:
                # every record is newer than the README's datetime: the group goes to 0, and
                # the sink re-delivers all four records
                _wait("re-delivered", lambda: len((tmp_path / "out.txt").read_text()
                                                  .splitlines()) == 8)
            elif " rollback " in text:
                assert "success" in r.out or "nothing" in r.out, r.out
                assert offsets(source)[0]["offset"] == {"position": 6}
    finally:
        for name in (source, sink):
            with contextlib.suppress(ConnectError):  # gone already
                client.request("DELETE", f"/connectors/{name}", connector=name)


def test_readme_mm2_block_runs_as_written(mm2, bootstrap, dr_bootstrap, unique, monkeypatch,
                                          tmp_path, capsys):
    """Invariant: the README's failover block runs as written: `mm2 status` lists the
    checkpointed group, the --all-groups --from-mm2 reset moves it on the target to MM2's
    translation, and the rollback removes those commits again."""
    topic, group = unique("mm2-rdm"), unique("mm2-rdm-g")
    with KafkaAdmin(Connection(bootstrap_servers=bootstrap)) as src:
        src.create_topic(topic, 1)
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        p.produce(topic, f"r-{i}".encode(), partition=0)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    c.commit(offsets=[CTP(topic, 0, 10)], asynchronous=False)
    c.close()
    dr_conf = {"bootstrap.servers": dr_bootstrap}
    _wait("MM2's checkpoint of the group", lambda: (group, f"A.{topic}", 0) in latest_checkpoints(
        dr_conf, "A")[0])
    monkeypatch.setenv("OFFSETKEEPER_SNAPSHOT_STORE", str(tmp_path / "snapshots"))
    subst = {"dr:9092": dr_bootstrap, "prod:9092": bootstrap}
    with KafkaAdmin(Connection(bootstrap_servers=dr_bootstrap)) as dr:
        for line in _block("offsetkeeper mm2 status"):
            text, r = _run(capsys, line, subst)
            assert r.code == 0, f"{text}\nexit {r.code}\n{r.out}\n{r.err}"
            latest, _ = latest_checkpoints(dr_conf, "A")
            if " mm2 status " in text:
                assert group in r.out and "SYNC" in r.out, r.out
            elif "--from-mm2" in text:
                got = {(tp.topic, tp.partition): co.offset
                       for tp, co in dr.committed_offsets(group).items()}
                assert got == {(f"A.{topic}", 0): latest[(group, f"A.{topic}", 0)].downstream}
            elif " rollback " in text:
                left = dr.committed_offsets_each([group])[group]
                assert left == {} or isinstance(left, Exception), left
