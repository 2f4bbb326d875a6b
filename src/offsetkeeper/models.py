"""Domain objects shared by every part of offsetkeeper (plain, frozen, typed)."""

from __future__ import annotations

from dataclasses import dataclass, field

# Group states in which offsets may be changed (as kafka-consumer-groups.sh decides).
INACTIVE_STATES = frozenset({"empty", "dead", "unknown"})


@dataclass(frozen=True, order=True)
class TopicPartition:
    """A partition of a topic."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}:{self.partition}"


@dataclass(frozen=True)
class Watermarks:
    """Log start (first readable offset) and log end (offset the next record gets)."""

    low: int
    high: int


@dataclass(frozen=True)
class CommittedOffset:
    """A group's committed offset: the offset of the NEXT record it will read."""

    offset: int
    metadata: str = ""


@dataclass(frozen=True)
class MemberInfo:
    """One member of a consumer group and the partitions assigned to it."""

    member_id: str
    client_id: str
    host: str
    group_instance_id: str | None = None
    assignment: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True)
class GroupInfo:
    """What the cluster says about a consumer group."""

    group_id: str
    state: str
    coordinator: str = ""
    assignor: str = ""
    group_type: str = ""
    members: tuple[MemberInfo, ...] = field(default_factory=tuple)

    @property
    def is_active(self) -> bool:
        """True when the group has members (offsets must not be changed then)."""
        return bool(self.members) or self.state not in INACTIVE_STATES

    @property
    def refusal(self) -> str | None:
        """Why offsets of this group must not be changed now (None when they may)."""
        if not self.is_active:
            return None
        n = len(self.members)
        return (f"group {self.group_id} has {n} active member{'s' if n != 1 else ''} "
                f"(state {self.state}); stop its consumers and run again")


@dataclass(frozen=True)
class GroupListing:
    """A consumer group as `groups list` shows it."""

    group_id: str
    state: str
    group_type: str = ""
