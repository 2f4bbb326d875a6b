"""The `__consumer_offsets` decoder: every key and value version, tombstones, group metadata with
members and their consumer-protocol bytes; unknown versions skipped; random bytes never raise."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetkeeper.offsetlog.decode import (
    decode_assignment,
    decode_record,
    decode_subscription,
    java_string_hash,
    partition_for_group,
)
from offsetkeeper.offsetlog.encode import (
    encode_assignment,
    encode_key,
    encode_subscription,
    encode_value,
)
from offsetkeeper.offsetlog.records import (
    Assignment,
    GroupMetadataKey,
    GroupMetadataRecord,
    GroupMetadataValue,
    MalformedRecord,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitRecord,
    OffsetCommitValue,
    RecordKind,
    Subscription,
    TopicPartitions,
    UnknownRecord,
)

# -- strategies ------------------------------------------------------------------------------------
names = st.text(min_size=0, max_size=40)  # any Unicode, incl. quotes, newlines, surrogate-free
i32 = st.integers(-(2**31), 2**31 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)
tagged = st.lists(st.tuples(st.integers(0, 300), st.binary(max_size=20)), max_size=3,
                  unique_by=lambda t: t[0]).map(lambda xs: tuple(sorted(xs)))


@st.composite
def offset_commit_values(draw, version=None):
    v = draw(st.sampled_from([0, 1, 2, 3, 4])) if version is None else version
    return OffsetCommitValue(
        offset=draw(i64), metadata=draw(names), commit_timestamp=draw(i64),
        leader_epoch=draw(i32) if v >= 3 else -1,
        expire_timestamp=draw(i64) if v == 1 else -1, version=v,
        tagged_fields=draw(tagged) if v >= 4 else ())


@st.composite
def members(draw, version):
    return MemberMetadata(
        member_id=draw(names), client_id=draw(names), client_host=draw(names),
        session_timeout=draw(i32), subscription=draw(st.binary(max_size=60)),
        assignment=draw(st.binary(max_size=60)),
        group_instance_id=draw(st.none() | names) if version >= 3 else None,
        rebalance_timeout=draw(i32) if version >= 1 else -1,
        tagged_fields=draw(tagged) if version >= 4 else ())


@st.composite
def group_values(draw, version=None):
    v = draw(st.sampled_from([0, 1, 2, 3, 4])) if version is None else version
    return GroupMetadataValue(
        protocol_type=draw(names), generation=draw(i32), protocol=draw(st.none() | names),
        leader=draw(st.none() | names), members=tuple(draw(st.lists(members(v), max_size=4))),
        current_state_timestamp=draw(i64) if v >= 2 else -1, version=v,
        tagged_fields=draw(tagged) if v >= 4 else ())


topic_parts = st.lists(st.builds(TopicPartitions, names, st.lists(i32, max_size=5).map(tuple)),
                       max_size=4).map(tuple)


@st.composite
def subscriptions(draw):
    v = draw(st.sampled_from([0, 1, 2, 3]))
    return Subscription(topics=tuple(draw(st.lists(names, max_size=4))),
                        user_data=draw(st.none() | st.binary(max_size=20)),
                        owned_partitions=draw(topic_parts) if v >= 1 else (),
                        generation_id=draw(i32) if v >= 2 else -1,
                        rack_id=draw(st.none() | names) if v >= 3 else None, version=v)


assignments = st.builds(Assignment, topic_parts, st.none() | st.binary(max_size=20),
                        st.sampled_from([0, 1, 2, 3]))


# -- round trips -----------------------------------------------------------------------------------
@pytest.mark.parametrize("value_version", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("key_version", [0, 1])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_offset_commit_round_trip_every_version(key_version, value_version, data):
    key = OffsetCommitKey(data.draw(names), data.draw(names), data.draw(i32), key_version)
    value = data.draw(offset_commit_values(value_version))
    assert decode_record(encode_key(key), encode_value(value)) == OffsetCommitRecord(key, value)


@pytest.mark.parametrize("value_version", [0, 1, 2, 3, 4])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_group_metadata_round_trip_every_version(value_version, data):
    key = GroupMetadataKey(data.draw(names))
    value = data.draw(group_values(value_version))
    assert decode_record(encode_key(key), encode_value(value)) == GroupMetadataRecord(key, value)


@given(subscriptions())
def test_subscription_round_trip(s):
    assert decode_subscription(encode_subscription(s)) == s


@given(assignments)
def test_assignment_round_trip(a):
    assert decode_assignment(encode_assignment(a)) == a


def test_tombstones():
    k = OffsetCommitKey("g", "orders", 3, 1)
    g = GroupMetadataKey("g")
    rec = decode_record(encode_key(k), None)
    assert rec == OffsetCommitRecord(k, None) and rec.tombstone and rec.kind is RecordKind.OFFSET_COMMIT
    rec = decode_record(encode_key(g), None)
    assert rec == GroupMetadataRecord(g, None) and rec.tombstone


# -- independent byte vectors (not produced by our encoder) -----------------------------------------
def test_value_v3_matches_a_hand_built_vector():
    """Burrow's v3 test vector (offset 8372, epoch 0, metadata 'testdata', timestamp 1637), with the
    version prefix."""
    raw = b"\x00\x03" + b"\x00\x00\x00\x00\x00\x00\x20\xb4\x00\x00\x00\x00\x00\x08testdata" \
        b"\x00\x00\x00\x00\x00\x00\x06\x65"
    key = struct.pack(">h", 1) + struct.pack(">h", 1) + b"g" + struct.pack(">h", 1) + b"t" + struct.pack(">i", 7)
    rec = decode_record(key, raw)
    assert rec == OffsetCommitRecord(OffsetCommitKey("g", "t", 7, 1),
                                     OffsetCommitValue(8372, "testdata", 1637, 0, -1, 3))


def test_value_v4_flexible_hand_built():
    """v4: compact string (uvarint len+1) and a tagged-field section that is skipped."""
    raw = (struct.pack(">hqi", 4, 42, 5) + bytes([4]) + b"abc" + struct.pack(">q", 1700)
           + bytes([1, 0, 2]) + b"\xff\xee")  # one tagged field: tag 0, 2 bytes
    rec = decode_record(encode_key(OffsetCommitKey("g", "t", 0)), raw)
    assert isinstance(rec, OffsetCommitRecord)
    assert (rec.value.offset, rec.value.leader_epoch, rec.value.metadata, rec.value.commit_timestamp) \
        == (42, 5, "abc", 1700)
    assert rec.value.tagged_fields == ((0, b"\xff\xee"),)


def test_group_metadata_members_consumer_protocol():
    sub = Subscription(("orders", "pay\nments"), None, (TopicPartitions("orders", (0, 1)),), 7, "rack-a", 3)
    asg = Assignment((TopicPartitions("orders", (0, 1, 2)),), b"ud", 2)
    m = MemberMetadata("consumer-1-abc", "consumer-1", "/10.0.0.1", 45000, encode_subscription(sub),
                       encode_assignment(asg), "instance-1", 300000)
    value = GroupMetadataValue("consumer", 12, "range", "consumer-1-abc", (m,), 1_700_000_000_000, 3)
    rec = decode_record(encode_key(GroupMetadataKey("payments")), encode_value(value))
    assert isinstance(rec, GroupMetadataRecord)
    member = rec.value.members[0]
    assert decode_subscription(member.subscription) == sub
    assert decode_assignment(member.assignment) == asg


# -- unknown and malformed -------------------------------------------------------------------------
@pytest.mark.parametrize("key_version", [25, 26, 99, -1, 32767])
def test_unknown_key_versions_are_skipped(key_version):
    rec = decode_record(struct.pack(">h", key_version) + b"whatever", b"\x00\x00")
    assert rec == UnknownRecord("key", key_version)
    assert rec.kind is RecordKind.UNKNOWN


@pytest.mark.parametrize("value_version", [5, 9, -2])
def test_unknown_value_versions_are_skipped(value_version):
    key = encode_key(OffsetCommitKey("g", "t", 0))
    assert decode_record(key, struct.pack(">h", value_version) + b"\x00" * 30) == \
        UnknownRecord("value", value_version, "g")
    gkey = encode_key(GroupMetadataKey("g"))
    assert decode_record(gkey, struct.pack(">h", value_version)) == UnknownRecord("value", value_version, "g")


@pytest.mark.parametrize(("key", "value", "part"), [
    (None, b"\x00\x00", "key"),
    (b"", None, "key"),
    (b"\x00", None, "key"),
    (b"\x00\x01\x00\x05ab", None, "key"),  # group length 5, 2 bytes
    (b"\x00\x02\x00\x01g\x00", None, "key"),  # trailing byte
    (b"\x00\x02\x00\x02\xff\xfe", None, "key"),  # not UTF-8
    (b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x01", b"\x00\x03\x00", "value"),
    (b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x01", b"\x00\x04" + b"\x00" * 12 + b"\x00", "value"),  # null compact string
])
def test_malformed_bytes_are_a_value_not_an_exception(key, value, part):
    rec = decode_record(key, value)
    assert isinstance(rec, MalformedRecord)
    assert rec.part == part and rec.reason


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.none(), st.binary(max_size=64)), st.one_of(st.none(), st.binary(max_size=64)))
def test_random_bytes_never_raise(key, value):
    rec = decode_record(key, value)
    assert rec.kind in set(RecordKind)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([0, 1, 2]), st.integers(0, 4), st.binary(max_size=40))
def test_valid_prefix_with_random_tail_never_raises(key_version, value_version, tail):
    key = encode_key(OffsetCommitKey("g", "t", 1, key_version) if key_version < 2 else GroupMetadataKey("g"))
    rec = decode_record(key, struct.pack(">h", value_version) + tail)
    assert rec.kind in (RecordKind.OFFSET_COMMIT, RecordKind.GROUP_METADATA, RecordKind.ERROR)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_random_protocol_bytes_raise_only_malformed(data):
    from offsetkeeper.offsetlog.decode import MalformedBytes

    for fn in (decode_subscription, decode_assignment):
        with contextlib.suppress(MalformedBytes):
            fn(data)


# -- where a group lives ---------------------------------------------------------------------------
@pytest.mark.parametrize(("s", "h"), [
    ("", 0), ("a", 97), ("hello", 99162322), ("console-consumer-12345", None),
    ("ü€😀", None),
])
def test_java_string_hash(s, h):
    expected = 0
    for unit in [int.from_bytes(s.encode("utf-16-be")[i:i + 2], "big")
                 for i in range(0, len(s.encode("utf-16-be")), 2)]:
        expected = (expected * 31 + unit) & 0xFFFFFFFF
    expected = expected - 2**32 if expected >= 2**31 else expected
    assert java_string_hash(s) == expected
    if h is not None:
        assert java_string_hash(s) == h


def test_partition_for_group_uses_kafka_abs():
    """Utils.abs: a negative hash is made positive (not masked); Integer.MIN_VALUE maps to 0."""
    # "polygenelubricants" hashes to Integer.MIN_VALUE in Java.
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert partition_for_group("polygenelubricants", 50) == 0
    neg = next(g for g in (f"payments-consumer-group-{i}" for i in range(1000))
               if java_string_hash(g) < 0 and (java_string_hash(g) & 0x7FFFFFFF) % 50 != abs(java_string_hash(g)) % 50)
    assert partition_for_group(neg, 50) == abs(java_string_hash(neg)) % 50
