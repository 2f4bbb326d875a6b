"""Reset planning: what each group's offsets should become, and why. Pure: no I/O.

`plan_reset(facts, scope, target)` — given what the cluster said (`ResetFacts`, read by
`reset.facts`) it computes targets, clamps them into [log start, log end], and writes a note per
partition; `plan_delete(...)` does the same for deleting offsets or whole groups. A `ResetPlan`
is the only input of the one executor, `reset.apply.apply_plan`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum

from offsetkeeper.errors import UsageError
from offsetkeeper.models import (
    CommittedOffset,
    GroupInfo,
    GroupType,
    TopicPartition,
    Watermarks,
    shared_tp,
)
from offsetkeeper.progress import ProgressEvent, ProgressFn, no_progress
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
from offsetkeeper.times import iso_now, ms_of_iso

PROGRESS_EVERY = 1_000  # groups between progress events
NOTE_UNCHANGED = "unchanged"
NOTE_NO_COMMIT = "no committed offset"
NOTE_NEW_GROUP = "new group: created by --execute"
NOTE_NEW_GROUP_REFUSED = "group does not exist: --execute needs --create-groups"
# A group named by the input (a --from-file CSV, a snapshot, a mapping) that the cluster does not
# have: possibly a name the file mangled, so the plan says it loudly.
NOTE_NEW_GROUP_FROM_INPUT = "GROUP DOES NOT EXIST: named by the input; new group: created by --execute"
NOTE_DELETE_UNCOMMITTED = "delete: no committed offset before (restored with OffsetDelete)"
NOTE_STILL_UNCOMMITTED = "no committed offset, as before; unchanged"
# the offset is where the input wants it, only the commit metadata differs (a rollback)
NOTE_METADATA_RESTORED = "same offset; commit metadata restored"
NOTE_METADATA_CLEARED = "same offset; commit metadata cleared"
NOTE_METADATA_UNREADABLE = "commit metadata unreadable: committed without it"


class PlanKind(StrEnum):
    """What executing a plan does to the groups in it."""

    RESET = "reset"                     # commit the target offsets
    DELETE_OFFSETS = "delete-offsets"   # delete the committed offsets of the partitions (KIP-496)
    DELETE_GROUPS = "delete-groups"     # delete the whole groups


class RefusalReason(StrEnum):
    """Why a group is left alone."""

    ACTIVE = "active"                   # members, or a state other than Empty/Dead
    UNKNOWN_STATE = "unknown-state"     # the broker reports state "unknown"
    MOVED = "moved"                     # its offsets changed after planning (another writer)
    NOT_FOUND = "not-found"             # the group does not exist
    NO_MEMBERS = "no-members"           # a live reset needs running members to apply it
    NOT_AUTHORIZED = "not-authorized"   # the principal's ACLs do not allow reading the group


@dataclass(frozen=True)
class Refusal:
    """A group the plan (or the executor) will not touch, and the sentence that says why."""

    reason: RefusalReason
    message: str

    def __str__(self) -> str:
        return self.message


def refusal_of(info: GroupInfo, *, allow_unknown_state: bool = False) -> Refusal | None:
    """The typed refusal for a group's current state (None when its offsets may change)."""
    message = info.refusal(allow_unknown_state=allow_unknown_state)
    if message is None:
        return None
    unknown = not info.members and info.state == "unknown"
    return Refusal(RefusalReason.UNKNOWN_STATE if unknown else RefusalReason.ACTIVE, message)


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
    # Globs or ~regexes over the cluster's groups (or the groups an input file names).
    group_patterns: tuple[str, ...] = ()
    topics: tuple[TopicSpec, ...] = ()
    all_topics: bool = False
    # A live reset (offsetkeeper.consumer.live) is applied by the group's own running members:
    # active groups are expected, and a group without members is refused instead.
    live: bool = False
    # Commit without commit metadata (as kafka-consumer-groups.sh does) instead of keeping each
    # partition's; metadata an input names (a rollback's snapshot) is committed either way.
    clear_metadata: bool = False
    # Named groups the cluster does not have may be created by the commit (--create-groups);
    # without it only the groups an input names (a CSV, a snapshot, a mapping) may be.
    create_groups: bool = False


