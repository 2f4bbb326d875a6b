"""Encoding `__consumer_offsets` records (the inverse of decode.py), for tests, fixtures,
benchmarks and the demo: records of every version (and malformed ones), which no single Kafka
release writes, are built here, produced into ordinary topics and scanned like the real log."""

from __future__ import annotations

import struct

from offsetkeeper.offsetlog.records import (
    FLEXIBLE_VALUE_VERSION,
    Assignment,
    CoordinatorKey,
    CoordinatorRecord,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    Subscription,
    TaggedFields,
    TopicPartitions,
)

__all__ = ["encode_assignment", "encode_key", "encode_subscription", "encode_value"]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


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


def _string(s: str | None, flexible: bool = False) -> bytes:
    if s is None:
        return _uvarint(0) if flexible else _I16.pack(-1)
    raw = s.encode("utf-8")
    return (_uvarint(len(raw) + 1) if flexible else _I16.pack(len(raw))) + raw


def _bytes(b: bytes | None, flexible: bool = False) -> bytes:
    if b is None:
        return _uvarint(0) if flexible else _I32.pack(-1)
    return (_uvarint(len(b) + 1) if flexible else _I32.pack(len(b))) + b


def _tagged(fields: TaggedFields) -> bytes:
    out = [_uvarint(len(fields))]
    for tag, data in sorted(fields):
        out += [_uvarint(tag), _uvarint(len(data)), data]
    return b"".join(out)


def encode_key(key: OffsetCommitKey | GroupMetadataKey | CoordinatorKey) -> bytes:
    """Key bytes: int16 version (the record type), then the fields."""
    if isinstance(key, CoordinatorKey):
        from offsetkeeper.offsetlog.coordinator import SCHEMAS, encode_struct

        return _I16.pack(key.record_type) + encode_struct(SCHEMAS[key.record_type].key, key.fields)
    if isinstance(key, OffsetCommitKey):
        return _I16.pack(key.version) + _string(key.group) + _string(key.topic) + _I32.pack(key.partition)
    return _I16.pack(key.version) + _string(key.group)


def _offset_commit_value(v: OffsetCommitValue) -> bytes:
    flex = v.version >= FLEXIBLE_VALUE_VERSION
    out = [_I16.pack(v.version), _I64.pack(v.offset)]
    if v.version >= 3:
        out.append(_I32.pack(v.leader_epoch))
    out += [_string(v.metadata, flex), _I64.pack(v.commit_timestamp)]
    if v.version == 1:
        out.append(_I64.pack(v.expire_timestamp))
    if flex:
        out.append(_tagged(v.tagged_fields))
    return b"".join(out)


def _member(m: MemberMetadata, version: int) -> bytes:
    flex = version >= FLEXIBLE_VALUE_VERSION
    out = [_string(m.member_id, flex)]
    if version >= 3:
        out.append(_string(m.group_instance_id, flex))
    out += [_string(m.client_id, flex), _string(m.client_host, flex)]
    if version >= 1:
        out.append(_I32.pack(m.rebalance_timeout))
    out += [_I32.pack(m.session_timeout), _bytes(m.subscription, flex), _bytes(m.assignment, flex)]
    if flex:
        out.append(_tagged(m.tagged_fields))
    return b"".join(out)


def _group_metadata_value(g: GroupMetadataValue) -> bytes:
    flex = g.version >= FLEXIBLE_VALUE_VERSION
    out = [_I16.pack(g.version), _string(g.protocol_type, flex), _I32.pack(g.generation),
           _string(g.protocol, flex), _string(g.leader, flex)]
    if g.version >= 2:
        out.append(_I64.pack(g.current_state_timestamp))
    out.append(_uvarint(len(g.members) + 1) if flex else _I32.pack(len(g.members)))
    out += [_member(m, g.version) for m in g.members]
    if flex:
        out.append(_tagged(g.tagged_fields))
    return b"".join(out)


def encode_value(value: OffsetCommitValue | GroupMetadataValue | CoordinatorRecord | None,
                 ) -> bytes | None:
    """Value bytes (None stays None: a tombstone). A CoordinatorRecord gives its value's bytes."""
    if value is None:
        return None
    if isinstance(value, CoordinatorRecord):
        from offsetkeeper.offsetlog.coordinator import SCHEMAS, encode_struct

        if value.value is None:
            return None
        schema = SCHEMAS[value.key.record_type].values[value.value_version]
        return _I16.pack(value.value_version) + encode_struct(schema, value.value)
    if isinstance(value, OffsetCommitValue):
        return _offset_commit_value(value)
    return _group_metadata_value(value)


def _topic_partitions(tps: tuple[TopicPartitions, ...]) -> bytes:
    out = [_I32.pack(len(tps))]
    for tp in tps:
        out += [_string(tp.topic), _I32.pack(len(tp.partitions))]
        out += [_I32.pack(p) for p in tp.partitions]
    return b"".join(out)


def encode_subscription(s: Subscription) -> bytes:
    """ConsumerProtocolSubscription bytes (versions 0-3)."""
    out = [_I16.pack(s.version), _I32.pack(len(s.topics))]
    out += [_string(t) for t in s.topics]
    out.append(_bytes(s.user_data))
    if s.version >= 1:
        out.append(_topic_partitions(s.owned_partitions))
    if s.version >= 2:
        out.append(_I32.pack(s.generation_id))
    if s.version >= 3:
        out.append(_string(s.rack_id))
    return b"".join(out)


def encode_assignment(a: Assignment) -> bytes:
    """ConsumerProtocolAssignment bytes (versions 0-3)."""
    return _I16.pack(a.version) + _topic_partitions(a.partitions) + _bytes(a.user_data)
