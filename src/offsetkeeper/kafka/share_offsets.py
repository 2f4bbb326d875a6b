"""The admin facade as the reset pipeline sees it, for share groups (KIP-932).

A share group commits no offsets; each of its share-partitions has a start offset (SPSO). The
planner, the executor (reset/apply.py) and snapshots read and change a group's "offsets" through
a handful of admin calls (`describe_groups_each`, `committed_offsets_each`,
`alter_offsets_async`/`alter_result`, `delete_offsets` ...). `ShareGroupsView` answers those same
calls for share groups, through Kafka's Java Admin client (kafka/jvm.py): the state and members
of DescribeShareGroups, the start offsets of ListShareGroupOffsets as `CommittedOffset`s,
AlterShareGroupOffsets and DeleteShareGroupOffsets. Everything else is the wrapped `KafkaAdmin`'s.
`KafkaAdmin.for_group_type(GroupType.SHARE)` returns it; a plan records the group type it was
planned for, and the executor asks the facade for that view, so share groups go through the ONE
executor without a branch in it.

Deleting: the broker deletes a share group's start offsets per whole topic only
(DeleteShareGroupOffsets names topics, not partitions). `delete_offsets` of some partitions of a
topic therefore deletes the topic's start offsets and sets the partitions that were not to be
deleted back to the start offsets they had a moment before (the group has no members: the
executor checked that right before). A rollback that restores "no start offset" on one
partition uses this.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from offsetkeeper.errors import (
    GroupActiveError,
    KafkaOperationError,
    OffsetkeeperError,
    UnknownGroupError,
    UsageError,
)
from offsetkeeper.kafka.group_types import ShareGroupDetail, state_key
from offsetkeeper.models import (
    CommittedOffset,
    GroupInfo,
    GroupListing,
    GroupType,
    MemberInfo,
    TopicPartition,
)


def error_code(err: OffsetkeeperError | None) -> str | None:
    """The Kafka error name of a translated per-partition error (the executor reports names)."""
    if err is None:
        return None
    if isinstance(err, UnknownGroupError):
        return "GROUP_ID_NOT_FOUND"
    if isinstance(err, GroupActiveError):
        return "NON_EMPTY_GROUP"
    return getattr(err, "code", None) or "UNKNOWN_SERVER_ERROR"


def group_info(d: ShareGroupDetail) -> GroupInfo:
    """A share group's description as the pipeline's `GroupInfo` (state lower-case, members
    with their assignments)."""
    return GroupInfo(group_id=d.group_id, state=state_key(d.state), coordinator=d.coordinator,
                     group_type=GroupType.SHARE.value,
                     members=tuple(MemberInfo(m.member_id, m.client_id, m.host, None, m.assignment)
                                   for m in d.members))


class ShareGroupsView:
    """`KafkaAdmin`, with the group calls of the reset pipeline answered for share groups."""

    group_type = GroupType.SHARE

    def __init__(self, admin: Any) -> None:
        self.base = admin

    def __getattr__(self, name: str) -> Any:
        # cluster, topics, watermarks, ping, reconnect, cluster_id, conn ...: the wrapped facade's
        return getattr(self.base, name)

    def for_group_type(self, group_type: str) -> Any:
        return self.base.for_group_type(group_type)

    def __enter__(self) -> ShareGroupsView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.base.close()

    # -- groups ------------------------------------------------------------------------------
    def list_groups(self) -> list[GroupListing]:
        """Every share group, sorted by id (what --all-groups and --group-pattern select from)."""
        return [GroupListing(g.group_id, state_key(g.state), GroupType.SHARE.value)
                for g in self.base.list_all_groups() if state_key(g.group_type) == "share"]

    def describe_groups_each(self, group_ids: Iterable[str], *, real_states: bool = True,
                             ) -> dict[str, GroupInfo | OffsetkeeperError]:
        ids = list(dict.fromkeys(group_ids))
        if not ids:
            return {}
        try:
            details = self.base.describe_share_groups(ids)
        except OffsetkeeperError as exc:  # the whole call failed (e.g. the cluster unreachable)
            return {g: exc for g in ids}
        out: dict[str, GroupInfo | OffsetkeeperError] = {}
        for g in ids:
            d = details.get(g)
            if isinstance(d, UnknownGroupError):
                out[g] = UnknownGroupError(f"share group '{g}' does not exist", group=g)
            elif isinstance(d, OffsetkeeperError):
                out[g] = d
            elif d is None:
                out[g] = KafkaOperationError(f"describe share group: no answer for {g}",
                                             code="UNKNOWN_SERVER_ERROR", group=g)
            else:
                out[g] = group_info(d)
        return out

    def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupInfo]:
        out = {}
        for g, res in self.describe_groups_each(group_ids).items():
            if isinstance(res, Exception):
                raise res
            out[g] = res
        return out

    # -- start offsets, read as the pipeline reads committed offsets ---------------------------
    def committed_offsets_each(
        self, group_ids: Iterable[str], *,
        described: Mapping[str, GroupInfo | OffsetkeeperError] | None = None,
    ) -> dict[str, dict[TopicPartition, CommittedOffset] | OffsetkeeperError]:
        """Per group, the share-partitions that have a start offset (the others are absent, as
        a consumer group's partitions without a commit are)."""
        ids = list(dict.fromkeys(group_ids))
        if not ids:
            return {}
        try:
            answers = self.base.share_group_offsets(ids)
        except OffsetkeeperError as exc:
            return {g: exc for g in ids}
        out: dict[str, dict[TopicPartition, CommittedOffset] | OffsetkeeperError] = {}
        for g in ids:
            res = answers.get(g, [])
            if isinstance(res, OffsetkeeperError):
                out[g] = res
            else:
                out[g] = {TopicPartition(o.topic, o.partition): CommittedOffset(int(o.start_offset))
                          for o in res if o.start_offset is not None}
        return out

    def committed_offsets(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
        res = self.committed_offsets_each([group_id])[group_id]
        if isinstance(res, Exception):
            raise res
        return res

    # -- changing them -------------------------------------------------------------------------
    def alter_offsets_async(self, group_id: str,
                            offsets: Mapping[TopicPartition, int | CommittedOffset]
                            ) -> dict[TopicPartition, OffsetkeeperError | None]:
        """Set start offsets (AlterShareGroupOffsets). Not asynchronous: the helper's call is
        one JVM run; its answer is handed to `alter_result` as the executor expects."""
        plain = {tp: (o.offset if isinstance(o, CommittedOffset) else int(o))
                 for tp, o in offsets.items()}
        return self.base.alter_share_group_offsets(group_id, plain)

    def alter_result(self, group_id: str, result: Mapping[TopicPartition, OffsetkeeperError | None]
                     ) -> dict[TopicPartition, str | None]:
        return {tp: error_code(e) for tp, e in result.items()}

    def delete_offsets(self, group_id: str, tps: Iterable[TopicPartition]
                       ) -> dict[TopicPartition, str | None]:
        """Delete the start offsets of `tps`. The broker deletes whole topics, so partitions of
        those topics not in `tps` are set back to their start offsets of a moment before."""
        wanted = set(tps)
        if not wanted:
            return {}
        topics = sorted({tp.topic for tp in wanted})
        before = self.committed_offsets(group_id)
        keep = {tp: c.offset for tp, c in before.items() if tp.topic in topics and tp not in wanted}
        answers = self.base.delete_share_group_offsets(group_id, topics)
        out = {tp: error_code(answers.get(tp.topic)) for tp in sorted(wanted)}
        keep = {tp: o for tp, o in keep.items() if answers.get(tp.topic) is None}
        if keep:
            for tp, e in self.base.alter_share_group_offsets(group_id, keep).items():
                if e is not None:
                    out[tp] = error_code(e)
        return out

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, Exception | None]:
        return {g: UsageError(f"share group {g}: deleting share groups is not supported here "
                              "(kafka-share-groups.sh --delete does it)", group=g)
                for g in group_ids}
