"""The group coordinator's newer record types (KIP-848 consumer groups 3-8 and 16, share groups
9-15, streams groups 17-24): bytes laid out by hand from the schemas, bytes a real Kafka 4.3.1
broker wrote, encode/decode round trips of every type (property-tested), the decoded rows, and
the membership history replayed from them."""

from __future__ import annotations

import json
import struct

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetkeeper.offsetlog.batch import record_row
from offsetkeeper.offsetlog.coordinator import SCHEMAS, A, N, S, uuid_str
from offsetkeeper.offsetlog.decode import decode_record
from offsetkeeper.offsetlog.encode import encode_key, encode_value
from offsetkeeper.offsetlog.records import (
    CoordinatorKey,
    CoordinatorRecord,
    GroupMetadataValue,
    MalformedRecord,
    MemberMetadata,
    UnknownRecord,
)

TOPIC_ID = bytes(range(16))


def _cs(s: str) -> bytes:  # compact string
    return bytes([len(s) + 1]) + s.encode()


def _s(s: str) -> bytes:  # int16-length string (keys)
    return struct.pack(">h", len(s)) + s.encode()


def test_every_record_type_of_the_issue_has_a_schema():
    assert sorted(SCHEMAS) == list(range(3, 25))
    assert SCHEMAS[3].name == "consumer_group_metadata"
    assert SCHEMAS[16].name == "consumer_group_regular_expression"
    assert SCHEMAS[23].name == "streams_group_topology"


def test_current_member_assignment_from_bytes_laid_out_by_hand():
    """ConsumerGroupCurrentMemberAssignmentKey/Value v0, written field by field from the schema:
    key int16 type 8, group and member as int16 strings; value int16 version 0, member epoch,
    previous epoch, state int8, two compact arrays of (uuid, compact int32 array, tags), tags."""
    key = struct.pack(">h", 8) + _s("payments") + _s("m-1")
    value = (struct.pack(">hiib", 0, 7, 6, 1)
             + b"\x02" + TOPIC_ID + b"\x03" + struct.pack(">ii", 0, 2) + b"\x00"   # assigned
             + b"\x02" + TOPIC_ID + b"\x02" + struct.pack(">i", 1) + b"\x00"       # revoking
             + b"\x00")
    rec = decode_record(key, value)
    assert isinstance(rec, CoordinatorRecord) and rec.kind == "consumer_group_current_member_assignment"
    assert rec.key.group == "payments" and rec.key.fields["member_id"] == "m-1"
    tid = uuid_str(TOPIC_ID)
    assert rec.value == {"member_epoch": 7, "previous_member_epoch": 6, "state": 1,
                         "assigned_partitions": ({"topic_id": tid, "partitions": (0, 2)},),
                         "partitions_pending_revocation": ({"topic_id": tid, "partitions": (1,)},)}
    assert encode_key(rec.key) == key and encode_value(rec) == value
    assert decode_record(key, None) == CoordinatorRecord(rec.key, None)   # tombstone


def test_group_metadata_with_its_tagged_metadata_hash():
    key = struct.pack(">h", 3) + _s("g")
    value = struct.pack(">hi", 0, 5) + b"\x01\x00\x08" + struct.pack(">q", 1234)
    rec = decode_record(key, value)
    assert rec.value == {"epoch": 5, "metadata_hash": 1234}
    assert decode_record(key, struct.pack(">hi", 0, 5) + b"\x00").value == {"epoch": 5}


# Bytes an Apache Kafka 4.3.1 broker wrote for a confluent-kafka consumer with
# group.protocol=consumer (ConsumerGroupMemberMetadataValue v0: the tagged classic member
# metadata present as Kafka's null marker).
REAL_MEMBER_VALUE = bytes.fromhex("000000000872646b61666b610b2f3132372e302e302e31020e7265616c2d62346135"
                                  "3335396401000493e00001000100")


def test_member_metadata_written_by_kafka_4_3_1():
    key = encode_key(CoordinatorKey(5, {"group_id": "consumer-b4a5359d",
                                        "member_id": "+fMLHVbwSo+tFyJCjEM9iw"}))
    rec = decode_record(key, REAL_MEMBER_VALUE)
    assert rec.value == {"instance_id": None, "rack_id": None, "client_id": "rdkafka",
                         "client_host": "/127.0.0.1", "subscribed_topic_names": ("real-b4a5359d",),
                         "subscribed_topic_regex": "", "rebalance_timeout_ms": 300000,
                         "server_assignor": None, "classic_member_metadata": None}
    assert encode_value(rec) == REAL_MEMBER_VALUE
    row = record_row(rec)
    assert (row["kind"], row["key_version"], row["group"], row["member_id"], row["tombstone"]) == \
        ("consumer_group_member_metadata", 5, "consumer-b4a5359d", "+fMLHVbwSo+tFyJCjEM9iw", False)
    assert json.loads(row["fields"])["subscribed_topic_names"] == ["real-b4a5359d"]


