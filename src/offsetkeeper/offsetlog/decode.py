"""Decoding `__consumer_offsets` records: pure functions from (key, value) bytes to records.

`decode_record(key, value)` never raises: a record it does not know (a newer record type or
value version) comes back as `UnknownRecord`, bytes that break their schema as
`MalformedRecord`. Readers of the log count both and go on (Burrow stopped on value v3 and
again on v4; this decoder must not stop on whatever comes next).

Encoding rules (Kafka's protocol types): integers big-endian; non-flexible versions use int16
length strings (-1 = null), int32 length bytes and arrays; flexible versions (value v4) use
compact strings/bytes/arrays (unsigned varint length + 1, 0 = null) and end every struct with a
tagged-field section (uvarint count, then tag, size, bytes for each).
"""

from __future__ import annotations

import struct

from offsetkeeper.offsetlog.coordinator import SCHEMAS, MalformedBytes, decode_struct
from offsetkeeper.offsetlog.records import (
    CONSUMER_PROTOCOL_VERSIONS,
    FLEXIBLE_VALUE_VERSION,
    GROUP_METADATA_KEY_VERSION,
    GROUP_METADATA_VALUE_VERSIONS,
    OFFSET_COMMIT_KEY_VERSIONS,
    OFFSET_COMMIT_VALUE_VERSIONS,
    Assignment,
    CoordinatorKey,
    CoordinatorRecord,
    DecodedRecord,
    GroupMetadataKey,
    GroupMetadataRecord,
    GroupMetadataValue,
    MalformedRecord,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitRecord,
    OffsetCommitValue,
    Subscription,
    TaggedFields,
    TopicPartitions,
    UnknownRecord,
)

__all__ = ["MalformedBytes", "decode_assignment", "decode_key", "decode_record",
           "decode_subscription", "java_string_hash", "partition_for_group"]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
