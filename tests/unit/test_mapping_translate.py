"""Offset mapping lookups and group translation: exact, also with offset gaps."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetkeeper.errors import StoreError, UsageError
from offsetkeeper.models import TopicPartition
from offsetkeeper.restore.mapping import (
    PartitionMapping,
    lookup_row,
    partition_mappings,
    read_mapping,
    summary_rows,
    write_chunk,
)
from offsetkeeper.restore.translate import translate_offsets

SRC, TGT = TopicPartition("orders", 0), TopicPartition("orders-dr", 0)


def pm(src: list[int], start: int = 0, log_end: int | None = None) -> PartitionMapping:
    return PartitionMapping(SRC, TGT, tuple(src), tuple(range(start, start + len(src))),
                            tuple(0 for _ in src), log_end)


@pytest.mark.parametrize(("committed", "expected"), [
    (0, 100),    # before the first restored record: the first one
    (5, 100),
    (6, 101),    # a gap (compaction / transaction marker): the next restored record
    (7, 101),
    (9, 102),
    (10, 102),
    (11, 103),   # past the last restored record: the target log end
    (999, 103),
])
def test_translate_with_gaps(committed, expected):
    m = pm([5, 7, 10], start=100, log_end=103)
    assert m.translate(committed) == expected


def test_translate_past_end_without_recorded_log_end_uses_next_position():
    assert pm([1, 2], start=10).translate(3) == 12


def test_translate_empty_partition_needs_log_end():
    assert pm([], log_end=42).translate(7) == 42
    with pytest.raises(StoreError):
        pm([]).translate(7)


def test_lookup_exact_and_missing():
    m = pm([5, 7, 10], start=100)
    assert m.lookup(7) == 101
    assert m.lookup(6) is None


@given(st.lists(st.integers(0, 10_000), unique=True, max_size=60).map(sorted),
       st.integers(0, 1000), st.integers(-5, 10_100))
def test_translated_offset_points_at_first_restored_record_at_or_after_commit(src, start, c):
    log_end = start + len(src) + 3  # other records may follow on the target
    m = pm(src, start=start, log_end=log_end)
    t = m.translate(c)
    later = [s for s in src if s >= c]
    if later:
        # the record at the translated target offset is the first restored one with offset >= C
        assert m.source_offsets[m.target_offsets.index(t)] == min(later)
        # and nothing restored before it has a source offset >= C (no skipped record)
        assert all(s < c for s, tt in zip(src, m.target_offsets, strict=True) if tt < t)
    else:
        assert t == log_end


@given(st.lists(st.integers(0, 500), unique=True, min_size=1, max_size=40).map(sorted))
def test_translation_is_monotonic(src):
    m = pm(src, start=7, log_end=7 + len(src))
    outs = [m.translate(c) for c in range(-1, src[-1] + 3)]
    assert outs == sorted(outs)


def test_translate_offsets_skips_partitions_not_restored():
    maps = {SRC: pm([0, 1, 2], start=10, log_end=13)}
    rows = translate_offsets({"g": {SRC: 1, TopicPartition("other", 0): 5}}, maps)
    assert [(r.group, r.target, r.target_offset, r.source_record) for r in rows] == [("g", TGT, 11, 1)]


def test_chunks_roundtrip_and_summary(tmp_path):
    root = str(tmp_path / "m")
    write_chunk(root, "r1", SRC, TGT, [10, 12], [0, 1], [1, 2])
    write_chunk(root, "r1", SRC, TGT, [15], [2], [3])
    other = TopicPartition("pay", 3)
    write_chunk(root, "r1", other, TopicPartition("pay", 0), [0], [40], [9])
    maps = partition_mappings(read_mapping(root), {TGT: 3})
    assert maps[SRC].source_offsets == (10, 12, 15)
    assert maps[SRC].target_log_end == 3
    rows = summary_rows(maps)
    assert rows[0]["topic"] == "orders" and rows[0]["records"] == 3
    assert (rows[0]["source_first"], rows[0]["source_last"], rows[0]["target_first"], rows[0]["target_last"]) \
        == (10, 15, 0, 2)
    assert read_mapping(root, other).num_rows == 1
    assert read_mapping(str(tmp_path / "none")).num_rows == 0


def test_lookup_row_answers_and_errors():
    maps = {SRC: pm([5, 7], start=100, log_end=102)}
    assert lookup_row(maps, "orders", 0, 7)["target_offset"] == 101
    r = lookup_row(maps, "orders", 0, 6)
    assert not r["restored"] and r["target_offset"] == 101 and "source offset 7" in r["note"]
    assert lookup_row(maps, "orders", 0, 8)["target_offset"] == 102
    with pytest.raises(UsageError, match="orders:1 was not restored"):
        lookup_row(maps, "orders", 1, 0)
