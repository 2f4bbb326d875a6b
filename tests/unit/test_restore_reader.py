"""Reading one route's backup records in offset order (no Spark, no broker)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from offsetkeeper.restore.resume import (
    RESTORE_HEADERS,
    RestoreWriteError,
    WriterConfig,
    origin_headers,
    route_records,
)
from tests.restore_support import FILE_SCHEMA, rec


def cfg(**kw) -> WriterConfig:
    return WriterConfig("r", "/tmp/unused", {}, {}, True, 100, **kw)


def write(path, offsets, ts=lambda o: 1000 + o):
    pq.write_table(pa.Table.from_pylist([rec(o, ts(o), b"k", b"v") for o in offsets], schema=FILE_SCHEMA),
                   path, row_group_size=3)
    return str(path)


def offsets_of(batches) -> list[int]:
    return [o for b in batches for o in b.column("offset").to_pylist()]


def test_disjoint_files_are_streamed_in_offset_order(tmp_path):
    late = write(tmp_path / "b.parquet", [10, 12, 13, 20])
    early = write(tmp_path / "a.parquet", [0, 1, 5, 9])
    empty = write(tmp_path / "c.parquet", [])
    assert offsets_of(route_records([late, empty, early], -1, cfg(), batch_rows=2)) == [0, 1, 5, 9, 10, 12, 13, 20]


def test_overlapping_files_are_merged_and_sorted(tmp_path):
    a = write(tmp_path / "a.parquet", [0, 4, 8])
    b = write(tmp_path / "b.parquet", [2, 6, 10])
    assert offsets_of(route_records([a, b], -1, cfg())) == [0, 2, 4, 6, 8, 10]


def test_resume_point_and_time_window(tmp_path):
    a = write(tmp_path / "a.parquet", range(0, 20, 2))          # timestamps 1000 + offset
    assert offsets_of(route_records([a], 9, cfg())) == [10, 12, 14, 16, 18]
    assert offsets_of(route_records([a], -1, cfg(from_time_ms=1004, to_time_ms=1012))) == [4, 6, 8, 10]
    assert offsets_of(route_records([a], 6, cfg(from_time_ms=1004, to_time_ms=1012))) == [8, 10]


def test_unsorted_file_is_detected(tmp_path):
    a = write(tmp_path / "a.parquet", [5, 3, 9])
    with pytest.raises(RestoreWriteError, match="not in offset order"):
        offsets_of(route_records([a], -1, cfg(), batch_rows=1))


def test_origin_headers_are_decimal_ascii():
    assert origin_headers("orders", 3, 12345, 1701234567890) == [
        ("x-kafka-backup-offset", b"12345"), ("x-kafka-backup-timestamp", b"1701234567890"),
        ("x-kafka-backup-partition", b"3"), ("x-kafka-backup-topic", b"orders")]
    assert set(RESTORE_HEADERS) == {h for h, _ in origin_headers("t", 0, 0, 0)}


def test_task_specs_balance_routes_by_size():
    import json
    from types import SimpleNamespace

    from offsetkeeper.models import TopicPartition as TP
    from offsetkeeper.restore.backup_view import BackupView
    from offsetkeeper.restore.plan import Route
    from offsetkeeper.restore.run import _task_specs

    sizes = {0: 100, 1: 60, 2: 50, 3: 10}
    parts = {p: SimpleNamespace(record_count=n, segments=[SimpleNamespace(files=[f"data/p{p}.parquet"])])
             for p, n in sizes.items()}
    manifest = SimpleNamespace(topic=lambda t: SimpleNamespace(partition=lambda p: parts[p]))
    view = BackupView("/b", "id", {}, {}, {}, manifest)
    routes = [Route(TP("t", p), TP("t", p)) for p in sizes]
    specs = [json.loads(s) for (s,) in _task_specs(view, routes, {TP("t", 1): 41}, 2)]
    assert sorted(sum(sizes[r["source_partition"]] for r in spec) for spec in specs) == [110, 110]
    r1 = next(r for spec in specs for r in spec if r["source_partition"] == 1)
    assert r1["resume_after"] == 41 and r1["files"] == ["/b/id/data/p1.parquet"]