# A sane bound for array lengths read from untrusted bytes (each element takes >= 1 byte).
_MAX_ARRAY = 1 << 24


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def _take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.buf):
            raise MalformedBytes(f"needs {n} bytes at position {self.pos}, "
                                 f"has {len(self.buf) - self.pos}")
        out = self.buf[self.pos:end]
        self.pos = end
        return out

    def i16(self) -> int:
        return _I16.unpack(self._take(2))[0]

    def i32(self) -> int:
        return _I32.unpack(self._take(4))[0]

    def i64(self) -> int:
        return _I64.unpack(self._take(8))[0]

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self._take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise MalformedBytes(f"varint longer than 5 bytes at position {self.pos}")

    def _text(self, raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedBytes(f"string before position {self.pos} is not UTF-8") from None

    def string(self, *, flexible: bool = False, nullable: bool = False) -> str | None:
        n = self.uvarint() - 1 if flexible else self.i16()
        if n == -1 and nullable:
            return None
        if n < 0:
            raise MalformedBytes(f"string length {n} at position {self.pos}")
        return self._text(self._take(n))

    def bytes_(self, *, flexible: bool = False, nullable: bool = False) -> bytes | None:
        n = self.uvarint() - 1 if flexible else self.i32()
        if n == -1 and nullable:
            return None
        if n < 0:
            raise MalformedBytes(f"bytes length {n} at position {self.pos}")
        return self._take(n)

    def array_len(self, *, flexible: bool = False) -> int:
        n = self.uvarint() - 1 if flexible else self.i32()
        if n < 0 or n > min(_MAX_ARRAY, len(self.buf) - self.pos):
            raise MalformedBytes(f"array length {n} at position {self.pos}")
        return n

    def tagged_fields(self) -> TaggedFields:
        out = []
        last = -1
        for _ in range(self._tag_count()):
            tag = self.uvarint()
            if tag <= last:
                raise MalformedBytes(f"tagged field {tag} out of order at position {self.pos}")
            last = tag
            out.append((tag, self._take(self.uvarint())))
        return tuple(out)

    def _tag_count(self) -> int:
        n = self.uvarint()
        if n > len(self.buf) - self.pos:
            raise MalformedBytes(f"{n} tagged fields cannot fit at position {self.pos}")
        return n

    def end(self) -> None:
        if self.pos != len(self.buf):
            raise MalformedBytes(f"{len(self.buf) - self.pos} unexpected trailing bytes")


def decode_key(key: bytes) -> OffsetCommitKey | GroupMetadataKey | CoordinatorKey | UnknownRecord:
    """Decode a record key; raises MalformedBytes on broken bytes."""
    r = _Reader(key)
    version = r.i16()
    schema = SCHEMAS.get(version)
    if schema is not None:
        fields = decode_struct(r, schema.key)
        r.end()
        return CoordinatorKey(version, fields)
    if version in OFFSET_COMMIT_KEY_VERSIONS:
        group, topic, partition = r.string(), r.string(), r.i32()
        r.end()
        return OffsetCommitKey(group, topic, partition, version)  # type: ignore[arg-type]
    if version == GROUP_METADATA_KEY_VERSION:
        group = r.string()
        r.end()
        return GroupMetadataKey(group, version)  # type: ignore[arg-type]
    return UnknownRecord("key", version)


def _offset_commit_value(value: bytes) -> OffsetCommitValue | UnknownRecord:
    r = _Reader(value)
    v = r.i16()
    if v not in OFFSET_COMMIT_VALUE_VERSIONS:
        return UnknownRecord("value", v)
    flex = v >= FLEXIBLE_VALUE_VERSION
    offset = r.i64()
    epoch = r.i32() if v >= 3 else -1
    metadata = r.string(flexible=flex)
    commit_ts = r.i64()
    expire_ts = r.i64() if v == 1 else -1
    tagged = r.tagged_fields() if flex else ()
    r.end()
    return OffsetCommitValue(offset=offset, metadata=metadata, commit_timestamp=commit_ts,  # type: ignore[arg-type]
                             leader_epoch=epoch, expire_timestamp=expire_ts, version=v,
                             tagged_fields=tagged)


def _member(r: _Reader, v: int) -> MemberMetadata:
    flex = v >= FLEXIBLE_VALUE_VERSION
    member_id = r.string(flexible=flex)
    instance = r.string(flexible=flex, nullable=True) if v >= 3 else None
    client_id = r.string(flexible=flex)
    client_host = r.string(flexible=flex)
    rebalance = r.i32() if v >= 1 else -1
    session = r.i32()
    subscription = r.bytes_(flexible=flex)
    assignment = r.bytes_(flexible=flex)
    tagged = r.tagged_fields() if flex else ()
    return MemberMetadata(member_id=member_id, client_id=client_id, client_host=client_host,  # type: ignore[arg-type]
                          session_timeout=session, subscription=subscription,
                          assignment=assignment, group_instance_id=instance,
                          rebalance_timeout=rebalance, tagged_fields=tagged)


def _group_metadata_value(value: bytes) -> GroupMetadataValue | UnknownRecord:
    r = _Reader(value)
    v = r.i16()
    if v not in GROUP_METADATA_VALUE_VERSIONS:
        return UnknownRecord("value", v)
    flex = v >= FLEXIBLE_VALUE_VERSION
    protocol_type = r.string(flexible=flex)
    generation = r.i32()
    protocol = r.string(flexible=flex, nullable=True)
    leader = r.string(flexible=flex, nullable=True)
    state_ts = r.i64() if v >= 2 else -1
    members = tuple(_member(r, v) for _ in range(r.array_len(flexible=flex)))
    tagged = r.tagged_fields() if flex else ()
    r.end()
    return GroupMetadataValue(protocol_type=protocol_type, generation=generation,  # type: ignore[arg-type]
                              protocol=protocol, leader=leader, members=members,
                              current_state_timestamp=state_ts, version=v, tagged_fields=tagged)


def decode_record(key: bytes | None, value: bytes | None) -> DecodedRecord:
    """Decode one `__consumer_offsets` record. Never raises (see the module docstring)."""
    if key is None:
        return MalformedRecord("key", "null key")
    try:
        k = decode_key(key)
    except MalformedBytes as exc:
        return MalformedRecord("key", f"key: {exc}")
    except Exception as exc:  # the contract is "never raises"
        return MalformedRecord("key", f"key: {type(exc).__name__}: {exc}")
    if isinstance(k, UnknownRecord):
        return k
    try:
        if isinstance(k, CoordinatorKey):
            return _coordinator_record(k, value)
        if isinstance(k, OffsetCommitKey):
            if value is None:
                return OffsetCommitRecord(k, None)
            v = _offset_commit_value(value)
            if isinstance(v, UnknownRecord):
                return UnknownRecord("value", v.version, k.group)
            return OffsetCommitRecord(k, v)
        if value is None:
            return GroupMetadataRecord(k, None)
        g = _group_metadata_value(value)
        if isinstance(g, UnknownRecord):
            return UnknownRecord("value", g.version, k.group)
        return GroupMetadataRecord(k, g)
    except MalformedBytes as exc:
        return MalformedRecord("value", f"value: {exc}")
    except Exception as exc:  # the contract is "never raises"
        return MalformedRecord("value", f"value: {type(exc).__name__}: {exc}")


def _coordinator_record(k: CoordinatorKey, value: bytes | None) -> CoordinatorRecord | UnknownRecord:
    if value is None:
        return CoordinatorRecord(k, None)
    r = _Reader(value)
    v = r.i16()
    schemas = SCHEMAS[k.record_type].values
    if not 0 <= v < len(schemas):
        return UnknownRecord("value", v, k.group)
    fields = decode_struct(r, schemas[v])
    r.end()
    return CoordinatorRecord(k, fields, v)


# -- the consumer protocol (inside GroupMetadataValue members) ------------------------------------

def _topic_partitions(r: _Reader) -> tuple[TopicPartitions, ...]:
    out = []
    for _ in range(r.array_len()):
        topic = r.string()
        parts = tuple(r.i32() for _ in range(r.array_len()))
        out.append(TopicPartitions(topic, parts))  # type: ignore[arg-type]
    return tuple(out)


def decode_subscription(data: bytes) -> Subscription:
    """Decode ConsumerProtocolSubscription; raises MalformedBytes.

    Like Kafka's consumer, a version newer than 3 is read with the v3 layout and trailing bytes
    are ignored (the protocol promises new versions only append fields).
    """
    r = _Reader(data)
    v = r.i16()
    if v < 0:
        raise MalformedBytes(f"subscription version {v}")
    topics = tuple(r.string() for _ in range(r.array_len()))  # type: ignore[misc]
    user_data = r.bytes_(nullable=True)
    owned = _topic_partitions(r) if v >= 1 else ()
    generation = r.i32() if v >= 2 else -1
    rack = r.string(nullable=True) if v >= 3 else None
    if v in CONSUMER_PROTOCOL_VERSIONS:
        r.end()
    return Subscription(topics=topics, user_data=user_data, owned_partitions=owned,
                        generation_id=generation, rack_id=rack, version=v)


def decode_assignment(data: bytes) -> Assignment:
    """Decode ConsumerProtocolAssignment; raises MalformedBytes (newer versions as v3)."""
    r = _Reader(data)
    v = r.i16()
    if v < 0:
        raise MalformedBytes(f"assignment version {v}")
    parts = _topic_partitions(r)
    user_data = r.bytes_(nullable=True)
    if v in CONSUMER_PROTOCOL_VERSIONS:
        r.end()
    return Assignment(partitions=parts, user_data=user_data, version=v)


# -- where a group lives ---------------------------------------------------------------------------

def java_string_hash(s: str) -> int:
    """Java's `String.hashCode()` (over UTF-16 code units, 32-bit signed)."""
    h = 0
    data = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for_group(group: str, partitions: int) -> int:
    """The `__consumer_offsets` partition holding `group`: Kafka's
    `Utils.abs(groupId.hashCode()) % partitions` (Utils.abs maps MIN_VALUE to 0, not negative)."""
    h = java_string_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % partitions
