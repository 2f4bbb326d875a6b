"""The admin port: exactly what the reset executor, the planner's facts and the history samplers
ask of a cluster.

`KafkaAdmin` (kafka/admin.py) implements it against a real cluster; `tests/fake_admin.py`
implements it in memory for unit tests of the executor. Code behind this seam deals in
`offsetkeeper.models` and `offsetkeeper.errors` only: per-group answers are either a value or
the translated `OffsetkeeperError`, never a confluent-kafka type.

Who calls what:

    reset/apply.py   ping, reconnect, describe_groups_each, committed_offsets_each,
                     alter_offsets_async + alter_result, delete_offsets, delete_groups
    reset/facts.py   list_groups, describe_groups_each, committed_offsets_each,
                     resolve_partitions, watermarks, offsets_for_time
    history/         conn, timeout, reconnect, list_groups, topic_partitions,
                     describe_groups_each, committed_offsets_each, log_offsets
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from offsetkeeper.errors import OffsetkeeperError
from offsetkeeper.models import CommittedOffset, GroupInfo, GroupListing, TopicPartition, Watermarks

if TYPE_CHECKING:
    from offsetkeeper.config import Connection
    from offsetkeeper.kafka.stable import LogOffsets

Committed = dict[TopicPartition, CommittedOffset]
T = TypeVar("T")


class AdminPort(Protocol):
    """A cluster, as the executor, the planner and the samplers see it.

    Per-group calls (`*_each`, `delete_groups`) never raise for one group's failure: that
    group maps to its translated error, so one group cannot hide the others' answers.
    """

    conn: Connection  # the samplers open their own record-peeking consumers with it
    timeout: float

    # -- cluster -------------------------------------------------------------------------------
    def ping(self) -> None:
        """Raise a (retriable) OffsetkeeperError unless the cluster answers a metadata request."""

    def reconnect(self) -> None:
        """Use a fresh client connection from now on (after a retriable failure)."""

    def topic_partitions(self, topics: Iterable[str] | None = None) -> dict[str, list[int]]:
        """Partition ids per topic; all non-internal topics when `topics` is None."""

    def resolve_partitions(self, specs: Iterable[Any]
                           ) -> tuple[dict[str, list[int]], list[TopicPartition]]:
        """Check `topic` / `topic:P,...` specs: the topics' partition ids and the selection."""

    def watermarks(self, tps: Iterable[TopicPartition], *,
                   ordered: bool = True) -> dict[TopicPartition, Watermarks]:
        """Log start and log end of each partition."""

    def offsets_for_time(self, tps: Iterable[TopicPartition],
                         timestamp_ms: int) -> dict[TopicPartition, int | None]:
        """Offset of the first record with timestamp >= `timestamp_ms` (None: there is none)."""

    def log_offsets(self, tps: Iterable[TopicPartition], *,
                    ordered: bool = True) -> dict[TopicPartition, LogOffsets]:
        """Log start, log end and last stable offset of each partition."""

    # -- groups --------------------------------------------------------------------------------
    def list_groups(self) -> list[GroupListing]:
        """Every consumer group the cluster knows, sorted by id."""

    def describe_groups_each(self, group_ids: Iterable[str]
                             ) -> dict[str, GroupInfo | OffsetkeeperError]:
        """State and members of each group, or its error."""

    def committed_offsets_each(
        self, group_ids: Iterable[str], *,
        described: Mapping[str, GroupInfo | OffsetkeeperError] | None = None,
    ) -> dict[str, Committed | OffsetkeeperError]:
        """Committed offsets of each group (partitions without a commit absent), or its error.
        `described`: the caller's fresh describe_groups_each answer (saves a round trip)."""

    # -- changes (only reset/apply.py calls these) ---------------------------------------------
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


def unwrap_each(results: Mapping[str, T | Exception]) -> dict[str, T]:
    """The answers of a per-group call, raising the first group's error if any failed."""
    out: dict[str, T] = {}
    for key, res in results.items():
        if isinstance(res, Exception):
            raise res
        out[key] = res
    return out
