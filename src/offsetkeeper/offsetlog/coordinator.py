"""Every record type of the group coordinator beyond offset commits and classic group metadata:
KIP-848 consumer groups (3-8, 16), share groups (9-15) and streams groups (17-24), decoded and
encoded by one interpreter of their schemas.

The schemas are Apache Kafka 4.3.1's, read from the generated classes in
`kafka-group-coordinator-4.3.1.jar` (`CoordinatorRecordType` and each message's `SCHEMAS`), so
field order and types are exactly what that broker writes. Types 9 (share group partition
metadata) and 18 (streams group partition metadata), which 4.3.1 no longer writes, and 24
(streams target assignment resolved topic ids), which it does not write yet, come from
apache/kafka's `group-coordinator/src/main/resources/common/message/*{Key,Value}.json`.

Layout (Kafka's coordinator records): the key is int16 record type, then the key struct (never
flexible); the value is int16 version, then the value struct in that version (all flexible:
compact strings and arrays, a tagged-field section ending every struct). A null value is a
tombstone (the member left, the group was deleted, ...).

Decoded values are plain dicts (field names as in the schema, snake_case): UUIDs as Kafka prints
them (URL-safe base64 without padding), bytes as bytes, absent tagged fields left out, tagged
fields this schema does not know kept under `_unknown_tagged_fields` as (tag, bytes) pairs.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass

__all__ = ["SCHEMAS", "A", "MalformedBytes", "N", "RecordSchema", "S", "decode_struct",
           "encode_struct", "uuid_str"]


class MalformedBytes(ValueError):
    """Raised inside the decoder when bytes break the schema; never leaves `decode_record`
    (defined here, with the schemas it checks; offsetlog/decode.py re-exports it)."""


@dataclass(frozen=True)
class S:
    """A struct: (name, type) fields in order, then (tag, name, type) tagged fields (flexible)."""

    fields: tuple
    tagged: tuple = ()
    flexible: bool = False


@dataclass(frozen=True)
class A:
    """An array (compact: every array of these schemas is in a flexible struct)."""

    element: object
    nullable: bool = False


@dataclass(frozen=True)
class N:
    """A nullable struct: a presence marker, then the struct. Kafka writes an int8 (-1 null, 1
    present) in a struct's fields, an unsigned varint (0 null, 1 present) in a tagged field."""

    struct: S
    tagged: bool = False


@dataclass(frozen=True)
class RecordSchema:
    record_type: int
    name: str
    key: S
    values: tuple[S, ...]  # by value version


