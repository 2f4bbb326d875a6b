"""Where a restore route continues, and what a restore task reads (producing is produce.py).

A restore task (Spark, `RDD.mapPartitions`) holds a set of routes (source partition -> target
partition) and reads each route's Parquet files of the backup itself (`spec_records`,
`route_records`: offset order, the time window and the resume point applied), so no shuffle is
needed. Before producing, `RouteResume` finds where an earlier attempt stopped — the last mapped
source offset, then the records on the target after the last mapped target offset
(`read_target_tail`), matched one by one with the next backup records (by the
x-kafka-backup-offset header, or by key and value when headers are off) — so a rerun or a
Spark task retry never writes a record twice or skips one. Also here: the task's
`WriterConfig`, the origin headers restore adds, the producer and read-back consumer
configurations, and the per-route progress reports.

Kafka clients are created here, inside the task; nothing unpicklable is captured.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from offsetkeeper.backup.read import SegmentFiles, Selection, read_files, read_records
from offsetkeeper.errors import RestoreWriteError, StoreError
from offsetkeeper.models import TopicPartition
from offsetkeeper.restore.mapping import check_route_rows, read_mapping, write_chunk

__all__ = ["OFFSET_HEADER", "PARTITION_HEADER", "RESTORE_HEADERS", "TIMESTAMP_HEADER", "TOPIC_HEADER",
           "RestoreWriteError", "WriterConfig", "origin_headers", "read_target_tail",
           "route_records", "spec_records"]

OFFSET_HEADER = "x-kafka-backup-offset"
TIMESTAMP_HEADER = "x-kafka-backup-timestamp"
PARTITION_HEADER = "x-kafka-backup-partition"
TOPIC_HEADER = "x-kafka-backup-topic"
RESTORE_HEADERS = (OFFSET_HEADER, TIMESTAMP_HEADER, PARTITION_HEADER, TOPIC_HEADER)



@dataclass(frozen=True)
class WriterConfig:
    restore_id: str
    mapping_root: str
    producer_conf: Mapping[str, str]
    consumer_conf: Mapping[str, str]
    offset_headers: bool
    chunk_records: int
    # target "topic:partition" -> log end before the restore began
    start_log_ends: Mapping[str, int] = field(default_factory=dict)
    records_per_second: float | None = None   # per task
    bytes_per_second: float | None = None     # per task
    from_time_ms: int | None = None           # inclusive
    to_time_ms: int | None = None             # exclusive
    report_path: str | None = None            # progress reports (one small JSON per route)
    # derive each chunk's target offsets from the log end and prove them (restore/derive.py);
    # False: map every chunk by reading the target back
    derive_mapping: bool = True


def origin_headers(topic: str, partition: int, offset: int, timestamp: int) -> list[tuple[str, bytes]]:
    return [(OFFSET_HEADER, str(offset).encode()), (TIMESTAMP_HEADER, str(timestamp).encode()),
            (PARTITION_HEADER, str(partition).encode()), (TOPIC_HEADER, topic.encode())]


def _header(headers: list | None, name: str) -> bytes | None:
    for k, v in headers or ():
        if k == name:
            return v
    return None


def read_target_tail(consumer_conf: Mapping[str, str], tp: TopicPartition, start: int,
                     timeout: float = 60.0) -> list[Any]:
    """Every record of `tp` from offset `start` to the current log end (confluent Messages)."""
    from confluent_kafka import TopicPartition as CkTP

    from offsetkeeper.kafka import clients
    from offsetkeeper.kafka.errors import denied, is_partition_eof, translate

    c = clients.consumer(consumer_config(consumer_conf))
    try:
        low, high = c.get_watermark_offsets(CkTP(tp.topic, tp.partition), timeout=15)
        if high <= start:
            return []
        c.assign([CkTP(tp.topic, tp.partition, max(start, low))])
        out = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = c.poll(1.0)
            if msg is None:
                continue
            if msg.error():
                if is_partition_eof(msg.error()):
                    # the end of what there is to read: the last record (or, when the tail
                    # holds only control records, the read position) reached the log end
                    pos = c.position([CkTP(tp.topic, tp.partition)])[0].offset
                    if (out and out[-1].offset() >= high - 1) or pos >= high:
                        return out
                    continue
                if msg.error().name() == "GROUP_AUTHORIZATION_FAILED":
                    continue  # the coordinator lookup of a group this reader never uses
                if msg.error().name() == "TOPIC_AUTHORIZATION_FAILED":
                    raise RestoreWriteError(f"reading {tp} to resume failed: " + denied(
                        "TOPIC_AUTHORIZATION_FAILED", action="read records", topic=tp.topic))
                raise RestoreWriteError(translate(
                    msg.error(), action=f"reading {tp} to resume failed", topic=tp.topic,
                    partition=tp.partition).message)
            out.append(msg)
            if msg.offset() >= high - 1:
                return out
        raise RestoreWriteError(f"reading {tp} from offset {start} to resume timed out")
    finally:
        c.close()


class RouteResume:
    """Where a route continues after an interruption: its mapping so far, and the records already
    on the target that the mapping does not know yet (written before a crash), which are
    recovered — mapped, not produced again."""

    def __init__(self, cfg: WriterConfig, source: TopicPartition, target: TopicPartition) -> None:
        self.cfg, self.source, self.target = cfg, source, target
        self.t0 = time.monotonic()
        mapped = read_mapping(cfg.mapping_root, source)
        check_route_rows(mapped, cfg.restore_id, source, target,
                         cfg.start_log_ends.get(f"{target.topic}:{target.partition}", 0))
        so = mapped.column("source_offset").to_pylist()
        to = mapped.column("target_offset").to_pylist()
        self.last_source = so[-1] if so else None
        scan_from = (to[-1] + 1) if to else cfg.start_log_ends.get(f"{target.topic}:{target.partition}", 0)
        # Records already on the target that the mapping does not know (written before a crash).
        self.tail = read_target_tail(cfg.consumer_conf, target, scan_from) if (so or scan_from >= 0) else []
        self.tail_i = 0
        self.recovered_src: list[int] = []
        self.recovered_tgt: list[int] = []
        self.recovered_ts: list[int] = []
        self.summary = {"source_topic": source.topic, "source_partition": source.partition,
                        "target_topic": target.topic, "target_partition": target.partition,
                        "records": 0, "recovered": 0, "skipped": 0, "bytes": 0,
                        "first_source": None, "last_source": None,
                        "first_target": None, "last_target": None}

    def _note(self, src_first: int, src_last: int, tgt_first: int, tgt_last: int) -> None:
        s = self.summary
        if s["first_source"] is None:
            s["first_source"], s["first_target"] = src_first, tgt_first
        s["last_source"], s["last_target"] = src_last, tgt_last

    def recover(self, offset: int, ts: int, key: bytes | None, value: bytes | None) -> bool:
        """True when this row is already on the target (then it is mapped, not produced)."""
        if self.tail_i >= len(self.tail):
            return False
        msg = self.tail[self.tail_i]
        hdr = _header(msg.headers(), OFFSET_HEADER)
        if hdr is not None:
            ok = (int(hdr) == offset and _header(msg.headers(), PARTITION_HEADER) == str(self.source.partition).encode()
                  and _header(msg.headers(), TOPIC_HEADER) == self.source.topic.encode())
        else:
            ok = not self.cfg.offset_headers and msg.key() == key and msg.value() == value
        if not ok:
            raise RestoreWriteError(
                f"target {self.target} offset {msg.offset()} holds a record this restore did not "
                f"write (expected source offset {offset} of {self.source}); cannot resume safely")
        self.tail_i += 1
        self.recovered_src.append(offset)
        self.recovered_tgt.append(msg.offset())
        self.recovered_ts.append(ts)
        return True

    def flush_recovered(self) -> None:
        if self.recovered_src:
            write_chunk(self.cfg.mapping_root, self.cfg.restore_id, self.source, self.target,
                        self.recovered_src, self.recovered_tgt, self.recovered_ts)
            self._note(self.recovered_src[0], self.recovered_src[-1], self.recovered_tgt[0], self.recovered_tgt[-1])
            self.summary["recovered"] += len(self.recovered_src)
            self.recovered_src, self.recovered_tgt, self.recovered_ts = [], [], []


def producer_config(props: Mapping[str, str]) -> dict[str, str]:
    """The producer configuration of a restore task: throughput defaults, the user's
    properties, and idempotence (which keeps source order and the delivery-report offsets exact)."""
    conf = {"linger.ms": "20", "batch.size": "1000000", "queue.buffering.max.messages": "500000",
            "queue.buffering.max.kbytes": "1048576", **props, "enable.idempotence": "true"}
    conf.setdefault("acks", "all")
    return conf


def consumer_config(props: Mapping[str, str]) -> dict[str, str]:
    """The consumer configuration used to read a target partition back (resume, validate)."""
    return {**props, "group.id": "offsetkeeper-restore-check", "enable.auto.commit": "false",
            "enable.partition.eof": "true", "isolation.level": "read_uncommitted",
            "auto.offset.reset": "earliest"}


def route_records(files: list[str], resume_after: int, cfg: WriterConfig,
                  batch_rows: int = 20_000) -> Iterator[pa.RecordBatch]:
    """The records of loose backup files after `resume_after`, in offset order, filtered by
    the time window of `cfg` (see backup.read.read_files)."""
    try:
        yield from read_files(files, Selection(resume_after, cfg.from_time_ms, cfg.to_time_ms),
                              batch_rows=batch_rows)
    except StoreError as exc:
        raise RestoreWriteError(exc.message) from None


def spec_records(spec: dict[str, Any], cfg: WriterConfig,
                 batch_rows: int = 20_000) -> Iterator[pa.RecordBatch]:
    """The records of one task spec's route: checked against the manifest when the spec
    carries its segments (what run_restore sends), else read from its files."""
    sel = Selection(spec["resume_after"], cfg.from_time_ms, cfg.to_time_ms)
    if "segments" in spec:
        return read_records([SegmentFiles.from_dict(d) for d in spec["segments"]], sel,
                            batch_rows=batch_rows)
    return read_files(spec["files"], sel, batch_rows=batch_rows)


def write_progress(path: str, summary: dict[str, Any]) -> None:
    """One route's progress so far (records produced, recovered and skipped), atomically."""
    import json

    from offsetkeeper.storage import join, write_bytes_atomic

    name = f"{summary['source_topic']}-{summary['source_partition']}.json"
    write_bytes_atomic(join(path, name), json.dumps(summary).encode(), what="progress report")


def read_progress(path: str) -> int:
    """Records handled so far over every route's progress report (0 when there are none)."""
    import json

    from offsetkeeper.storage import open_fs

    fs, root = open_fs(path)
    total = 0
    try:
        for f in fs.ls(root, detail=False):
            if f.endswith(".json") and not f.rsplit("/", 1)[-1].startswith("."):
                with fs.open(f, "rb") as fh:
                    s = json.loads(fh.read())
                total += int(s.get("records", 0)) + int(s.get("recovered", 0)) + int(s.get("skipped", 0))
    except (OSError, ValueError):
        return total
    return total
