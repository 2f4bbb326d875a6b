"""What the dashboard's pages read and do, in terms of the operations layer (`offsetkeeper.ops`).

Reads: `overview` (groups page) and `group_view` (group page) from ops.list_groups,
ops.describe_states and ops.describe_offsets plus the history view. Changes: plans made by
ops.plan_reset_request / ops.rollback are kept here between the preview and the confirmation
(`PlanBook`), and a confirmed plan runs through ops.execute_plan — the one executor, which
re-checks active members and moved offsets at execute time and snapshots first.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

from offsetkeeper.config import ConfigFile, Connection
from offsetkeeper.errors import UnknownGroupError, UsageError
from offsetkeeper.kafka.connect import resolve_connection
from offsetkeeper.web.data import GroupHistory, HistoryView, safe

PLAN_TTL_S = 15 * 60
DESCRIBE_CHUNK = 500
MAX_PLANS = 200


class Clusters:
    """The clusters the dashboard may talk to (names from the config file), one admin each."""

    def __init__(self, config: ConfigFile, *, bootstrap: str | None = None) -> None:
        self._conns: dict[str, Connection] = {}
        for name in config.clusters:
            self._conns[name] = resolve_connection(cluster=name, config=config)
        if bootstrap:
            self._conns.setdefault("default", resolve_connection(bootstrap_server=bootstrap))
        if not self._conns:
            raise UsageError("no cluster configured: add clusters to the config file or give "
                             "--bootstrap-server")
        first = "default" if bootstrap else None
        self.default = first or config.default_cluster or next(iter(self._conns))
        if self.default not in self._conns:
            self.default = next(iter(self._conns))
        self._admins: dict[str, object] = {}
        self._lock = threading.Lock()

    @property
    def names(self) -> list[str]:
        return list(self._conns)

    def admin(self, name: str):
        """The shared KafkaAdmin of a configured cluster (UnknownGroup-like 404 otherwise)."""
        from offsetkeeper.kafka.admin import KafkaAdmin

        if name not in self._conns:
            raise UsageError(f"cluster '{name}' is not configured")
        with self._lock:
            if name not in self._admins:
                self._admins[name] = KafkaAdmin(self._conns[name])
            return self._admins[name]

    def close(self) -> None:
        for a in self._admins.values():
            a.close()


@dataclass(frozen=True)
class GroupRow:
    """One line of the groups page."""

    group: str
    state: str
    members: int
    partitions: int
    lag: int | None
    time_lag_s: float | None
    status: str | None
    reason: str
    spark: tuple[float, ...] = ()
    error: str | None = None        # this group's history could not be read


def _describe(admin, ids: list[str]):
    """States, members and offsets of `ids` (one describe), dropping groups that vanished
    between listing and describing (a live cluster changes under us)."""
    from offsetkeeper.describe import describe_groups_offsets

    ids = list(ids)
    for _ in range(5):
        try:
            return describe_groups_offsets(admin, ids)
        except UnknownGroupError as exc:
            if exc.group not in ids:
                raise
            ids.remove(exc.group)
    return describe_groups_offsets(admin, ids)


def overview(admin, history: HistoryView | None, ids: list[str] | None = None
             ) -> tuple[list[GroupRow], str | None]:
    """Groups `ids` (default: every group) with state, members, lag now, and (from the
    history) status, time lag and a sparkline; the second value is a history error to show."""
    if ids is None:
        from offsetkeeper.ops import list_groups

        ids = [g.group_id for g in list_groups(admin)]
    if not ids:
        return [], None
    infos, rows = [], []
    for i in range(0, len(ids), DESCRIBE_CHUNK):
        # At most DESCRIBE_CHUNK groups' requests in flight: with 10,000 groups at once
        # librdkafka aborted the process (rd_kafka_enq_once_del_source_return: Assertion
        # `eonce->refcnt > 0'), taking the dashboard down with it.
        more_infos, more_rows = _describe(admin, ids[i:i + DESCRIBE_CHUNK])
        infos += more_infos
        rows += more_rows
    lag: dict[str, int] = defaultdict(int)
    parts: dict[str, int] = defaultdict(int)
    for r in rows:
        parts[r.group] += 1
        if r.lag is not None:
            # A negative lag (committed past the log end) is shown per partition, not netted.
            lag[r.group] += max(0, r.lag)
    hist: dict[str, GroupHistory] = {}
    err = None
    if history is not None:
        # Not in a thread next to the cluster calls: CPU-bound history parsing holding the GIL
        # delays every wake-up of the many small cluster waits (measured: slower overall).
        hist, err = safe(lambda: history.groups([i.group_id for i in infos]), {})
    out = []
    for i in infos:
        h = hist.get(i.group_id, GroupHistory())
        out.append(GroupRow(i.group_id, i.state, len(i.members), parts[i.group_id],
                            lag[i.group_id] if parts[i.group_id] else None, h.time_lag_s,
                            h.status, h.reason, h.spark, h.error))
    return out, err


PER_PAGE = 100
MAX_PER_PAGE = 500
# Sorting by these needs no describe: the listing (one ListGroups request) has name and state.
LISTING_SORTS = ("group", "state")


@dataclass(frozen=True)
class GroupsQuery:
    """What the groups page was asked for (parsed from its query string by the page)."""

    q: str = ""
    state: str = ""
    status: str = ""
    sort: str = "group"
    desc: bool = False
    page: int = 1
    per_page: int = PER_PAGE


@dataclass(frozen=True)
class GroupsPage:
    """One page of the groups table."""

    rows: list[GroupRow]
    total: int           # groups on the cluster
    matched: int         # groups passing the filter
    page: int
    pages: int
    states: list[str]
    history_error: str | None


def groups_page(admin, history: HistoryView | None, gq: GroupsQuery) -> GroupsPage:
    """The groups page: filter, sort and cut a page on the server, describing and reading the
    history of as few groups as the query allows.

    Name and state come from the listing, so the default view (sorted by name or state,
    filtered by name or state) describes only the page's groups: with 10,000 groups a page
    costs one ListGroups plus one describe of 100 groups. Sorting by members, lag, time lag or
    status, or filtering by status, needs those facts for every group the filter keeps, so it
    describes them all (the filter narrows that first)."""
    from offsetkeeper.ops import list_groups

    listing = list_groups(admin)
    ql = gq.q.lower()
    kept = [g for g in listing if (not ql or ql in g.group_id.lower())
            and (not gq.state or g.state == gq.state)]
    states = sorted({g.state for g in listing})
    per = gq.per_page
    if gq.sort in LISTING_SORTS and not gq.status:
        key = (lambda g: g.group_id) if gq.sort == "group" else (lambda g: (g.state, g.group_id))
        kept.sort(key=key, reverse=gq.desc)
        pages = max(1, -(-len(kept) // per))
        page = min(gq.page, pages)
        ids = [g.group_id for g in kept[(page - 1) * per:page * per]]
        rows, herr = overview(admin, history, ids)
        # The describe may see a state newer than the listing's; keep the listing's order.
        order = {g: i for i, g in enumerate(ids)}
        rows.sort(key=lambda r: order[r.group])
        return GroupsPage(rows, len(listing), len(kept), page, pages, states, herr)
    rows, herr = overview(admin, history, [g.group_id for g in kept])
    shown = filter_sort(rows, status=gq.status, sort=gq.sort, desc=gq.desc)
    pages = max(1, -(-len(shown) // per))
    page = min(gq.page, pages)
    return GroupsPage(shown[(page - 1) * per:page * per], len(listing), len(shown), page, pages,
                      states, herr)


SORT_KEYS = {
    "group": lambda r: r.group,
    "state": lambda r: (r.state, r.group),
    "members": lambda r: (r.members, r.group),
    "lag": lambda r: (-1 if r.lag is None else r.lag, r.group),
    "time_lag": lambda r: (-1.0 if r.time_lag_s is None else r.time_lag_s, r.group),
    "status": lambda r: (_STATUS_RANK.get(r.status or "", -1), r.group),
}
_STATUS_RANK = {"OK": 0, "WARN": 1, "ERR": 2, "STOP": 3, "STALL": 4, "REWIND": 5}


def filter_sort(rows: list[GroupRow], *, q: str = "", state: str = "", status: str = "",
                sort: str = "group", desc: bool = False) -> list[GroupRow]:
    """The groups page's filter (substring of the name, state, status) and sort."""
    ql = q.lower()
    out = [r for r in rows if (not ql or ql in r.group.lower())
           and (not state or r.state == state) and (not status or (r.status or "") == status)]
    return sorted(out, key=SORT_KEYS.get(sort, SORT_KEYS["group"]), reverse=desc)


