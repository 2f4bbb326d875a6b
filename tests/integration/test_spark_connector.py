"""Spark's own Kafka connector (format("kafka"), jvm/spark-kafka/pom.xml) with offsetkeeper:
the commitToGroup listener and the checkpoint commands on checkpoints the JVM source wrote.

Skipped when scripts/setup.sh has not installed the connector (offsetkeeper never needs it)."""

from __future__ import annotations

import threading
import time

import pytest

from cli import run_cli
from kafkatools import LiveConsumer, committed, create_topic, produce
from offsetkeeper.spark import connector
from offsetkeeper.spark.kafka.listener import GroupCommitError, commit_to_group
from offsetkeeper.streaming.view import load_view
from tests.integration.test_streaming import Driver, log_ends, parquet_rows, read_from

pytestmark = [
    pytest.mark.integration, pytest.mark.spark,
    pytest.mark.skipif(not connector.available(), reason="Spark's Kafka connector not installed "
                       "(scripts/setup.sh)"),
]


def jvm_stream(spark, bootstrap, topic, **opts):
    r = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", topic))
    for k, v in opts.items():
        r = r.option(k, v)
    return r.load().select("partition", "offset", "timestamp", "value")


def jvm_available_now(spark, bootstrap, topic, ck, out, **opts):
    """Run Spark's JVM Kafka source to a Parquet sink with Trigger.AvailableNow; the batches
    that read rows."""
    q = (jvm_stream(spark, bootstrap, topic, **opts).writeStream.format("parquet")
         .option("path", out).option("checkpointLocation", ck).trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert not q.isActive and q.exception() is None
    return [p for p in q.recentProgress if p["numInputRows"] > 0]


def wait_until(pred, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out: {what}"
        time.sleep(0.5)


@pytest.mark.timeout(900)
def test_listener_commits_each_completed_batch_end_offsets_to_the_group(
        spark, bootstrap, unique, tmp_path, capsys):
    """Invariant: with commit_to_group(query, G) a query on Spark's JVM Kafka source commits the
    end offsets of its completed batches to G: after each wave of records G equals the last
    batch's end offsets (the checkpoint's last committed offsets), and G's lag is 0 then.
    `streaming lag` and `streaming commit-to-group` work on the running query's checkpoint."""
    topic, group = unique("jc"), unique("jc-g")
    create_topic(bootstrap, topic, 3)
    produce(bootstrap, topic, [(i % 3, None, f"a{i}".encode()) for i in range(90)])
    ck = str(tmp_path / "ck")
    q = (jvm_stream(spark, bootstrap, topic, startingOffsets="earliest", maxOffsetsPerTrigger="40")
         .writeStream.format("parquet").option("path", str(tmp_path / "out"))
         .option("checkpointLocation", ck).trigger(processingTime="1 second").start())
    committer = commit_to_group(q, group, bootstrap=bootstrap)
    try:
        for wave in range(2):
            ends = log_ends(bootstrap, topic, 3)
            wait_until(lambda ends=ends: committed(bootstrap, group, topic, 3) == ends,
                       f"group at the log end after wave {wave}")
            # the group is exactly the checkpoint's last completed batch, and the listener's
            view = load_view(ck)
            assert {tp.partition: o for tp, o in view.committed_offsets.items()} == ends
            assert {tp.partition: o for tp, o in committer.committed.items()} == ends
            produce(bootstrap, topic, [(i % 3, None, f"b{i}".encode()) for i in range(30)])
        ends = log_ends(bootstrap, topic, 3)
        wait_until(lambda: committed(bootstrap, group, topic, 3) == ends, "group at the end")
        assert committer.committed_batch is not None and committer.committed_batch >= 3
        committer.check()  # no failure
        r = run_cli(capsys, "groups", "describe", group, "-b", bootstrap, "-o", "json")
        assert r.code == 0 and [x["lag"] for x in r.json() if x["topic"] == topic] == [0, 0, 0]
        # the checkpoint commands on the running JVM query's checkpoint
        r = run_cli(capsys, "streaming", "lag", ck, "-b", bootstrap, "-o", "json")
        assert r.code == 0 and [x["lag"] for x in r.json()] == [0, 0, 0]
        other = unique("jc-cli")  # the audited one-off path, on the running query's checkpoint
        r = run_cli(capsys, "streaming", "commit-to-group", ck, "--group", other, "-b", bootstrap,
                    "--execute", "--no-snapshot")
        assert r.code == 0, r.err
        assert committed(bootstrap, other, topic, 3) == ends
    finally:
        q.stop()
        spark.streams.removeListener(committer)
    assert len(parquet_rows(spark, str(tmp_path / "out"))) == 150


@pytest.mark.timeout(600)
def test_a_failed_commit_stops_the_query_and_is_raised(spark, bootstrap, unique, tmp_path):
    """Invariant: when the group cannot be committed (it has an active member) the listener
    does not retry in a loop: it stops the query, check() raises the failure with the group's
    cause, and the group's offsets are untouched."""
    topic, group = unique("jf"), unique("jf-g")
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, [(i % 2, None, b"x") for i in range(20)])
    member = LiveConsumer(bootstrap, group, [topic])
    try:
        before = committed(bootstrap, group, topic, 2)
        q = (jvm_stream(spark, bootstrap, topic, startingOffsets="earliest").writeStream
             .format("noop").option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(processingTime="1 second").start())
        committer = commit_to_group(q, group, bootstrap=bootstrap)
        try:
            q.awaitTermination(120)
            assert not q.isActive, "the query was not stopped after the failed commit"
        finally:
            q.stop()
        spark.streams.removeListener(committer)
        with pytest.raises(GroupCommitError, match="was not committed") as exc:
            committer.check()
        assert "active" in str(exc.value.__cause__).lower()
        assert committed(bootstrap, group, topic, 2) == before
    finally:
        member.stop()


@pytest.mark.timeout(900)
def test_checkpoint_commands_on_a_jvm_source_checkpoint(spark, bootstrap, unique, tmp_path, capsys):
    """Invariant: on a checkpoint written by Spark's JVM Kafka source, `streaming show` and
    `lag` read its position; after `reset --to-datetime T --execute` and `rollback --execute`
    the restarted query reads nothing (it is where it was); after another reset it reads
    exactly the records from the first one at/after T (as an independent consumer finds them)."""
    topic = unique("jr")
    create_topic(bootstrap, topic, 2, {"retention.ms": "-1"})
    base = int(time.time() * 1000) - 3_600_000
    produce(bootstrap, topic, [(p, None, f"v{p}-{i}".encode(), None, base + i * 1000 + p * 300)
                               for i in range(40) for p in range(2)])
    ck, out = str(tmp_path / "ck"), str(tmp_path / "out")
    b = ["-b", bootstrap]
    jvm_available_now(spark, bootstrap, topic, ck, out, startingOffsets="earliest")
    assert len(parquet_rows(spark, out)) == 80

    r = run_cli(capsys, "streaming", "show", ck, "-o", "json")
    assert r.code == 0
    assert {(x["partition"], x["committed_offset"]) for x in r.json()["partitions"]} == {(0, 40), (1, 40)}
    r = run_cli(capsys, "streaming", "lag", ck, *b, "-o", "json")
    assert r.code == 0 and [x["lag"] for x in r.json()] == [0, 0]

    at = base + 25_000 + 100  # partition 0: first record 26 (ts +26000); partition 1: 25 (+25300)
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at // 1000)) + f".{at % 1000:03d}Z"
    reset = ["streaming", "reset", ck, "--to-datetime", iso, *b, "--execute", "--alive-window", "0"]
    r = run_cli(capsys, *reset, "-o", "json")
    assert r.code == 0 and r.json()["executed"]
    assert {(x["partition"], x["target"]) for x in r.json()["partitions"]} == {(0, 26), (1, 25)}
    r = run_cli(capsys, "streaming", "rollback", ck, "--execute", "--alive-window", "0")
    assert r.code == 0
    # rolled back: the JVM query continues where it was, with nothing new to read
    assert jvm_available_now(spark, bootstrap, topic, ck, out) == []
    assert len(parquet_rows(spark, out)) == 80

    r = run_cli(capsys, *reset)
    assert r.code == 0
    assert jvm_available_now(spark, bootstrap, topic, ck, out)
    expected = read_from(bootstrap, topic, {0: 26, 1: 25})
    assert len(expected) == 29
    # the same file sink: the first run plus exactly the records from T
    assert parquet_rows(spark, out) == sorted(read_from(bootstrap, topic, {0: 0, 1: 0}) + expected)


@pytest.mark.timeout(900)
def test_a_query_moves_between_offsetkeeper_and_the_jvm_source_keeping_its_position(
        spark, bootstrap, unique, tmp_path):
    """Invariant: a checkpoint written by offsetkeeper's source is resumed by Spark's JVM
    source and the other way round (both write Spark's Kafka offset JSON, next offset to read):
    across two switches every record reaches the sink exactly once, none skipped or repeated."""
    from offsetkeeper.spark.kafka import SOURCE_NAME, register

    register(spark)
    topic = unique("jm")
    create_topic(bootstrap, topic, 3)
    ck, out = str(tmp_path / "ck"), str(tmp_path / "out")

    def run(fmt: str, **opts) -> int:
        r = (spark.readStream.format(fmt).option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic))
        for k, v in opts.items():
            r = r.option(k, v)
        q = (r.load().selectExpr("CAST(partition AS INT) AS partition",
                                 "CAST(offset AS BIGINT) AS offset", "value")
             .writeStream.format("parquet").option("path", out).option("checkpointLocation", ck)
             .trigger(availableNow=True).start())
        q.awaitTermination(300)
        assert not q.isActive and q.exception() is None
        return sum(p["numInputRows"] for p in q.recentProgress)

    def wave(tag: str) -> None:
        produce(bootstrap, topic, [(i % 3, None, f"{tag}{i}".encode()) for i in range(30)])

    wave("a")
    assert run(SOURCE_NAME, startingOffsets="earliest") == 30
    wave("b")
    assert run("kafka") == 30  # the JVM source resumes offsetkeeper's checkpoint
    wave("c")
    assert run(SOURCE_NAME) == 30  # and offsetkeeper's source the JVM one's
    got = parquet_rows(spark, out)
    assert got == read_from(bootstrap, topic, {0: 0, 1: 0, 2: 0})
    assert len(got) == 90