def test_regex_record_keeps_its_expression_as_the_record_key():
    k = CoordinatorKey(16, {"group_id": "g", "regular_expression": "orders-.*"})
    rec = CoordinatorRecord(k, {"topics": ("orders-1",), "version": 3, "timestamp": 9})
    back = decode_record(encode_key(k), encode_value(rec))
    assert back == rec
    assert json.loads(record_row(back)["record_key"]) == {"regular_expression": "orders-.*"}


# -- every type, property-tested -----------------------------------------------------------------

_text = st.text(max_size=12)
_prims = {"int8": st.integers(-128, 127), "int16": st.integers(-(2**15), 2**15 - 1),
          "uint16": st.integers(0, 2**16 - 1), "int32": st.integers(-(2**31), 2**31 - 1),
          "int64": st.integers(-(2**63), 2**63 - 1), "bool": st.booleans(),
          "uuid": st.binary(min_size=16, max_size=16).map(uuid_str), "string": _text,
          "cstring": _text, "cstring?": st.none() | _text, "cbytes": st.binary(max_size=8),
          "cbytes?": st.none() | st.binary(max_size=8)}


def _strategy(t):
    if isinstance(t, S):
        fixed = {name: _strategy(ft) for name, ft in t.fields}
        optional = {name: _strategy(ft) for _, name, ft in t.tagged}

        @st.composite
        def build(draw):
            out = {k: draw(v) for k, v in fixed.items()}
            for k, v in optional.items():
                x = draw(st.none() | v)
                if x is not None:
                    out[k] = x
            return out
        return build()
    if isinstance(t, N):
        return st.none() | _strategy(t.struct)
    if isinstance(t, A):
        arr = st.lists(_strategy(t.element), max_size=3).map(tuple)
        return (st.none() | arr) if t.nullable else arr
    return _prims[t]


@st.composite
def coordinator_records(draw):
    schema = SCHEMAS[draw(st.sampled_from(sorted(SCHEMAS)))]
    key = CoordinatorKey(schema.record_type, draw(_strategy(schema.key)))
    version = draw(st.integers(0, len(schema.values) - 1))
    value = draw(st.none() | _strategy(schema.values[version]))
    return CoordinatorRecord(key, value, version if value is not None else 0)


@settings(max_examples=400, deadline=None)
@given(coordinator_records())
def test_round_trip_of_every_record_type(rec):
    """Invariant: decode(encode(r)) == r for every record type and version of the schemas."""
    back = decode_record(encode_key(rec.key), encode_value(rec))
    assert back == rec
    row = record_row(back)
    assert row["kind"] == SCHEMAS[rec.key.record_type].name and row["tombstone"] == rec.tombstone


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(SCHEMAS)), st.binary(max_size=60), st.none() | st.binary(max_size=80))
def test_random_bytes_of_every_record_type_never_raise(record_type, key_rest, value):
    rec = decode_record(struct.pack(">h", record_type) + key_rest, value)
    assert isinstance(rec, CoordinatorRecord | MalformedRecord | UnknownRecord)


@settings(max_examples=100, deadline=None)
@given(coordinator_records(), st.integers(1, 30000))
def test_unknown_value_versions_are_counted_not_decoded(rec, version):
    if rec.value is None or version < len(SCHEMAS[rec.key.record_type].values):
        return
    raw = struct.pack(">h", version) + encode_value(rec)[2:]
    assert decode_record(encode_key(rec.key), raw) == UnknownRecord("value", version, rec.key.group)


def test_rebalance_timeout_minus_one_is_stored_as_minus_one():
    """Regression: a member's rebalance timeout of -1 (v0 records, and the schema default) was
    stored as null; it is the value -1."""
    from offsetkeeper.offsetlog.records import GroupMetadataKey, GroupMetadataRecord

    m = MemberMetadata("m", "c", "h", 10, b"", b"", rebalance_timeout=-1)
    row = record_row(GroupMetadataRecord(GroupMetadataKey("g"),
                                         GroupMetadataValue("connect", 1, "p", "m", (m,))))
    assert row["members"][0]["rebalance_timeout"] == -1


# -- membership history ---------------------------------------------------------------------------