def _describe_one(admin, group: str):
    from offsetkeeper.describe import describe_groups_offsets

    return describe_groups_offsets(admin, [group])


@dataclass(frozen=True)
class GroupView:
    """Everything the group page shows."""

    group: str
    state: str
    coordinator: str
    assignor: str
    members: list[dict]
    partitions: list[dict]
    total_lag: int
    history: GroupHistory
    history_error: str | None = None


def group_view(admin, group: str, history: HistoryView | None) -> GroupView:
    """State, members with assignments, partitions (committed, log start/end, lag, time lag)."""
    (info,), rows = _describe_one(admin, group)
    h, err = (GroupHistory(), None)
    if history is not None:
        h, err = safe(lambda: history.group(group, partitions=True), GroupHistory())
        err = err or h.error
    tl = {(p.topic, p.partition): p for p in h.partitions}
    parts = []
    for r in rows:
        v = tl.get((r.topic, r.partition))
        parts.append({"topic": r.topic, "partition": r.partition, "committed": r.current_offset,
                      "log_start": r.log_start_offset, "log_end": r.log_end_offset, "lag": r.lag,
                      "lag_raw": r.lag_raw, "last_stable_offset": r.last_stable_offset,
                      "open_transaction_since": r.open_transaction_since, "note": r.note,
                      "time_lag_s": v.time_lag_s if v else None,
                      "status": v.status if v else None, "reason": v.reason if v else "",
                      "consumer_id": r.consumer_id, "host": r.host, "client_id": r.client_id})
    members = [{"member_id": m.member_id, "client_id": m.client_id, "host": m.host,
                "group_instance_id": m.group_instance_id,
                "assignment": [str(tp) for tp in m.assignment]} for m in info.members]
    return GroupView(group, info.state, info.coordinator, info.assignor, members, parts,
                     sum(max(0, p["lag"] or 0) for p in parts), h, err)


