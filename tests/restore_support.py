"""Helpers for restore tests: write a backup in the documented format (docs/design.md) from
plain records, or from a live topic with a plain consumer, without depending on the backup run."""

from __future__ import annotations

import os
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.parquet as pq
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CkTP

from backup_support import watermarks
from offsetkeeper.backup import checksum as ck
from offsetkeeper.backup.manifest import (
    GroupOffset,
    GroupOffsets,
    Manifest,
    PartitionEntry,
    RunInfo,
    Segment,
    SourceInfo,
    TopicEntry,
    now_iso,
    save_manifest,
)
from offsetkeeper.kafka.errors import PARTITION_EOF

FILE_SCHEMA = pa.schema([
    ("offset", pa.int64()), ("timestamp", pa.int64()), ("timestamp_type", pa.int32()),
    ("key", pa.binary()), ("value", pa.binary()),
    ("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
    ("leader_epoch", pa.int32()),
])


def rec(offset: int, ts: int, key: bytes | None, value: bytes | None, headers=None) -> dict:
    return {"offset": offset, "timestamp": ts, "timestamp_type": 0, "key": key, "value": value,
            "headers": [{"key": k, "value": v} for k, v in (headers or [])], "leader_epoch": 0}


def write_backup(dest: str, backup_id: str, topics: dict[str, dict[int, list[dict]]], *,
                 partition_counts: dict[str, int] | None = None, configs: dict[str, dict] | None = None,
                 groups: dict[str, dict[tuple[str, int], int]] | None = None,
                 end_offsets: dict[tuple[str, int], int] | None = None) -> Manifest:
    """topics: {topic: {partition: [rec(...), ...]}} (records in offset order)."""
    entries = []
    total = 0
    for t, parts in sorted(topics.items()):
        pentries = []
        for p, records in sorted(parts.items()):
            rel = f"data/run=1/topic={t}/partition={p}/part-00000.parquet"
            path = os.path.join(dest, backup_id, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            table = pa.Table.from_pylist(records, schema=FILE_SCHEMA)
            pq.write_table(table, path, compression="zstd")
            # the manifest's checksum is the real one: restores check the files against it
            checksum = ck.to_hex(sum(ck.batch_checksum(b) for b in table.to_batches()))
            start = records[0]["offset"] if records else 0
            end = (end_offsets or {}).get((t, p), records[-1]["offset"] + 1 if records else 0)
            seg = Segment(run=1, start_offset=start, end_offset=end, record_count=len(records),
                          checksum=checksum, files=[rel],
                          first_offset=records[0]["offset"] if records else None,
                          last_offset=records[-1]["offset"] if records else None,
                          first_timestamp=records[0]["timestamp"] if records else None,
                          last_timestamp=records[-1]["timestamp"] if records else None)
            pe = PartitionEntry(partition=p, start_offset=start, end_offset=end, segments=[seg])
            pe.recompute_totals()
            pentries.append(pe)
            total += len(records)
        entries.append(TopicEntry(name=t, partition_count=(partition_counts or {}).get(t, len(parts)),
                                  configs=(configs or {}).get(t, {}), partitions=pentries))
    gl = [GroupOffsets(group=g, captured_at=now_iso(), run=1,
                       offsets=[GroupOffset(topic=t, partition=p, offset=o) for (t, p), o in sorted(offs.items())])
          for g, offs in sorted((groups or {}).items())]
    m = Manifest(backup_id=backup_id, created_at=now_iso(), updated_at=now_iso(),
                 source=SourceInfo(bootstrap_servers="test"),
                 runs=[RunInfo(run=1, started_at=now_iso(), finished_at=now_iso(), record_count=total,
                               partitions=sum(len(e.partitions) for e in entries))],
                 topics=entries, groups=gl)
    save_manifest(dest, m)
    return m


def consume_all(bootstrap: str, topic: str, partitions: Iterable[int], *,
                isolation: str = "read_committed") -> dict[int, list]:
    """Every record of the partitions, from the log start to the log end (confluent Messages)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "restore-test-reader",
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "enable.partition.eof": True})
    out: dict[int, list] = {}
    try:
        for p in partitions:
            low, high = watermarks(bootstrap, c, topic, p)
            out[p] = []
            if high <= low:
                continue
            c.assign([CkTP(topic, p, low)])
            while True:
                m = c.poll(10)
                assert m is not None, f"timed out reading {topic}:{p}"
                if m.error():
                    if m.error().code() == PARTITION_EOF:
                        break
                    raise AssertionError(m.error().str())
                out[p].append(m)
                if m.offset() >= high - 1:
                    break
    finally:
        c.close()
    return out


def backup_from_cluster(bootstrap: str, dest: str, backup_id: str, topics: dict[str, int],
                        groups: list[str], configs: dict[str, dict] | None = None) -> Manifest:
    """A small backup of live topics (read_committed) plus the groups' committed offsets."""
    data: dict[str, dict[int, list[dict]]] = {}
    ends: dict[tuple[str, int], int] = {}
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "restore-test-reader"})
    for t, n in topics.items():
        for p in range(n):
            ends[(t, p)] = c.get_watermark_offsets(CkTP(t, p), timeout=10)[1]
    c.close()
    for t, n in topics.items():
        msgs = consume_all(bootstrap, t, range(n))
        data[t] = {p: [rec(m.offset(), m.timestamp()[1], m.key(), m.value(), m.headers())
                       for m in ms] for p, ms in msgs.items()}
    gofs: dict[str, dict[tuple[str, int], int]] = {}
    for g in groups:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": g, "enable.auto.commit": False})
        res = c.committed([CkTP(t, p) for t, n in topics.items() for p in range(n)], timeout=10)
        c.close()
        gofs[g] = {(tp.topic, tp.partition): tp.offset for tp in res if tp.offset >= 0}
    return write_backup(dest, backup_id, data, partition_counts=topics, configs=configs,
                        groups=gofs, end_offsets=ends)
