"""Decoding Arrow batches of `__consumer_offsets` records into decoded rows (for `mapInArrow`).

The common record — an offset commit (key v0/v1, value v0-v4 with a short metadata string and
no tagged fields) — is decoded for a whole batch at once with numpy: every field position is an
array computed from the previous one, every read is bounds-checked first, and the strings are
gathered into Arrow string arrays that Arrow validates as UTF-8. Everything else (tombstones,
group metadata, unknown or malformed records, and any row the vectorised checks reject) goes
through `decode_record` one by one, so both paths give the same answer for the same bytes; a
unit test holds them to that.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from functools import cache

import numpy as np
import pyarrow as pa

from offsetkeeper.offsetlog.decode import decode_assignment, decode_record, decode_subscription
from offsetkeeper.offsetlog.records import (
    CoordinatorRecord,
    DecodedRecord,
    GroupMetadataRecord,
    MalformedRecord,
    MemberMetadata,
    OffsetCommitRecord,
    RecordKind,
    UnknownRecord,
)

__all__ = ["DECODED_FIELDS", "INPUT_COLUMNS", "decode_batch", "decode_batches", "decoded_arrow_schema",
           "decoded_schema", "record_row"]

# The decoded record: offset commit fields, group metadata fields, and where it came from.
# (name, Spark type) — nested types are spelled out with pyspark.sql.types in decoded_schema().
DECODED_FIELDS = (
    ("kind", "string"), ("key_version", "int"), ("value_version", "int"), ("group", "string"),
    ("topic", "string"), ("partition", "int"), ("offset", "long"), ("leader_epoch", "int"),
    ("metadata", "string"), ("commit_timestamp", "long"), ("expire_timestamp", "long"),
    ("tombstone", "boolean"), ("protocol_type", "string"), ("generation", "int"),
    ("protocol", "string"), ("leader", "string"), ("current_state_timestamp", "long"),
    ("members", "members"), ("error", "string"), ("source_partition", "int"),
    ("source_offset", "long"), ("record_timestamp", "long"),
    # the newer coordinator records (types 3-24, offsetlog/coordinator.py): the member of a
    # member record, the other key fields (a regex record's expression), the value as JSON
    ("member_id", "string"), ("record_key", "string"), ("fields", "string"),
)
INPUT_COLUMNS = ("key", "value", "source_partition", "source_offset", "record_timestamp")
_SOURCE = ("source_partition", "source_offset", "record_timestamp")


@cache
def decoded_schema():
    """The Spark schema (StructType) of decoded records."""
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        BooleanType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    tp = StructType([StructField("topic", StringType()),
                     StructField("partitions", ArrayType(IntegerType()))])
    member = StructType([
        StructField("member_id", StringType()), StructField("group_instance_id", StringType()),
        StructField("client_id", StringType()), StructField("client_host", StringType()),
        StructField("rebalance_timeout", IntegerType()), StructField("session_timeout", IntegerType()),
        StructField("subscribed_topics", ArrayType(StringType())),
        StructField("owned_partitions", ArrayType(tp)), StructField("assigned", ArrayType(tp)),
        StructField("subscription", BinaryType()), StructField("assignment", BinaryType()),
        StructField("protocol_error", StringType())])
    types = {"string": StringType(), "int": IntegerType(), "long": LongType(),
             "boolean": BooleanType(), "members": ArrayType(member)}
    return StructType([StructField(n, types[t]) for n, t in DECODED_FIELDS])


@cache
def decoded_arrow_schema() -> pa.Schema:
    """The Arrow schema Spark expects for `decoded_schema()` (Spark's own type mapping)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(decoded_schema())


# -- one record at a time -------------------------------------------------------------------------

def _tps(tps) -> list[dict]:
    return [{"topic": t.topic, "partitions": list(t.partitions)} for t in tps]


def _member_row(m: MemberMetadata, protocol_type: str) -> dict:
    row = {"member_id": m.member_id, "group_instance_id": m.group_instance_id,
           "client_id": m.client_id, "client_host": m.client_host,
           # -1 is a value (the schema's default, and what v0 records mean), never null
           "rebalance_timeout": m.rebalance_timeout,
           "session_timeout": m.session_timeout, "subscribed_topics": None,
           "owned_partitions": None, "assigned": None, "subscription": m.subscription,
           "assignment": m.assignment, "protocol_error": None}
    # Only the consumer protocol's bytes have a known layout (connect etc. have their own).
    if protocol_type != "consumer":
        return row
    errors = []
    try:
        s = decode_subscription(m.subscription)
        row["subscribed_topics"] = list(s.topics)
        row["owned_partitions"] = _tps(s.owned_partitions)
    except Exception as exc:  # a member's bad bytes must not lose the group record
        errors.append(f"subscription: {exc}")
    if m.assignment:  # empty while the group is rebalancing
        try:
            row["assigned"] = _tps(decode_assignment(m.assignment).partitions)
        except Exception as exc:
            errors.append(f"assignment: {exc}")
    else:
        row["assigned"] = []
    row["protocol_error"] = "; ".join(errors) or None
    return row


def record_row(rec: DecodedRecord) -> dict:
    """One decoded record as a row of the decoded schema (without the source columns)."""
    row: dict = {"kind": str(rec.kind)}
    if isinstance(rec, OffsetCommitRecord):
        k, v = rec.key, rec.value
        row.update(key_version=k.version, group=k.group, topic=k.topic, partition=k.partition,
                   tombstone=v is None)
        if v is not None:
            row.update(value_version=v.version, offset=v.offset,
                       leader_epoch=None if v.leader_epoch == -1 else v.leader_epoch,
                       metadata=v.metadata, commit_timestamp=v.commit_timestamp,
                       expire_timestamp=v.expire_timestamp if v.version == 1 else None)
    elif isinstance(rec, GroupMetadataRecord):
        k, g = rec.key, rec.value
        row.update(key_version=k.version, group=k.group, tombstone=g is None)
        if g is not None:
            row.update(value_version=g.version, protocol_type=g.protocol_type,
                       generation=g.generation, protocol=g.protocol, leader=g.leader,
                       current_state_timestamp=None if g.current_state_timestamp == -1
                       else g.current_state_timestamp,
                       members=[_member_row(m, g.protocol_type) for m in g.members])
    elif isinstance(rec, CoordinatorRecord):
        k = rec.key
        extra = {n: v for n, v in k.fields.items() if n not in ("group_id", "member_id")}
        row.update(key_version=k.record_type, group=k.group, member_id=k.fields.get("member_id"),
                   record_key=json.dumps(extra, sort_keys=True) if extra else None,
                   tombstone=rec.value is None)
        if rec.value is not None:
            row.update(value_version=rec.value_version, fields=fields_json(rec.value))
    elif isinstance(rec, UnknownRecord):
        row["key_version" if rec.part == "key" else "value_version"] = rec.version
        row["group"] = rec.group
    elif isinstance(rec, MalformedRecord):
        row["error"] = rec.reason
    return row


def _json_default(v):
    if isinstance(v, bytes | bytearray):
        return base64.b64encode(v).decode("ascii")
    raise TypeError(f"{type(v).__name__} is not JSON")


def fields_json(value: dict) -> str:
    """A coordinator record's value as JSON (bytes as base64; tuples as arrays)."""
    return json.dumps(value, sort_keys=True, default=_json_default, ensure_ascii=False)


def _slow(batch: pa.RecordBatch, rows_idx: np.ndarray) -> pa.RecordBatch:
    keys = batch.column("key").take(pa.array(rows_idx)).to_pylist()
    values = batch.column("value").take(pa.array(rows_idx)).to_pylist()
    src = {c: batch.column(c).take(pa.array(rows_idx)).to_pylist() for c in _SOURCE}
    rows = []
    for i, (k, v) in enumerate(zip(keys, values, strict=True)):
        row = record_row(decode_record(k, v))
        for c in _SOURCE:
            row[c] = src[c][i]
        rows.append(row)
    return pa.RecordBatch.from_pylist(rows, schema=decoded_arrow_schema())


# -- a whole batch of offset commits at once ------------------------------------------------------

_PAD = 16  # reads past a row's end stay inside the buffer; the row is then rejected by checks


def _buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(data bytes of this slice, padded; start offsets; end offsets) of a binary array."""
    bufs = arr.buffers()
    if bufs[1] is None:
        zeros = np.zeros(len(arr), np.int64)
        return np.zeros(_PAD, np.uint8), zeros, zeros
    offsets = np.frombuffer(bufs[1], dtype=np.int32)[arr.offset: arr.offset + len(arr) + 1].astype(np.int64)
    base = int(offsets[0])
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    data = np.concatenate([data[base:int(offsets[-1])], np.zeros(_PAD, np.uint8)])
    offsets -= base
    return data, offsets[:-1], offsets[1:]


_BE = {2: np.dtype(">i2"), 4: np.dtype(">i4"), 8: np.dtype(">i8")}


def _be(data: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """Signed big-endian integers of `width` bytes at `pos` (one gather, one view)."""
    raw = data[pos[:, None] + np.arange(width)]
    return raw.view(_BE[width]).reshape(len(pos)).astype(np.int64)


def _strings(data: np.ndarray, start: np.ndarray, length: np.ndarray) -> pa.Array:
    offs = np.zeros(len(length) + 1, np.int64)
    np.cumsum(length, out=offs[1:])
    total = int(offs[-1])
    if total >= 2**31:
        raise ValueError("strings too large for one batch")
    idx = np.repeat(start - offs[:-1], length) + np.arange(total, dtype=np.int64)
    arr = pa.StringArray.from_buffers(len(length), pa.py_buffer(offs.astype(np.int32)),
                                      pa.py_buffer(np.ascontiguousarray(data[idx])))
    arr.validate(full=True)  # ArrowInvalid when not UTF-8: the caller falls back
    return arr


def _fast(batch: pa.RecordBatch) -> tuple[np.ndarray, pa.RecordBatch | None]:
    """(mask of rows decoded here, their decoded batch)."""
    key, value = batch.column("key"), batch.column("value")
    n = len(batch)
    kd, ks, ke = _buffers(key)
    vd, vs, ve = _buffers(value)
    ok = (~np.asarray(key.is_null(), bool)) & (~np.asarray(value.is_null(), bool))
    ok &= (ke - ks >= 10) & (ve - vs >= 20)

    def clamp(pos):
        return np.where(ok, pos, 0)

    kp = clamp(ks)
    kver = _be(kd, kp, 2)
    ok &= (kver == 0) | (kver == 1)
    glen = _be(kd, kp + 2, 2)
    ok &= glen >= 0
    tl = kp + 4 + glen
    ok &= tl + 2 <= ke
    tl = clamp(tl)
    tlen = _be(kd, tl, 2)
    ok &= tlen >= 0
    pp = tl + 2 + tlen
    ok &= pp + 4 == ke
    pp = clamp(pp)
    partition = _be(kd, pp, 4)

    vp = clamp(vs)
    vver = _be(vd, vp, 2)
    ok &= (vver >= 0) & (vver <= 4)
    offset = _be(vd, vp + 2, 8)
    epoch = np.where(vver >= 3, _be(vd, vp + 10, 4), -1)
    ml = np.where(vver >= 3, vp + 14, vp + 10)
    flex = vver == 4
    first = vd[ml].astype(np.int64)
    mlen = np.where(flex, first - 1, _be(vd, ml, 2))
    # Vectorised only for one-byte compact lengths (metadata < 127 bytes); others go slow.
    ok &= np.where(flex, (first >= 1) & (first < 0x80), mlen >= 0)
    mp = ml + np.where(flex, 1, 2)
    ts = mp + mlen
    end = ts + 8 + np.where(vver == 1, 8, 0) + np.where(flex, 1, 0)
    ok &= end == ve
    ts = clamp(ts)
    ok &= np.where(flex, vd[ts + 8] == 0, True)  # no tagged fields
    if not ok.any():
        return ok, None
    commit_ts = _be(vd, ts, 8)
    expire = _be(vd, ts + 8, 8)

    sel = np.flatnonzero(ok)
    try:
        group = _strings(kd, (kp + 4)[sel], glen[sel])
        topic = _strings(kd, (tl + 2)[sel], tlen[sel])
        metadata = _strings(vd, mp[sel], mlen[sel])
    except (pa.ArrowInvalid, ValueError):
        return np.zeros(n, bool), None
    m = len(sel)
    vv = vver[sel]
    ep = epoch[sel]
    schema = decoded_arrow_schema()
    take = pa.array(sel)
    cols = {
        "kind": pa.repeat(pa.scalar(str(RecordKind.OFFSET_COMMIT)), m),
        "key_version": pa.array(kver[sel].astype(np.int32)),
        "value_version": pa.array(vv.astype(np.int32)),
        "group": group, "topic": topic,
        "partition": pa.array(partition[sel].astype(np.int32)),
        "offset": pa.array(offset[sel]),
        "leader_epoch": pa.array(ep.astype(np.int32), mask=ep == -1),
        "metadata": metadata,
        "commit_timestamp": pa.array(commit_ts[sel]),
        "expire_timestamp": pa.array(expire[sel], mask=vv != 1),
        "tombstone": pa.array(np.zeros(m, bool)),
    }
    arrays = []
    for f in schema:
        if f.name in cols:
            arrays.append(cols[f.name])
        elif f.name in _SOURCE:
            arrays.append(batch.column(f.name).take(take).cast(f.type))
        else:
            arrays.append(pa.nulls(m, f.type))
    return ok, pa.RecordBatch.from_arrays(arrays, schema=schema)


def decode_batch(batch: pa.RecordBatch, *, vectorised: bool = True) -> Iterator[pa.RecordBatch]:
    """Decode one batch with INPUT_COLUMNS into batches of the decoded schema rows (order not kept)."""
    if len(batch) == 0:
        return
    ok = np.zeros(len(batch), bool)
    if vectorised:
        ok, fast = _fast(batch)
        if fast is not None:
            yield fast
    rest = np.flatnonzero(~ok)
    if len(rest):
        yield _slow(batch, rest)


def decode_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The `mapInArrow` function: decode every batch of a partition."""
    for b in batches:
        yield from decode_batch(b)
