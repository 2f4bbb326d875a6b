"""The derived offset mapping against a real broker: exact when the restore is the only writer,
and the read-back fallback when another producer writes to the target partition meanwhile."""

from __future__ import annotations

import json
import threading
import time

import pytest

from offsetkeeper.config import Connection
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.models import TopicPartition
from offsetkeeper.restore import produce
from offsetkeeper.restore.config import RestoreOptions
from offsetkeeper.restore.mapping import mapping_root_for, partition_mappings, read_mapping
from offsetkeeper.restore.produce import restore_task
from offsetkeeper.restore.resume import WriterConfig
from offsetkeeper.restore.run import run_restore
from tests.kafkatools import produce as produce_records
from tests.restore_support import consume_all, rec, write_backup

pytestmark = [pytest.mark.integration]


def records(n: int, p: int) -> list[dict]:
    return [rec(5 + 2 * i, 1_700_000_000_000 + i, f"k{p}-{i}".encode(), f"v{p}-{i}".encode() * 5,
                [("h", b"1")] if i % 4 == 0 else None) for i in range(n)]


def is_ours(m, headers: bool, foreign_marker: bytes = b"foreign") -> bool:
    return "x-kafka-backup-offset" in dict(m.headers() or {}) if headers else \
        not (m.value() or b"").startswith(foreign_marker)


def run_task(tmp_path, dr_bootstrap, unique, *, headers: bool, n: int = 60, chunk: int = 20,
             derive: bool = True):
    """Back up `n` records of one partition, restore them with `restore_task` in this process."""
    topic, target = unique("src"), unique("dst")
    write_backup(str(tmp_path), "b", {topic: {0: records(n, 0)}})
    conn = Connection(dr_bootstrap)
    with KafkaAdmin(conn) as admin:
        # the records carry 2023 timestamps: without retention.ms=-1 the development broker
        # deletes them within seconds, sometimes before they are read back
        admin.create_topic(target, 1, configs={"retention.ms": "-1"})
        start = admin.watermarks([TopicPartition(target, 0)])[TopicPartition(target, 0)].high
    root = str(tmp_path / "mapping")
    cfg = WriterConfig(restore_id="r", mapping_root=root, producer_conf=conn.client_config(),
                       consumer_conf=conn.client_config(), offset_headers=headers,
                       chunk_records=chunk, start_log_ends={f"{target}:0": start},
                       derive_mapping=derive)
    spec = [{"source_topic": topic, "source_partition": 0, "target_topic": target,
             "target_partition": 0, "resume_after": -1,
             "files": [str(tmp_path / "b" / f"data/run=1/topic={topic}/partition=0/part-00000.parquet")]}]
    [summary] = list(restore_task(cfg, iter([json.dumps(spec)])))
    mapping = partition_mappings(read_mapping(root))[TopicPartition(topic, 0)]
    got = consume_all(dr_bootstrap, target, [0])[0]
    return summary, mapping, got, target


@pytest.mark.parametrize("headers", [True, False])
def test_sole_writer_gets_the_derived_mapping_and_it_is_exact(tmp_path, dr_bootstrap, unique, headers):
    summary, mapping, got, _ = run_task(tmp_path, dr_bootstrap, unique, headers=headers)
    assert summary["mapping"] == "derived" and summary["foreign_records"] == 0
    assert list(mapping.source_offsets) == [r["offset"] for r in records(60, 0)]
    assert list(mapping.target_offsets) == [m.offset() for m in got]
    assert [m.value() for m in got] == [r["value"] for r in records(60, 0)]


@pytest.mark.parametrize("headers", [True, False])
def test_a_foreign_record_inside_a_chunk_makes_the_mapping_read_back(tmp_path, dr_bootstrap, unique,
                                                                    headers, monkeypatch):
    """Invariant: the derived mapping is used only when proved. A record another producer
    writes after a chunk's log end was taken and before the chunk's first record lands breaks
    the proof (the log grows by chunk + 1, the first record read back is not ours): that chunk
    is mapped by reading the target back, skipping the foreign record, and stays exact."""
    seen: list[int] = []

    def intrude(target: TopicPartition, start: int) -> None:
        seen.append(start)
        if len(seen) == 2:  # the second chunk
            produce_records(dr_bootstrap, target.topic, [(target.partition, b"x", b"foreign record")])

    monkeypatch.setattr(produce, "on_chunk_start", intrude)
    summary, mapping, got, _ = run_task(tmp_path, dr_bootstrap, unique, headers=headers)
    assert len(seen) == 3
    assert summary["mapping"] == "read-back" and summary["foreign_records"] == 1
    mine = [m for m in got if is_ours(m, headers)]
    assert len(got) == 61 and len(mine) == 60
    assert [m.value() for m in mine] == [r["value"] for r in records(60, 0)]
    assert list(mapping.target_offsets) == [m.offset() for m in mine]
    assert got[20].value() == b"foreign record" and 20 not in mapping.target_offsets