@dataclass(frozen=True)
class GroupFacts:
    """What the cluster says about one group."""

    info: GroupInfo
    committed: Mapping[TopicPartition, CommittedOffset] = field(default_factory=dict)
    #: the cluster refused to describe the group to this principal (ACLs): the sentence why
    denied: str | None = None

    @property
    def exists(self) -> bool:
        """False for a group the cluster does not know (no members, no commits, dead/unknown)."""
        return bool(self.info.members or self.committed) or self.info.state not in ("dead", "unknown")


@dataclass(frozen=True)
class GroupReads:
    """Groups as one read saw them (`reset.facts.read_groups`): each group's describe answer
    and committed offsets (a value, or the group's error) and when the answers were in (a
    `time.monotonic()` reading). Planning keeps them so that the executor, when it runs a moment
    later, takes them as its snapshot's reads and its re-check instead of reading again."""

    described: Mapping[str, object]
    committed: Mapping[str, object]
    at: float

    def usable_for(self, groups: list[str], *, within_s: float, now: float) -> bool:
        """Every group of `groups` read without error, at most `within_s` before `now`."""
        if now - self.at > within_s:
            return False
        return all(g in self.described and g in self.committed
                   and not isinstance(self.described[g], Exception)
                   and not isinstance(self.committed[g], Exception) for g in groups)


@dataclass(frozen=True)
class ResetFacts:
    """Everything planning needs, read from the cluster beforehand."""

    groups: Mapping[str, GroupFacts]
    topic_partitions: Mapping[str, tuple[int, ...]]
    watermarks: Mapping[TopicPartition, Watermarks]
    time_offsets: Mapping[TopicPartition, int | None] = field(default_factory=dict)
    # A member-less group in state "unknown" counts as inactive (--allow-unknown-state).
    allow_unknown_state: bool = False
    # Groups that do not exist yet and may be created by the commit.
    may_create: frozenset[str] = frozenset()
    # The reads `groups` was made from (planning does not look at them; the executor may).
    reads: GroupReads | None = field(default=None, compare=False, repr=False)


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
    delete: bool = False
    # share groups: records that moving the start offset back delivers again (the broker drops
    # the acknowledgement state from the new start offset on); None when not a share rewind
    redeliver: int | None = None
    # The commit metadata the target is committed with (a reset keeps the partition's own, a
    # rollback restores the snapshot's), and the committed one now (None: unreadable).
    metadata: str = ""
    current_metadata: str | None = ""

    @property
    def tp(self) -> TopicPartition:
        return shared_tp(self.topic, self.partition)

    @property
    def changes(self) -> bool:
        """True when executing would change something (commit a new offset, or delete one)."""
        if self.error is not None:
            return False
        if self.delete:
            return self.current is not None
        if self.target is None:
            return False
        return self.target != self.current or (
            self.current_metadata is not None and self.metadata != self.current_metadata)


@dataclass(frozen=True)
class GroupPlan:
    """The plan for one group, or the reason it is refused."""

    group: str
    state: str
    members: int
    partitions: tuple[PartitionPlan, ...]
    refused: Refusal | None = None
    new_group: bool = False
    may_create: bool = False

    @property
    def current(self) -> dict[TopicPartition, int | None]:
        """The committed offsets the plan was made from (the executor checks nobody moved them)."""
        return {p.tp: p.current for p in self.partitions}

    @property
    def offsets(self) -> dict[TopicPartition, int]:
        """Offsets to commit (partitions with an error are left out)."""
        return {p.tp: p.target for p in self.partitions if p.error is None and p.target is not None}

    @property
    def deletes(self) -> list[TopicPartition]:
        """Partitions whose committed offset is deleted (a reset plan restoring "no committed
        offset", e.g. a rollback; every partition of a delete plan)."""
        return [p.tp for p in self.partitions if p.delete and p.changes]


