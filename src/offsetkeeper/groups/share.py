"""Share groups (KIP-932): describe them.

A share group has no committed offsets: each share-partition has a start offset (SPSO), the
first offset not yet acknowledged by the group, and a lag (KIP-1226: the records at or after
the start offset that the group has not acknowledged; the broker computes it).

Resetting or deleting start offsets goes through the one executor like every offset change
(ops/share_reset.py; the admin facade's share view, kafka/share_offsets.py, reads and changes
them), so it gets the same dry run, re-checks, snapshot and read-back.
"""

from __future__ import annotations

from dataclasses import dataclass

from offsetkeeper.errors import UnknownGroupError
from offsetkeeper.kafka.group_types import ShareGroupDetail, SharePartitionOffset
from offsetkeeper.kafka.ports import KafkaPort, TypedGroupsPort
from offsetkeeper.models import TopicPartition


@dataclass(frozen=True)
class ShareOffsetRow:
    """One line of `share-groups describe`: kafka-share-groups.sh --describe plus the log's
    start and end (START-OFFSET and LAG are the broker's)."""

    group: str
    topic: str
    partition: int
    start_offset: int | None
    lag: int | None
    leader_epoch: int | None
    log_start_offset: int | None
    log_end_offset: int | None


@dataclass(frozen=True)
class ShareGroupView:
    detail: ShareGroupDetail
    offsets: tuple[ShareOffsetRow, ...]


def _check(admin: TypedGroupsPort, res: object, group: str) -> object:
    if isinstance(res, UnknownGroupError):
        from offsetkeeper.groups.listing import not_found_error

        raise not_found_error(admin, group, "share") from res
    if isinstance(res, Exception):
        raise res
    return res


def describe_share_groups(admin: KafkaPort, group_ids: list[str]) -> list[ShareGroupView]:
    """State, members with assignments, and per partition the start offset, lag and log
    start/end of each share group (an unknown group is an error)."""
    if not group_ids:
        return []
    details = admin.describe_share_groups(group_ids)
    offsets = admin.share_group_offsets(group_ids)
    per_group: dict[str, list[SharePartitionOffset]] = {}
    wanted: set[TopicPartition] = set()
    for g in group_ids:
        _check(admin, details[g], g)
        offs = _check(admin, offsets[g], g)
        per_group[g] = offs  # type: ignore[assignment]
        wanted.update(TopicPartition(o.topic, o.partition) for o in per_group[g])
    marks = admin.watermarks(wanted) if wanted else {}
    views = []
    for g in group_ids:
        rows = []
        for o in per_group[g]:
            wm = marks.get(TopicPartition(o.topic, o.partition))
            rows.append(ShareOffsetRow(g, o.topic, o.partition, o.start_offset, o.lag,
                                       o.leader_epoch, wm.low if wm else None,
                                       wm.high if wm else None))
        views.append(ShareGroupView(details[g], tuple(rows)))  # type: ignore[arg-type]
    return views
