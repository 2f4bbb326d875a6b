"""Read-only views of groups and offsets, as rows ready to render (no Spark, no changes)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from offsetkeeper.kafka import stable
from offsetkeeper.kafka.ports import AdminPort, GroupsPort, LogOffsetsPort
from offsetkeeper.models import GroupInfo, GroupListing, TopicPartition


@dataclass(frozen=True)
class OffsetRow:
    """One line of `groups describe --offsets` (kafka-consumer-groups.sh --describe + log start)."""

    group: str
    topic: str
    partition: int
    current_offset: int | None
    log_start_offset: int
    log_end_offset: int
    lag: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None
    # `lag` is what a read_committed consumer still has to read (kafka/stable.py): against the
    # last stable offset, 0 when only transaction markers or aborted records are left.
    # `lag_raw` is kafka-consumer-groups.sh's LAG, `log end - committed offset`.
    lag_raw: int | None = None
    last_stable_offset: int | None = None
    open_transaction_since: int | None = None   # ms: first record of the open transaction
    # the commit metadata exactly as committed ("" none; None: unreadable); untrusted text,
    # rendered escaped
    metadata: str | None = ""

    @property
    def note(self) -> str | None:
        """Why a number looks odd: a commit beyond the log end gives a negative lag (shown,
        as kafka-consumer-groups.sh shows it, never hidden as 0); an open transaction holds
        read_committed consumers at the last stable offset."""
        if self.lag is not None and self.lag < 0:
            return (f"committed offset {self.current_offset} is beyond the log end "
                    f"{self.log_end_offset} (lag {self.lag}): the log was truncated or the topic "
                    "recreated; the consumer will reset by its auto.offset.reset")
        if self.last_stable_offset is not None and self.last_stable_offset < self.log_end_offset:
            return open_transaction_note(self.last_stable_offset, self.log_end_offset,
                                         self.open_transaction_since)
        return None


def open_transaction_note(lso: int, log_end: int, since_ms: int | None) -> str:
    """One sentence for a partition whose LSO an open transaction holds back."""
    from offsetkeeper.times import iso_ms

    since = f" since {iso_ms(since_ms)}" if since_ms is not None else ""
    return (f"open transaction{since}: read_committed consumers cannot read past the last "
            f"stable offset {lso} (log end {log_end}) until its producer commits or aborts it; "
            "waiting there is not the consumer's fault")


def list_groups(admin: GroupsPort, states: set[str] | None = None) -> list[GroupListing]:
    """Groups, optionally only those in the given states (lower-case, e.g. {'stable','empty'})."""
    groups = admin.list_groups()
    if states:
        groups = [g for g in groups if g.state in states]
    return groups


def resolve_group_ids(admin: GroupsPort, groups: list[str], all_groups: bool) -> list[str]:
    from offsetkeeper.errors import UsageError

    if all_groups and groups:
        raise UsageError("give GROUP names or --all-groups, not both")
    if all_groups:
        return [g.group_id for g in admin.list_groups()]
    if not groups:
        raise UsageError("no group given: name one or more groups, or use --all-groups")
    return list(dict.fromkeys(groups))


def _check_exist(infos: dict[str, GroupInfo], committed: dict[str, dict], admin: GroupsPort | None=None) -> None:
    from offsetkeeper.errors import UnknownGroupError
    from offsetkeeper.kafka.errors import unknown_group

    for g, info in infos.items():
        if info.state in ("dead", "unknown") and not info.members and not committed.get(g):
            if admin is not None:
                raise unknown_group(admin, g)
            raise UnknownGroupError(f"consumer group '{g}' does not exist", group=g)


def _describe(admin: AdminPort, group_ids: list[str], denied: dict[str, str] | None,
              committed_of=None) -> tuple[list[str], dict, dict]:
    """Describe groups and read the committed offsets of `committed_of(infos)` (default: all).

    With a `denied` dict, a group the principal is not authorized for is recorded there (its
    one-line error) and left out, so the others are still shown; without, the error is raised.
    """
    from offsetkeeper.errors import KafkaOperationError
    from offsetkeeper.kafka.errors import AUTHORIZATION

    def check(g: str, res):
        if isinstance(res, Exception):
            if denied is not None and isinstance(res, KafkaOperationError) \
                    and res.code in AUTHORIZATION:
                denied[g] = res.message
                return False
            raise res
        return True

    each = admin.describe_groups_each(group_ids)
    infos = {g: each[g] for g in group_ids if check(g, each[g])}
    wanted = list(infos) if committed_of is None else committed_of(infos)
    read = admin.committed_offsets_each(wanted)
    committed = {g: read[g] for g in wanted if check(g, read[g])}
    ids = [g for g in group_ids if g in infos and (g in committed or g not in wanted)]
    return ids, {g: infos[g] for g in ids}, committed


def describe_states(admin: AdminPort, group_ids: list[str], *,
                    denied: dict[str, str] | None = None) -> list[GroupInfo]:
    """State, coordinator, assignor and members of each group (error for unknown groups).
    With `denied`, groups the principal may not describe are recorded there and left out."""
    ids, infos, committed = _describe(
        admin, group_ids, denied,
        lambda infos: [g for g, i in infos.items() if i.state in ("dead", "unknown")])
    _check_exist(infos, committed, admin)
    return [infos[g] for g in ids]


def describe_offsets(admin: AdminPort, group_ids: list[str], *,
                     denied: dict[str, str] | None = None) -> list[OffsetRow]:
    """Per group and partition: committed offset, log start/end, lag, and the owning member.

    Partitions assigned to a member but never committed show current offset and lag as None
    (rendered '-'), as kafka-consumer-groups.sh does.
    """
    return describe_groups_offsets(admin, group_ids, denied=denied)[1]


def describe_groups_offsets(admin: AdminPort, group_ids: list[str], *,
                            denied: dict[str, str] | None = None,
                            ) -> tuple[list[GroupInfo], list[OffsetRow]]:
    """`describe_states` and `describe_offsets` from one describe of the groups (the
    dashboard's groups page reads both for every group)."""
    group_ids, infos, committed = _describe(admin, group_ids, denied)
    _check_exist(infos, committed, admin)
    owner: dict[tuple[str, TopicPartition], tuple[str, str, str]] = {}
    wanted: set[TopicPartition] = set()
    for g, info in infos.items():
        for m in info.members:
            for tp in m.assignment:
                owner[(g, tp)] = (m.member_id, m.host, m.client_id)
                wanted.add(tp)
    for offs in committed.values():
        wanted.update(offs)
    logs = admin.log_offsets(wanted)
    positions = {(g, tp): o.offset for g, offs in committed.items() for tp, o in offs.items()}
    view = transaction_view(admin, positions, logs)
    rows = []
    for g in group_ids:
        tps = set(committed.get(g, {})) | {tp for (gg, tp) in owner if gg == g}
        for tp in sorted(tps):
            c = committed.get(g, {}).get(tp)
            lo = logs[tp]
            cur = c.offset if c else None
            mid, host, cid = owner.get((g, tp), (None, None, None))
            lag = raw = None
            if cur is not None:
                raw = stable.raw_lag(cur, lo.log_end)
                # beyond the log end: the negative raw lag, as kafka-consumer-groups.sh shows
                lag = raw if raw < 0 else stable.readable_lag(
                    cur, lo.log_end, lo.lso, view.counted.get((tp, cur)))
            rows.append(OffsetRow(g, tp.topic, tp.partition, cur, lo.log_start, lo.log_end,
                                  lag, mid, host, cid, raw, lo.lso,
                                  view.open_since.get(tp) if lo.open_transaction else None,
                                  c.metadata if c else ""))
    return [infos[g] for g in group_ids], rows


@dataclass
class TransactionView:
    """What read_committed consumers see past committed offsets: per (partition, committed
    offset) the records left up to the LSO (counted ones only), per partition held back by an
    open transaction the time of its first record."""

    counted: dict[tuple[TopicPartition, int], int]
    open_since: dict[TopicPartition, int | None]


def transaction_view(admin: LogOffsetsPort, positions: dict[tuple[str, TopicPartition], int],
                     logs: dict, *, timeout_s: float = 3.0) -> TransactionView:
    """Count, with one read_committed consumer, the records left to the LSO on partitions
    whose committed offset is a few offsets short of it (`stable.wants_count`: they may be
    markers only), and read, uncommitted, the first record of each open transaction (at the
    LSO)."""
    wanted: dict[TopicPartition, set[int]] = {}
    for (_, tp), off in positions.items():
        lo = logs.get(tp)
        if lo is not None and stable.wants_count(off, lo.log_end, lo.lso):
            wanted.setdefault(tp, set()).add(off)
    counted: dict[tuple[TopicPartition, int], int] = {}
    rounds = max((len(v) for v in wanted.values()), default=0)
    for i in range(rounds):  # one range per partition per fetch
        ask = {tp: sorted(v)[i] for tp, v in wanted.items() if len(v) > i}
        got = admin.count_readable({tp: (o, logs[tp].lso) for tp, o in ask.items()},
                                   timeout_s=timeout_s)
        for tp, (n, _ts) in got.items():
            counted[(tp, ask[tp])] = n
    held = {tp: lo.lso for tp, lo in logs.items() if lo.open_transaction}
    firsts = admin.first_records(held, read_committed=False, timeout_s=timeout_s)
    return TransactionView(counted, {tp: (firsts[tp][1] if tp in firsts else None)
                                     for tp in held})


def rows_as_dicts(rows) -> list[dict]:
    return [asdict(r) for r in rows]


@dataclass(frozen=True)
class PartitionOffsets:
    """`offsets show`: log start/end of a partition, and the offset for a time if asked."""

    topic: str
    partition: int
    log_start_offset: int
    log_end_offset: int
    offset_at_time: int | None = None


def show_offsets(admin: AdminPort, specs: list[tuple[str, tuple[int, ...] | None]],
                 at_ms: int | None = None) -> list[PartitionOffsets]:
    """Log start/end per partition of the given topics (and the first offset at/after a time)."""
    _, tps = admin.resolve_partitions(specs)
    marks = admin.watermarks(tps)
    at = admin.offsets_for_time(tps, at_ms) if at_ms is not None else {}
    # No record at or after the time: None (shown '-'); a reset to that time goes to log end.
    return [PartitionOffsets(tp.topic, tp.partition, marks[tp].low, marks[tp].high, at.get(tp))
            for tp in tps]
