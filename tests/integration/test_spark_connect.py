"""Backup, restore (exact mapping), commits scan and the streaming source on Spark Connect.

A real local Spark Connect server (`offsetkeeper.spark.server`: the pinned pyspark's own
spark-connect plugin) is started once; every command runs in a child process through the CLI's
``--remote`` (a process that made a Connect session stays in Connect mode, so these runs keep
the test process classic).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTP

from offsetkeeper.models import TopicPartition
from offsetkeeper.restore.mapping import mapping_root_for, partition_mappings, read_mapping
from offsetkeeper.restore.translate import offsets_from_mapping
from tests.restore_support import consume_all
from tests.services import free_port

pytestmark = [pytest.mark.integration, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]
# the session server's token, from its token file: the commands' Connect client reads it from
# SPARK_CONNECT_AUTHENTICATE_TOKEN, as a user attaching by hand does
_TOKEN: dict[str, str] = {}


def _env() -> dict[str, str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           **_TOKEN}
    env.pop("SPARK_REMOTE", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), str(ROOT),
                                                    env.get("PYTHONPATH")) if p)
    return env


@pytest.fixture(scope="session")
def connect_server():
    """A local Spark Connect server for the session, started and stopped with `offsetkeeper
    spark-server` (which waits while the server's log grows); yields its state directory."""
    # outside pytest's base temp (re-moded by every pytest run on the machine)
    state = Path(tempfile.mkdtemp(prefix="offsetkeeper-connect-"))
    port = free_port()
    r = cli("spark-server", "start", "--port", port, "--master", "local[2]", "--state-dir", state,
            # an orphan (pytest killed) stops by itself
            "--idle-timeout", "15m", "--conf", "spark.sql.shuffle.partitions=2", "-o", "json")
    assert r.returncode == 0, r.stderr + (state / "server.log").read_text()[-3000:]
    started = json.loads(r.stdout)
    _TOKEN["SPARK_CONNECT_AUTHENTICATE_TOKEN"] = Path(started["token_file"]).read_text().strip()
    try:
        yield state, started
    finally:
        cli("spark-server", "stop", "--state-dir", state)
        _TOKEN.clear()


@pytest.fixture(scope="session")
def connect_url(connect_server) -> str:
    return connect_server[1]["url"]


def cli(*args: str) -> subprocess.CompletedProcess:
    """The offsetkeeper command line in a child process."""
    return subprocess.run([sys.executable, "-m", "offsetkeeper.cli.main", *map(str, args)],
                          capture_output=True, text=True, env=_env(), timeout=540)


def _produce(bootstrap: str, topic: str, partitions: int, n: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(n):
        p.produce(topic, key=f"k{i}".encode(), value=f"value-{i}".encode() * 4,
                  partition=i % partitions, headers=[("h", str(i).encode())] if i % 3 else None)
    assert p.flush(30) == 0


def _commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[CkTP(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
    finally:
        c.close()


@pytest.mark.spark_oldest
def test_backup_restore_and_exact_mapping_through_connect_remote(
        connect_url, bootstrap, dr_bootstrap, unique, tmp_path):
    """`backup run` and `restore run` with --remote sc://... run their Spark tasks on the Connect
    server (no RDDs there); the restored records are the source's, in order, and the mapping
    and group translation are exact."""
    topic, target, group = unique("cx"), unique("cx-dr"), unique("g")
    _produce(bootstrap, topic, 2, 300)
    _commit(bootstrap, group, {(topic, 0): 50, (topic, 1): 150})
    dest = tmp_path / "backups"

    b = cli("backup", "run", "-b", bootstrap, "-t", topic, "--dest", dest, "--id", "nightly",
            "--remote", connect_url, "-o", "json")
    assert b.returncode == 0, b.stderr
    summary = json.loads(b.stdout)
    assert summary["records"] == 300 and summary["partitions_read"] == 2
    assert "spark_start_connect" in summary["timings"]

    r = cli("restore", "run", f"{dest}/nightly", "-b", dr_bootstrap, "--rename", f"{topic}={target}",
            "--restore-id", "r1", "--remote", connect_url, "-o", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["records"] == 300

    src = consume_all(bootstrap, topic, [0, 1])
    got = consume_all(dr_bootstrap, target, [0, 1])
    maps = partition_mappings(read_mapping(mapping_root_for(str(dest), "nightly", "r1")))
    for p in (0, 1):
        assert [m.value() for m in got[p]] == [m.value() for m in src[p]]
        m = maps[TopicPartition(topic, p)]
        assert list(m.source_offsets) == [x.offset() for x in src[p]]
        assert list(m.target_offsets) == [x.offset() for x in got[p]]

    # the group's offsets captured by the backup, translated through the mapping: the target
    # offset of the first restored record at or after each committed source offset
    fo = offsets_from_mapping(str(dest), "nightly", "r1", None)
    for p, committed in ((0, 50), (1, 150)):
        offs = [x.offset() for x in src[p]]
        want = (got[p][next(i for i, o in enumerate(offs) if o >= committed)].offset()
                if committed <= offs[-1] else got[p][-1].offset() + 1)
        assert fo.offsets[group][TopicPartition(target, p)] == want


@pytest.mark.spark_oldest
def test_commits_scan_through_connect_remote(connect_url, bootstrap, unique, tmp_path):
    """`commits scan --group G --remote sc://...` decodes G's commits on the Connect server."""
    topic, group = unique("cs"), unique("g")
    _produce(bootstrap, topic, 1, 5)
    for off in (1, 3, 5):
        _commit(bootstrap, group, {(topic, 0): off})
    out = tmp_path / "history"
    s = cli("commits", "scan", "-b", bootstrap, "--group", group, "--out", out,
            "--remote", connect_url, "-o", "json")
    assert s.returncode == 0, s.stderr
    commits = pq.read_table(out / "commits").to_pylist()
    mine = sorted(r["offset"] for r in commits if r["group"] == group and r["topic"] == topic)
    assert mine == [1, 3, 5]


@pytest.mark.spark_oldest
def test_streaming_source_on_connect(connect_url, bootstrap, unique, tmp_path):
    """spark.readStream.format('offsetkeeper-kafka') on a Connect session (the data source
    registered on it) reads every record once, available-now, into a Parquet sink."""
    topic = unique("cst")
    _produce(bootstrap, topic, 2, 40)
    out, checkpoint = tmp_path / "out", tmp_path / "chk"
    env = {**_env(), "STREAMING_DRIVER_MASTER": connect_url}
    run = subprocess.run([sys.executable, str(ROOT / "tests" / "streaming_driver.py"), bootstrap,
                          topic, str(checkpoint), str(out), "available-now",
                          json.dumps({"startingOffsets": "earliest"})],
                         capture_output=True, text=True, env=env, timeout=540)
    assert run.returncode == 0, run.stderr[-3000:]
    events = [json.loads(x) for x in run.stdout.splitlines() if x.startswith("{")]
    assert any(e["event"] == "batch" for e in events) and events[-1]["event"] == "stopped"
    rows = pq.read_table(out, columns=["partition", "offset"]).to_pylist()
    src = consume_all(bootstrap, topic, [0, 1])
    assert sorted((r["partition"], r["offset"]) for r in rows) == sorted(
        (p, m.offset()) for p, ms in src.items() for m in ms)
    assert (checkpoint / "commits").is_dir()


def test_spark_server_status_and_a_second_start(connect_server):
    """`spark-server status` shows the running server and its token file, never the token;
    `start` again returns it (one server)."""
    state, started = connect_server
    st = cli("spark-server", "status", "--state-dir", state, "-o", "json")
    assert st.returncode == 0, st.stderr
    got = json.loads(st.stdout)
    assert got["running"] and got["url"] == started["url"] and got["pid"] == started["pid"]
    assert got["token_file"] == str(state / "token")
    again = cli("spark-server", "start", "--port", "1", "--state-dir", state, "-o", "json")
    assert again.returncode == 0 and json.loads(again.stdout)["pid"] == started["pid"]
    table = cli("spark-server", "status", "--state-dir", state)
    assert table.returncode == 0 and str(state / "token") in table.stdout
    token = _TOKEN["SPARK_CONNECT_AUTHENTICATE_TOKEN"]
    assert all(token not in r.stdout + r.stderr for r in (st, again, table))


def test_spark_server_status_when_none_runs(tmp_path):
    r = cli("spark-server", "status", "--state-dir", tmp_path, "-o", "json")
    assert r.returncode == 1 and json.loads(r.stdout)["running"] is False


def test_remote_usage_errors(capsys, bootstrap, tmp_path):
    """A bad Connect URL, or --master with --remote, is bad input: exit 2, one line."""
    from tests.cli import run_cli

    r = run_cli(capsys, "backup", "run", "-b", bootstrap, "-t", "x", "--dest", tmp_path, "--id", "a",
                "--remote", "local[2]")
    assert r.code == 2 and "--remote 'local[2]' is not a Spark Connect URL" in r.err
    r = run_cli(capsys, "commits", "scan", "-b", bootstrap, "--out", tmp_path, "--master", "local[1]",
                "--remote", "sc://127.0.0.1:1")
    assert r.code == 2 and "give one" in r.err


def test_unreachable_connect_server_is_one_line(bootstrap, unique, tmp_path):
    """A Connect server that does not answer: exit 1, one sentence naming it, no traceback."""
    topic = unique("cx-none")
    _produce(bootstrap, topic, 1, 3)
    port = free_port()
    r = cli("backup", "run", "-b", bootstrap, "-t", topic, "--dest", tmp_path, "--id", "a",
            "--remote", f"sc://127.0.0.1:{port}")
    assert r.returncode == 1
    assert f"cannot use the Spark Connect server sc://127.0.0.1:{port}" in r.stderr
    assert "Traceback" not in r.stderr
