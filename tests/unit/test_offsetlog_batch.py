"""The vectorised Arrow decoder gives exactly the rows the one-record-at-a-time decoder gives."""

from __future__ import annotations

import struct

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetkeeper.offsetlog.batch import decode_batch, decoded_arrow_schema
from offsetkeeper.offsetlog.encode import encode_key, encode_value
from offsetkeeper.offsetlog.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
)


def _input(pairs):
    n = len(pairs)
    return pa.RecordBatch.from_arrays([
        pa.array([k for k, _ in pairs], pa.binary()), pa.array([v for _, v in pairs], pa.binary()),
        pa.array(range(n), pa.int32()), pa.array(range(100, 100 + n), pa.int64()),
        pa.array([1_700_000_000_000 + i for i in range(n)], pa.int64())],
        names=["key", "value", "source_partition", "source_offset", "record_timestamp"])


def _rows(batch, vectorised):
    out = []
    for b in decode_batch(batch, vectorised=vectorised):
        assert b.schema == decoded_arrow_schema()
        out.extend(b.to_pylist())
    return sorted(out, key=lambda r: r["source_offset"])


def _commit(key_version, value_version, metadata="m", offset=5):
    v = OffsetCommitValue(offset, metadata, 1700, 3 if value_version >= 3 else -1,
                          99 if value_version == 1 else -1, value_version)
    return encode_key(OffsetCommitKey("grp", "orders", 2, key_version)), encode_value(v)


def test_vectorised_equals_per_record_on_every_version_and_oddities():
    pairs = [_commit(k, v) for k in (0, 1) for v in range(5)]
    pairs += [
        _commit(1, 4, metadata="x" * 300),  # two-byte compact length: slow path
        _commit(1, 3, metadata="ünï😀"),
        (encode_key(OffsetCommitKey("grp", "orders", 2)), None),  # tombstone
        (encode_key(GroupMetadataKey("grp")), encode_value(GroupMetadataValue("consumer", 3, "range", None))),
        (struct.pack(">h", 99) + b"new record type", b"\x00\x00"),
        (b"\x00\x01\x00\x02\xff\xfe\x00\x01t\x00\x00\x00\x01", _commit(1, 3)[1]),  # bad UTF-8 group
        (b"\x00", b"garbage"),
        (None, None),
    ]
    batch = _input(pairs)
    fast, slow = _rows(batch, True), _rows(batch, False)
    assert fast == slow
    kinds = [r["kind"] for r in fast]
    assert kinds.count("offset_commit") == 13 and kinds.count("error") == 3
    v1 = next(r for r in fast if r["value_version"] == 1 and r["kind"] == "offset_commit")
    assert v1["expire_timestamp"] == 99 and v1["leader_epoch"] is None


def test_a_sliced_batch_decodes_the_slice():
    batch = _input([_commit(1, v, metadata=str(v)) for v in range(5)]).slice(2, 2)
    assert [r["metadata"] for r in _rows(batch, True)] == ["2", "3"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=30)),
                          st.one_of(st.none(), st.binary(max_size=40))), min_size=1, max_size=20),
       st.lists(st.tuples(st.sampled_from([0, 1]), st.integers(0, 4), st.text(max_size=5)), max_size=10))
def test_vectorised_equals_per_record_on_random_mixes(noise, commits):
    pairs = list(noise) + [_commit(k, v, metadata=m) for k, v, m in commits]
    batch = _input(pairs)
    assert _rows(batch, True) == _rows(batch, False)