def _history(tmp_path, records, topic_names=None):
    """A scan directory holding these coordinator records (in this log order)."""
    from offsetkeeper.offsetlog.scan import COORDINATOR_COLUMNS, ScanSummary

    rows = []
    for i, (ts, rec) in enumerate(records):
        r = record_row(decode_record(encode_key(rec.key), encode_value(rec)))
        rows.append({"group": r["group"], "kind": r["kind"], "record_type": r["key_version"],
                     "member_id": r.get("member_id"), "record_key": r.get("record_key"),
                     "value_version": r.get("value_version"), "tombstone": r["tombstone"],
                     "fields": r.get("fields"), "source_partition": 7, "source_offset": i,
                     "record_timestamp": ts})
    if rows:
        (tmp_path / "coordinator").mkdir()
        pq.write_table(pa.Table.from_pylist(rows).select(list(COORDINATOR_COLUMNS)),
                       tmp_path / "coordinator" / "part-0.parquet")
    summary = ScanSummary(source="test", scanned_at="", scanned_at_ms=0, group=None,
                          source_partitions=None, records=len(rows), offset_commits=0,
                          offset_tombstones=0, group_metadata=0, group_tombstones=0, skipped=[],
                          errors=0, error_samples=[], topic_names=topic_names or {})
    (tmp_path / "scan.json").write_text(summary.to_json())
    return str(tmp_path)


def _member(g, m, topics, client="app"):
    return CoordinatorRecord(CoordinatorKey(5, {"group_id": g, "member_id": m}), {
        "instance_id": None, "rack_id": None, "client_id": client, "client_host": "/10.0.0.1",
        "subscribed_topic_names": tuple(topics), "subscribed_topic_regex": None,
        "rebalance_timeout_ms": 300000, "server_assignor": "uniform"})


def _epoch(g, e):
    return CoordinatorRecord(CoordinatorKey(3, {"group_id": g}), {"epoch": e})


def _current(g, m, epoch, prev, parts, revoking=()):
    tid = uuid_str(TOPIC_ID)
    return CoordinatorRecord(CoordinatorKey(8, {"group_id": g, "member_id": m}), {
        "member_epoch": epoch, "previous_member_epoch": prev, "state": 1 if revoking else 0,
        "assigned_partitions": ({"topic_id": tid, "partitions": tuple(parts)},) if parts else (),
        "partitions_pending_revocation": ({"topic_id": tid, "partitions": tuple(revoking)},)
        if revoking else ()})


def _gone(rec):
    return CoordinatorRecord(rec.key, None)


@pytest.fixture
def membership(tmp_path):
    g = "payments"
    recs = [
        (1000, _member(g, "m1", ["orders"])), (1000, _epoch(g, 1)),
        (1001, _current(g, "m1", 1, 0, [0, 1])),
        (2000, _member(g, "m2", ["orders"], client="app-2")), (2000, _epoch(g, 2)),
        (2001, _current(g, "m1", 2, 1, [0], revoking=[1])),
        (2002, _current(g, "m2", 2, 0, [1])),
        (3000, _gone(_member(g, "m1", []))), (3000, _epoch(g, 3)),
        (3_600_000 * 5, _member(g, "m2", ["orders", "refunds"], client="app-2")),
        (3_600_000 * 5, _epoch(g, 4)),
    ]
    return _history(tmp_path, recs, {uuid_str(TOPIC_ID): "orders"})


def test_membership_history_events(membership):
    from offsetkeeper.offsetlog.membership import membership_rows

    rows = membership_rows(membership, "payments")
    got = [(r["generation"], r["state"], r["member"], r["subscribed"], r["assigned"]) for r in rows]
    assert got == [
        (None, "joined", "m1", "orders", None),
        (1, "group epoch 1 (consumer group, 1 member)", None, None, None),
        (1, "member epoch 0 -> 1, stable", "m1", None, "orders:0/1"),
        (1, "joined", "m2", "orders", None),
        (2, "group epoch 2 (consumer group, 2 members)", None, None, None),
        (2, "member epoch 1 -> 2, revoking, revoking orders:1", "m1", None, "orders:0"),
        (2, "member epoch 0 -> 2, stable", "m2", None, "orders:1"),
        (2, "left", "m1", None, None),
        (3, "group epoch 3 (consumer group, 1 member)", None, None, None),
        (3, "subscription changed", "m2", "orders,refunds", None),
        (4, "group epoch 4 (consumer group, 1 member)", None, None, None),
    ]
    assert rows[0]["time"] == 1000 and rows[3]["client"] == "app-2"


def test_member_summary(membership):
    from offsetkeeper.offsetlog.membership import member_rows

    got = [(r["member"], r["joined"], r["left"], r["first_epoch"], r["last_epoch"],
            r["assignments"], r["subscribed"], r["assigned"]) for r in member_rows(membership, "payments")]
    assert got == [
        ("m1", 1000, 3000, 1, 2, 2, "orders", "orders:0"),
        ("m2", 2000, None, 2, 2, 1, "orders,refunds", "orders:1"),
    ]


def test_rebalances_are_new_group_epochs_with_their_members(membership):
    from offsetkeeper.offsetlog.analytics import _epoch_rebalances

    assert sorted((r["hour"], r["rebalances"], r["generations"], r["max_members"])
                  for r in _epoch_rebalances(membership, "payments")) == [
        (0, 3, "1,2,3", 2), (5 * 3_600_000, 1, "4", 1)]