SCHEMAS: dict[int, RecordSchema] = {
    3: RecordSchema(3, 'consumer_group_metadata', S((('group_id', 'string'), )),
        (S((('epoch', 'int32'), ), ((0, 'metadata_hash', 'int64'), ), flexible=True),)),
    4: RecordSchema(4, 'consumer_group_partition_metadata', S((('group_id', 'string'), )),
        (S((('topics', A(S((('topic_id', 'uuid'), ('topic_name', 'cstring'), ('num_partitions', 'int32'), ('partition_metadata', A(S((('partition', 'int32'), ('racks', A('cstring')), ), (), flexible=True))), ), (), flexible=True))), ), (), flexible=True),)),
    5: RecordSchema(5, 'consumer_group_member_metadata', S((('group_id', 'string'), ('member_id', 'string'), )),
        (S((('instance_id', 'cstring?'), ('rack_id', 'cstring?'), ('client_id', 'cstring'), ('client_host', 'cstring'), ('subscribed_topic_names', A('cstring')), ('subscribed_topic_regex', 'cstring?'), ('rebalance_timeout_ms', 'int32'), ('server_assignor', 'cstring?'), ), ((0, 'classic_member_metadata', N(S((('session_timeout_ms', 'int32'), ('supported_protocols', A(S((('name', 'cstring'), ('metadata', 'cbytes'), ), (), flexible=True))), ), (), flexible=True), tagged=True)), ), flexible=True),)),
    6: RecordSchema(6, 'consumer_group_target_assignment_metadata', S((('group_id', 'string'), )),
        (S((('assignment_epoch', 'int32'), ), ((0, 'assignment_timestamp', 'int64'), ), flexible=True),)),
    7: RecordSchema(7, 'consumer_group_target_assignment_member', S((('group_id', 'string'), ('member_id', 'string'), )),
        (S((('topic_partitions', A(S((('topic_id', 'uuid'), ('partitions', A('int32')), ), (), flexible=True))), ), (), flexible=True),)),
    8: RecordSchema(8, 'consumer_group_current_member_assignment', S((('group_id', 'string'), ('member_id', 'string'), )),
        (S((('member_epoch', 'int32'), ('previous_member_epoch', 'int32'), ('state', 'int8'), ('assigned_partitions', A(S((('topic_id', 'uuid'), ('partitions', A('int32')), ), ((0, 'assignment_epochs', A('int32', nullable=True)), ), flexible=True))), ('partitions_pending_revocation', A(S((('topic_id', 'uuid'), ('partitions', A('int32')), ), ((0, 'assignment_epochs', A('int32', nullable=True)), ), flexible=True))), ), (), flexible=True),)),
    9: RecordSchema(9, 'share_group_partition_metadata', S((('group_id', 'string'), )),
        (S((('topics', A(S((('topic_id', 'uuid'), ('topic_name', 'cstring'), ('num_partitions', 'int32'), ('partition_metadata', A(S((('partition', 'int32'), ('racks', A('cstring')), ), (), flexible=True))), ), (), flexible=True))), ), (), flexible=True),)),
    10: RecordSchema(10, 'share_group_member_metadata', S((('group_id', 'string'), ('member_id', 'string'), )),
        (S((('rack_id', 'cstring?'), ('client_id', 'cstring'), ('client_host', 'cstring'), ('subscribed_topic_names', A('cstring')), ), (), flexible=True),)),
    11: RecordSchema(11, 'share_group_metadata', S((('group_id', 'string'), )),
        (S((('epoch', 'int32'), ('metadata_hash', 'int64'), ), (), flexible=True),)),
    12: RecordSchema(12, 'share_group_target_assignment_metadata', S((('group_id', 'string'), )),
        (S((('assignment_epoch', 'int32'), ), ((0, 'assignment_timestamp', 'int64'), ), flexible=True),)),
    13: RecordSchema(13, 'share_group_target_assignment_member', S((('group_id', 'string'), ('member_id', 'string'), )),
        (S((('topic_partitions', A(S((('topic_id', 'uuid'), ('partitions', A('int32')), ), (), flexible=True))), ), (), flexible=True),)),
    14: RecordSchema(14, 'share_group_current_member_assignment', S((('group_id', 'string'), ('member_id', 'string'), )),
        (S((('member_epoch', 'int32'), ('previous_member_epoch', 'int32'), ('state', 'int8'), ('assigned_partitions', A(S((('topic_id', 'uuid'), ('partitions', A('int32')), ), (), flexible=True))), ), (), flexible=True),)),
    15: RecordSchema(15, 'share_group_state_partition_metadata', S((('group_id', 'string'), )),
        (S((('initializing_topics', A(S((('topic_id', 'uuid'), ('topic_name', 'cstring'), ('partitions', A('int32')), ), (), flexible=True))), ('initialized_topics', A(S((('topic_id', 'uuid'), ('topic_name', 'cstring'), ('partitions', A('int32')), ), (), flexible=True))), ('deleting_topics', A(S((('topic_id', 'uuid'), ('topic_name', 'cstring'), ), (), flexible=True))), ), (), flexible=True),)),
    16: RecordSchema(16, 'consumer_group_regular_expression', S((('group_id', 'string'), ('regular_expression', 'string'), )),
        (S((('topics', A('cstring')), ('version', 'int64'), ('timestamp', 'int64'), ), (), flexible=True),)),
    17: RecordSchema(17, 'streams_group_metadata', S((('group_id', 'string'), )),
        (S((('epoch', 'int32'), ('metadata_hash', 'int64'), ), ((0, 'validated_topology_epoch', 'int32'), (1, 'last_assignment_configs', A(S((('key', 'cstring'), ('value', 'cstring'), ), (), flexible=True), nullable=True)), ), flexible=True),)),
    18: RecordSchema(18, 'streams_group_partition_metadata', S((('group_id', 'string'), )),
        (S((('topics', A(S((('topic_id', 'uuid'), ('topic_name', 'cstring'), ('num_partitions', 'int32'), ('partition_metadata', A(S((('partition', 'int32'), ('racks', A('cstring')), ), (), flexible=True))), ), (), flexible=True))), ), (), flexible=True),)),
    19: RecordSchema(19, 'streams_group_member_metadata', S((('group_id', 'string'), ('member_id', 'string'), )),
        (S((('instance_id', 'cstring?'), ('rack_id', 'cstring?'), ('client_id', 'cstring'), ('client_host', 'cstring'), ('rebalance_timeout_ms', 'int32'), ('topology_epoch', 'int32'), ('process_id', 'cstring'), ('user_endpoint', N(S((('host', 'cstring'), ('port', 'uint16'), ), (), flexible=True))), ('client_tags', A(S((('key', 'cstring'), ('value', 'cstring'), ), (), flexible=True))), ), (), flexible=True),)),
    20: RecordSchema(20, 'streams_group_target_assignment_metadata', S((('group_id', 'string'), )),
        (S((('assignment_epoch', 'int32'), ), ((0, 'assignment_timestamp', 'int64'), ), flexible=True),)),
    21: RecordSchema(21, 'streams_group_target_assignment_member', S((('group_id', 'string'), ('member_id', 'string'), )),
        (S((('active_tasks', A(S((('subtopology_id', 'cstring'), ('partitions', A('int32')), ), (), flexible=True))), ('standby_tasks', A(S((('subtopology_id', 'cstring'), ('partitions', A('int32')), ), (), flexible=True))), ('warmup_tasks', A(S((('subtopology_id', 'cstring'), ('partitions', A('int32')), ), (), flexible=True))), ), (), flexible=True),)),
    22: RecordSchema(22, 'streams_group_current_member_assignment', S((('group_id', 'string'), ('member_id', 'string'), )),
        (S((('member_epoch', 'int32'), ('previous_member_epoch', 'int32'), ('state', 'int8'), ('active_tasks', A(S((('subtopology_id', 'cstring'), ('partitions', A('int32')), ), ((0, 'assignment_epochs', A('int32', nullable=True)), ), flexible=True))), ('standby_tasks', A(S((('subtopology_id', 'cstring'), ('partitions', A('int32')), ), ((0, 'assignment_epochs', A('int32', nullable=True)), ), flexible=True))), ('warmup_tasks', A(S((('subtopology_id', 'cstring'), ('partitions', A('int32')), ), ((0, 'assignment_epochs', A('int32', nullable=True)), ), flexible=True))), ('active_tasks_pending_revocation', A(S((('subtopology_id', 'cstring'), ('partitions', A('int32')), ), ((0, 'assignment_epochs', A('int32', nullable=True)), ), flexible=True))), ('standby_tasks_pending_revocation', A(S((('subtopology_id', 'cstring'), ('partitions', A('int32')), ), ((0, 'assignment_epochs', A('int32', nullable=True)), ), flexible=True))), ('warmup_tasks_pending_revocation', A(S((('subtopology_id', 'cstring'), ('partitions', A('int32')), ), ((0, 'assignment_epochs', A('int32', nullable=True)), ), flexible=True))), ), (), flexible=True),)),
    23: RecordSchema(23, 'streams_group_topology', S((('group_id', 'string'), )),
        (S((('epoch', 'int32'), ('subtopologies', A(S((('subtopology_id', 'cstring'), ('source_topics', A('cstring')), ('source_topic_regex', A('cstring')), ('state_changelog_topics', A(S((('name', 'cstring'), ('partitions', 'int32'), ('replication_factor', 'int16'), ('topic_configs', A(S((('key', 'cstring'), ('value', 'cstring'), ), (), flexible=True))), ), (), flexible=True))), ('repartition_sink_topics', A('cstring')), ('repartition_source_topics', A(S((('name', 'cstring'), ('partitions', 'int32'), ('replication_factor', 'int16'), ('topic_configs', A(S((('key', 'cstring'), ('value', 'cstring'), ), (), flexible=True))), ), (), flexible=True))), ('copartition_groups', A(S((('source_topics', A('int16')), ('source_topic_regex', A('int16')), ('repartition_source_topics', A('int16')), ), (), flexible=True))), ), (), flexible=True))), ), (), flexible=True),)),
    24: RecordSchema(24, 'streams_group_target_assignment_resolved_topic_ids', S((('group_id', 'string'), )),
        (S((('assignment_epoch', 'int32'), ('resolved_topic_ids_by_subtopology', A(S((('subtopology_id', 'cstring'), ('topic_ids', A('uuid')), ), (), flexible=True))), ), (), flexible=True),)),
}

