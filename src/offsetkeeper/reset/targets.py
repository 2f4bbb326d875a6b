"""What to reset offsets to: one small frozen type per kind of target."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from offsetkeeper.errors import UsageError
from offsetkeeper.models import TopicPartition, check_names, offset_problem


@dataclass(frozen=True)
class ToEarliest:
    """The log start of each partition."""

    label = "earliest"


@dataclass(frozen=True)
class ToLatest:
    """The log end of each partition."""

    label = "latest"


@dataclass(frozen=True)
class ToCurrent:
    """The committed offset (log end when there is none); clamps out-of-range commits."""

    label = "current"


@dataclass(frozen=True)
class ToOffset:
    """One absolute offset for every partition in scope."""

    offset: int
    label = "offset"


@dataclass(frozen=True)
class ShiftBy:
    """The committed offset moved by `delta` (negative = back)."""

    delta: int
    label = "shift-by"


@dataclass(frozen=True)
class ToDatetime:
    """The first record with timestamp >= `timestamp_ms` (log end when none)."""

    timestamp_ms: int
    text: str = ""
    label = "datetime"


@dataclass(frozen=True)
class FromOffsets:
    """Explicit offsets per group and partition (from a CSV file, a snapshot or a mapping).

    `offsets[None]` applies to every group in scope (the one-group CSV form); a group's own
    entry wins over it. Only the partitions listed are changed.
    """

    offsets: Mapping[str | None, Mapping[TopicPartition, int]] = field(default_factory=dict)
    source: str = "file"
    # Per group (None = every group) and partition, a note the provider wants shown in the plan
    # (e.g. "sample 4m old", "no commit at that time").
    notes: Mapping[str | None, Mapping[TopicPartition, str]] = field(default_factory=dict)
    # Per group (None = every group), partitions that must end with NO committed offset (a
    # rollback to a snapshot that recorded them as uncommitted): planned as OffsetDelete.
    deletes: Mapping[str | None, frozenset[TopicPartition]] = field(default_factory=dict)
    # Per group (None = every group) and partition, the commit metadata to commit with the
    # offset (a rollback restores the snapshot's); a partition not listed keeps its own.
    metadata: Mapping[str | None, Mapping[TopicPartition, str]] = field(default_factory=dict)
    label = "from-file"

    def __post_init__(self) -> None:
        object.__setattr__(self, "_memos", {"offsets": {}, "deletes": {}})
        # The one gate every offset from a file, checkpoint, ZooKeeper, mapping, snapshot or
        # history passes before planning: an invalid one refuses the whole input (exit 2).
        check_names([g for g in [*self.offsets, *self.deletes] if g is not None])
        check_names({tp.topic for offs in [*self.offsets.values(), *self.deletes.values()]
                     for tp in offs}, what="topic")
        for group, offsets in self.offsets.items():
            for tp, value in offsets.items():
                if (problem := offset_problem(value)) is not None:
                    who = f"group {group!r} " if group is not None else ""
                    raise UsageError(f"{self.source}: {who}{tp}: {problem} "
                                     "(valid offsets are 0 <= offset < 2^63); nothing was changed",
                                     group=group, topic=tp.topic, partition=tp.partition)
                if tp.partition < 0:
                    raise UsageError(f"{self.source}: partition {tp.partition} of {tp.topic!r} "
                                     "is negative; nothing was changed", group=group,
                                     topic=tp.topic, partition=tp.partition)

    # The planner asks these once per partition: they are computed once per group and kept
    # (a fresh dict per call made planning 20,000 groups quadratic). The target is frozen, so
    # the answers never change; callers get read-only views.
    def deletes_for(self, group: str) -> frozenset[TopicPartition]:
        """The partitions of `group` whose committed offset must be removed."""
        memo = self._memos["deletes"]
        hit = memo.get(group)
        if hit is None:
            hit = memo[group] = frozenset(self.deletes.get(None, frozenset())) | \
                frozenset(self.deletes.get(group, frozenset()))
        return hit

    def for_group(self, group: str) -> Mapping[TopicPartition, int]:
        """The explicit offsets that apply to `group` (read-only)."""
        memo = self._memos["offsets"]
        hit = memo.get(group)
        if hit is None:
            common, own = self.offsets.get(None), self.offsets.get(group)
            merged = {**common, **own} if common and own else dict(own or common or {})
            hit = memo[group] = MappingProxyType(merged)
        return hit

    def note_for(self, group: str, tp: TopicPartition) -> str:
        """The provider's note for one partition of `group` ("" when none)."""
        return self.notes.get(group, {}).get(tp) or self.notes.get(None, {}).get(tp) or ""

    def metadata_for(self, group: str, tp: TopicPartition) -> str | None:
        """The commit metadata to commit for one partition of `group` (None: keep its own)."""
        if not self.metadata:
            return None
        own = self.metadata.get(group)
        if own is not None and tp in own:
            return own[tp]
        return self.metadata.get(None, {}).get(tp)

    def groups(self) -> list[str]:
        """Groups named explicitly (the several-group form)."""
        return sorted(self.named_groups)

    @property
    def named_groups(self) -> frozenset[str]:
        """The same, as a set (kept: asked once per partition by the planner)."""
        hit = self.__dict__.get("_named")
        if hit is None:
            hit = frozenset(g for g in [*self.offsets, *self.deletes] if g is not None)
            object.__setattr__(self, "_named", hit)
        return hit


ResetTarget = ToEarliest | ToLatest | ToCurrent | ToOffset | ShiftBy | ToDatetime | FromOffsets
