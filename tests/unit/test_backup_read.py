"""Reading backup files with pyarrow, checked against the manifest (issue 8 item 8): counts,
ranges, order and checksums, before (footers) and while (records) a restore reads them."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from offsetkeeper.backup import checksum as ck
from offsetkeeper.backup.manifest import load_manifest
from offsetkeeper.backup.read import (
    Selection,
    check_segments,
    partition_segments,
    read_records,
    selection_stats,
)
from offsetkeeper.errors import StoreError
from tests.restore_support import FILE_SCHEMA, rec, write_backup

RECORDS = [rec(o, 1000 + o, f"k{o}".encode(), f"v{o}".encode()) for o in range(500)]


@pytest.fixture
def backup(tmp_path):
    write_backup(str(tmp_path), "b", {"t": {0: RECORDS}})
    path = tmp_path / "b" / "data" / "run=1" / "topic=t" / "partition=0" / "part-00000.parquet"
    return str(tmp_path), path


def segments(dest):
    return partition_segments(f"{dest}/b", load_manifest(dest, "b"), "t", 0)


def offsets(batches) -> list[int]:
    return [o for b in batches for o in b.column("offset").to_pylist()]


def test_an_untouched_backup_reads_completely_with_its_selection(backup):
    """The one record selection: offsets after the resume point, timestamps in [from, to)."""
    dest, _ = backup
    assert offsets(read_records(segments(dest))) == list(range(500))
    assert offsets(read_records(segments(dest), Selection(489))) == list(range(490, 500))
    assert offsets(read_records(segments(dest), Selection(-1, 1010, 1013))) == [10, 11, 12]
    st = selection_stats(segments(dest), Selection(), checksum=True)
    assert (st.records, st.checksum) == (500, load_manifest(dest, "b").topic("t").partition(0).checksum)


def test_a_file_holding_offsets_0_to_499_twice_is_refused_before_reading(backup):
    """A file holding its records twice is refused from its footer (count differs from the
    manifest's), before a single record is read or written."""
    dest, path = backup
    pq.write_table(pa.Table.from_pylist(RECORDS + RECORDS, schema=FILE_SCHEMA), path)
    with pytest.raises(StoreError, match=r"hold 1000 records but the manifest says 500"):
        check_segments(segments(dest))
    with pytest.raises(StoreError, match="1000 records"):
        next(read_records(segments(dest)))


def test_duplicate_offsets_are_refused_even_when_the_count_matches(backup):
    """Offsets must strictly increase inside a file: 250 records twice in a 500-record file are
    refused while reading, naming the file."""
    dest, path = backup
    pq.write_table(pa.Table.from_pylist(RECORDS[:250] + RECORDS[:250], schema=FILE_SCHEMA), path,
                   row_group_size=100)
    with pytest.raises(StoreError, match=r"part-00000.parquet of t:0 run 1 is not in strictly increasing"):
        list(read_records(segments(dest)))


def test_an_edited_record_fails_the_manifest_checksum(backup):
    """Same count, same offsets, one value changed: the checksum against the manifest fails."""
    dest, path = backup
    edited = [dict(r) for r in RECORDS]
    edited[123]["value"] = b"changed"
    pq.write_table(pa.Table.from_pylist(edited, schema=FILE_SCHEMA), path)
    with pytest.raises(StoreError, match=r"do not match the manifest's checksum"):
        list(read_records(segments(dest)))


def test_offsets_outside_the_manifest_range_are_refused(backup):
    """Shifted offsets (a file moved between partitions or runs) are outside the segment's range."""
    dest, path = backup
    shifted = [{**r, "offset": r["offset"] + 1000} for r in RECORDS]
    pq.write_table(pa.Table.from_pylist(shifted, schema=FILE_SCHEMA), path)
    with pytest.raises(StoreError, match=r"outside \[0, 500\)"):
        check_segments(segments(dest))


def test_a_truncated_file_names_the_file(backup):
    """A truncated Parquet file gives one sentence naming it, not a pyarrow traceback."""
    dest, path = backup
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(StoreError) as exc:
        check_segments(segments(dest))
    assert str(path) in exc.value.message and "\n" not in exc.value.message


def test_a_missing_file_is_named(backup):
    dest, path = backup
    os.remove(path)
    with pytest.raises(StoreError, match="is missing"):
        check_segments(segments(dest))


def test_manifest_checksum_helper_matches_the_files(backup):
    dest, path = backup
    t = pq.read_table(path)
    assert ck.to_hex(sum(ck.batch_checksum(b) for b in t.to_batches())) == \
        load_manifest(dest, "b").topic("t").partition(0).checksum