_FIXED = {"int8": struct.Struct(">b"), "int16": struct.Struct(">h"), "uint16": struct.Struct(">H"),
          "int32": struct.Struct(">i"), "int64": struct.Struct(">q"), "bool": struct.Struct(">?")}


def uuid_str(raw: bytes) -> str:
    """A UUID as Kafka's `Uuid.toString()`: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _uuid_bytes(text: str) -> bytes:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"UUID {text!r} is not 16 bytes")
    return raw


def decode_struct(r, s: S) -> dict:
    """Read one struct with the decoder's `_Reader` (raises MalformedBytes on broken bytes)."""
    out = {name: _read(r, t) for name, t in s.fields}
    if s.flexible:
        known = {tag: (name, t) for tag, name, t in s.tagged}
        unknown = []
        for tag, raw in r.tagged_fields():
            if tag in known:
                name, t = known[tag]
                out[name] = _sub(r, raw, t)
            else:
                unknown.append((tag, raw))
        if unknown:
            out["_unknown_tagged_fields"] = tuple(unknown)
    return out


def _sub(r, raw: bytes, t):
    sub = type(r)(raw)
    value = _read(sub, t)
    sub.end()
    return value


def _read(r, t):
    if isinstance(t, S):
        return decode_struct(r, t)
    if isinstance(t, N):
        present = r.uvarint() > 0 if t.tagged else _FIXED["int8"].unpack(r._take(1))[0] >= 0
        return decode_struct(r, t.struct) if present else None
    if isinstance(t, A):
        n = r.uvarint() - 1
        if n == -1 and t.nullable:
            return None
        if n < 0 or n > len(r.buf) - r.pos:
            raise MalformedBytes(f"array length {n} at position {r.pos}")
        return tuple(_read(r, t.element) for _ in range(n))
    if t in _FIXED:
        f = _FIXED[t]
        return f.unpack(r._take(f.size))[0]
    if t == "uuid":
        return uuid_str(r._take(16))
    if t == "string":
        return r.string()
    if t == "cstring":
        return r.string(flexible=True)
    if t == "cstring?":
        return r.string(flexible=True, nullable=True)
    if t == "cbytes":
        return r.bytes_(flexible=True)
    if t == "cbytes?":
        return r.bytes_(flexible=True, nullable=True)
    raise ValueError(f"unknown schema type {t!r}")


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def encode_struct(s: S, value: dict) -> bytes:
    """The bytes of one struct (the inverse of decode_struct)."""
    out = [_write(t, value[name]) for name, t in s.fields]
    if s.flexible:
        # a tagged field is written when present (a tagged nullable struct also when null:
        # Kafka writes the null marker, and decoding gives the key with None)
        tags = [(tag, _write(t, value[name])) for tag, name, t in s.tagged if name in value
                and (value[name] is not None or isinstance(t, N))]
        tags += list(value.get("_unknown_tagged_fields", ()))
        tags.sort()
        out.append(_uvarint(len(tags)))
        for tag, raw in tags:
            out += [_uvarint(tag), _uvarint(len(raw)), raw]
    return b"".join(out)


def _text(s: str | None, compact: bool) -> bytes:
    if s is None:
        return _uvarint(0) if compact else _FIXED["int16"].pack(-1)
    raw = s.encode("utf-8")
    return (_uvarint(len(raw) + 1) if compact else _FIXED["int16"].pack(len(raw))) + raw


def _write(t, v) -> bytes:
    if isinstance(t, S):
        return encode_struct(t, v)
    if isinstance(t, N):
        if v is None:
            return _uvarint(0) if t.tagged else _FIXED["int8"].pack(-1)
        return (_uvarint(1) if t.tagged else _FIXED["int8"].pack(1)) + encode_struct(t.struct, v)
    if isinstance(t, A):
        if v is None:
            return _uvarint(0)
        return _uvarint(len(v) + 1) + b"".join(_write(t.element, x) for x in v)
    if t in _FIXED:
        return _FIXED[t].pack(v)
    if t == "uuid":
        return _uuid_bytes(v)
    if t == "string":
        return _text(v, False)
    if t in ("cstring", "cstring?"):
        return _text(v, True)
    if t in ("cbytes", "cbytes?"):
        return _uvarint(0) if v is None else _uvarint(len(v) + 1) + v
    raise ValueError(f"unknown schema type {t!r}")
