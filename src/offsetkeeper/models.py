"""Domain objects shared by every part of offsetkeeper (plain, frozen, typed)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from enum import StrEnum

# Group states in which offsets may be changed (as kafka-consumer-groups.sh decides). "unknown"
# is not among them: a broker that cannot say what a group is doing may have a consumer joining.
INACTIVE_STATES = frozenset({"empty", "dead"})
UNKNOWN_STATE = "unknown"


class GroupType(StrEnum):
    """Which offsets of a group a plan changes, and so which admin calls change and read them
    (`KafkaAdmin.for_group_type`)."""

    CONSUMER = "consumer"  # committed offsets: classic, consumer and streams groups
    SHARE = "share"        # share-partition start offsets (KIP-932)

# Every offset read from anywhere (files, checkpoints, ZooKeeper, mappings, snapshots, history,
# commit history) must be an integer in [0, 2^63): Kafka's offsets are signed 64-bit and never
# negative once committed. `offset_problem` is the one test of that rule.
OFFSET_LIMIT = 2**63


def name_problem(name: object) -> str | None:
    """Why `name` cannot be handed to the Kafka client as a group or topic name (None when it
    can): not valid UTF-8 (bytes that were not UTF-8 arrive as lone surrogates, as do JSON
    escapes like \\ud800) — librdkafka crashed the process on them — or a NUL character, at
    which the C client would cut the name and act on another group."""
    if not isinstance(name, str):
        return f"{name!r} is not a string"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"{name!r} is not valid UTF-8 (character {exc.start + 1} is a lone surrogate)"
    if "\x00" in name:
        return f"{name!r} holds a NUL character"
    return None


def check_names(names, *, what: str = "group") -> None:
    """Refuse (UsageError, exit 2) any name `name_problem` objects to, before any client sees it."""
    from offsetkeeper.errors import UsageError

    for n in names:
        if (problem := name_problem(n)) is not None:
            raise UsageError(f"{what} name {problem}; refused before reaching the Kafka client")


def compile_pattern(pattern: str, *, what: str = "topic"):
    """A glob (``orders-*``, ``pay?``) or, with a leading ``~``, a full-match regex, for
    selecting topics or groups by name."""
    import fnmatch
    import re

    from offsetkeeper.errors import UsageError

    if not pattern or pattern == "~":
        raise UsageError(f"empty {what} pattern: give a {what} name, a glob or ~REGEX")
    if pattern.startswith("~"):
        try:
            return re.compile(pattern[1:])
        except re.error as exc:
            raise UsageError(f"{what} pattern '{pattern}' is not a valid regex: {exc}") from None
    return re.compile(fnmatch.translate(pattern))


def short_number(value: object) -> str:
    """A number as an error message shows it: in full up to 24 characters, else its start and
    how many digits it has (a 400-digit value is never echoed whole)."""
    text = str(value)
    if len(text) <= 24:
        return text
    digits = len(text.lstrip("+-"))
    return f"{text[:12]}… ({digits} digits)"


def offset_problem(value: object) -> str | None:
    """Why `value` is not a valid offset (None when it is one)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{str(value)[:40]!r} is not an integer offset"
    if value < 0:
        return f"offset {short_number(value)} is negative"
    if value >= OFFSET_LIMIT:
        return f"offset {short_number(value)} is not below 2^63"
    return None


@dataclass(frozen=True, order=True)
class TopicPartition:
    """A partition of a topic."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}:{self.partition}"


# One shared (immutable) TopicPartition per partition for hot paths: a bulk reset handles its
# 1,600 partitions five or six times over, and building a frozen dataclass each time cost ~5%
# of the command's CPU.
shared_tp = functools.lru_cache(maxsize=1 << 16)(TopicPartition)


@dataclass(frozen=True)
class Watermarks:
    """Log start (first readable offset) and log end (offset the next record gets)."""

    low: int
    high: int


@dataclass(frozen=True)
class CommittedOffset:
    """A group's committed offset: the offset of the NEXT record it will read.

    `metadata` is the commit metadata as the client read it, or None when the client could not
    read it (confluent-kafka 2.16.1 may hand over bytes past its end, e.g. of the 12 characters
    Kafka Streams commits: see `kafka.admin.commit_metadata`). It is untrusted text: render it
    escaped."""

    offset: int
    metadata: str | None = ""


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
        """True when the group has members or is in any state but Empty/Dead."""
        return bool(self.members) or self.state not in INACTIVE_STATES

    def refusal(self, *, allow_unknown_state: bool = False) -> str | None:
        """Why offsets of this group must not be changed now (None when they may).

        With `allow_unknown_state`, a member-less group whose state the broker reports as
        "unknown" is treated as inactive (for brokers that never report states).
        """
        if not self.is_active:
            return None
        n = len(self.members)
        if not n and self.state == UNKNOWN_STATE:
            if allow_unknown_state:
                return None
            return (f"group {self.group_id} is in state unknown, so it may have a consumer "
                    "joining; stop its consumers, or pass --allow-unknown-state if this broker "
                    "never reports group states")
        return (f"group {self.group_id} has {n} active member{'s' if n != 1 else ''} "
                f"(state {self.state}); stop its consumers and run again")


@dataclass(frozen=True)
class GroupListing:
    """A consumer group as `groups list` shows it."""

    group_id: str
    state: str
    group_type: str = ""
    # the protocol type as Kafka's tools print it: "consumer", or "" for a group that only ever
    # had offsets committed (no member joined); None when the lister did not say
    protocol: str | None = None
