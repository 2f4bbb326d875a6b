"""What the group pages show, gathered from the cluster and the history store: the groups
overview (every group with state, members, lag now, and the history's status, time lag and
sparkline; filtered, sorted and cut into pages on the server) and one group's detail (members
with assignments, per partition committed offset, log start/end, lag now and at the last
history sample, open transactions). Built on the group facade (`ops.groups`: the typed listing,
describing classic and consumer groups, share and streams summaries) and the history reads
(`ops.history_view`); the dashboard renders what these return and nothing else.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

from offsetkeeper.kafka.ports import AdminPort, KafkaPort
from offsetkeeper.ops.groups import GroupRow as TypedRow
from offsetkeeper.ops.groups import describe_consumer_groups
from offsetkeeper.ops.history_view import GroupHistory, HistoryView, safe
from offsetkeeper.times import iso_ms

DESCRIBE_CHUNK = 500


@dataclass(frozen=True)
class OverviewRow:
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
    group_type: str = ""            # classic, consumer, share, streams ("" when not known)
    protocol: str | None = None     # consumer, share, streams, connect, "" (simple); None: unknown
    txn_since: int | None = None    # an open transaction holds a partition back since (ms)
    describe_error: str | None = None   # this group could not be described (share/streams)


def _txn_since(offset_rows) -> int | None:
    """The oldest open transaction holding back one of a group's partitions (ms), if any."""
    held = [r.open_transaction_since for r in offset_rows
            if r.last_stable_offset is not None and r.last_stable_offset < r.log_end_offset
            and r.open_transaction_since is not None]
    return min(held) if held else None


def overview(admin: KafkaPort, history: HistoryView | None, ids: list[str] | None = None,
             listed: dict[str, TypedRow] | None = None) -> tuple[list[OverviewRow], str | None]:
    """Groups `ids` (default: every group librdkafka lists) with state, members, lag now, and
    (from the history) status, time lag and a sparkline; the second value is a history error
    to show. `listed` (the typed listing's rows) gives each group its type and protocol: share
    and streams groups are read through the Java client (`ops.groups.group_summaries`, in
    a thread while librdkafka describes the others)."""
    from concurrent.futures import ThreadPoolExecutor

    from offsetkeeper.ops.groups import TYPED, group_summaries

    if ids is None:
        from offsetkeeper.ops import list_groups

        ids = [g.group_id for g in list_groups(admin)]
    if not ids:
        return [], None
    listed = listed or {}
    typed = [(g, listed[g].group_type) for g in ids if g in listed
             and listed[g].group_type in TYPED]
    typed_ids = {g for g, _ in typed}
    # Kafka Connect workers (and MirrorMaker 2) coordinate in groups of protocol type `connect`:
    # they hold no offsets, and a consumer-group describe of one is an error for the whole
    # request; they are shown as listed
    coordination = {g for g in ids if g in listed and g not in typed_ids
                    and listed[g].protocol not in (None, "", "consumer")}
    plain = [g for g in ids if g not in typed_ids and g not in coordination]
    infos, rows = [], []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="typed-page") as pool:
        summaries_f = pool.submit(group_summaries, admin, typed) if typed else None
        for i in range(0, len(plain), DESCRIBE_CHUNK):
            # At most DESCRIBE_CHUNK groups' requests in flight: with 10,000 groups at once
            # librdkafka aborted the process (rd_kafka_enq_once_del_source_return: Assertion
            # `eonce->refcnt > 0'), taking the dashboard down with it.
            more_infos, more_rows = describe_consumer_groups(admin, plain[i:i + DESCRIBE_CHUNK])
            infos += more_infos
            rows += more_rows
        summaries = summaries_f.result() if summaries_f else {}
    lag: dict[str, int] = defaultdict(int)
    parts: dict[str, int] = defaultdict(int)
    per_group: dict[str, list] = defaultdict(list)
    for r in rows:
        parts[r.group] += 1
        per_group[r.group].append(r)
        if r.lag is not None:
            # A negative lag (committed past the log end) is shown per partition, not netted.
            lag[r.group] += max(0, r.lag)
    hist: dict[str, GroupHistory] = {}
    err = None
    shown = [i.group_id for i in infos] + [g for g in ids if g in summaries]
    if history is not None:
        # Not in a thread next to the cluster calls: CPU-bound history parsing holding the GIL
        # delays every wake-up of the many small cluster waits (measured: slower overall).
        hist, err = safe(lambda: history.groups(shown), {})
    out = []
    for i in infos:
        h = hist.get(i.group_id, GroupHistory())
        x = listed.get(i.group_id)
        out.append(OverviewRow(i.group_id, i.state, len(i.members), parts[i.group_id],
                            lag[i.group_id] if parts[i.group_id] else None, h.time_lag_s,
                            h.status, h.reason, h.spark, h.error,
                            x.group_type if x else (i.group_type or ""),
                            x.protocol if x else None, _txn_since(per_group[i.group_id])))
    for g in ids:
        if g in coordination:
            x = listed[g]
            out.append(OverviewRow(g, x.state, 0, 0, None, None, None, "", (), None, x.group_type,
                                x.protocol, None, None))
            continue
        sm = summaries.get(g)
        if sm is None:
            continue
        h = hist.get(g, GroupHistory())
        out.append(OverviewRow(g, sm.state, sm.members, sm.partitions, sm.lag, h.time_lag_s,
                            h.status, h.reason, h.spark, h.error, sm.group_type,
                            listed[g].protocol, None, sm.error))
    return out, err


