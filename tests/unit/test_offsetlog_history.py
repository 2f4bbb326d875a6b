"""Replaying a commit history (no Spark: the tables are written here with pyarrow)."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cli import run_cli
from offsetkeeper.errors import StoreError, UnknownGroupError, UsageError
from offsetkeeper.models import TopicPartition
from offsetkeeper.offsetlog.commit_history import group_commits, offsets_at, show_rows
from offsetkeeper.offsetlog.scan import COMMIT_COLUMNS, SCAN_FORMAT, ScanSummary
from offsetkeeper.offsetlog.target import from_commit_history

TP0, TP1 = TopicPartition("orders", 0), TopicPartition("orders", 1)


def _write(out, rows, scanned_at_ms=10_000):
    full = []
    for i, r in enumerate(rows):
        row = dict.fromkeys(COMMIT_COLUMNS)
        row.update(topic="orders", key_version=1, value_version=3, source_partition=0, source_offset=i,
                   tombstone=False, leader_epoch=None, metadata="", expire_timestamp=None)
        row.update(r)
        if row["tombstone"]:
            row.update(offset=None, commit_timestamp=None, value_version=None)
        full.append(row)
    (out / "commits").mkdir()
    pq.write_table(pa.Table.from_pylist(full), out / "commits" / "part-0.parquet")
    summary = ScanSummary(source="test", scanned_at="1970-01-01T00:00:10+00:00", scanned_at_ms=scanned_at_ms,
                          group=None, source_partitions=None, records=len(rows), offset_commits=0,
                          offset_tombstones=0, group_metadata=0, group_tombstones=0, skipped=[],
                          errors=0, error_samples=[])
    (out / "scan.json").write_text(summary.to_json())


@pytest.fixture
def history(tmp_path):
    _write(tmp_path, [
        {"group": "g", "partition": 0, "offset": 5, "commit_timestamp": 1000},
        {"group": "g", "partition": 1, "offset": 3, "commit_timestamp": 1000},
        {"group": "other", "partition": 0, "offset": 99, "commit_timestamp": 1500},
        {"group": "g", "partition": 0, "offset": 9, "commit_timestamp": 2000},
        {"group": "g", "partition": 0, "tombstone": True, "record_timestamp": 3000},
        {"group": "g", "partition": 0, "offset": 2, "commit_timestamp": 4000},
        {"group": "g", "partition": 1, "offset": 1, "commit_timestamp": 4000},
    ])
    return str(tmp_path)


@pytest.mark.parametrize(("t", "expected", "deleted"), [
    (999, {}, set()),
    (1000, {TP0: 5, TP1: 3}, set()),  # a commit exactly at T counts
    (2500, {TP0: 9, TP1: 3}, set()),
    (3000, {TP1: 3}, {TP0}),  # deleted at T
    (4000, {TP0: 2, TP1: 1}, set()),  # committed again after the deletion
])
def test_offsets_at_replays_in_log_order(history, t, expected, deleted):
    r = offsets_at(history, "g", t)
    assert {tp: e.offset for tp, e in r.offsets.items()} == expected
    assert set(r.deleted) == deleted


def test_show_rows_changes(history):
    rows = show_rows(group_commits(history, "g"))
    assert [(r["partition"], r["change"]) for r in rows] == [
        (0, "first"), (1, "first"), (0, "+4"), (0, "deleted"), (0, "first"), (1, "REWIND -2")]


def test_reset_target_notes_and_late_warning(history):
    target = from_commit_history(history, 20_000, ["g"])
    assert target.for_group("g") == {TP0: 2, TP1: 1}
    note = target.note_for("g", TP0)
    assert note.startswith("commit of 1970-01-01T00:00:04.000Z") and "later commits unseen" in note
    with pytest.raises(UnknownGroupError):
        from_commit_history(history, 500, ["g"])
    with pytest.raises(UsageError):
        from_commit_history(history, 500, [])
    with pytest.raises(UnknownGroupError):
        offsets_at(history, "nobody", 5000)


def test_unfinished_or_foreign_history_is_refused(tmp_path):
    with pytest.raises(StoreError, match="scan.json is missing"):
        offsets_at(str(tmp_path), "g", 0)
    (tmp_path / "scan.json").write_text(json.dumps({"format": SCAN_FORMAT + 1}))
    with pytest.raises(StoreError, match="format"):
        offsets_at(str(tmp_path), "g", 0)
    (tmp_path / "scan.json").write_text("{not json")
    with pytest.raises(StoreError):
        offsets_at(str(tmp_path), "g", 0)


def test_cli_errors_without_spark(history, tmp_path, capsys):
    r = run_cli(capsys, "commits", "scan", "--backup", "nightly", "--out", tmp_path / "x")
    assert r.code == 2 and "DEST/BACKUP_ID" in r.err
    r = run_cli(capsys, "commits", "show", "g", "-H", tmp_path / "nothing")
    assert r.code == 1 and "scan.json is missing" in r.err
    r = run_cli(capsys, "commits", "at", "g", "-H", history, "--time", "soon")
    assert r.code == 2 and "--time 'soon'" in r.err
    r = run_cli(capsys, "commits", "show", "g", "-H", history, "--since", "1970-01-01T01:00:00Z")
    assert r.code == 1 and "no commits between" in r.err
    r = run_cli(capsys, "commits", "at", "g", "-H", history, "--time", "1970-01-01T00:00:02Z", "-o", "csv")
    assert r.code == 0 and r.out.splitlines()[1].startswith("g,orders,0,9,")
