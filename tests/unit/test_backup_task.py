"""The backup task's file writing (no broker, no Spark): one complete file per range, written
under a temporary name and renamed; nothing is left behind when reading fails."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from offsetkeeper.backup import checksum as ck
from offsetkeeper.backup import task as task_mod
from offsetkeeper.backup.task import BackupTaskConfig, backup_task, file_schema
from offsetkeeper.records.read import ReadOptions
from offsetkeeper.records.read import arrow_schema as _arrow_schema


def _batch(offsets):
    rows = [{"topic": "t", "partition": 3, "offset": o, "timestamp": 1000 + o, "timestamp_type": 0,
             "key": None if o % 3 == 0 else f"k{o}".encode(), "value": os.urandom(o % 50),
             "headers": [{"key": "h", "value": b"v"}] if o % 2 else [], "leader_epoch": 0}
            for o in offsets]
    return pa.RecordBatch.from_pylist(rows, schema=_arrow_schema())


def _cfg(tmp_path):
    return BackupTaskConfig(read=ReadOptions(kafka={"bootstrap.servers": "unused:9092"}),
                            run_dir=str(tmp_path / "run=1"))


def _fake_reader(batches, fail=False):
    def read_batches(opts, r, stats):
        for b in batches:
            offs = b.column("offset").to_pylist()
            stats.first_offset = offs[0] if stats.first_offset is None else stats.first_offset
            stats.first_timestamp = stats.first_timestamp or 1000 + offs[0]
            stats.last_offset, stats.last_timestamp = offs[-1], 1000 + offs[-1]
            stats.records += len(offs)
            yield b
        if fail:
            raise RuntimeError("broker went away")
    return read_batches


def _all_files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, fs in os.walk(root) for f in fs)


def test_task_writes_one_complete_file_per_range(tmp_path, monkeypatch):
    batches = [_batch(range(10, 40)), _batch(range(41, 60, 2))]
    monkeypatch.setattr(task_mod, "read_batches", _fake_reader(batches))
    out = list(backup_task(_cfg(tmp_path), iter(['["t", 3, 10, 70]'])))
    name = "part-00000000000000000010-00000000000000000070.zstd.parquet"
    assert _all_files(tmp_path) == [f"run=1/topic=t/partition=3/{name}"]
    [s] = out
    assert (s["records"], s["first_offset"], s["last_offset"], s["files"]) == (40, 10, 59, [name])
    f = tmp_path / "run=1" / "topic=t" / "partition=3" / name
    table = pq.read_table(f)
    assert table.schema == file_schema()  # no topic/partition columns in the file
    assert table.column("offset").to_pylist() == list(range(10, 40)) + list(range(41, 60, 2))
    assert s["checksum"] == ck.to_hex(sum(ck.batch_checksum(b) for b in table.to_batches()))
    assert s["bytes"] == f.stat().st_size


def test_failed_read_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.setattr(task_mod, "ROW_GROUP_BYTES", 1)  # the temp file is opened early
    monkeypatch.setattr(task_mod, "read_batches", _fake_reader([_batch(range(5))], fail=True))
    with pytest.raises(RuntimeError, match="broker went away"):
        list(backup_task(_cfg(tmp_path), iter(['["t", 3, 0, 9]'])))
    assert _all_files(tmp_path) == []


def test_empty_range_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(task_mod, "read_batches", _fake_reader([]))
    [s] = list(backup_task(_cfg(tmp_path), iter(['["t", 3, 0, 9]'])))
    assert (s["records"], s["files"], s["checksum"]) == (0, [], ck.ZERO)
    assert _all_files(tmp_path) == []


def test_a_task_with_several_ranges_writes_each_one_and_reports_in_order(tmp_path, monkeypatch):
    """Ranges of one task run in parallel threads: every range gets its own complete file and
    the summaries come back in the order of the specs."""
    def read_batches(opts, r, stats):
        offs = list(range(r.start, r.end))
        stats.first_offset, stats.last_offset = offs[0], offs[-1]
        stats.first_timestamp, stats.last_timestamp = 1000 + offs[0], 1000 + offs[-1]
        stats.records = len(offs)
        yield _batch(offs)

    monkeypatch.setattr(task_mod, "read_batches", read_batches)
    specs = [["t", 3, 0, 7], ["t", 4, 5, 9], ["t", 3, 7, 20], ["u", 0, 1, 2]]
    out = list(backup_task(_cfg(tmp_path), iter([json.dumps(specs)])))
    assert [(s["topic"], s["partition"], s["start"], s["records"]) for s in out] == \
        [("t", 3, 0, 7), ("t", 4, 5, 4), ("t", 3, 7, 13), ("u", 0, 1, 1)]
    assert len(_all_files(tmp_path)) == 4


def test_balanced_specs_give_each_slot_a_similar_share():
    from offsetkeeper.backup.run import _balanced_specs
    from offsetkeeper.records.ranges import OffsetRange

    ranges = [OffsetRange("t", p, 0, n) for p, n in enumerate([100, 90, 10, 10, 5, 80])]
    tasks = [json.loads(s) for s in _balanced_specs(ranges, 2)]
    sizes = sorted(sum(e - s for _, _, s, e in t) for t in tasks)
    assert sum(sizes) == 295 and sizes[1] - sizes[0] <= 100  # greedy, largest first
    assert sorted(r[1] for t in tasks for r in t) == [0, 1, 2, 3, 4, 5]
    assert len(_balanced_specs(ranges[:1], 8)) == 1
