"""What the cluster says about groups of every Kafka 4 type (classic, consumer, share, streams),
as read through Kafka's Java Admin client (`kafka/jvm.py`). Plain frozen values.

State and type names are Kafka's own (`Stable`, `Assigning`, `NotReady`; `Consumer`, `Share`),
as `kafka-groups.sh` and the per-type tools print them; `state_key` is the lower-case form
offsetkeeper filters by (`assigning`, `notready`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from offsetkeeper.models import TopicPartition


def state_key(name: str) -> str:
    """`NotReady` -> `notready`, `PREPARING_REBALANCE` -> `preparingrebalance`."""
    return (name or "unknown").lower().replace("_", "").replace("-", "")


@dataclass(frozen=True)
class AnyGroupListing:
    """One line of `kafka-groups.sh --list` (KIP-1043) plus the state."""

    group_id: str
    group_type: str   # Classic, Consumer, Share, Streams, Unknown
    protocol: str     # the protocol type: consumer, share, streams, connect, "" (simple groups)
    state: str        # Stable, Empty, Assigning, NotReady ...


@dataclass(frozen=True)
class ConsumerMemberDetail:
    """A member of a consumer group with the KIP-1099 fields (None when the group is classic)."""

    member_id: str
    client_id: str
    host: str
    group_instance_id: str | None
    member_epoch: int | None
    assignment: tuple[TopicPartition, ...]
    target_assignment: tuple[TopicPartition, ...] | None
    upgraded: bool | None


@dataclass(frozen=True)
class ConsumerGroupDetail:
    """`kafka-consumer-groups.sh --describe --state --verbose`: real state names for
    consumer-protocol groups (Assigning, Reconciling) and the KIP-1099 epochs."""

    group_id: str
    group_type: str
    state: str
    coordinator: str
    assignor: str
    group_epoch: int | None
    target_assignment_epoch: int | None
    members: tuple[ConsumerMemberDetail, ...] = ()


@dataclass(frozen=True)
class ShareMember:
    member_id: str
    client_id: str
    host: str
    rack: str | None
    member_epoch: int
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class ShareGroupDetail:
    """A share group (KIP-932) as DescribeShareGroups answers."""

    group_id: str
    state: str
    coordinator: str
    group_epoch: int
    target_assignment_epoch: int
    members: tuple[ShareMember, ...] = ()


@dataclass(frozen=True)
class SharePartitionOffset:
    """A share-partition's start offset (SPSO) and its lag as KIP-1226 defines it (the broker
    computes it: records at or after the start offset not yet acknowledged). None when the
    partition has no start offset yet."""

    topic: str
    partition: int
    start_offset: int | None
    leader_epoch: int | None
    lag: int | None


@dataclass(frozen=True)
class StreamsTasks:
    """Tasks of a member, per kind, as subtopology -> partitions."""

    active: tuple[tuple[str, tuple[int, ...]], ...] = ()
    standby: tuple[tuple[str, tuple[int, ...]], ...] = ()
    warmup: tuple[tuple[str, tuple[int, ...]], ...] = ()


@dataclass(frozen=True)
class StreamsMember:
    member_id: str
    member_epoch: int
    client_id: str
    host: str
    process_id: str
    instance_id: str | None
    topology_epoch: int
    endpoint: str | None
    is_classic: bool
    assignment: StreamsTasks
    target_assignment: StreamsTasks


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...]
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[str, ...] = ()
    state_changelog_topics: tuple[str, ...] = ()


@dataclass(frozen=True)
class StreamsGroupDetail:
    """A streams group (KIP-1071) as DescribeStreamsGroups answers."""

    group_id: str
    state: str
    coordinator: str
    group_epoch: int
    target_assignment_epoch: int
    topology_epoch: int
    subtopologies: tuple[Subtopology, ...] = ()
    members: tuple[StreamsMember, ...] = field(default_factory=tuple)

    @property
    def input_topics(self) -> tuple[str, ...]:
        """The topology's source topics that are not its own repartition topics."""
        internal = {t for s in self.subtopologies for t in s.repartition_source_topics}
        return tuple(sorted({t for s in self.subtopologies for t in s.source_topics} - internal))
