"""A small, realistic `__consumer_offsets` log built with the encoder, for tests and the demo.

A broker writes only the record kinds and versions of its own release into `__consumer_offsets`,
so this log is produced into an ordinary topic (each group's records into the partition Kafka
would use) and scanned like the real one. It holds every key and value version, tombstones, group metadata with members,
a REWIND, an offset beyond the log end, an expired group, a KIP-848 consumer group's membership
records (`<active group>-kip848`: two members join, one leaves), and records to skip.
"""

from __future__ import annotations

from dataclasses import dataclass

from offsetkeeper.offsetlog.decode import partition_for_group
from offsetkeeper.offsetlog.encode import (
    encode_assignment,
    encode_key,
    encode_subscription,
    encode_value,
)
from offsetkeeper.offsetlog.records import (
    Assignment,
    CoordinatorKey,
    CoordinatorRecord,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    Subscription,
    TopicPartitions,
)

MINUTE = 60_000


@dataclass(frozen=True)
class SampleRecord:
    """One record to produce: where, its bytes, its timestamp, and what it means."""

    partition: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    meaning: object = None  # the key/value objects, or a string for noise


def _member(member_id: str, topic: str, partitions: tuple[int, ...], version: int) -> MemberMetadata:
    sub = Subscription((topic,), None, (), -1, None, 1)
    asg = Assignment((TopicPartitions(topic, partitions),), None, 1)
    return MemberMetadata(member_id, member_id.rsplit("-", 1)[0], "/127.0.0.1", 45_000,
                          encode_subscription(sub), encode_assignment(asg),
                          None, 300_000 if version >= 1 else -1)


# A topic id for the KIP-848 records (URL-safe base64 of 16 bytes); the demo passes the real one.
SAMPLE_TOPIC_ID = "AAECAwQFBgcICQoLDA0ODw"


def kip848_records(group: str, topic: str, topic_id: str,
                   t0: int) -> list[tuple[int, CoordinatorRecord]]:
    """A consumer-protocol group's records as Kafka 4 writes them: two members join (each
    bumping the group epoch), the target and current assignments follow, the first leaves."""
    m = MINUTE

    def rec(record_type, value, member=None):
        fields = {"group_id": group} if member is None else {"group_id": group, "member_id": member}
        return CoordinatorRecord(CoordinatorKey(record_type, fields), value)

    def member(mid, client):
        return rec(5, {"instance_id": None, "rack_id": None, "client_id": client,
                       "client_host": "/10.0.0.7", "subscribed_topic_names": (topic,),
                       "subscribed_topic_regex": None, "rebalance_timeout_ms": 300_000,
                       "server_assignor": "uniform"}, mid)

    def current(mid, epoch, prev, parts, revoking=()):
        tps = ({"topic_id": topic_id, "partitions": tuple(parts)},) if parts else ()
        rev = ({"topic_id": topic_id, "partitions": tuple(revoking)},) if revoking else ()
        return rec(8, {"member_epoch": epoch, "previous_member_epoch": prev,
                       "state": 1 if revoking else 0, "assigned_partitions": tps,
                       "partitions_pending_revocation": rev}, mid)

    def target(mid, parts):
        return rec(7, {"topic_partitions": ({"topic_id": topic_id, "partitions": tuple(parts)},)}, mid)

    return [
        (t0 + m, member("m-a", "pay-a")), (t0 + m, rec(3, {"epoch": 1})),
        (t0 + m, target("m-a", [0, 1])), (t0 + m, rec(6, {"assignment_epoch": 1})),
        (t0 + m, current("m-a", 1, 0, [0, 1])),
        (t0 + 2 * m, member("m-b", "pay-b")), (t0 + 2 * m, rec(3, {"epoch": 2})),
        (t0 + 2 * m, target("m-a", [0])), (t0 + 2 * m, target("m-b", [1])),
        (t0 + 2 * m, rec(6, {"assignment_epoch": 2})),
        (t0 + 2 * m, current("m-a", 2, 1, [0], revoking=[1])),
        (t0 + 2 * m + 5000, current("m-a", 2, 2, [0])),
        (t0 + 2 * m + 5000, current("m-b", 2, 0, [1])),
        (t0 + 6 * m, CoordinatorRecord(member("m-a", "pay-a").key, None)),
        (t0 + 6 * m, rec(3, {"epoch": 3})),
        (t0 + 6 * m, target("m-b", [0, 1])), (t0 + 6 * m, rec(6, {"assignment_epoch": 3})),
        (t0 + 6 * m, current("m-b", 3, 2, [0, 1])),
    ]


