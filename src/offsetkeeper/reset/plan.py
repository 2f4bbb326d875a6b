"""Reset planning: what each group's offsets should become, and why.

`plan_reset(facts, target)` is pure — given what the cluster said (`ResetFacts`) it computes
targets, clamps them into [log start, log end], and writes a note per partition. It is the
only input of `reset.apply.apply_plan`. `build_plan(admin, scope, target)` gathers the facts
from a cluster and then plans.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from offsetkeeper.errors import UnknownGroupError, UnknownTopicError, UsageError
from offsetkeeper.models import CommittedOffset, GroupInfo, TopicPartition, Watermarks
from offsetkeeper.reset.targets import (
    FromOffsets,
    ResetTarget,
    ShiftBy,
    ToCurrent,
    ToDatetime,
    ToEarliest,
    ToLatest,
    ToOffset,
)

NOTE_UNCHANGED = "unchanged"
NOTE_NO_COMMIT = "no committed offset"


@dataclass(frozen=True)
class TopicSpec:
    """A topic, and optionally which of its partitions (None = all)."""

    topic: str
    partitions: tuple[int, ...] | None = None


@dataclass(frozen=True)
class ResetScope:
    """Which groups and partitions a reset touches."""

    groups: tuple[str, ...] = ()
    all_groups: bool = False
    topics: tuple[TopicSpec, ...] = ()
    all_topics: bool = False
    # A live reset (offsetkeeper.consumer.live) is applied by the group's own running members:
    # active groups are expected, and a group without members is refused instead.
    live: bool = False


@dataclass(frozen=True)
class GroupFacts:
    """What the cluster says about one group."""

    info: GroupInfo
    committed: Mapping[TopicPartition, CommittedOffset] = field(default_factory=dict)


@dataclass(frozen=True)
class ResetFacts:
    """Everything planning needs, read from the cluster beforehand."""

    groups: Mapping[str, GroupFacts]
    topic_partitions: Mapping[str, tuple[int, ...]]
    watermarks: Mapping[TopicPartition, Watermarks]
    time_offsets: Mapping[TopicPartition, int | None] = field(default_factory=dict)


@dataclass(frozen=True)
class PartitionPlan:
    """The planned change of one partition of one group."""

    group: str
    topic: str
    partition: int
    current: int | None
    target: int | None
    log_start: int
    log_end: int
    note: str = ""
    error: str | None = None

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def changes(self) -> bool:
        """True when executing would commit something new."""
        return self.error is None and self.target is not None and self.target != self.current


@dataclass(frozen=True)
class GroupPlan:
    """The plan for one group, or the reason it is refused."""

    group: str
    state: str
    members: int
    partitions: tuple[PartitionPlan, ...]
    refused: str | None = None

    @property
    def offsets(self) -> dict[TopicPartition, int]:
        """Offsets to commit (partitions with an error are left out)."""
        return {p.tp: p.target for p in self.partitions if p.error is None and p.target is not None}


@dataclass(frozen=True)
class ResetPlan:
    """A serialisable reset plan: print it, export it, or execute it."""

    target: str
    groups: tuple[GroupPlan, ...]
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def partitions(self) -> Iterator[PartitionPlan]:
        for g in self.groups:
            yield from g.partitions

    @property
    def refused(self) -> list[GroupPlan]:
        return [g for g in self.groups if g.refused]

    @property
    def has_errors(self) -> bool:
        return bool(self.refused) or any(p.error for p in self.partitions())

    def to_dict(self) -> dict:
        return {"target": self.target, "created_at": self.created_at,
                "groups": [asdict(g) for g in self.groups]}


# -- pure planning ---------------------------------------------------------------------------

def _scope_partitions(
    group: str, gf: GroupFacts, scope: ResetScope, target: ResetTarget, facts: ResetFacts
) -> list[TopicPartition]:
    if isinstance(target, FromOffsets):
        tps = set(target.for_group(group))
        if scope.topics:
            wanted = _spec_partitions(scope.topics, facts)
            tps &= set(wanted)
        return sorted(tps)
    if scope.all_topics:
        return sorted(gf.committed)
    return _spec_partitions(scope.topics, facts)


def _spec_partitions(specs: tuple[TopicSpec, ...], facts: ResetFacts) -> list[TopicPartition]:
    out: set[TopicPartition] = set()
    for spec in specs:
        parts = facts.topic_partitions[spec.topic]
        out.update(TopicPartition(spec.topic, p) for p in (spec.partitions or parts))
    return sorted(out)


def _plan_partition(
    group: str, tp: TopicPartition, current: int | None, wm: Watermarks, target: ResetTarget,
    facts: ResetFacts,
) -> PartitionPlan:
    notes: list[str] = []
    error = None
    wanted: int | None
    if isinstance(target, ToEarliest):
        wanted = wm.low
    elif isinstance(target, ToLatest):
        wanted = wm.high
    elif isinstance(target, ToCurrent):
        if current is None:
            wanted = wm.high
            notes.append(f"{NOTE_NO_COMMIT}; log end")
        else:
            wanted = current
    elif isinstance(target, ToOffset):
        wanted = target.offset
    elif isinstance(target, ShiftBy):
        if current is None:
            wanted = None
            error = f"{NOTE_NO_COMMIT} to shift from"
        else:
            wanted = current + target.delta
    elif isinstance(target, ToDatetime):
        wanted = facts.time_offsets.get(tp)
        if wanted is None:
            wanted = wm.high
            notes.append("no record at or after the time; log end")
    elif isinstance(target, FromOffsets):
        wanted = target.for_group(group)[tp]
        if note := target.note_for(group, tp):
            notes.append(note)
    else:  # pragma: no cover - exhaustive over ResetTarget
        raise UsageError(f"unsupported reset target {target!r}")

    if wanted is not None:
        if wanted < wm.low:
            notes.append(f"clamped to log start (asked {wanted})")
            wanted = wm.low
        elif wanted > wm.high:
            notes.append(f"clamped to log end (asked {wanted})")
            wanted = wm.high
    if current is None and error is None and not any(n.startswith(NOTE_NO_COMMIT) for n in notes):
        notes.append(NOTE_NO_COMMIT)
    if wanted is not None and wanted == current:
        notes.append(NOTE_UNCHANGED)
    return PartitionPlan(group=group, topic=tp.topic, partition=tp.partition, current=current,
                         target=wanted, log_start=wm.low, log_end=wm.high,
                         note="; ".join(notes), error=error)


def plan_reset(facts: ResetFacts, scope: ResetScope, target: ResetTarget, *, label: str = "") -> ResetPlan:
    """Compute the reset plan from cluster facts. Pure: no I/O."""
    plans = []
    for group in sorted(facts.groups):
        gf = facts.groups[group]
        tps = _scope_partitions(group, gf, scope, target, facts)
        parts = []
        for tp in tps:
            wm = facts.watermarks.get(tp)
            if wm is None:
                parts.append(PartitionPlan(group, tp.topic, tp.partition,
                                           _committed(gf, tp), None, -1, -1,
                                           error=f"unknown partition {tp}"))
                continue
            parts.append(_plan_partition(group, tp, _committed(gf, tp), wm, target, facts))
        refused = gf.info.refusal
        if scope.live:
            refused = None if gf.info.is_active else (
                f"group {group} has no active members; a live reset is applied by running "
                "consumers (run without --live)")
        plans.append(GroupPlan(group=group, state=gf.info.state, members=len(gf.info.members),
                               partitions=tuple(parts), refused=refused))
    return ResetPlan(target=label or target.label, groups=tuple(plans))


def _committed(gf: GroupFacts, tp: TopicPartition) -> int | None:
    c = gf.committed.get(tp)
    return None if c is None else c.offset


# -- gathering facts -------------------------------------------------------------------------

def resolve_groups(admin, scope: ResetScope, target: ResetTarget) -> list[str]:
    """The group ids in scope (all groups, the named ones, or those named in a file)."""
    if scope.all_groups:
        return [g.group_id for g in admin.list_groups()]
    if scope.groups:
        return list(dict.fromkeys(scope.groups))
    if isinstance(target, FromOffsets) and target.groups():
        return target.groups()
    raise UsageError("no group given: use --group GROUP (repeatable) or --all-groups")


def gather_facts(admin, scope: ResetScope, target: ResetTarget, groups: list[str]) -> ResetFacts:
    """Read group states, committed offsets, partitions, watermarks (and times) for planning."""
    infos = admin.describe_groups(groups)
    committed = admin.committed_offsets_many(groups)
    gfacts = {g: GroupFacts(infos[g], committed.get(g, {})) for g in groups}

    needs_commit = isinstance(target, ShiftBy) or (scope.all_topics and not isinstance(target, FromOffsets))
    if needs_commit and not scope.all_groups:
        for g, gf in gfacts.items():
            if not gf.committed:
                raise UnknownGroupError(
                    f"group '{g}' has no committed offsets"
                    + (" to shift from" if isinstance(target, ShiftBy) else " (--all-topics needs them)"),
                    group=g)

    topics = {s.topic for s in scope.topics}
    for gf in gfacts.values():
        if isinstance(target, FromOffsets):
            topics.update(tp.topic for tp in target.for_group(gf.info.group_id))
        elif scope.all_topics:
            topics.update(tp.topic for tp in gf.committed)
    topic_parts = {t: tuple(p) for t, p in admin.topic_partitions(sorted(topics)).items()}
    for spec in scope.topics:
        missing = sorted(set(spec.partitions or ()) - set(topic_parts[spec.topic]))
        if missing:
            raise UnknownTopicError(
                f"topic '{spec.topic}' has no partition {missing[0]} "
                f"(partitions 0-{len(topic_parts[spec.topic]) - 1})", topic=spec.topic,
                partition=missing[0])
    if isinstance(target, FromOffsets):
        for g in groups:
            for tp in target.for_group(g):
                if tp.partition not in topic_parts.get(tp.topic, ()):
                    raise UnknownTopicError(f"{target.source}: topic '{tp.topic}' has no partition "
                                            f"{tp.partition}", topic=tp.topic, partition=tp.partition)
    all_tps = [TopicPartition(t, p) for t, ps in topic_parts.items() for p in ps]
    watermarks = admin.watermarks(all_tps)
    time_offsets = admin.offsets_for_time(all_tps, target.timestamp_ms) \
        if isinstance(target, ToDatetime) else {}
    return ResetFacts(groups=gfacts, topic_partitions=topic_parts, watermarks=watermarks,
                      time_offsets=time_offsets)


def build_plan(admin, scope: ResetScope, target: ResetTarget, *, label: str = "") -> ResetPlan:
    """Read the cluster and plan the reset (nothing is changed)."""
    if not (scope.topics or scope.all_topics or isinstance(target, FromOffsets)):
        raise UsageError("no topic given: use --topic TOPIC[:P,...] (repeatable) or --all-topics")
    if scope.topics and scope.all_topics:
        raise UsageError("--topic and --all-topics are mutually exclusive")
    if scope.groups and scope.all_groups:
        raise UsageError("--group and --all-groups are mutually exclusive")
    groups = resolve_groups(admin, scope, target)
    facts = gather_facts(admin, scope, target, groups)
    return plan_reset(facts, scope, target, label=label)