def test_read_back_mode_maps_every_chunk_from_the_target(tmp_path, dr_bootstrap, unique):
    summary, mapping, got, _ = run_task(tmp_path, dr_bootstrap, unique, headers=True, derive=False)
    assert summary["mapping"] == "read-back"
    assert list(mapping.target_offsets) == [m.offset() for m in got]


@pytest.mark.spark
def test_concurrent_producer_during_a_spark_restore_keeps_the_mapping_exact(tmp_path, dr_bootstrap,
                                                                           spark, unique):
    """End to end on Spark: a producer thread keeps writing to the target partition while the
    restore runs (rate-limited to 40 records/s, 7.5 s, so the two overlap). Every chunk with a foreign record among its
    own records must have been read back: the mapping points at exactly the restored records,
    and the foreign ones are counted and left out."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka import TopicPartition as CkTP

    topic, target = unique("src"), unique("dst")
    data = {topic: {0: records(300, 0)}}
    write_backup(str(tmp_path), "b", data, configs={topic: {"retention.ms": "-1"}})
    stop = threading.Event()
    written: list[float] = []  # when each foreign record was acknowledged

    def intruder() -> None:
        c = Consumer({"bootstrap.servers": dr_bootstrap, "group.id": "intruder"})
        p = Producer({"bootstrap.servers": dr_bootstrap, "linger.ms": 0})
        try:
            # wait for the restore's first records; a short timeout, because on a topic that does
            # not exist yet the call can wait all of it, and 5 s could span the whole restore
            while not stop.is_set():
                try:
                    if c.get_watermark_offsets(CkTP(target, 0), timeout=0.5, cached=False)[1] > 0:
                        break
                except Exception:  # the topic does not exist yet
                    pass
                time.sleep(0.02)
            i = 0
            while not stop.is_set():
                p.produce(target, b"foreign %d" % i, b"x", 0)
                p.flush(10)
                i += 1
                written.append(time.monotonic())
                time.sleep(0.03)
        finally:
            p.flush(10)
            c.close()

    t = threading.Thread(target=intruder, daemon=True)
    t.start()
    started = time.monotonic()
    try:
        res = run_restore(RestoreOptions(str(tmp_path), "b", Connection(dr_bootstrap), restore_id="busy",
                                         rename={topic: target}, chunk_records=100,
                                         records_per_second=40), spark=spark)
    finally:
        stop.set()
        t.join(10)
    [summary] = res.partitions
    got = consume_all(dr_bootstrap, target, [0])[0]
    mine = [m for m in got if is_ours(m, True)]
    assert [m.value() for m in mine] == [r["value"] for r in data[topic][0]]
    m = partition_mappings(read_mapping(mapping_root_for(str(tmp_path), "b", "busy")))[TopicPartition(topic, 0)]
    assert list(m.target_offsets) == [x.offset() for x in mine]
    # foreign records that landed between two records of the same chunk (chunks of 100; the
    # rate limit sends at most 64 records at a time, so a chunk spans several producer batches)
    targets = list(m.target_offsets)
    inside = [x.offset() for x in got if not is_ours(x, True)
              and any(targets[i] < x.offset() < targets[i + 1]
                      for i in range(len(targets) - 1) if i // 100 == (i + 1) // 100)]
    assert inside, ("no foreign record landed inside a chunk: the restore and the writer did not "
                    f"overlap (restore {time.monotonic() - started:.1f} s, {len(written)} foreign records "
                    f"written from {written[0] - started if written else -1:.1f} s)")
    assert summary["mapping"] == "read-back" and summary["foreign_records"] >= len(inside)