def test_a_scan_without_the_coordinator_table_has_no_membership(tmp_path):
    from offsetkeeper.offsetlog.membership import membership_rows, rebalance_events

    out = _history(tmp_path, [])   # a scan made before the table existed
    assert membership_rows(out, "g") == [] and rebalance_events(out) == []


def test_regex_resolution_is_an_event(tmp_path):
    from offsetkeeper.offsetlog.membership import membership_rows

    regex = CoordinatorRecord(CoordinatorKey(16, {"group_id": "g", "regular_expression": "^o.*"}),
                              {"topics": ("orders", "outbox"), "version": 1, "timestamp": 5})
    member = _member("g", "m1", [])
    member.value["subscribed_topic_regex"] = "^o.*"
    out = _history(tmp_path, [(1, member), (2, regex)])
    assert [(r["state"], r["subscribed"]) for r in membership_rows(out, "g")] == [
        ("joined", "/^o.*/"), ("regex /^o.*/ resolved", "orders,outbox")]


def _rows(records):
    """Coordinator and classic group rows, as a scan writes them, of records in log order:
    each encoded as Kafka writes it to __consumer_offsets, decoded back by the scan's decoder."""
    from offsetkeeper.offsetlog.scan import COORDINATOR_COLUMNS, GROUP_COLUMNS

    coordinator, classic = [], []
    for i, (ts, key, value) in enumerate(records):
        r = record_row(decode_record(encode_key(key), encode_value(value) if value is not None
                                     else None))
        r.update(record_type=r["key_version"], source_partition=7, source_offset=i,
                 record_timestamp=ts)
        if r["kind"] == "group_metadata":
            classic.append({c: r.get(c) for c in GROUP_COLUMNS})
        else:
            coordinator.append({c: r.get(c) for c in COORDINATOR_COLUMNS})
    return coordinator, classic


def test_a_classic_member_of_a_group_that_converted_back_has_not_left():
    """Invariant (issue 31 item 11f): `commits generations --members` shows a member as left
    only when it left. A classic member of a group that converted to the consumer protocol
    and back (its last consumer-protocol member left) stays: the conversion tombstones every
    member's consumer records, then writes a classic group-metadata record that still lists
    it. It leaves when a later classic record no longer lists it."""
    from offsetkeeper.offsetlog.encode import encode_assignment, encode_subscription
    from offsetkeeper.offsetlog.membership import replay_members
    from offsetkeeper.offsetlog.records import (
        Assignment,
        GroupMetadataKey,
        Subscription,
        TopicPartitions,
    )

    g = "payments"
    old = MemberMetadata("old-1", "classic-app", "/10.0.0.1", 45_000,
                         encode_subscription(Subscription(("orders",), None, (), -1, None, 1)),
                         encode_assignment(Assignment((TopicPartitions("orders", (0, 1)),),
                                                      None, 1)), None, 300_000)

    def classic(members, generation):
        return GroupMetadataKey(g), GroupMetadataValue("consumer", generation, "range",
                                                       members[0].member_id if members else None,
                                                       tuple(members), 0, 3)

    def rec(c):
        return c.key, c

    def gone(c):
        return c.key, None

    log = [
        (1000, *classic([old], 1)),                         # a classic group, one member
        # a consumer-protocol member joins: the group converts, both members get consumer records
        (2000, *rec(_member(g, "old-1", ["orders"], client="classic-app"))),
        (2000, *rec(_member(g, "new-1", ["orders"], client="new-app"))),
        (2000, *rec(_epoch(g, 2))),
        (2000, *rec(_current(g, "old-1", 2, 1, [0]))), (2000, *rec(_current(g, "new-1", 2, 0, [1]))),
        (2000, GroupMetadataKey(g), None),                    # the classic record's tombstone
        # the consumer-protocol member leaves: back to classic, every consumer record tombstoned
        (3000, *gone(_current(g, "new-1", 2, 0, [1]))), (3000, *gone(_member(g, "new-1", []))),
        (3000, *gone(_current(g, "old-1", 2, 1, [0]))), (3000, *gone(_member(g, "old-1", []))),
        (3000, *gone(_epoch(g, 2))),
        (3000, *classic([old], 3)),                         # ... and old-1 is still a member
    ]
    left = {r["member"]: r["left"] for r in replay_members(*_rows(log), {})}
    assert left == {"old-1": None, "new-1": 3000}
    # old-1 leaves the classic group later: left then, not at the conversion
    left = {r["member"]: r["left"] for r in replay_members(*_rows([*log, (9000, *classic([], 4))]), {})}
    assert left == {"old-1": 9000, "new-1": 3000}
