"""Reading a scanned commit history back (no Spark: one group's rows are read with pyarrow).

Replay rule (`offsets_at`): the records of a group are taken in log order (source partition,
source offset — a group lives in one partition of `__consumer_offsets`, so that is the order
the coordinator wrote them); a record counts when its time is at or before T (the commit
timestamp for a commit, the record timestamp for a tombstone, which has no value); a commit
sets the partition's offset, an offset tombstone removes it (deleted or expired). The result is
what the coordinator held at T — exact, where sampled history is approximate.

Pending records: a transaction open at scan time holds back the partition's last stable offset
(LSO); the records from there to the log end were read too (scan.py), but whether each counts
is unknown until the transaction ends (a transactional commit counts only when its COMMIT
marker follows). They are shown, marked `pending`, and left out of the replay, so they are
never a reset target.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from offsetkeeper.errors import StoreError, UnknownGroupError
from offsetkeeper.models import TopicPartition
from offsetkeeper.offsetlog.scan import COMMIT_COLUMNS, GROUP_COLUMNS, ScanSummary, load_summary
from offsetkeeper.storage import join
from offsetkeeper.times import iso_ms


@dataclass(frozen=True)
class CommitEvent:
    """One record of a group's commit history (a commit, or a tombstone)."""

    group: str
    topic: str
    partition: int
    offset: int | None  # None for a tombstone
    time_ms: int  # commit timestamp; record timestamp for a tombstone
    metadata: str | None = None
    leader_epoch: int | None = None
    expire_timestamp: int | None = None
    tombstone: bool = False
    source_partition: int = 0
    source_offset: int = 0
    pending: bool = False  # at or past the LSO of an open transaction at scan time

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class OffsetsAt:
    """A group's committed offsets as of a time, replayed from the log."""

    group: str
    time_ms: int
    offsets: dict[TopicPartition, CommitEvent] = field(default_factory=dict)
    deleted: dict[TopicPartition, CommitEvent] = field(default_factory=dict)  # tombstoned by T
    summary: ScanSummary | None = None
    # commits by T still pending at scan time (left out of `offsets`), the last per partition
    pending: dict[TopicPartition, CommitEvent] = field(default_factory=dict)


def _read_table(out: str, name: str, columns, group: str):
    import pyarrow.dataset as ds

    path = join(out, name)
    try:
        dataset = ds.dataset(path, format="parquet")
        return dataset.to_table(columns=list(columns), filter=ds.field("group") == group)
    except (OSError, ValueError) as exc:  # ArrowInvalid is a ValueError
        raise StoreError(f"cannot read the commit history table {path}: {exc}") from None


def group_commits(out: str, group: str, *, since_ms: int | None = None,
                  until_ms: int | None = None) -> list[CommitEvent]:
    """The group's commits and tombstones in log order, optionally within [since, until]."""
    lso = {int(p): o for p, o in load_summary(out).stable_offsets.items()}
    rows = _read_table(out, "commits", COMMIT_COLUMNS, group).to_pylist()
    rows.sort(key=lambda r: (r["source_partition"], r["source_offset"]))
    events = []
    for r in rows:
        t = r["record_timestamp"] if r["tombstone"] else r["commit_timestamp"]
        if (since_ms is not None and t < since_ms) or (until_ms is not None and t > until_ms):
            continue
        events.append(CommitEvent(
            group=r["group"], topic=r["topic"], partition=r["partition"],
            offset=None if r["tombstone"] else r["offset"], time_ms=t, metadata=r["metadata"],
            leader_epoch=r["leader_epoch"], expire_timestamp=r["expire_timestamp"],
            tombstone=r["tombstone"], source_partition=r["source_partition"],
            source_offset=r["source_offset"],
            pending=r["source_offset"] >= lso.get(r["source_partition"], r["source_offset"] + 1)))
    return events


def offsets_at(out: str, group: str, time_ms: int) -> OffsetsAt:
    """The group's committed offsets as of `time_ms` (see the module docstring)."""
    summary = load_summary(out)
    events = group_commits(out, group)
    if not events:
        raise UnknownGroupError(f"group '{group}' has no commits in the history in {out}", group=group)
    live: dict[TopicPartition, CommitEvent] = {}
    deleted: dict[TopicPartition, CommitEvent] = {}
    pending: dict[TopicPartition, CommitEvent] = {}
    for e in events:
        if e.time_ms > time_ms:
            continue
        if e.pending:
            pending[e.tp] = e
            continue
        if e.tombstone:
            live.pop(e.tp, None)
            deleted[e.tp] = e
        else:
            live[e.tp] = e
            deleted.pop(e.tp, None)
    return OffsetsAt(group=group, time_ms=time_ms, offsets=dict(sorted(live.items())),
                     deleted=dict(sorted(deleted.items())), summary=summary,
                     pending=dict(sorted(pending.items())))