PER_PAGE = 100
MAX_PER_PAGE = 500
# Sorting by these needs no describe: the listing (one ListGroups request) has name, state, type.
LISTING_SORTS = ("group", "state", "type")
# Sorting by the others (members, lag, time_lag, status) needs a fact of every group the filter
# keeps: from the history store's last cycle when one is configured, else by describing each of
# them (up to LIVE_SORT_MAX groups).
LIVE_SORT_MAX = 1000


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
    group_type: str = ""


@dataclass(frozen=True)
class GroupsPage:
    """One page of the groups table."""

    rows: list[OverviewRow]
    total: int           # groups on the cluster
    matched: int         # groups passing the filter
    page: int
    pages: int
    states: list[str]
    history_error: str | None
    types: list[str] = field(default_factory=list)
    note: str | None = None       # the typed listing is incomplete (JVM helper missing/failed)
    order: str = "live"           # listing | history | live | page (see groups_page)
    order_note: str | None = None  # how the rows were ordered, when it is not exact and live


# The typed listing (types and states of every group) is one Java admin call, 1.2-1.7 s: kept
# this long per cluster, so paging, filtering and sorting do not pay it on every load. States
# may be this old on the page (a dashboard refreshes slower; the group page reads live).
LISTING_TTL_S = 10.0


class ListingCache:
    """The typed group listing per cluster, reused for `ttl_s` seconds."""

    def __init__(self, ttl_s: float = LISTING_TTL_S, clock=None) -> None:
        import time

        self.ttl_s, self._clock = ttl_s, clock or time.monotonic
        self._entries: dict[str, tuple[float, object]] = {}
        self._lock = threading.Lock()

    def get(self, cluster: str, fetch):
        """`fetch()`'s answer for `cluster`, fetched again once older than `ttl_s`."""
        now = self._clock()
        with self._lock:
            hit = self._entries.get(cluster)
        if hit is not None and now - hit[0] < self.ttl_s:
            return hit[1]
        value = fetch()
        with self._lock:
            self._entries[cluster] = (self._clock(), value)
        return value