def sample_log(*, groups: tuple[str, str, str], data_topic: str, t0: int,
               partitions: int = 3, topic_id: str = SAMPLE_TOPIC_ID) -> list[SampleRecord]:
    """The sample log for groups (active, odd-named, gone) committing on `data_topic` (2
    partitions, 20 records each are assumed by the expectations in the tests and demo), plus
    a KIP-848 group `<active>-kip848` whose records name the topic by `topic_id`."""
    g1, g2, g3 = groups
    out: list[SampleRecord] = []

    def commit(group, part, offset, t, *, kv=1, vv=3, metadata="", expire=-1, epoch=0):
        k = OffsetCommitKey(group, data_topic, part, kv)
        v = OffsetCommitValue(offset, metadata, t, epoch if vv >= 3 else -1,
                              expire if vv == 1 else -1, vv)
        out.append(SampleRecord(partition_for_group(group, partitions), encode_key(k), encode_value(v), t, (k, v)))

    def tombstone(group, part, t):
        k = OffsetCommitKey(group, data_topic, part, 1)
        out.append(SampleRecord(partition_for_group(group, partitions), encode_key(k), None, t, (k, None)))

    def meta(group, generation, members, t, *, vv=3):
        k = GroupMetadataKey(group)
        v = GroupMetadataValue("consumer", generation, "range", members[0].member_id if members else None,
                               tuple(members), t if vv >= 2 else -1, vv)
        out.append(SampleRecord(partition_for_group(group, partitions), encode_key(k), encode_value(v), t, (k, v)))

    m = MINUTE
    meta(g1, 1, [_member("app-1-aaa", data_topic, (0, 1), 3)], t0)
    commit(g1, 0, 5, t0 + 1 * m)
    commit(g1, 1, 3, t0 + 1 * m, vv=1, expire=t0 + 24 * 60 * m)
    commit(g2, 0, 1, t0 + 2 * m, metadata='{"who": "odd"}')
    commit(g3, 1, 4, t0 + 1 * m, vv=2)
    meta(g3, 1, [], t0 + 1 * m, vv=0)
    commit(g1, 0, 10, t0 + 2 * m, kv=0, vv=0)
    meta(g1, 2, [_member("app-1-aaa", data_topic, (0,), 4), _member("app-2-bbb", data_topic, (1,), 4)],
         t0 + 3 * m, vv=4)
    commit(g1, 0, 7, t0 + 4 * m, vv=4, metadata="rewound by hand", epoch=3)  # REWIND
    commit(g1, 1, 12, t0 + 4 * m, vv=2)
    commit(g1, 1, 25, t0 + 5 * m)  # beyond the log end of 20
    tombstone(g1, 0, t0 + 6 * m)
    tombstone(g3, 1, t0 + 7 * m)
    out.append(SampleRecord(partition_for_group(g3, partitions), encode_key(GroupMetadataKey(g3)), None,
                            t0 + 7 * m, (GroupMetadataKey(g3), None)))
    g4 = f"{g1}-kip848"
    for t, rec in kip848_records(g4, data_topic, topic_id, t0):
        out.append(SampleRecord(partition_for_group(g4, partitions), encode_key(rec.key),
                                encode_value(rec), t, rec))
    # Records to skip: a record type newer than this decoder (key v99), an unknown value version,
    # malformed bytes.
    p1 = partition_for_group(g1, partitions)
    out.append(SampleRecord(p1, b"\x00\x63" + encode_key(GroupMetadataKey(g1))[2:], b"\x00\x00\x00",
                            t0 + 8 * m, "unknown key v99"))
    out.append(SampleRecord(p1, encode_key(OffsetCommitKey(g1, data_topic, 0)), b"\x00\x09junk",
                            t0 + 8 * m, "unknown value v9"))
    out.append(SampleRecord(p1, b"\x00\x01\x00\x09short", b"\x00\x03", t0 + 8 * m, "malformed"))
    return out


def produce_sample(bootstrap: str, topic: str, records: list[SampleRecord]) -> None:
    """Produce the records in order into `topic` (which must have enough partitions)."""
    from offsetkeeper.errors import KafkaOperationError
    from offsetkeeper.kafka import clients

    p = clients.producer({"bootstrap.servers": bootstrap},
                         {"linger.ms": 5, "enable.idempotence": True})
    for r in records:
        p.produce(topic, key=r.key, value=r.value, partition=r.partition, timestamp=r.timestamp)
    if p.flush(30):
        raise KafkaOperationError(f"could not produce the sample log into '{topic}' within 30 s")