def show_rows(events: list[CommitEvent]) -> list[dict]:
    """`commits show` rows: each commit with the change from the partition's previous commit."""
    last: dict[TopicPartition, int] = {}
    rows = []
    for e in events:
        if e.pending:  # does not move the partition until its transaction is known to commit
            prev = last.get(e.tp)
            change = "deleted" if e.tombstone else "first" if prev is None else \
                f"REWIND {e.offset - prev}" if e.offset < prev else f"+{e.offset - prev}"  # type: ignore[operator]
            rows.append({"time": e.time_ms, "topic": e.topic, "partition": e.partition,
                         "offset": e.offset, "change": f"pending {change}",
                         "metadata": e.metadata, "leader_epoch": e.leader_epoch,
                         "source_offset": e.source_offset, "pending": True})
            continue
        if e.tombstone:
            change = "deleted"
            last.pop(e.tp, None)
        else:
            prev = last.get(e.tp)
            if prev is None:
                change = "first"
            elif e.offset < prev:  # type: ignore[operator]
                change = f"REWIND {e.offset - prev}"  # type: ignore[operator]
            else:
                change = f"+{e.offset - prev}"  # type: ignore[operator]
            last[e.tp] = e.offset  # type: ignore[assignment]
        rows.append({"time": e.time_ms, "topic": e.topic, "partition": e.partition,
                     "offset": e.offset, "change": change, "metadata": e.metadata,
                     "leader_epoch": e.leader_epoch, "source_offset": e.source_offset,
                     "pending": False})
    return rows


def at_rows(result: OffsetsAt) -> list[dict]:
    """`commits at` rows: one per partition live at T (deleted ones marked)."""
    rows = [{"group": result.group, "topic": tp.topic, "partition": tp.partition, "offset": e.offset,
             "committed_at": e.time_ms, "metadata": e.metadata, "leader_epoch": e.leader_epoch,
             "status": "committed"} for tp, e in result.offsets.items()]
    rows += [{"group": result.group, "topic": tp.topic, "partition": tp.partition, "offset": None,
              "committed_at": e.time_ms, "metadata": None, "leader_epoch": None,
              "status": "deleted"} for tp, e in result.deleted.items()]
    rows += [{"group": result.group, "topic": tp.topic, "partition": tp.partition,
              "offset": e.offset, "committed_at": e.time_ms, "metadata": e.metadata,
              "leader_epoch": e.leader_epoch,
              "status": "pending (open transaction; not a reset target)"}
             for tp, e in result.pending.items()]
    return sorted(rows, key=lambda r: (r["topic"], r["partition"]))


def generation_rows(out: str, group: str) -> list[dict]:
    """`commits generations` rows: per group-metadata record, the generation and each member
    with its subscription and assignment."""
    load_summary(out)
    rows = _read_table(out, "groups", GROUP_COLUMNS, group).to_pylist()
    rows.sort(key=lambda r: (r["source_partition"], r["source_offset"]))
    result = []
    for r in rows:
        t = r["current_state_timestamp"] or r["record_timestamp"]
        if r["tombstone"]:
            result.append({"time": t, "generation": None, "state": "deleted", "member": None,
                           "client": None, "host": None, "subscribed": None, "assigned": None})
            continue
        members = r["members"] or []
        if not members:
            result.append({"time": t, "generation": r["generation"], "state": "empty",
                           "member": None, "client": None, "host": None, "subscribed": None,
                           "assigned": None})
        for m in members:
            assigned = ",".join(f"{a['topic']}:{'/'.join(str(p) for p in a['partitions'])}"
                                for a in (m["assigned"] or []))
            result.append({
                "time": t, "generation": r["generation"],
                "state": f"leader {r['protocol'] or '-'}" if m["member_id"] == r["leader"] else r["protocol"],
                "member": m["member_id"], "client": m["client_id"], "host": m["client_host"],
                "subscribed": ",".join(m["subscribed_topics"] or []) or None,
                "assigned": assigned or None})
    return result


def show_group(out: str, group: str, *, since_ms: int | None = None, until_ms: int | None = None) -> list[dict]:
    """`commits show`: the group's commits in the window; a group with no commits at all is an
    UnknownGroupError, an empty window an OffsetkeeperError (a run that selects nothing)."""
    from offsetkeeper.errors import OffsetkeeperError

    events = group_commits(out, group)
    if not events:
        raise UnknownGroupError(f"group '{group}' has no commits in the history in {out}", group=group)
    rows = show_rows(events)
    kept = [r for r, e in zip(rows, events, strict=True)
            if (since_ms is None or e.time_ms >= since_ms) and (until_ms is None or e.time_ms <= until_ms)]
    if not kept:
        raise OffsetkeeperError(f"group '{group}' has no commits between {iso_ms(since_ms) or 'the start'} "
                                f"and {iso_ms(until_ms) or 'the end'} in the history in {out}", group=group)
    return kept
