"""The records of `__consumer_offsets`, as Kafka's schema files define them.

Sources: `group-coordinator/src/main/resources/common/message/{OffsetCommitKey,OffsetCommitValue,
GroupMetadataKey,GroupMetadataValue}.json` and `clients/src/main/resources/common/message/
ConsumerProtocol{Subscription,Assignment}.json`. Field names follow the schema (snake_case);
defaults are the schema's defaults (-1 for absent int fields, None for absent nullable strings),
so a decoded record compares equal to the record that was encoded.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# Key versions: 0 and 1 are offset commits, 2 is group metadata; the higher ones are the record
# types of KIP-848 consumer groups, share and streams groups (offsetlog/coordinator.py).
OFFSET_COMMIT_KEY_VERSIONS = (0, 1)
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSIONS = (0, 1, 2, 3, 4)
GROUP_METADATA_VALUE_VERSIONS = (0, 1, 2, 3, 4)
FLEXIBLE_VALUE_VERSION = 4  # first flexible version of both value schemas
CONSUMER_PROTOCOL_VERSIONS = (0, 1, 2, 3)


class RecordKind(StrEnum):
    """What one record of the log turned out to be."""

    OFFSET_COMMIT = "offset_commit"
    GROUP_METADATA = "group_metadata"
    UNKNOWN = "unknown"  # a record type or version this decoder does not know: skipped
    ERROR = "error"  # malformed bytes


@dataclass(frozen=True)
class OffsetCommitKey:
    """Key versions 0/1: which group committed which partition."""

    group: str
    topic: str
    partition: int
    version: int = 1


@dataclass(frozen=True)
class GroupMetadataKey:
    """Key version 2: the group's metadata record."""

    group: str
    version: int = GROUP_METADATA_KEY_VERSION


TaggedFields = tuple[tuple[int, bytes], ...]


@dataclass(frozen=True)
class OffsetCommitValue:
    """OffsetCommitValue v0-v4. `leader_epoch` exists from v3, `expire_timestamp` only in v1;
    -1 where the version has no such field (the schema default)."""

    offset: int
    metadata: str = ""
    commit_timestamp: int = -1
    leader_epoch: int = -1
    expire_timestamp: int = -1
    version: int = 3
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class TopicPartitions:
    """A topic and some of its partitions (consumer protocol)."""

    topic: str
    partitions: tuple[int, ...]


@dataclass(frozen=True)
class Subscription:
    """ConsumerProtocolSubscription v0-v3 (a member's subscribed topics)."""

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartitions, ...] = ()
    generation_id: int = -1
    rack_id: str | None = None
    version: int = 1


@dataclass(frozen=True)
class Assignment:
    """ConsumerProtocolAssignment v0-v3 (the partitions assigned to a member)."""

    partitions: tuple[TopicPartitions, ...]
    user_data: bytes | None = None
    version: int = 1


@dataclass(frozen=True)
class MemberMetadata:
    """One member in GroupMetadataValue; `subscription`/`assignment` are the protocol's bytes."""

    member_id: str
    client_id: str
    client_host: str
    session_timeout: int
    subscription: bytes
    assignment: bytes
    group_instance_id: str | None = None  # v3+
    rebalance_timeout: int = -1  # v1+
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class GroupMetadataValue:
    """GroupMetadataValue v0-v4: the group's generation, leader and members."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    members: tuple[MemberMetadata, ...] = ()
    current_state_timestamp: int = -1  # v2+
    version: int = 3
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class OffsetCommitRecord:
    """An offset commit, or (value None) its tombstone: the offset was deleted or expired."""

    key: OffsetCommitKey
    value: OffsetCommitValue | None
    kind = RecordKind.OFFSET_COMMIT

    @property
    def tombstone(self) -> bool:
        return self.value is None


@dataclass(frozen=True)
class GroupMetadataRecord:
    """A group metadata record, or (value None) its tombstone: the group was deleted."""

    key: GroupMetadataKey
    value: GroupMetadataValue | None
    kind = RecordKind.GROUP_METADATA

    @property
    def tombstone(self) -> bool:
        return self.value is None


@dataclass(frozen=True)
class UnknownRecord:
    """A record type (key version) or value version this decoder does not know."""

    part: str  # "key" or "value"
    version: int
    group: str | None = None
    kind = RecordKind.UNKNOWN


@dataclass(frozen=True)
class MalformedRecord:
    """Bytes that do not follow the schema their version announces."""

    part: str  # "key", "value"
    reason: str
    kind = RecordKind.ERROR


@dataclass(frozen=True)
class CoordinatorKey:
    """The key of a newer coordinator record (types 3-24): its type and key fields."""

    record_type: int
    fields: dict

    @property
    def group(self) -> str:
        return self.fields["group_id"]


@dataclass(frozen=True)
class CoordinatorRecord:
    """A record of a consumer (KIP-848), share or streams group, or (value None) its tombstone:
    the member left, the assignment or the group was deleted. `value` holds the fields of the
    schema of `value_version` (offsetlog/coordinator.py)."""

    key: CoordinatorKey
    value: dict | None
    value_version: int = 0

    @property
    def kind(self) -> str:
        from offsetkeeper.offsetlog.coordinator import SCHEMAS

        return SCHEMAS[self.key.record_type].name

    @property
    def tombstone(self) -> bool:
        return self.value is None


DecodedRecord = (OffsetCommitRecord | GroupMetadataRecord | CoordinatorRecord | UnknownRecord
                 | MalformedRecord)
