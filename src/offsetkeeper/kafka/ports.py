"""The roles of a cluster: what ops and the domain ask of Kafka, as `typing.Protocol`s.

`KafkaAdmin` (kafka/admin.py) plays every role against a real cluster; `tests/fake_admin.py`
plays them in memory (a unit test checks both against these protocols, method by method).
Each function takes its `admin` typed by the narrowest role (or union of roles) it uses, so
what a module needs of Kafka is read from its signatures. Code behind this seam deals in
`offsetkeeper.models` and `offsetkeeper.errors` only: per-group answers are either a value or
the translated `OffsetkeeperError`, never a confluent-kafka type.

    ClusterPort           the connection, its address, ping/reconnect, cluster id, the
                          brokers' API versions, topics and their partitions
    GroupsPort            consumer groups: list, describe (states, members)
    CommittedOffsetsPort  groups' committed offsets: read, commit, delete (only reset/apply.py
                          changes them), delete whole groups, topics a commit would be refused
    LogOffsetsPort        the log: start, end, last stable offset, offsets for a time, the
                          records a read_committed consumer gets near the LSO
    TopicsPort            topics' configs and ids, creating topics
    TypedGroupsPort       groups of every type through Kafka's Java client: share groups and
                          their start offsets, streams groups, KIP-848 consumer details

    AdminPort   = cluster + groups + committed offsets + log offsets, and `for_group_type`:
                  what the reset executor, the planner's facts and snapshots take
    KafkaPort   = AdminPort + topics + typed groups: the whole facade (history sampling, group
                  views, backup, restore)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from offsetkeeper.errors import OffsetkeeperError
from offsetkeeper.models import CommittedOffset, GroupInfo, GroupListing, TopicPartition, Watermarks

if TYPE_CHECKING:
    from offsetkeeper.config import Connection
    from offsetkeeper.kafka.group_types import (
        AnyGroupListing,
        ConsumerGroupDetail,
        ShareGroupDetail,
        SharePartitionOffset,
        StreamsGroupDetail,
    )
    from offsetkeeper.kafka.stable import LogOffsets

Committed = dict[TopicPartition, CommittedOffset]
T = TypeVar("T")

# Kafka API keys callers name to `ClusterPort.require_api`
OFFSET_DELETE_API = 47


@runtime_checkable
class ClusterPort(Protocol):
    """The cluster itself: where it is, whether it answers, which one it is, its topics."""

    # the samplers and the live-reset channel build their own clients from it (kafka/clients.py)
    conn: Connection
    timeout: float

    @property
    def bootstrap_servers(self) -> str:
        """The address the clients were given (snapshots record it; messages name it)."""

    def connect(self) -> None:
        """Connect (and probe the cluster) now, e.g. before several threads share the client."""

    def ping(self) -> None:
        """Raise a (retriable) OffsetkeeperError unless the cluster answers a metadata request."""

    def reconnect(self) -> None:
        """Use a fresh client connection from now on (after a retriable failure)."""

    def cluster_id(self) -> str:
        """The cluster id (snapshots record it, rollbacks and restores compare it)."""

    def require_api(self, key: int, name: str) -> None:
        """Raise a one-line error unless every broker supports API `key` (named `name`)."""

    def topic_partitions(self, topics: Iterable[str] | None = None) -> dict[str, list[int]]:
        """Partition ids per topic; all non-internal topics when `topics` is None."""

    def resolve_partitions(self, specs: Iterable[Any]
                           ) -> tuple[dict[str, list[int]], list[TopicPartition]]:
        """Check `topic` / `topic:P,...` specs: the topics' partition ids and the selection."""


@runtime_checkable
class GroupsPort(Protocol):
    """Consumer groups (as librdkafka lists and describes them, states corrected)."""

    # the brokers' errors of the latest list_groups (their groups are missing from it)
    last_list_errors: list[str]

    def list_groups(self) -> list[GroupListing]:
        """Every consumer group the cluster knows, sorted by id."""

    def describe_groups_each(self, group_ids: Iterable[str]
                             ) -> dict[str, GroupInfo | OffsetkeeperError]:
        """State and members of each group, or its error (never raises for one group)."""

    def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupInfo]:
        """State and members of each group; raises the first group's error."""

    def all_group_ids(self) -> set[str]:
        """Ids of the groups of every type (share, streams, Connect too), without their types."""


@runtime_checkable
class CommittedOffsetsPort(Protocol):
    """Groups' committed offsets. Per-group calls never raise for one group's failure."""

    def committed_offsets_each(
        self, group_ids: Iterable[str], *,
        described: Mapping[str, GroupInfo | OffsetkeeperError] | None = None,
    ) -> dict[str, Committed | OffsetkeeperError]:
        """Committed offsets of each group (partitions without a commit absent), or its error.
        `described`: the caller's fresh describe_groups_each answer (saves a round trip)."""

    def committed_offsets(self, group_id: str) -> Committed:
        """One group's committed offsets; raises its error."""

    # -- changes (only reset/apply.py calls these) ---------------------------------------------
    def topics_without_read(self, topics: Iterable[str]) -> set[str]:
        """The topics among `topics` this principal may not Read, so a commit to them would be
        refused (empty when it cannot tell)."""

    def alter_offsets_async(self, group_id: str,
                            offsets: Mapping[TopicPartition, int | CommittedOffset]) -> Any:
        """Start committing offsets for a group; the handle goes to `alter_result`."""

    def alter_result(self, group_id: str, pending: Any) -> dict[TopicPartition, str | None]:
        """Per partition the error name (None on success) of a commit started above."""

    def delete_offsets(self, group_id: str,
                       tps: Iterable[TopicPartition]) -> dict[TopicPartition, str | None]:
        """Delete a group's committed offsets (OffsetDelete); per partition the error name."""

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, Exception | None]:
        """Delete whole groups; per group None on success or the error."""


