"""The offsetkeeper-kafka streaming source, sink and checkpoint tools against the real broker
and real local Spark. Queries that must survive a killed driver run in their own process."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CkTP

from cli import run_cli
from kafkatools import commit, committed, create_topic, produce
from offsetkeeper.spark.kafka import SOURCE_NAME, register
from offsetkeeper.streaming.view import load_view

pytestmark = [pytest.mark.integration, pytest.mark.spark]

TESTS = Path(__file__).resolve().parents[1]
SRC = TESTS.parent / "src"


class Driver:
    """tests/streaming_driver.py in its own process group (killed with SIGKILL as a whole)."""

    def __init__(self, *args: str, opts: dict | None = None) -> None:
        env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{TESTS}", "PYSPARK_PYTHON": sys.executable}
        self.p = subprocess.Popen(
            [sys.executable, str(TESTS / "streaming_driver.py"), *args, json.dumps(opts or {})],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
            start_new_session=True)
        self.events: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.p.stdout:
            if line.startswith("{"):
                self.events.put(json.loads(line))
        self.events.put({"event": "exit"})

    def wait_for(self, pred, timeout: float = 180) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                ev = self.events.get(timeout=1)
            except queue.Empty:
                continue
            if ev["event"] == "exit":
                raise AssertionError(f"driver exited ({self.p.poll()}) before the expected event")
            if pred(ev):
                return ev
        raise AssertionError("timed out waiting for the driver")

    def kill(self) -> None:
        if self.p.poll() is None:
            os.killpg(self.p.pid, signal.SIGKILL)
        self.p.wait(30)


def parquet_rows(spark, path: str) -> list[tuple[int, int, bytes]]:
    """(partition, offset, value) of the file sink's committed output (via _spark_metadata)."""
    return sorted((r["partition"], r["offset"], bytes(r["value"]))
                  for r in spark.read.parquet(path).collect())


def log_ends(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "streaming-test-wm"})
    try:
        return {p: c.get_watermark_offsets(CkTP(topic, p), timeout=10, cached=False)[1]
                for p in range(partitions)}
    finally:
        c.close()


def read_from(bootstrap: str, topic: str, starts: dict[int, int]) -> list[tuple[int, int, bytes]]:
    """An independent consumer's (partition, offset, value) from `starts` to the log end."""
    ends = log_ends(bootstrap, topic, len(starts))
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "streaming-test-reader",
                  "enable.auto.commit": False})
    out = []
    try:
        for p, s in starts.items():
            if s >= ends[p]:
                continue
            c.assign([CkTP(topic, p, s)])
            while True:
                m = c.poll(10)
                assert m is not None and not m.error()
                out.append((p, m.offset(), m.value()))
                if m.offset() >= ends[p] - 1:
                    break
    finally:
        c.close()
    return sorted(out)


@pytest.mark.slow
@pytest.mark.timeout(1200)  # two Spark drivers start one after the other; slow on a busy machine
def test_killed_driver_restarts_exactly_once_and_group_reaches_lag_zero(
        spark, bootstrap, unique, tmp_path, capsys):
    """Invariant: with a file sink, a driver SIGKILLed mid-run and restarted from the
    checkpoint outputs every record exactly once; with commitToGroup the group reaches lag 0
    once the producer stops (Spark's own commit() alone would leave the last batch as lag)."""
    topic, group = unique("sk"), unique("sk-g")
    create_topic(bootstrap, topic, 3)
    ck, out = str(tmp_path / "ck"), str(tmp_path / "out")
    stop = threading.Event()
    produced: list[int] = []

    def producer() -> None:  # writes until told to stop: before, during and after the kill
        while not stop.is_set():
            i = len(produced)
            produce(bootstrap, topic, [(j % 3, None, f"r{j}".encode()) for j in range(i, i + 30)])
            produced.extend(range(i, i + 30))
            time.sleep(0.3)

    t = threading.Thread(target=producer)
    t.start()
    opts = {"startingOffsets": "earliest", "commitToGroup": group, "maxOffsetsPerTrigger": "300"}
    d = Driver(bootstrap, topic, ck, out, "continuous", opts=opts)
    try:
        d.wait_for(lambda e: e["event"] == "batch" and e["batch"] >= 1 and e["rows"] > 0)
        d.kill()  # mid-run: the producer is still writing
        d = Driver(bootstrap, topic, ck, out, "continuous", opts=opts)
        d.wait_for(lambda e: e["event"] == "started")
        stop.set()
        t.join()
        ends = log_ends(bootstrap, topic, 3)
        deadline = time.monotonic() + 180
        while committed(bootstrap, group, topic, 3) != ends:
            assert time.monotonic() < deadline, "the group never reached the log end"
            time.sleep(1)
        r = run_cli(capsys, "groups", "describe", group, "-b", bootstrap, "-o", "json")
        assert r.code == 0
        rows = [x for x in r.json() if x["topic"] == topic]
        assert len(rows) == 3 and all(x["lag"] == 0 for x in rows)
    finally:
        d.kill()
        stop.set()
        t.join()
    total = len(produced)
    got = parquet_rows(spark, out)
    assert len(got) == total and len({(p, o) for p, o, _ in got}) == total
    assert sorted(v for _, _, v in got) == sorted(f"r{j}".encode() for j in range(total))
    assert got == read_from(bootstrap, topic, {0: 0, 1: 0, 2: 0})


