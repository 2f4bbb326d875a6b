"""The derived offset mapping's proof and its read-back fallback (pure logic)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetkeeper.models import TopicPartition
from offsetkeeper.restore.derive import (
    ChunkRecords,
    MissingRecordError,
    TargetRecord,
    map_read_back,
    proof_holds,
)

SRC = TopicPartition("orders", 3)


def ours(chunk: ChunkRecords, i: int, offset: int) -> TargetRecord:
    """The target record this restore writes for the chunk's i-th record."""
    so, ts = chunk.source_offsets[i], chunk.timestamps[i]
    if chunk.offset_headers:
        hdrs = ((("own", b"x"),) if i % 2 else ()) + (
            ("x-kafka-backup-offset", str(so).encode()), ("x-kafka-backup-timestamp", str(ts).encode()),
            ("x-kafka-backup-partition", b"3"), ("x-kafka-backup-topic", b"orders"))
        return TargetRecord(offset, b"k", b"v", ts, hdrs)
    return TargetRecord(offset, chunk.keys[i], chunk.values[i], ts, tuple(chunk.headers[i] or ()))


def chunk_of(n: int, headers: bool, first_source: int = 100) -> ChunkRecords:
    c = ChunkRecords(SRC, headers)
    for i in range(n):
        c.source_offsets.append(first_source + 2 * i)  # gaps, like a compacted source
        c.timestamps.append(1_000 + i)
        if not headers:
            c.keys.append(f"k{i}".encode())
            c.values.append(f"v{i}".encode())
            c.headers.append([("h", b"1")] if i % 3 == 0 else None)
    return c


@pytest.mark.parametrize("headers", [True, False])
def test_proof_holds_only_when_the_log_grew_by_the_chunk_and_both_ends_are_ours(headers):
    c = chunk_of(5, headers)
    first, last = ours(c, 0, 40), ours(c, 4, 44)
    assert proof_holds(start=40, end=45, count=5, first=first, last=last, chunk=c)
    # another record was appended meanwhile: the log grew by 6
    assert not proof_holds(start=40, end=46, count=5, first=first, last=ours(c, 4, 45), chunk=c)
    # the record at the start is someone else's
    foreign = TargetRecord(40, b"k", b"intruder", 1, ())
    assert not proof_holds(start=40, end=45, count=5, first=foreign, last=last, chunk=c)
    # the last record read back is not the chunk's last
    assert not proof_holds(start=40, end=45, count=5, first=first, last=ours(c, 3, 44), chunk=c)
    # nothing could be read back
    assert not proof_holds(start=40, end=45, count=5, first=None, last=last, chunk=c)


def test_offset_headers_are_matched_at_the_end_of_the_record():
    """A source record that itself carries x-kafka-backup-* headers (a restored topic restored
    again) is recognised by the four headers this restore appends last."""
    c = chunk_of(1, True)
    r = ours(c, 0, 7)
    older = (("x-kafka-backup-offset", b"1"), ("x-kafka-backup-timestamp", b"1"),
             ("x-kafka-backup-partition", b"0"), ("x-kafka-backup-topic", b"other"))
    assert c.is_record(0, TargetRecord(7, b"k", b"v", r.timestamp, older + r.headers))
    assert not c.is_record(0, TargetRecord(7, b"k", b"v", r.timestamp, r.headers + older))


@pytest.mark.parametrize("headers", [True, False])
def test_read_back_maps_our_records_and_skips_foreign_ones(headers):
    c = chunk_of(4, headers)
    recs = [TargetRecord(50, b"a", b"foreign", 1, ()), ours(c, 0, 51), ours(c, 1, 52),
            TargetRecord(53, b"b", b"foreign", 2, ()), ours(c, 2, 54), ours(c, 3, 55),
            TargetRecord(56, b"c", b"later", 3, ())]
    assert map_read_back(c, recs) == ([51, 52, 54, 55], 2)


def test_read_back_refuses_when_a_record_is_missing():
    c = chunk_of(3, True)
    with pytest.raises(MissingRecordError, match="source offset 102 of orders:3"):
        map_read_back(c, [ours(c, 0, 10), ours(c, 2, 11)])


@given(st.lists(st.booleans(), max_size=30), st.integers(0, 10), st.booleans())
def test_read_back_finds_every_record_wherever_foreign_records_fall(foreign_before, n, headers):
    """Property: with foreign records inserted anywhere, each of our records maps to exactly
    the offset it was written at."""
    c = chunk_of(n, headers)
    recs, want, i = [], [], 0
    for off, f in enumerate(foreign_before + [False] * n):
        if i >= n:
            break
        if f:
            recs.append(TargetRecord(off, b"x", b"someone else", 5, ()))
        else:
            recs.append(ours(c, i, off))
            want.append(off)
            i += 1
    assert map_read_back(c, recs) == (want, len(recs) - n)