@runtime_checkable
class LogOffsetsPort(Protocol):
    """Offsets of the partitions' logs."""

    def watermarks(self, tps: Iterable[TopicPartition], *,
                   ordered: bool = True) -> dict[TopicPartition, Watermarks]:
        """Log start and log end of each partition."""

    def offsets_for_time(self, tps: Iterable[TopicPartition],
                         timestamp_ms: int) -> dict[TopicPartition, int | None]:
        """Offset of the first record with timestamp >= `timestamp_ms` (None: there is none)."""

    def log_offsets(self, tps: Iterable[TopicPartition], *,
                    ordered: bool = True) -> dict[TopicPartition, LogOffsets]:
        """Log start, log end and last stable offset of each partition."""

    def end_offsets(self, tps: Iterable[TopicPartition], *,
                    read_committed: bool = True) -> dict[TopicPartition, int]:
        """Log end of each partition; with `read_committed` the last stable offset (LSO)."""

    def count_readable(self, ranges: Mapping[TopicPartition, tuple[int, int]], *,
                       timeout_s: float = 3.0) -> dict[TopicPartition, tuple[int, int | None]]:
        """Per partition the records a read_committed consumer gets in [start, end) and the
        first one's timestamp; partitions that did not answer in time are absent."""

    def first_records(self, offsets: Mapping[TopicPartition, int], *, read_committed: bool = True,
                      timeout_s: float = 3.0) -> dict[TopicPartition, tuple[int, int | None]]:
        """Per partition the (offset, timestamp ms) of the first record fetched from an offset."""


@runtime_checkable
class TopicsPort(Protocol):
    """Topics as backup and restore handle them: configs, ids, creation, read rights."""

    def topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str]]:
        """Non-default configuration values of each topic."""

    def topic_ids(self) -> dict[str, str]:
        """Topic id (URL-safe base64) -> name, for every topic."""

    def create_topic(self, name: str, partitions: int, *, replication_factor: int = -1,
                     configs: Mapping[str, str] | None = None) -> None:
        """Create a topic and wait until every partition is led and serves offsets."""


@runtime_checkable
class TypedGroupsPort(Protocol):
    """Groups of every type, through Kafka's Java Admin client (kafka/jvm.py)."""

    def list_all_groups(self) -> list[AnyGroupListing]:
        """Every group of every type with its protocol and state."""

    def describe_consumer_groups_verbose(self, group_ids: Iterable[str]
                                         ) -> dict[str, ConsumerGroupDetail | OffsetkeeperError]:
        """Consumer groups with the KIP-848/KIP-1099 details."""

    def describe_share_groups(self, group_ids: Iterable[str]
                              ) -> dict[str, ShareGroupDetail | OffsetkeeperError]:
        """State and members of each share group, or its error."""

    def share_group_offsets(self, group_ids: Iterable[str]
                            ) -> dict[str, list[SharePartitionOffset] | OffsetkeeperError]:
        """Start offsets (and the broker's lag) of each share group's partitions."""

    def alter_share_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]
                                  ) -> dict[TopicPartition, OffsetkeeperError | None]:
        """Set share-partition start offsets; per partition None or the error."""

    def delete_share_group_offsets(self, group_id: str, topics: Iterable[str]
                                   ) -> dict[str, OffsetkeeperError | None]:
        """Delete a share group's start offsets of whole topics; per topic None or the error."""

    def describe_streams_groups(self, group_ids: Iterable[str]
                                ) -> dict[str, StreamsGroupDetail | OffsetkeeperError]:
        """Streams groups with their topology and members, or the error."""

    def streams_group_offsets(self, group_ids: Iterable[str]
                              ) -> dict[str, dict[TopicPartition, int] | OffsetkeeperError]:
        """Committed offsets of each streams group, or its error."""


@runtime_checkable
class AdminPort(ClusterPort, GroupsPort, CommittedOffsetsPort, LogOffsetsPort, Protocol):
    """A cluster as the reset executor, the planner's facts and snapshots see it."""

    # the type of group whose offsets this port reads and changes: "consumer" (committed
    # offsets), or "share" for the share view (start offsets); a plan records it
    group_type: str

    def for_group_type(self, group_type: str) -> AdminPort:
        """The port as the reset pipeline sees groups of `group_type`: itself, or for share
        groups a view whose "committed offsets" are the share-partition start offsets."""


@runtime_checkable
class KafkaPort(AdminPort, TopicsPort, TypedGroupsPort, Protocol):
    """Every role: what the admin facade is."""


def unwrap_each(results: Mapping[str, T | Exception]) -> dict[str, T]:
    """The answers of a per-group call, raising the first group's error if any failed."""
    out: dict[str, T] = {}
    for key, res in results.items():
        if isinstance(res, Exception):
            raise res
        out[key] = res
    return out
