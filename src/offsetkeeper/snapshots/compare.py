"""Comparing snapshots with each other or with the live cluster (offsets only, not metadata)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from offsetkeeper.kafka.ports import AdminPort
from offsetkeeper.models import TopicPartition
from offsetkeeper.snapshots.model import GroupSnapshot, Snapshot

if TYPE_CHECKING:
    pass

CHANGED, ADDED, REMOVED = "changed", "added", "removed"
DIFF_COLUMNS = ["group", "topic", "partition", "before", "after", "delta", "change"]


@dataclass(frozen=True, order=True)
class OffsetDiff:
    """A group/partition whose committed offset differs between `before` and `after`.

    `before` is None when only the second side has an offset (change "added"), `after` is
    None when only the first side has one (change "removed").
    """

    group: str
    tp: TopicPartition
    before: int | None
    after: int | None

    @property
    def change(self) -> str:
        if self.before is None:
            return ADDED
        if self.after is None:
            return REMOVED
        return CHANGED

    @property
    def delta(self) -> int | None:
        """after - before (positive = moved forward), None when a side is missing."""
        if self.before is None or self.after is None:
            return None
        return self.after - self.before

    def as_row(self) -> dict[str, Any]:
        return {"group": self.group, "topic": self.tp.topic, "partition": self.tp.partition,
                "before": self.before, "after": self.after, "delta": self.delta,
                "change": self.change}


@dataclass(frozen=True)
class Live:
    """The live cluster's committed offsets, in the shape `diff` compares."""

    groups: dict[str, GroupSnapshot]
    cluster_id: str = ""

    @classmethod
    def read(cls, admin: AdminPort, groups: list[str]) -> Live:
        from offsetkeeper.snapshots.capture import live_groups

        return cls(live_groups(admin, groups), admin.cluster_id())


def diff(a: Snapshot, b: Snapshot | Live, *, groups: list[str] | None = None) -> list[OffsetDiff]:
    """Every group/partition whose committed offset differs from `a` to `b`, sorted.

    Groups are those of either side (or only `groups` when given); a partition committed on
    only one side counts as added or removed.
    """
    names = groups if groups is not None else sorted(set(a.groups) | set(b.groups))
    out = []
    for g in names:
        before = a.groups[g].offsets if g in a.groups else {}
        after = b.groups[g].offsets if g in b.groups else {}
        for tp in sorted(set(before) | set(after)):
            x = before[tp].offset if tp in before else None
            y = after[tp].offset if tp in after else None
            if x != y:
                out.append(OffsetDiff(g, tp, x, y))
    return out


def diff_live(admin: AdminPort, snapshot: Snapshot) -> list[OffsetDiff]:
    """Differences from the snapshot to the live offsets of the snapshot's groups: committed
    offsets for consumer groups, start offsets for share groups (read through the admin's
    share view, as the snapshot took them; reading a share group's committed offsets found
    none and called every partition "removed")."""
    names = sorted(snapshot.groups)
    by_type: dict[object, list[str]] = {}
    for g in names:
        by_type.setdefault(snapshot.groups[g].group_type, []).append(g)
    live: dict[str, GroupSnapshot] = {}
    cluster_id = ""
    for group_type, members in by_type.items():
        side = Live.read(admin.for_group_type(group_type), members)
        live.update(side.groups)
        cluster_id = side.cluster_id
    return diff(snapshot, Live(live, cluster_id), groups=names)


def verify(admin: AdminPort, snapshot: Snapshot) -> list[OffsetDiff]:
    """Compare the live committed offsets of the snapshot's groups with the snapshot; an empty
    list means they all match (the CLI exits non-zero otherwise)."""
    return diff_live(admin, snapshot)
