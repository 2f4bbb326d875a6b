"""The executor side of a backup run: read offset ranges from Kafka and write them as Parquet.

Runs inside Spark as plain RDD tasks (``sc.parallelize(ranges, n).mapPartitions(...)``): each
task reads its ranges with confluent-kafka (the range reader `records.read.read_batches`, which
the ``offsetkeeper-kafka`` data source reads with too) and writes each range's records, in offset order, to one zstd Parquet
file ``RUN_DIR/topic=T/partition=P/part-START-END.zstd.parquet`` with pyarrow. The file holds
the record schema without the directory columns ``topic`` and ``partition`` (what Spark's
``partitionBy`` writer produced). While writing, the task computes the range's record checksum
(`checksum.batch_checksum`, equal to Spark's xxhash64 definition). A file is written under a hidden temporary name and renamed
when complete, so an interrupted task leaves nothing that looks like data; a retried task
replaces its own file (the name depends only on the range).

The plain RDD API is used on purpose: its Python workers start much faster than a Python data
source or Arrow UDF job on a fresh session, and no row conversion in the JVM is needed.
Kafka clients are created here, inside the task; nothing unpicklable is captured.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from offsetkeeper.backup import checksum as ck
from offsetkeeper.records.ranges import OffsetRange
from offsetkeeper.records.read import RangeStats, ReadOptions, arrow_schema, read_batches
from offsetkeeper.records.reports import write_report
from offsetkeeper.storage import replace, temp_name

# Bytes (uncompressed) per Parquet row group: several Arrow batches are gathered into one.
# It bounds a range's memory (bench/backup_parts.py: 16 MB groups write as fast as 64 MB ones).
ROW_GROUP_BYTES = 16 * 1024 * 1024
# Ranges of one task read and written at the same time (one consumer and thread each): one
# range's wait for the broker overlaps another's conversion and writing. 4 (was 3): 8 ranges on
# 2 slots then run in one wave, not a wave of 3 and a tail of 1 (bench/README.md, issue 14).
RANGES_IN_PARALLEL = 4


@dataclass(frozen=True)
class BackupTaskConfig:
    read: ReadOptions  # kafka client properties, batch size, poll timeout
    run_dir: str  # DEST/ID/data/run=N (path or URL)
    report_path: str | None = None  # task reports for the progress display
    ranges_in_parallel: int | None = None  # None: RANGES_IN_PARALLEL


def file_schema():
    """The Arrow schema of a backup data file: the record schema less topic and partition."""
    import pyarrow as pa

    full = arrow_schema()
    return pa.schema([f for f in full if f.name not in ("topic", "partition")])


def partition_dir(run_dir: str, topic: str, partition: int) -> str:
    # Hive-style directory names; Kafka topic names ([a-zA-Z0-9._-]) need no escaping
    return f"{run_dir.rstrip('/')}/topic={quote(topic, safe='')}/partition={partition}"


def file_name(r: OffsetRange) -> str:
    return f"part-{r.start:020d}-{r.end:020d}.zstd.parquet"


def _write_range(cfg: BackupTaskConfig, r: OffsetRange, schema, fs) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    stats = RangeStats()
    d = partition_dir(cfg.run_dir, r.topic, r.partition)
    _, root = _url_root(d)
    final = f"{root}/{file_name(r)}"
    tmp = temp_name(final)
    writer = None
    f = None
    pending: list = []
    pending_bytes = 0
    checksum = 0
    def flush() -> None:
        # The file is opened on the first flush only: an empty range writes no file.
        nonlocal writer, f, pending, pending_bytes
        if writer is None:
            fs.makedirs(root, exist_ok=True)
            f = fs.open(tmp, "wb")
            writer = pq.ParquetWriter(f, schema, compression="zstd")
        writer.write_table(pa.Table.from_batches(pending, schema=schema), row_group_size=1 << 30)
        pending, pending_bytes = [], 0

    try:
        for b in read_batches(cfg.read, r, stats):
            fb = pa.RecordBatch.from_arrays(b.columns[2:], schema=schema)
            checksum += ck.batch_checksum(fb)
            pending.append(fb)
            pending_bytes += fb.nbytes
            if pending_bytes >= ROW_GROUP_BYTES:
                flush()
        if pending:
            flush()
        nbytes = 0
        files: list[str] = []
        if writer is not None:
            writer.close()
            writer = None
            f.close()
            f = None
            with fs.open(tmp, "rb") as fh:  # the footer must say what was written
                written = pq.ParquetFile(fh).metadata.num_rows
            if written != stats.records:
                raise OSError(f"{r.topic}:{r.partition}: {stats.records} records were read but "
                              f"the file {tmp} holds {written}")
            replace(fs, tmp, final)
            nbytes = int(fs.size(final) or 0)
            files.append(final)
    except BaseException:
        if writer is not None:
            writer.close()
        if f is not None:
            f.close()
        if fs.exists(tmp):
            fs.rm(tmp)
        raise
    if cfg.report_path:
        write_report(cfg.report_path, r, count=stats.records, first=stats.first_offset,
                     last=stats.last_offset, gaps=stats.gaps, first_ts=stats.first_timestamp,
                     last_ts=stats.last_timestamp)
    return {"topic": r.topic, "partition": r.partition, "start": r.start, "end": r.end,
            "records": stats.records, "first_offset": stats.first_offset,
            "last_offset": stats.last_offset, "first_timestamp": stats.first_timestamp,
            "last_timestamp": stats.last_timestamp, "gaps": [list(g) for g in stats.gaps],
            "checksum": ck.to_hex(checksum), "files": [file_name(r)] if files else [],
            "bytes": nbytes}


def _url_root(url: str):
    import fsspec

    return fsspec.core.url_to_fs(url)


def warm_up() -> int:
    """Run a task's conversion, checksum and zstd Parquet write once on a one-record batch in
    memory (called by `spark.session.start_python_workers` in every new Python worker), so the
    first real task does not pay for pyarrow's and the codec's set-up. Returns the checksum."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    from offsetkeeper.arrowbuf import binaries, ints
    from offsetkeeper.records.read import headers_column

    schema = file_schema()
    batch = pa.RecordBatch.from_arrays(
        [ints([0], pa.int64()), ints([0], pa.int64()), ints([0], pa.int32()),
         binaries([b"k"], pa.binary()), binaries([b"v"], pa.binary()),
         headers_column(schema, [[("h", b"v")]]), ints([0], pa.int32())], schema=schema)
    checksum = ck.batch_checksum(batch)
    pq.write_table(pa.Table.from_batches([batch], schema=schema), io.BytesIO(), compression="zstd")
    return checksum