def _available_now(spark, bootstrap, topic, ck, out, **opts):
    r = (spark.readStream.format(SOURCE_NAME).option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", topic))
    for k, v in opts.items():
        r = r.option(k, v)
    q = (r.load().select("partition", "offset", "timestamp", "value").writeStream.format("parquet")
         .option("path", out).option("checkpointLocation", ck).trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert not q.isActive and q.exception() is None
    return [p for p in q.recentProgress if p["numInputRows"] > 0]


def test_reset_to_datetime_rereads_from_there_and_rollback_undoes_it(
        spark, bootstrap, unique, tmp_path, capsys):
    """Invariant: after `streaming reset --to-datetime T --execute` the restarted query reads
    exactly the records from the first one at/after T (per partition, as an independent
    consumer finds them); `streaming rollback` restores the checkpoint's files byte for byte."""
    register(spark)
    topic = unique("rs")
    create_topic(bootstrap, topic, 2, {"retention.ms": "-1"})
    base = int(time.time() * 1000) - 3_600_000
    produce(bootstrap, topic, [(p, None, f"v{p}-{i}".encode(), None, base + i * 1000 + p * 300)
                               for i in range(40) for p in range(2)])
    ck = str(tmp_path / "ck")
    _available_now(spark, bootstrap, topic, ck, str(tmp_path / "out1"), startingOffsets="earliest")
    b = ["-b", bootstrap]

    r = run_cli(capsys, "streaming", "show", ck, "-o", "json")
    assert r.code == 0
    assert {(x["partition"], x["committed_offset"]) for x in r.json()["partitions"]} == {(0, 40), (1, 40)}
    r = run_cli(capsys, "streaming", "lag", ck, *b, "-o", "json")
    assert r.code == 0 and [x["lag"] for x in r.json()] == [0, 0]

    at = base + 25_000 + 100  # partition 0: first record 26 (ts +26000); partition 1: 25 (+25300)
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at // 1000)) + f".{at % 1000:03d}Z"
    r = run_cli(capsys, "streaming", "reset", ck, "--to-datetime", iso, *b, "-o", "json")
    assert r.code == 0 and not r.json()["executed"]  # dry run by default
    assert "would refuse" in r.err and "alive" in r.err  # a batch was written seconds ago
    assert {(x["partition"], x["target"]) for x in r.json()["partitions"]} == {(0, 26), (1, 25)}
    r = run_cli(capsys, "streaming", "reset", ck, "--to-datetime", iso, *b, "--execute")
    assert r.code == 1 and "looks alive" in r.err
    before = {p.name: p.read_bytes() for p in (tmp_path / "ck" / "offsets").iterdir()}

    r = run_cli(capsys, "streaming", "reset", ck, "--to-datetime", iso, *b, "--execute",
                "--alive-window", "0", "-o", "json")
    assert r.code == 0 and r.json()["executed"]
    assert load_view(ck).rows()[0]["committed_offset"] == 26
    r = run_cli(capsys, "streaming", "rollback", ck, "--execute", "--alive-window", "0")
    assert r.code == 0
    assert {p.name: p.read_bytes() for p in (tmp_path / "ck" / "offsets").iterdir()} == before

    r = run_cli(capsys, "streaming", "reset", ck, "--to-datetime", iso, *b, "--execute",
                "--alive-window", "0")
    assert r.code == 0
    first = parquet_rows(spark, str(tmp_path / "out1"))
    assert len(first) == 80
    _available_now(spark, bootstrap, topic, ck, str(tmp_path / "out1"))
    expected = read_from(bootstrap, topic, {0: 26, 1: 25})
    assert len(expected) == 29
    # the same file sink (its batch log must stay contiguous): the first run plus the re-read
    assert parquet_rows(spark, str(tmp_path / "out1")) == sorted(first + expected)


def test_starting_from_group_with_bounded_available_now_batches(spark, bootstrap, unique, tmp_path):
    """startingOffsets group:G starts where G is (fallback for partitions it never committed);
    AvailableNow with maxOffsetsPerTrigger reads in batches of at most N offsets and stops."""
    register(spark)
    topic, group = unique("grp"), unique("grp-g")
    create_topic(bootstrap, topic, 3)
    produce(bootstrap, topic, [(p, None, f"{p}-{i}".encode()) for i in range(50) for p in range(3)])
    commit(bootstrap, group, {(topic, 0): 10, (topic, 1): 45})
    batches = _available_now(spark, bootstrap, topic, str(tmp_path / "ck"), str(tmp_path / "out"),
                             startingOffsets=f"group:{group}", startingOffsetsFallback="earliest",
                             maxOffsetsPerTrigger="25")
    sizes = [p["numInputRows"] for p in batches]
    assert sum(sizes) == 40 + 5 + 50 and max(sizes) <= 25 and len(sizes) == 4
    got = parquet_rows(spark, str(tmp_path / "out"))
    assert got == read_from(bootstrap, topic, {0: 10, 1: 45, 2: 0})

    # a partition added while the query is stopped (or running) is picked up from offset 0
    from confluent_kafka.admin import AdminClient, NewPartitions

    a = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the future resolves
    for f in a.create_partitions([NewPartitions(topic, 4)]).values():
        f.result(15)
    time.sleep(1)
    produce(bootstrap, topic, [(p, None, f"{p}-new-{i}".encode()) for i in range(3) for p in (0, 3)])
    _available_now(spark, bootstrap, topic, str(tmp_path / "ck"), str(tmp_path / "out"))
    got = parquet_rows(spark, str(tmp_path / "out"))
    assert got == read_from(bootstrap, topic, {0: 10, 1: 45, 2: 0, 3: 0})
    assert sum(1 for p, _, _ in got if p == 3) == 3


def test_data_loss_fails_the_batch_or_is_skipped(spark, bootstrap, unique, tmp_path):
    """Offsets removed by retention before the query read them fail the batch by default
    (failOnDataLoss=true, as Spark) and are skipped with failOnDataLoss=false."""
    from backup_support import delete_records

    register(spark)
    topic = unique("loss")
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, [(0, None, f"a{i}".encode()) for i in range(10)])
    ck, out = str(tmp_path / "ck"), str(tmp_path / "out")
    _available_now(spark, bootstrap, topic, ck, out, startingOffsets="earliest")
    produce(bootstrap, topic, [(0, None, f"b{i}".encode()) for i in range(10)])
    delete_records(bootstrap, topic, 0, 15)  # offsets 10..14 vanish before the next batch
    q = (spark.readStream.format(SOURCE_NAME).option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", topic).load().select("partition", "offset", "timestamp", "value")
         .writeStream.format("parquet").option("path", out).option("checkpointLocation", ck)
         .trigger(availableNow=True).start())
    with pytest.raises(Exception, match="were removed"):
        q.awaitTermination(300)
    _available_now(spark, bootstrap, topic, ck, out, failOnDataLoss="false")
    assert [o for _, o, _ in parquet_rows(spark, out)] == list(range(10)) + list(range(15, 20))


@pytest.mark.spark_oldest
def test_sink_batch_and_streaming_with_kafka_columns(spark, bootstrap, unique, tmp_path):
    """df.write and df.writeStream produce topic/key/value/headers/partition as given; a
    record that cannot be delivered fails the write instead of being dropped."""
    register(spark)
    src, dst = unique("sink-src"), unique("sink-dst")
    create_topic(bootstrap, src, 2)
    create_topic(bootstrap, dst, 2)
    rows = [(dst, f"k{i}", f"v{i}".encode(), [("h", f"{i}".encode())], i % 2) for i in range(20)]
    df = spark.createDataFrame(rows, "topic string, key string, value binary, "
                                     "headers array<struct<key:string,value:binary>>, partition int")
    df.write.format(SOURCE_NAME).option("kafka.bootstrap.servers", bootstrap).mode("append").save()
    got = read_from(bootstrap, dst, {0: 0, 1: 0})
    assert sorted((p, v) for p, _, v in got) == sorted((i % 2, f"v{i}".encode()) for i in range(20))

    bad = spark.createDataFrame([("x", 7)], "value string, partition int")
    with pytest.raises(Exception, match="(?i)partition"):
        bad.write.format(SOURCE_NAME).option("kafka.bootstrap.servers", bootstrap) \
            .option("topic", dst).mode("append").save()

    produce(bootstrap, src, [(i % 2, f"k{i}".encode(), f"s{i}".encode()) for i in range(30)])
    q = (spark.readStream.format(SOURCE_NAME).option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", src).option("startingOffsets", "earliest").load()
         .selectExpr("key", "value", "headers", "partition")
         .writeStream.format(SOURCE_NAME).option("kafka.bootstrap.servers", bootstrap)
         .option("topic", dst).option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert q.exception() is None
    got = read_from(bootstrap, dst, {0: 0, 1: 0})
    assert sorted(v for _, _, v in got if v.startswith(b"s")) == sorted(f"s{i}".encode() for i in range(30))