@dataclass
class PlanEntry:
    """A previewed plan waiting for the user's confirmation."""

    cluster: str
    plan: object
    notes: tuple[str, ...]
    kind: str                       # "reset" or "rollback"
    description: str
    created: float = field(default_factory=time.monotonic)


class PlanBook:
    """Previewed plans by an unguessable id; a plan is executed at most once, within 15 min.

    The executor re-reads group states and offsets, so a plan confirmed later than it was
    previewed cannot act on stale facts: a group that gained members or whose offsets moved is
    refused, exactly as with the command line.
    """

    def __init__(self) -> None:
        self._plans: dict[str, PlanEntry] = {}
        self._lock = threading.Lock()

    def put(self, entry: PlanEntry) -> str:
        pid = secrets.token_urlsafe(16)
        with self._lock:
            self._expire()
            if len(self._plans) >= MAX_PLANS:
                oldest = min(self._plans, key=lambda k: self._plans[k].created)
                del self._plans[oldest]
            self._plans[pid] = entry
        return pid

    def take(self, pid: str, cluster: str) -> PlanEntry:
        with self._lock:
            self._expire()
            entry = self._plans.get(pid)
            if entry is None or entry.cluster != cluster:
                raise UsageError("this plan is unknown, expired or already executed: preview it "
                                 "again")
            del self._plans[pid]
            return entry

    def peek(self, pid: str) -> PlanEntry | None:
        with self._lock:
            return self._plans.get(pid)

    def _expire(self) -> None:
        now = time.monotonic()
        for k in [k for k, e in self._plans.items() if now - e.created > PLAN_TTL_S]:
            del self._plans[k]