def spec_context(spec: str) -> str:
    """'backing up orders:0 [10, 70)' for a task spec — one range or a list of them (see
    `backup.run._balanced_specs`) — so a failure names the partitions. Here, not in
    backup.run: a task's pickled context must not make every Python worker import the
    driver's modules (config, admin client: 0.5 s per worker)."""
    ranges = json.loads(spec)
    if not (ranges and isinstance(ranges[0], list)):
        ranges = [ranges]
    return "backing up " + ", ".join(f"{t}:{p} [{s}, {e})" for t, p, s, e in ranges)


def backup_task(cfg: BackupTaskConfig, specs: Iterator[str]) -> Iterator[dict[str, Any]]:
    """Spark task (`RDD.mapPartitions` over JSON range specs ``[topic, partition, start, end]``
    or lists of them):
    back up each range to one Parquet file (up to `RANGES_IN_PARALLEL` at a time) and yield
    one summary per range."""
    schema = file_schema()
    fs, _ = _url_root(cfg.run_dir)
    ranges = []
    for raw in specs:  # one spec, or a list of them (`run._balanced_specs`)
        spec = json.loads(raw)
        for t, p, s, e in (spec if spec and isinstance(spec[0], list) else [spec]):
            ranges.append(OffsetRange(t, int(p), int(s), int(e)))
    threads = cfg.ranges_in_parallel or RANGES_IN_PARALLEL
    if len(ranges) <= 1 or threads <= 1:
        out = [_write_range(cfg, r, schema, fs) for r in ranges]
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(len(ranges), threads),
                                thread_name_prefix="backup-range") as pool:
            out = list(pool.map(lambda r: _write_range(cfg, r, schema, fs), ranges))
    yield from out
