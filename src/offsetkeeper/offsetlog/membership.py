"""Membership history of consumer (KIP-848), share and streams groups, replayed from the
coordinator records a scan keeps in `OUT/coordinator/` (no Spark: one group's rows are read with
pyarrow).

What the coordinator writes, per group type (consumer / share / streams record types):

- group metadata (3 / 11 / 17): the group epoch. A new epoch is a rebalance: a member joined,
  left or changed its subscription. A tombstone: the group was deleted.
- member metadata (5 / 10 / 19): a member's client id, host, subscription (topics or a regex),
  rebalance timeout. The first one for a member is when it joined; a tombstone is when it left.
- target assignment (6 / 12 / 20 for the epoch, 7 / 13 / 21 per member): what the assignor wants.
- current assignment (8 / 14 / 22): what the member owns now, its member epoch (and the one
  before), its state (stable, or still revoking / waiting for partitions), what it still has to
  revoke.
- regular expression (16, consumer groups): the topics a subscribed regex resolved to.

Events are taken in log order (source partition, source offset), timed by the record's append
time. Topics are named by id in these records; the scan keeps the source cluster's id -> name
map (scan.json `topic_names`), ids without a name are shown as they are.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from offsetkeeper.errors import StoreError
from offsetkeeper.offsetlog.scan import COORDINATOR_COLUMNS, load_summary
from offsetkeeper.storage import join

GROUP_METADATA = {3: "consumer", 11: "share", 17: "streams"}
MEMBER_METADATA = {5, 10, 19}
TARGET_METADATA = {6, 12, 20}
TARGET_MEMBER = {7, 13, 21}
CURRENT_ASSIGNMENT = {8, 14, 22}
REGULAR_EXPRESSION = 16
MEMBER_STATES = {0: "stable", 1: "revoking", 2: "waiting for partitions", 127: "unknown"}
_TASKS = ("active_tasks", "standby_tasks", "warmup_tasks")


def read_coordinator(out: str, group: str | None = None,
                     record_types: Iterable[int] | None = None) -> list[dict]:
    """The coordinator records of a scan (of one group, of some types), in log order. A scan made
    before offsetkeeper decoded them has no such table: an empty list."""
    import pyarrow.dataset as ds

    path = join(out, "coordinator")
    try:
        dataset = ds.dataset(path, format="parquet")
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        if "not exist" in str(exc) or "No such file" in str(exc):
            return []
        raise StoreError(f"cannot read the commit history table {path}: {exc}") from None
    flt = None
    if group is not None:
        flt = ds.field("group") == group
    if record_types is not None:
        by_type = ds.field("record_type").isin(list(record_types))
        flt = by_type if flt is None else flt & by_type
    rows = dataset.to_table(columns=list(COORDINATOR_COLUMNS), filter=flt).to_pylist()
    rows.sort(key=lambda r: (r["source_partition"], r["source_offset"]))
    return rows


def _partitions(items, names: dict[str, str]) -> str | None:
    """`orders:0/1,payments:3` from [{topic_id, partitions}, ...] (ids named where known)."""
    if not items:
        return None
    return ",".join(f"{names.get(tp['topic_id'], tp['topic_id'])}:"
                    f"{'/'.join(str(p) for p in sorted(tp['partitions']))}" for tp in items)


def _tasks(value: dict, suffix: str = "") -> str | None:
    """Streams tasks: `active 0_0:0/1; standby 1_0:2`."""
    parts = []
    for kind in _TASKS:
        items = value.get(kind + suffix) or []
        if items:
            text = ",".join(f"{t['subtopology_id']}:{'/'.join(str(p) for p in sorted(t['partitions']))}"
                            for t in items)
            parts.append(f"{kind.split('_')[0]} {text}")
    return "; ".join(parts) or None


def _assigned(record_type: int, value: dict, names: dict[str, str]) -> str | None:
    if record_type in (21, 22):
        return _tasks(value)
    return _partitions(value.get("assigned_partitions", value.get("topic_partitions")), names)


def _subscribed(value: dict) -> str | None:
    topics = ",".join(value.get("subscribed_topic_names") or ())
    regex = value.get("subscribed_topic_regex")
    if regex:
        topics = f"{topics},/{regex}/" if topics else f"/{regex}/"
    return topics or None


@dataclass
class _Member:
    member_id: str
    client: str | None = None
    host: str | None = None
    subscribed: str | None = None
    joined: int | None = None
    left: int | None = None
    first_epoch: int | None = None
    last_epoch: int | None = None
    assigned: str | None = None
    rebalances: int = 0
    history: list = field(default_factory=list)


def membership_rows(out: str, group: str) -> list[dict]:
    """`commits generations` rows for a consumer, share or streams group: one per event (a new
    group epoch, a member joining, changing its subscription, getting a new assignment or
    epoch, leaving), with the columns of a classic group's generations."""
    summary = load_summary(out)
    names = summary.topic_names
    rows = read_coordinator(out, group)
    epoch: int | None = None
    known: dict[str, dict] = {}  # member -> its latest member metadata
    result = []

    def row(r: dict, state: str, **kw) -> dict:
        base = {"time": r["record_timestamp"], "generation": epoch, "state": state,
                "member": r["member_id"], "client": None, "host": None, "subscribed": None,
                "assigned": None}
        m = known.get(r["member_id"] or "")
        if m is not None:
            base.update(client=m.get("client_id"), host=m.get("client_host"))
        base.update(kw)
        return base

    for r in rows:
        t, value = r["record_type"], (json.loads(r["fields"]) if r["fields"] else None)
        if t in GROUP_METADATA:
            if value is None:
                result.append(row(r, "group deleted"))
                epoch = None
                known.clear()
                continue
            epoch = value["epoch"]
            n = len(known)
            result.append(row(r, f"group epoch {epoch} ({GROUP_METADATA[t]} group, "
                                 f"{n} member{'' if n == 1 else 's'})"))
        elif t in MEMBER_METADATA:
            mid = r["member_id"]
            if value is None:
                result.append(row(r, "left"))
                known.pop(mid, None)
                continue
            before = known.get(mid)
            known[mid] = value
            sub = _subscribed(value)
            if before is None:
                state = "joined"
            elif _subscribed(before) != sub:
                state = "subscription changed"
            else:
                state = "member updated"
            result.append(row(r, state, subscribed=sub))
        elif t in CURRENT_ASSIGNMENT:
            if value is None:
                continue
            revoking = (_tasks(value, "_pending_revocation") if t == 22 else
                        _partitions(value.get("partitions_pending_revocation"), names))
            state = (f"member epoch {value['previous_member_epoch']} -> {value['member_epoch']}, "
                     f"{MEMBER_STATES.get(value['state'], value['state'])}")
            if revoking:
                state += f", revoking {revoking}"
            result.append(row(r, state, assigned=_assigned(t, value, names) or ""))
        elif t == REGULAR_EXPRESSION and value is not None:
            regex = json.loads(r["record_key"] or "{}").get("regular_expression", "")
            result.append(row(r, f"regex /{regex}/ resolved", member=None,
                              subscribed=",".join(value.get("topics") or ()) or None))
        elif t in TARGET_MEMBER and value is not None:
            result.append(row(r, "target assignment", assigned=_assigned(t, value, names) or ""))
        elif t in TARGET_METADATA and value is not None:
            result.append(row(r, f"target assignment epoch {value['assignment_epoch']}",
                              member=None))
    return result