@dataclass(frozen=True)
class ResetPlan:
    """A serialisable reset plan: print it, export it, or execute it."""

    target: str
    groups: tuple[GroupPlan, ...]
    created_at: str = field(default_factory=iso_now)
    kind: PlanKind = PlanKind.RESET
    # Whether --export writes `group,topic,partition,offset` (None: when the plan has several
    # groups). A reset follows kafka-consumer-groups: the one-group form only for exactly one
    # --group, so an --all-groups plan that found one group still names it.
    group_column: bool | None = None
    # Which offsets the plan changes: committed offsets, or a share group's start offsets. The
    # executor applies it through the admin facade's view for this type (`for_group_type`).
    group_type: GroupType = GroupType.CONSUMER
    # the kind of group when it is not what `group_type` says ("streams": committed offsets of a
    # streams group), shown as the JSON's group_type
    group_kind: str = ""

    def partitions(self) -> Iterator[PartitionPlan]:
        for g in self.groups:
            yield from g.partitions

    @property
    def refused(self) -> list[GroupPlan]:
        return [g for g in self.groups if g.refused]

    @property
    def has_errors(self) -> bool:
        return bool(self.refused) or any(p.error for p in self.partitions())

    @property
    def uncreatable(self) -> list[str]:
        """Groups that do not exist and that executing is not allowed to create (one with no
        partition planned creates nothing: a note says it, see ops.reset)."""
        return [g.group for g in self.groups if g.new_group and not g.may_create and g.partitions]

    @property
    def changes(self) -> bool:
        """True when executing would change anything at all."""
        return any(p.changes for p in self.partitions())

    def to_dict(self) -> dict:
        """The plan as JSON output: `created_at` in epoch ms with `created_at_iso` beside it."""
        return {"kind": str(self.kind), "target": self.target,
                "created_at": ms_of_iso(self.created_at), "created_at_iso": self.created_at,
                **({"group_type": self.group_kind or str(self.group_type)}
                   if self.group_kind or self.group_type is not GroupType.CONSUMER else {}),
                "groups": [asdict(g) for g in self.groups]}


# -- pure planning ---------------------------------------------------------------------------

def _scope_partitions(
    group: str, gf: GroupFacts, scope: ResetScope, target: ResetTarget, facts: ResetFacts
) -> list[TopicPartition]:
    if isinstance(target, FromOffsets):
        tps = set(target.for_group(group)) | target.deletes_for(group)
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
    group: str, tp: TopicPartition, committed: CommittedOffset | None, wm: Watermarks,
    target: ResetTarget, facts: ResetFacts, *, clear_metadata: bool = False,
) -> PartitionPlan:
    current = None if committed is None else committed.offset
    notes: list[str] = []
    error = None
    wanted: int | None
    if isinstance(target, FromOffsets) and tp in target.deletes_for(group) \
            and tp not in target.for_group(group):
        # "no committed offset" is a target too: the commit made since is deleted.
        return PartitionPlan(group=group, topic=tp.topic, partition=tp.partition, current=current,
                             target=None, log_start=wm.low, log_end=wm.high, delete=True,
                             note=NOTE_DELETE_UNCOMMITTED if current is not None
                             else NOTE_STILL_UNCOMMITTED)
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
    # The commit metadata: kept as the partition has it (kafka-consumer-groups.sh commits none),
    # or the one the input names (a rollback: the snapshot's). docs/oracle.md says why.
    have = "" if committed is None else committed.metadata
    given = target.metadata_for(group, tp) if isinstance(target, FromOffsets) else None
    metadata = given if given is not None else "" if clear_metadata else (have or "")
    if wanted is not None and given is None and have is None and not clear_metadata:
        notes.append(NOTE_METADATA_UNREADABLE)
    if wanted is not None and wanted == current:
        notes.append(NOTE_UNCHANGED if have is None or metadata == have
                     else NOTE_METADATA_RESTORED if given is not None else NOTE_METADATA_CLEARED)
    return PartitionPlan(group=group, topic=tp.topic, partition=tp.partition, current=current,
                         target=wanted, log_start=wm.low, log_end=wm.high,
                         note="; ".join(notes), error=error, metadata=metadata,
                         current_metadata=have)