def groups_page(admin: KafkaPort, history: HistoryView | None, gq: GroupsQuery, *,
                listing=None) -> GroupsPage:
    """The groups page: filter, sort and cut a page on the server, describing and reading the
    history of as few groups as the query allows.

    The listing (`groups list`: one ListGroups of librdkafka and one of the Java client) has
    name, state and type, so the default view — sorted by name, state or type, filtered by
    name, state or type — describes only the page's groups. Sorting by lag, time lag or
    members, or by or for status, needs a fact of every group the filter keeps:
    - with a history store, its last sampled cycle (lag, time lag, members) or its status
      window, read for every kept group (cached until a newer cycle), then only the page's
      groups are described: the order is the last cycle's, the columns are live (`order`
      "history", said on the page);
    - without one, every kept group is described when they are at most LIVE_SORT_MAX (exact
      and live, `order` "live"); beyond that only the page's groups, by name, are sorted
      (`order` "page", said on the page): describing 10,000 groups took 68 s."""
    from offsetkeeper.ops.groups import list_typed_groups

    listing, note = listing() if listing is not None else list_typed_groups(admin)
    listed = {g.group_id: g for g in listing}
    ql = gq.q.lower()
    kept = [g for g in listing if (not ql or ql in g.group_id.lower())
            and (not gq.state or g.state == gq.state)
            and (not gq.group_type or g.group_type == gq.group_type)]
    states = sorted({g.state for g in listing})
    types = sorted({g.group_type for g in listing})
    per = gq.per_page

    def cut(ordered: list[str], order: str, order_note: str | None = None) -> GroupsPage:
        pages = max(1, -(-len(ordered) // per))
        page = min(gq.page, pages)
        ids = ordered[(page - 1) * per:page * per]
        rows, herr = overview(admin, history, ids, listed)
        # The describe may see a state newer than the listing's; keep the order made.
        at = {g: i for i, g in enumerate(ids)}
        rows.sort(key=lambda r: at[r.group])
        if order == "page":
            rows = filter_sort(rows, sort=gq.sort, desc=gq.desc)
        return GroupsPage(rows, len(listing), len(ordered), page, pages, states, herr, types,
                          note, order, order_note)

    hist_err = None
    if gq.status:
        # Statuses come from the history store: its status window of every kept group.
        hist, hist_err = (None, "no history store is configured (--history-store)") \
            if history is None else safe(lambda: history.groups([g.group_id for g in kept]), None)
        if hist is None:
            return cut([], "live", f"No group can be filtered by status: {hist_err}.")
        kept = [g for g in kept if (hist[g.group_id].status or "") == gq.status]
    if gq.sort in LISTING_SORTS:
        key = {"group": lambda g: g.group_id, "state": lambda g: (g.state, g.group_id),
               "type": lambda g: (g.group_type, g.group_id)}[gq.sort]
        kept.sort(key=key, reverse=gq.desc)
        return cut([g.group_id for g in kept], "listing")
    ids = [g.group_id for g in kept]
    what = gq.sort.replace("_", " ")
    if history is not None:
        ordered = _order_by_history(history, gq, ids)
        if isinstance(ordered, tuple):
            ordered, newest = ordered
            when = f" (newest {iso_ms(newest)})" if newest is not None else ""
            last = "last" if gq.desc else "first"
            return cut(ordered, "history", (
                "Ordered by each group's status in the history store." if gq.sort == "status"
                else f"Ordered by the {what} of each group's last sampled cycle in the history "
                f"store{when}; the numbers shown are live, so neighbours can differ from the "
                f"order.") + f" Groups the store has no samples of come {last}.")
        hist_err = f"the history store cannot be read ({ordered}); "
    if len(ids) <= LIVE_SORT_MAX:
        rows, herr = overview(admin, history, ids, listed)
        shown = filter_sort(rows, sort=gq.sort, desc=gq.desc)
        pages = max(1, -(-len(shown) // per))
        page = min(gq.page, pages)
        return GroupsPage(shown[(page - 1) * per:page * per], len(listing), len(shown), page,
                          pages, states, herr, types, note, "live")
    ids.sort()
    fix = ("" if hist_err else ", or configure a history store (--history-store) to order "
           "them by its last sampled cycle")
    return cut(ids, "page", f"Sorted by {what} within this page only: {hist_err or ''}ordering "
               f"all {len(ids):,} groups would describe each of them (about a minute at 10,000 "
               f"groups). Narrow the filter to at most {LIVE_SORT_MAX:,} groups for an exact "
               f"order{fix}.")


def _order_by_history(history: HistoryView, gq: GroupsQuery, ids: list[str]
                      ) -> tuple[list[str], int | None] | str:
    """`ids` ordered by the history store's status (status window) or last cycle (lag, time
    lag, members), with the newest sample time; or the store's error."""
    if gq.sort == "status":
        hist, err = safe(lambda: history.groups(ids), None)
        if hist is None:
            return err or "unknown error"
        return sorted(ids, key=lambda g: (_STATUS_RANK.get(hist[g].status or "", -1), g),
                      reverse=gq.desc), None
    last, err = safe(lambda: history.last_cycles(ids), None)
    if last is None:
        return err or "unknown error"

    def key(g: str):
        c = last.get(g)
        v = -1 if c is None else {"lag": c.lag, "time_lag": c.time_lag_s,
                                  "members": c.members}[gq.sort]
        return (v, g)
    return (sorted(ids, key=key, reverse=gq.desc),
            max((c.ts for c in last.values()), default=None))


SORT_KEYS = {
    "group": lambda r: r.group,
    "state": lambda r: (r.state, r.group),
    "type": lambda r: (r.group_type, r.group),
    "members": lambda r: (r.members, r.group),
    "lag": lambda r: (-1 if r.lag is None else r.lag, r.group),
    "time_lag": lambda r: (-1.0 if r.time_lag_s is None else r.time_lag_s, r.group),
    "status": lambda r: (_STATUS_RANK.get(r.status or "", -1), r.group),
}
_STATUS_RANK = {"OK": 0, "INCOMPLETE": 1, "WARN": 2, "ERR": 3, "STOP": 4, "STALL": 5, "REWIND": 6}


def filter_sort(rows: list[OverviewRow], *, q: str = "", state: str = "", status: str = "",
                sort: str = "group", desc: bool = False) -> list[OverviewRow]:
    """The groups page's filter (substring of the name, state, status) and sort."""
    ql = q.lower()
    out = [r for r in rows if (not ql or ql in r.group.lower())
           and (not state or r.state == state) and (not status or (r.status or "") == status)]
    return sorted(out, key=SORT_KEYS.get(sort, SORT_KEYS["group"]), reverse=desc)


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
    # Partitions an open transaction holds back (LSO < log end): since when (the oldest, ms;
    # None when its first record could not be read), how many, and the records behind the LSO
    # that read_committed consumers cannot read yet. None when no transaction holds the group.
    transaction: dict | None = None
    # when the live numbers (committed, log end, lag) were read, epoch ms: the status and its
    # reason come from the last history sample (`history.last_sample_ms`), so the page labels
    # each number with its time
    read_at_ms: int | None = None


def _transaction(parts: list[dict]) -> dict | None:
    held = [p for p in parts if p["last_stable_offset"] is not None
            and p["log_end"] is not None and p["last_stable_offset"] < p["log_end"]]
    if not held:
        return None
    since = [p["open_transaction_since"] for p in held if p["open_transaction_since"] is not None]
    waiting = [p for p in held if p["committed"] is not None
               and p["committed"] >= p["last_stable_offset"]]
    return {"since": min(since) if since else None,
            "since_iso": iso_ms(min(since)) if since else None,
            "age_s": max(0.0, time.time() - min(since) / 1000) if since else None,
            "partitions": [f"{p['topic']}:{p['partition']}" for p in held],
            "behind_lso": sum(p["log_end"] - p["last_stable_offset"] for p in held),
            # consumers caught up to the LSO: they wait for the producer, not the reverse
            "waiting_at_lso": len(waiting)}


def group_view(admin: AdminPort, group: str, history: HistoryView | None) -> GroupView:
    """State, members with assignments, partitions (committed, log start/end, lag, time lag).

    Live numbers (read now) and the history's verdict (read from the last sample) are kept
    apart: each partition has `lag` (now) and `sample_lag` (the sample its status and reason
    were judged on)."""
    (info,), rows = describe_consumer_groups(admin, [group], drop_vanished=False)
    read_at = int(time.time() * 1000)
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
                      "sample_lag": v.lag if v else None,
                      "consumer_id": r.consumer_id, "host": r.host, "client_id": r.client_id})
    members = [{"member_id": m.member_id, "client_id": m.client_id, "host": m.host,
                "group_instance_id": m.group_instance_id,
                "assignment": [str(tp) for tp in m.assignment]} for m in info.members]
    return GroupView(group, info.state, info.coordinator, info.assignor, members, parts,
                     sum(max(0, p["lag"] or 0) for p in parts), h, err, _transaction(parts),
                     read_at)
