"""Share groups (KIP-932): describe, and move or delete their share-partition start offsets.

A share group has no committed offsets: each share-partition has a start offset (SPSO), the
first offset not yet acknowledged by the group, and a lag (KIP-1226: the records at or after
the start offset that the group has not acknowledged; the broker computes it). Resetting the
start offset (`kafka-share-groups.sh --reset-offsets`) or deleting it (`--delete-offsets`) is
allowed only while the group has no members, as for consumer groups: offsetkeeper checks the
state itself, plans first (dry run) and applies only the plan, then reads the result back.

Share groups do not go through reset/apply.py: that executor commits consumer-group offsets
(OffsetCommit through librdkafka); a share group's start offsets are a different API
(AlterShareGroupOffsets / DeleteShareGroupOffsets), reached only through Kafka's Java client.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from offsetkeeper.errors import GroupActiveError, OffsetkeeperError, UnknownGroupError, UsageError
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.kafka.group_types import ShareGroupDetail, SharePartitionOffset, state_key
from offsetkeeper.models import TopicPartition

INACTIVE = frozenset({"empty", "dead"})
TARGET_KINDS = ("earliest", "latest", "datetime", "offset")


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


def _check(res: object, group: str) -> object:
    if isinstance(res, UnknownGroupError):
        raise UnknownGroupError(f"share group '{group}' does not exist", group=group) from res
    if isinstance(res, Exception):
        raise res
    return res


def describe_share_groups(admin: KafkaAdmin, group_ids: list[str]) -> list[ShareGroupView]:
    """State, members with assignments, and per partition the start offset, lag and log
    start/end of each share group (an unknown group is an error)."""
    if not group_ids:
        return []
    details = admin.describe_share_groups(group_ids)
    offsets = admin.share_group_offsets(group_ids)
    per_group: dict[str, list[SharePartitionOffset]] = {}
    wanted: set[TopicPartition] = set()
    for g in group_ids:
        _check(details[g], g)
        offs = _check(offsets[g], g)
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


# -- reset / delete: plan, then apply ---------------------------------------------------------

@dataclass(frozen=True)
class ShareTarget:
    """Where to move the start offsets: earliest, latest, datetime (epoch ms) or offset N."""

    kind: str
    value: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in TARGET_KINDS:
            raise UsageError(f"unknown share reset target {self.kind!r}")
        if self.kind in ("datetime", "offset") and self.value is None:
            raise UsageError(f"share reset target {self.kind} needs a value")

    def __str__(self) -> str:
        return self.kind if self.value is None else f"{self.kind} {self.value}"


@dataclass(frozen=True)
class SharePlanRow:
    topic: str
    partition: int
    current_start_offset: int | None
    log_start_offset: int
    log_end_offset: int
    target: int | None      # None for a delete
    note: str | None = None


@dataclass(frozen=True)
class SharePlan:
    """What a share reset or delete would do. `refusal` is set when the group is active."""

    group: str
    kind: str               # "reset" or "delete"
    state: str
    members: int
    target: str
    rows: tuple[SharePlanRow, ...]
    topics: tuple[str, ...] = ()
    refusal: str | None = None


@dataclass(frozen=True)
class ShareApplyReport:
    plan: SharePlan
    errors: dict[str, str] = field(default_factory=dict)   # "topic:partition" or topic -> error
    read_back: dict[TopicPartition, int | None] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors and self.plan.refusal is None


def _refusal(detail: ShareGroupDetail) -> str | None:
    n = len(detail.members)
    if n or state_key(detail.state) not in INACTIVE:
        return (f"share group {detail.group_id} has {n} active member{'s' if n != 1 else ''} "
                f"(state {detail.state}); stop its consumers and run again")
    return None


def _group(admin: KafkaAdmin, group: str) -> tuple[ShareGroupDetail, list[SharePartitionOffset]]:
    detail = _check(admin.describe_share_groups([group])[group], group)
    offsets = _check(admin.share_group_offsets([group])[group], group)
    return detail, offsets  # type: ignore[return-value]


def _partitions(admin: KafkaAdmin, group: str, topics: list[tuple[str, tuple[int, ...] | None]],
                current: dict[TopicPartition, int | None]) -> list[TopicPartition]:
    if topics:
        return admin.resolve_partitions(topics)[1]
    if not current:
        raise UsageError(f"share group {group} has no start offsets yet; name the topics with "
                         "--topic", group=group)
    return sorted(current)


def plan_share_reset(admin: KafkaAdmin, group: str, target: ShareTarget, *,
                     topics: list[tuple[str, tuple[int, ...] | None]] | None = None) -> SharePlan:
    """The start offsets a reset would set, per partition (pure apart from reading the
    cluster). Without `topics`, every partition the group has a start offset for. Offsets
    outside [log start, log end] are clamped with a note; a time with no record at or after
    it resolves to the log end, with a note."""
    detail, offsets = _group(admin, group)
    current = {TopicPartition(o.topic, o.partition): o.start_offset for o in offsets}
    tps = _partitions(admin, group, list(topics or []), current)
    marks = admin.watermarks(tps)
    at = admin.offsets_for_time(tps, target.value) if target.kind == "datetime" else {}
    rows = []
    for tp in tps:
        wm, note = marks[tp], None
        if target.kind == "earliest":
            t = wm.low
        elif target.kind == "latest":
            t = wm.high
        elif target.kind == "datetime":
            t = at.get(tp)
            if t is None:
                t, note = wm.high, "no record at or after the time: the log end"
        else:
            t = int(target.value or 0)
            if t < wm.low:
                t, note = wm.low, f"offset {target.value} is before the log start: clamped"
            elif t > wm.high:
                t, note = wm.high, f"offset {target.value} is after the log end: clamped"
        rows.append(SharePlanRow(tp.topic, tp.partition, current.get(tp), wm.low, wm.high, t, note))
    return SharePlan(group, "reset", detail.state, len(detail.members), str(target), tuple(rows),
                     tuple(sorted({tp.topic for tp in tps})), _refusal(detail))


def plan_share_delete(admin: KafkaAdmin, group: str, topics: list[str]) -> SharePlan:
    """Deleting a share group's start offsets works per topic (DeleteShareGroupOffsets): the
    group forgets where it is and starts again by its share.auto.offset.reset."""
    if not topics:
        raise UsageError("name the topics whose start offsets to delete with --topic")
    detail, offsets = _group(admin, group)
    admin.topic_partitions(topics)  # unknown topics are bad input
    rows = []
    for o in offsets:
        if o.topic in topics:
            rows.append(SharePlanRow(o.topic, o.partition, o.start_offset, -1, -1, None))
    return SharePlan(group, "delete", detail.state, len(detail.members), "delete", tuple(rows),
                     tuple(sorted(set(topics))), _refusal(detail))


def apply_share_plan(admin: KafkaAdmin, plan: SharePlan) -> ShareApplyReport:
    """Apply a plan: refuse it if it was refused, or if the group gained members since it was
    planned; then set (or delete) the start offsets and read them back."""
    if plan.refusal:
        raise GroupActiveError(plan.refusal, group=plan.group)
    detail = _check(admin.describe_share_groups([plan.group])[plan.group], plan.group)
    again = _refusal(detail)  # type: ignore[arg-type]
    if again:
        raise GroupActiveError(again, group=plan.group)
    errors: dict[str, str] = {}
    if plan.kind == "reset":
        res = admin.alter_share_group_offsets(
            plan.group, {TopicPartition(r.topic, r.partition): int(r.target or 0) for r in plan.rows})
        errors = {str(tp): e.message for tp, e in res.items() if isinstance(e, OffsetkeeperError)}
    else:
        res_t = admin.delete_share_group_offsets(plan.group, plan.topics)
        errors = {t: e.message for t, e in res_t.items() if isinstance(e, OffsetkeeperError)}
    after = _check(admin.share_group_offsets([plan.group])[plan.group], plan.group)
    read_back = {TopicPartition(o.topic, o.partition): o.start_offset for o in after}  # type: ignore[union-attr]
    if plan.kind == "reset":
        for r in plan.rows:
            tp = TopicPartition(r.topic, r.partition)
            if str(tp) not in errors and read_back.get(tp) != r.target:
                errors[str(tp)] = (f"read back start offset {read_back.get(tp)} instead of "
                                   f"{r.target}")
    else:
        for tp in read_back:
            if tp.topic in plan.topics and read_back[tp] is not None and tp.topic not in errors:
                errors[tp.topic] = f"{tp} still has start offset {read_back[tp]}"
    return ShareApplyReport(plan, errors, read_back)