def member_rows(out: str, group: str) -> list[dict]:
    """One row per member of a consumer, share or streams group: when it joined and left, its
    first and last member epoch, client, host, latest subscription and assignment, and how
    many assignment changes it went through (see `replay_members`)."""
    from offsetkeeper.offsetlog.commit_history import _read_table
    from offsetkeeper.offsetlog.scan import GROUP_COLUMNS

    summary = load_summary(out)
    try:
        classic = _read_table(out, "groups", GROUP_COLUMNS, group).to_pylist()
    except StoreError:  # a history without classic group records
        classic = []
    return replay_members(read_coordinator(out, group), classic, summary.topic_names)


def replay_members(coordinator: list[dict], classic: list[dict],
                   topic_names: dict[str, str]) -> list[dict]:
    """`member_rows` from the rows of a scan (pure): the coordinator records of the group and
    its classic group-metadata records, merged in log order.

    A group that converts back to the classic protocol (its last consumer-protocol member
    left) tombstones every member's consumer records and writes a classic group-metadata
    record listing the members that stay: those did not leave. A member counts as left when
    its consumer records are tombstoned and no classic record lists it after that, or when a
    later classic record (or the group's tombstone) no longer lists it."""
    members: dict[str, _Member] = {}
    classic_now: set[str] = set()  # members present through the classic protocol
    events = [(r["source_partition"], r["source_offset"], 0, r) for r in coordinator] + \
             [(r["source_partition"], r["source_offset"], 1, r) for r in classic]
    for _, _, is_classic, r in sorted(events, key=lambda e: e[:2]):
        ts = r["record_timestamp"]
        if is_classic:
            listed = set() if r["tombstone"] else {m["member_id"] for m in r["members"] or ()}
            for mid, m in members.items():
                if mid in listed:
                    m.left = None  # stays, as a classic member
                elif mid in classic_now and m.left is None:
                    m.left = ts
            classic_now = listed & set(members)
            continue
        t, mid = r["record_type"], r["member_id"]
        if mid is None:
            continue
        value = json.loads(r["fields"]) if r["fields"] else None
        m = members.setdefault(mid, _Member(mid))
        if t in MEMBER_METADATA:
            if value is None:
                m.left = ts
            else:
                if m.joined is None or (m.left is not None and ts > m.left):
                    m.joined, m.left = ts, None
                m.client, m.host = value.get("client_id"), value.get("client_host")
                m.subscribed = _subscribed(value)
                classic_now.discard(mid)
        elif t in CURRENT_ASSIGNMENT and value is not None:
            if m.first_epoch is None:
                m.first_epoch = value["member_epoch"]
            m.last_epoch = value["member_epoch"]
            m.assigned = _assigned(t, value, topic_names)
            m.rebalances += 1
    return [{"member": m.member_id, "client": m.client, "host": m.host, "joined": m.joined,
             "left": m.left, "first_epoch": m.first_epoch, "last_epoch": m.last_epoch,
             "assignments": m.rebalances, "subscribed": m.subscribed, "assigned": m.assigned}
            for m in sorted(members.values(), key=lambda m: (m.joined or 0, m.member_id))]


def rebalance_events(out: str, group: str | None = None) -> list[dict]:
    """Per new group epoch of a consumer, share or streams group: (group, epoch, time, members
    at that moment) — what `commits rebalances` counts for them (classic groups: generations)."""
    rows = read_coordinator(out, group, set(GROUP_METADATA) | MEMBER_METADATA)
    live: dict[str, set[str]] = {}
    seen: dict[str, set[int]] = {}
    events = []
    for r in rows:
        g, t = r["group"], r["record_type"]
        if t in MEMBER_METADATA:
            members = live.setdefault(g, set())
            if r["tombstone"]:
                members.discard(r["member_id"])
            else:
                members.add(r["member_id"])
            continue
        if r["tombstone"]:
            live.pop(g, None)
            continue
        e = json.loads(r["fields"])["epoch"]
        if e in seen.setdefault(g, set()):
            continue
        seen[g].add(e)
        events.append({"group": g, "generation": e, "time": r["record_timestamp"],
                       "members": len(live.get(g, ())), "type": GROUP_METADATA[t]})
    return events