def plan_reset(facts: ResetFacts, scope: ResetScope, target: ResetTarget, *, label: str = "",
               progress: ProgressFn = no_progress) -> ResetPlan:
    """Compute the reset plan from cluster facts. Pure: no I/O (`progress` hears how many
    groups are planned, every PROGRESS_EVERY). Linear in groups x partitions."""
    plans = []
    named_groups = target.named_groups if isinstance(target, FromOffsets) else frozenset()
    total = len(facts.groups)
    for i, group in enumerate(sorted(facts.groups)):
        if i % PROGRESS_EVERY == 0:
            progress(ProgressEvent("planning", i, total, "groups"))
        gf = facts.groups[group]
        if gf.denied:
            plans.append(_denied_plan(group, gf))
            continue
        tps = _scope_partitions(group, gf, scope, target, facts)
        parts = []
        for tp in tps:
            wm = facts.watermarks.get(tp)
            if wm is None and isinstance(target, FromOffsets) and tp in target.deletes_for(group):
                wm = Watermarks(-1, -1)  # deleting a commit needs no watermarks
            if wm is None:
                parts.append(PartitionPlan(group, tp.topic, tp.partition,
                                           _committed(gf, tp), None, -1, -1,
                                           error=f"unknown partition {tp}"))
                continue
            part = _plan_partition(group, tp, gf.committed.get(tp), wm, target, facts,
                                   clear_metadata=scope.clear_metadata)
            if not gf.exists:
                named = group in named_groups
                part = _with_note(part, NOTE_NEW_GROUP_REFUSED if group not in facts.may_create
                                  else NOTE_NEW_GROUP_FROM_INPUT if named else NOTE_NEW_GROUP)
            parts.append(part)
        refused = refusal_of(gf.info, allow_unknown_state=facts.allow_unknown_state)
        if scope.live:
            # A live reset is applied by the group's own running members, so it needs them.
            refused = None if gf.info.is_active else Refusal(
                RefusalReason.NO_MEMBERS,
                f"group {group} has no active members; a live reset is applied by running "
                "consumers (run without --live)")
        plans.append(GroupPlan(group=group, state=gf.info.state, members=len(gf.info.members),
                               partitions=tuple(parts), new_group=not gf.exists,
                               may_create=group in facts.may_create, refused=refused))
    progress(ProgressEvent("planning", total, total, "groups"))
    return ResetPlan(target=label or target.label, groups=tuple(plans),
                     group_column=scope.all_groups or bool(scope.group_patterns) or len(scope.groups) != 1)


def plan_delete(facts: ResetFacts, scope: ResetScope, *, whole_groups: bool) -> ResetPlan:
    """Plan deleting committed offsets (of the partitions in scope) or whole groups. Pure.

    A group without committed offsets in scope is planned with nothing to do; the caller
    decides whether that is an error (a group that does not exist is refused as NOT_FOUND).
    """
    plans = []
    for group in sorted(facts.groups):
        gf = facts.groups[group]
        if gf.denied:
            plans.append(_denied_plan(group, gf))
            continue
        if whole_groups:
            tps = sorted(gf.committed)
        else:
            tps = [tp for tp in _spec_partitions(scope.topics, facts)]
        parts = []
        for tp in tps:
            wm = facts.watermarks.get(tp, Watermarks(-1, -1))
            cur = _committed(gf, tp)
            parts.append(PartitionPlan(group, tp.topic, tp.partition, cur, None, wm.low, wm.high,
                                       note="delete" if cur is not None else NOTE_NO_COMMIT,
                                       delete=True))
        refused = refusal_of(gf.info, allow_unknown_state=facts.allow_unknown_state)
        if not gf.exists:
            refused = Refusal(RefusalReason.NOT_FOUND, f"group {group} does not exist")
        plans.append(GroupPlan(group=group, state=gf.info.state, members=len(gf.info.members),
                               partitions=tuple(parts), refused=refused))
    kind = PlanKind.DELETE_GROUPS if whole_groups else PlanKind.DELETE_OFFSETS
    return ResetPlan(target=str(kind), groups=tuple(plans), kind=kind)


def _denied_plan(group: str, gf: GroupFacts) -> GroupPlan:
    """A group the principal may not read: refused, with nothing planned (the others go on)."""
    return GroupPlan(group=group, state=gf.info.state, members=0, partitions=(),
                     refused=Refusal(RefusalReason.NOT_AUTHORIZED, f"group {group}: {gf.denied}"))


def _with_note(p: PartitionPlan, note: str) -> PartitionPlan:
    # Built directly: dataclasses.replace costs 10x (once per partition of a new group).
    return PartitionPlan(p.group, p.topic, p.partition, p.current, p.target, p.log_start,
                         p.log_end, f"{p.note}; {note}" if p.note else note, p.error, p.delete,
                         p.redeliver, p.metadata, p.current_metadata)


def _committed(gf: GroupFacts, tp: TopicPartition) -> int | None:
    c = gf.committed.get(tp)
    return None if c is None else c.offset