class JvmDriver(Driver):
    """tests/jvm_streaming_driver.py in its own process group (killed with SIGKILL)."""

    def __init__(self, *args: str) -> None:
        import os
        import queue
        import subprocess
        import sys
        from pathlib import Path

        tests = Path(__file__).resolve().parents[1]
        env = {**os.environ, "PYTHONPATH": f"{tests.parent / 'src'}{os.pathsep}{tests}",
               "PYSPARK_PYTHON": sys.executable}
        self.p = subprocess.Popen([sys.executable, str(tests / "jvm_streaming_driver.py"), *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                  env=env, start_new_session=True)
        self.events: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_listener_after_a_killed_driver_never_ahead_and_catches_up_on_restart(
        spark, bootstrap, unique, tmp_path):
    """Invariant: a JVM-source query's group is never ahead of its checkpoint's last committed
    batch, also when the driver is SIGKILLed mid-run; the restarted query (listener added
    again) brings the group to the log end once the producer stops; the file sink has every
    record exactly once."""
    topic, group = unique("jk"), unique("jk-g")
    create_topic(bootstrap, topic, 3)
    ck, out = str(tmp_path / "ck"), str(tmp_path / "out")
    stop = threading.Event()
    produced: list[int] = []

    def producer() -> None:
        while not stop.is_set():
            i = len(produced)
            produce(bootstrap, topic, [(j % 3, None, f"r{j}".encode()) for j in range(i, i + 30)])
            produced.extend(range(i, i + 30))
            time.sleep(0.3)

    t = threading.Thread(target=producer)
    t.start()
    d = JvmDriver(bootstrap, topic, ck, out, group)
    try:
        d.wait_for(lambda e: e["event"] == "batch" and e["rows"] > 0
                   and (e["committed_batch"] or -1) >= 1)
        d.kill()  # mid-run: the producer is still writing
        at_kill = committed(bootstrap, group, topic, 3)
        view = load_view(ck)
        done = {tp.partition: o for tp, o in view.committed_offsets.items()}
        assert all(0 <= at_kill[p] <= done[p] for p in range(3)), (at_kill, done)
        d = JvmDriver(bootstrap, topic, ck, out, group)
        d.wait_for(lambda e: e["event"] == "started")
        stop.set()
        t.join()
        ends = log_ends(bootstrap, topic, 3)
        wait_until(lambda: committed(bootstrap, group, topic, 3) == ends,
                   "the group never reached the log end", timeout=240)
    finally:
        d.kill()
        stop.set()
        t.join()
    got = parquet_rows(spark, out)
    assert len(got) == len(produced) and got == read_from(bootstrap, topic, {0: 0, 1: 0, 2: 0})
