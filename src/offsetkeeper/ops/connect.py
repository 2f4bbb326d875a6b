"""`connect list|show|offsets export|offsets import|reset|rollback`: Kafka Connect connectors'
offsets, seen and moved with a plan, a snapshot and a read-back (docs/connect.md).

Source connectors and sink connectors given a file or `--to-none` change through Connect's
REST API (KIP-875) by the connector executor (connect/apply.py). A sink connector given a
consumer-group target (earliest, latest, datetime, shift-by, ...) is reset through the one
consumer-group executor (reset/apply.py) on its group, with the connector stopped around it:
the group is Connect's, but its offsets are ordinary committed offsets, and that executor
already plans every target, snapshots, re-checks and reads back.

Size: one command group's operations (list/show reads with their concurrent worker calls, and the
reset/import/rollback flows of both connector kinds) kept together, as ops/reset.py is for groups;
the reads are the part to move out when it grows.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, replace
from pathlib import Path

from offsetkeeper.connect.apply import (
    ConnectReport,
    _wait_state,
    apply_connect_plan,
    connector_state,
    read_facts,
)
from offsetkeeper.connect.model import (
    OffsetEntry,
    entries_json,
    parse_file_text,
    sink_position,
)
from offsetkeeper.connect.plan import (
    MOVABLE_STATES,
    Action,
    ConnectorFacts,
    ConnectorPlan,
    ConnectPlan,
    plan_alter,
    plan_delete_all,
    refusal,
)
from offsetkeeper.connect.rest import ConnectClient, ConnectError, ConnectTarget, parse_target
from offsetkeeper.connect.snapshots import PREFIX, ConnectSnapshotStore, new_snapshot
from offsetkeeper.errors import UsageError
from offsetkeeper.kafka.ports import AdminPort, ClusterPort, GroupsPort, LogOffsetsPort
from offsetkeeper.models import TopicPartition
from offsetkeeper.ops.reset import ExecuteOptions, Outcome, ResetRequest, snapshot_store_url

__all__ = [
    "ConnectOutcome", "ConnectResetRequest", "ConnectRollbackRequest", "ConnectorView", "SinkPartition", "connect_client",
    "connect_target", "export_offsets", "list_connectors", "reset_connectors",
    "rollback_connectors", "show_connector", "source_positions",
]


def connect_target(url: str, *, username: str | None = None, password: str | None = None,
                   ca_file: str | None = None, verify: bool = True) -> ConnectTarget:
    """Validate the worker's URL and credentials (bad input: exit 2)."""
    return parse_target(url, username=username, password=password, ca_file=ca_file,
                        verify=verify)


def connect_client(target: ConnectTarget, *, timeout: float = 30.0) -> ConnectClient:
    """A client of the worker (`timeout`: seconds per request; the dashboard uses less, so a
    worker that does not answer costs a page that long at most)."""
    return ConnectClient(target, timeout=timeout)


@dataclass(frozen=True)
class SinkPartition:
    """One partition a sink connector's group has committed: with the log end and lag."""

    topic: str
    partition: int
    offset: int | None
    log_end: int | None
    lag: int | None


@dataclass(frozen=True)
class ConnectorView:
    """A connector as `connect list` / `show` shows it."""

    name: str
    type: str
    state: str
    tasks: tuple[str, ...]
    offsets: tuple[OffsetEntry, ...]
    group: str | None = None  # a sink connector's consumer group
    sink: tuple[SinkPartition, ...] = ()
    error: str | None = None

    def as_dict(self) -> dict:
        return {"connector": self.name, "type": self.type, "state": self.state,
                "tasks": list(self.tasks), "group": self.group, "error": self.error,
                "offsets": [e.as_json() for e in self.offsets],
                "sink": [vars(p) for p in self.sink]}


def sink_group(client: ConnectClient, name: str) -> str:
    """The consumer group of a sink connector: its consumer.override.group.id, else
    connect-NAME (Connect's rule)."""
    config = client.request("GET", f"/connectors/{_q(name)}/config", connector=name)
    if isinstance(config, dict) and isinstance(config.get("consumer.override.group.id"), str):
        return config["consumer.override.group.id"]
    return f"connect-{name}"


def _q(name: str) -> str:
    import urllib.parse

    return urllib.parse.quote(name, safe="")


def _matching(client: ConnectClient, names: tuple[str, ...], patterns: tuple[str, ...]) -> list[str]:
    known = client.connectors()
    if not names and not patterns:
        return sorted(known)
    missing = [n for n in names if n not in known]
    if missing:
        raise UsageError(f"no connector {missing[0]!r} on the worker "
                         f"{client.target.display_url}")
    out = list(names)
    for n in sorted(known):
        if n not in out and any(fnmatch.fnmatchcase(n, p) for p in patterns):
            out.append(n)
    if not out:
        raise UsageError(f"no connector matches {', '.join(patterns)}")
    return out


@dataclass(frozen=True)
class _Read:
    """What the worker says of one connector (three requests), before the cluster is asked."""

    view: ConnectorView
    positions: tuple[tuple[str, int, int | None], ...] = ()


def _read(client: ConnectClient, name: str) -> _Read:
    from offsetkeeper.connect.model import OffsetsFormatError, parse_entries

    try:
        info = client.info(name)
        st = client.status(name)
        offsets = parse_entries(client.offsets(name), where=f"the offsets of connector {name}")
    except (ConnectError, OffsetsFormatError) as exc:
        # one connector's failure (deleted meanwhile, malformed offsets) is its row's error
        return _Read(ConnectorView(name, "unknown", "UNKNOWN", (), (), error=str(exc)))
    type_ = info.get("type") if isinstance(info.get("type"), str) else "unknown"
    conn = st.get("connector") if isinstance(st.get("connector"), dict) else {}
    state = conn.get("state") if isinstance(conn.get("state"), str) else "UNKNOWN"
    tasks = tuple(str(t.get("state")) for t in st.get("tasks", []) if isinstance(t, dict)) \
        if isinstance(st.get("tasks"), list) else ()
    if type_ != "sink":
        return _Read(ConnectorView(name, type_, state, tasks, offsets))
    config = info.get("config") if isinstance(info.get("config"), dict) else {}
    override = config.get("consumer.override.group.id")
    # Connect's rule: its consumer.override.group.id, else connect-NAME
    group = override if isinstance(override, str) else f"connect-{name}"
    positions = tuple(p for p in (sink_position(e) for e in offsets) if p is not None)
    return _Read(ConnectorView(name, type_, state, tasks, offsets, group), positions)


def _views(client: ConnectClient, admin: LogOffsetsPort | None,
           names: list[str]) -> list[ConnectorView]:
    """The connectors' views: the worker asked for several connectors at once (its REST API
    answers each request on its own thread), then ONE log-end request for every sink
    partition (measured with 55 connectors: 2.2 s one by one, see docs/connect.md)."""
    from concurrent.futures import ThreadPoolExecutor

    if len(names) > 1:
        with ThreadPoolExecutor(max_workers=min(READ_THREADS, len(names)),
                                thread_name_prefix="connect-read") as pool:
            reads = list(pool.map(lambda n: _read(client, n), names))
    else:
        reads = [_read(client, n) for n in names]
    tps = {TopicPartition(t, n) for r in reads for t, n, _ in r.positions}
    wms = admin.watermarks(tps) if admin is not None and tps else {}
    out = []
    for r in reads:
        if r.view.type != "sink" or r.view.error:
            out.append(r.view)
            continue
        sink = []
        for t, n, off in r.positions:
            wm = wms.get(TopicPartition(t, n))
            end = wm.high if wm is not None else None
            lag = max(0, end - off) if end is not None and off is not None else None
            sink.append(SinkPartition(t, n, off, end, lag))
        out.append(replace(r.view, sink=tuple(sink)))
    return out


READ_THREADS = 8  # connectors read from the worker at once


def list_connectors(client: ConnectClient, admin: LogOffsetsPort | None = None, *,
                    patterns: tuple[str, ...] = ()) -> list[ConnectorView]:
    """Every connector (or those matching shell patterns) with state and offsets; a sink
    connector's partitions with log end and lag when `admin` (the cluster) is given."""
    return _views(client, admin, _matching(client, (), patterns))


def show_connector(client: ConnectClient, admin: LogOffsetsPort, name: str) -> ConnectorView:
    """One connector (UsageError when the worker has none of that name)."""
    _matching(client, (name,), ())
    return _views(client, admin, [name])[0]


def source_positions(client: ConnectClient) -> tuple[list[tuple[str, str, str]], int]:
    """Every source connector's positions as (connector, partition map, offset map), both
    canonical JSON: what the history sampler stores and the exporter serves. One request for
    the connectors' types, one per source connector for its offsets; a connector deleted in
    between, or whose offsets are malformed, is left out and counted (the second value)."""
    from offsetkeeper.connect.model import OffsetsFormatError, canonical, parse_entries

    listed = client.request("GET", "/connectors?expand=info")
    if not isinstance(listed, dict):
        raise ConnectError(f"Connect worker {client.target.display_url} listed connectors in "
                           "an unexpected shape")
    out: list[tuple[str, str, str]] = []
    failed = 0
    for name in sorted(listed):
        item = listed[name]
        info = item.get("info") if isinstance(item, dict) else None
        if not isinstance(info, dict) or info.get("type") != "source":
            continue
        try:
            entries = parse_entries(client.offsets(name), where=f"the offsets of connector {name}")
        except ConnectError as exc:
            if exc.status == 0:
                raise  # the worker itself stopped answering
            failed += 1
            continue
        except OffsetsFormatError:
            failed += 1
            continue
        out += [(name, canonical(e.partition), canonical(e.offset)) for e in entries]
    return out, failed


def export_offsets(client: ConnectClient, name: str) -> dict:
    """The connector's offsets in Connect's own shape (what `offsets import` and
    `reset --to-file` read)."""
    _matching(client, (name,), ())
    return entries_json(read_facts(client, name).offsets)


@dataclass(frozen=True)
class ConnectResetRequest:
    """`connect reset`: which connectors, to what, and whether to apply it."""

    names: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    to_file: Path | None = None
    to_none: bool = False
    # a consumer-group target for sink connectors (the `offsets reset` flags): its target and
    # topics; each sink's group is reset with this request's `execute` and `options`
    group_request: ResetRequest | None = None
    execute: bool = False
    exact: bool = False  # rollback: partitions not in the file lose their offsets
    offsets_topic: str | None = None  # read source changes back from it (independent reader)
    options: ExecuteOptions = field(default_factory=ExecuteOptions)


@dataclass(frozen=True)
class ConnectOutcome:
    """A connector plan, its report (None for a dry run) and, for sink connectors reset
    through the group executor, those outcomes per connector."""

    plan: ConnectPlan
    report: ConnectReport | None = None
    group_outcomes: dict[str, Outcome] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        if any(not o.ok for o in self.group_outcomes.values()):
            return False
        if self.report is not None:
            return self.report.ok
        return not any(c.refused for c in self.plan.connectors)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def as_dict(self) -> dict:
        return {"plan": self.plan.as_dict(),
                "report": self.report.as_dict() if self.report else None,
                "groups": {n: {"ok": o.ok, "snapshot": getattr(o.report, "snapshot_id", None)}
                           for n, o in self.group_outcomes.items()},
                "notes": list(self.notes)}


def _targets(req: ConnectResetRequest) -> tuple[OffsetEntry, ...] | None:
    chosen = sum(x for x in (req.to_file is not None, req.to_none, req.group_request is not None))
    if chosen != 1:
        raise UsageError("choose exactly one target: --to-file FILE, --to-none, or (sink "
                         "connectors) one consumer-group target such as --to-earliest")
    if req.to_file is None:
        return None
    try:
        text = Path(req.to_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--to-file {req.to_file}: cannot read it ({exc})") from None
    return parse_file_text(text, where=f"--to-file {req.to_file}")


def _planner(req: ConnectResetRequest, entries: tuple[OffsetEntry, ...] | None):
    def plan(facts: ConnectorFacts) -> ConnectorPlan:
        if req.to_none:
            return plan_delete_all(facts)
        return plan_alter(facts, entries or (), exact=req.exact)
    return plan


def _snapshot_fn(client: ConnectClient, options: ExecuteOptions, description: str):
    if not options.snapshot:
        return None
    from offsetkeeper.snapshots.store import SnapshotStore

    store = ConnectSnapshotStore(SnapshotStore(snapshot_store_url(options.snapshot_store,
                                                                  options.config_path)))

    def take(facts: dict[str, ConnectorFacts]) -> str:
        return store.save(new_snapshot(client.target.display_url, description, facts))
    return take


def _topic_reader(admin: ClusterPort, topic: str | None):
    if admin is None or not topic:
        return None
    from offsetkeeper.connect.offsets_topic import read_all_source_offsets

    conf = admin.conn.client_config()
    return lambda names: read_all_source_offsets(conf, topic, names)


def reset_connectors(client: ConnectClient, admin: AdminPort, req: ConnectResetRequest) -> ConnectOutcome:
    """Plan (and with `req.execute` apply) a change of connectors' offsets: a file, none, or
    for sink connectors any consumer-group target."""
    entries = _targets(req)
    if not req.names and not req.patterns:
        # never "every connector" by omission: a change names what it changes
        raise UsageError("name the connectors to change (NAME ..., or --pattern GLOB; "
                         "--pattern '*' for all)")
    names = _matching(client, req.names, req.patterns)
    label = (f"--to-file {req.to_file}" if req.to_file is not None
             else "--to-none" if req.to_none else str(req.group_request.target.kind.flag))
    if req.group_request is not None:
        return _reset_sinks_through_groups(client, admin, names, req, label)
    planner = _planner(req, entries)
    plan = ConnectPlan(label, tuple(planner(read_facts(client, n)) for n in names))
    if not req.execute:
        return ConnectOutcome(plan)
    report = apply_connect_plan(client, plan, replan=planner,
                                snapshot_fn=_snapshot_fn(client, req.options,
                                                         f"before connect reset {label}"),
                                topic_reader=_topic_reader(admin, req.offsets_topic))
    return ConnectOutcome(plan, report)


def _reset_sinks_through_groups(client: ConnectClient, admin: AdminPort, names: list[str],
                                req: ConnectResetRequest, label: str) -> ConnectOutcome:
    from offsetkeeper.ops.reset import reset_offsets

    if admin is None:
        raise UsageError("a consumer-group target needs the Kafka cluster (--bootstrap-server)")
    # every connector is checked before any is changed: bad input changes nothing, and a
    # connector that cannot be moved is refused on its own while the others go ahead
    all_facts = [read_facts(client, name) for name in names]
    for facts in all_facts:
        if facts.type != "sink":
            raise UsageError(f"connector {facts.name} is a {facts.type} connector: "
                             "consumer-group targets apply to sink connectors (use --to-file "
                             "or --to-none)")
    plans, outcomes, notes = [], {}, []
    for facts in all_facts:
        name = facts.name
        if facts.state not in MOVABLE_STATES:
            plans.append(ConnectorPlan(name, facts.type, facts.state, Action.NOTHING,
                                       refused=refusal(facts)))
            continue
        group = sink_group(client, name)
        plans.append(ConnectorPlan(name, facts.type, facts.state, Action.ALTER,
                                   notes=(f"reset through its consumer group {group}",)))
        gscope = req.group_request.scope
        gscope = replace(gscope, groups=(group,), all_groups=False, group_patterns=(),
                         all_topics=gscope.all_topics or not gscope.topics)
        greq = replace(req.group_request, scope=gscope, execute=False, options=req.options)
        if not req.execute:
            outcomes[name] = reset_offsets(admin, greq)
            if facts.state == "RUNNING":
                notes.append(f"connector {name} runs, so its group has members now; --execute "
                             "stops the connector first and resumes it afterwards")
            continue
        was = connector_state(client, name)
        if was not in MOVABLE_STATES:
            plans[-1] = ConnectorPlan(name, facts.type, was, Action.NOTHING,
                                      refused=refusal(replace(facts, state=was)))
            continue
        if was != "STOPPED":
            client.stop(name)
        try:
            _wait_state(client, name, "STOPPED", 120)
            _wait_group_empty(admin, group)
            outcomes[name] = reset_offsets(admin, replace(greq, execute=True))
        finally:
            if was == "RUNNING":
                client.resume(name)
            elif was == "PAUSED":
                client.request("PUT", f"/connectors/{_q(name)}/pause", connector=name)
    return ConnectOutcome(ConnectPlan(label, tuple(plans)), None, outcomes, tuple(notes))


def _wait_group_empty(admin: GroupsPort, group: str, timeout_s: float = 60.0) -> None:
    """The stopped connector's consumers leave its group (their session ends) before the
    executor may commit for it."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        info = admin.describe_groups_each([group]).get(group)
        if isinstance(info, Exception) or not info.members:
            return
        if time.monotonic() > deadline:
            raise ConnectError(f"group {group} still has {len(info.members)} members "
                               f"{timeout_s:.0f}s after its connector stopped")
        time.sleep(0.5)


@dataclass(frozen=True)
class ConnectRollbackRequest:
    """`connect rollback`: put connectors back to a snapshot (a connector snapshot csnap-...,
    or a sink reset's group snapshot snap-...)."""

    snapshot_id: str
    execute: bool = False
    offsets_topic: str | None = None  # read source changes back from it (independent reader)
    options: ExecuteOptions = field(default_factory=ExecuteOptions)


def rollback_connectors(client: ConnectClient, admin: AdminPort,
                        req: ConnectRollbackRequest) -> ConnectOutcome:
    """Put connectors back to a snapshot: a connector snapshot (csnap-...) through the
    connector executor, exactly (partitions not in it lose their offsets); a group snapshot
    (snap-..., taken by a sink reset through its group) through `snapshots rollback` with the
    connector stopped around it."""
    from offsetkeeper.snapshots.store import SnapshotStore

    snapshot_id, options = req.snapshot_id, req.options
    if not snapshot_id.startswith(PREFIX):
        return _rollback_group_snapshot(client, admin, req)
    store = ConnectSnapshotStore(SnapshotStore(snapshot_store_url(options.snapshot_store,
                                                                  options.config_path)))
    snap = store.load(snapshot_id)
    known = set(client.connectors())
    missing = [n for n in snap.connectors if n not in known]
    if missing:
        raise UsageError(f"snapshot {snapshot_id} names connector {missing[0]!r}, which the "
                         f"worker {client.target.display_url} does not have")

    def planner(facts: ConnectorFacts) -> ConnectorPlan:
        return plan_alter(facts, snap.connectors[facts.name].offsets, exact=True)

    plan = ConnectPlan(f"rollback to {snap.id}",
                       tuple(planner(read_facts(client, n)) for n in snap.connectors))
    if not req.execute:
        return ConnectOutcome(plan)
    report = apply_connect_plan(client, plan, replan=planner,
                                snapshot_fn=_snapshot_fn(client, options,
                                                         f"before rollback to {snap.id}"),
                                topic_reader=_topic_reader(admin, req.offsets_topic))
    return ConnectOutcome(plan, report)


def _rollback_group_snapshot(client: ConnectClient, admin: AdminPort,
                             req: ConnectRollbackRequest) -> ConnectOutcome:
    from offsetkeeper.ops.reset import RollbackRequest, rollback
    from offsetkeeper.snapshots.store import SnapshotStore

    if admin is None:
        raise UsageError("rolling back a group snapshot needs the Kafka cluster "
                         "(--bootstrap-server)")
    snapshot_id, execute = req.snapshot_id, req.execute
    store = SnapshotStore(snapshot_store_url(req.options.snapshot_store, req.options.config_path))
    snap = store.load(snapshot_id)
    by_group = {sink_group(client, n): n for n in client.connectors()
                if read_facts(client, n).type == "sink"}
    names = [by_group[g] for g in snap.groups if g in by_group]
    if not names:
        raise UsageError(f"snapshot {snapshot_id} holds no sink connector's group of the worker "
                         f"{client.target.display_url}")
    plans = tuple(ConnectorPlan(n, "sink", connector_state(client, n), plan_delete_all(
        read_facts(client, n)).action) for n in names)
    outcome = None
    was = {n: connector_state(client, n) for n in names}
    if execute:
        for n in names:
            if was[n] != "STOPPED":
                client.stop(n)
    try:
        for n in names:
            if execute:
                _wait_state(client, n, "STOPPED", 120)
                _wait_group_empty(admin, sink_group(client, n))
        outcome = rollback(admin, RollbackRequest(snapshot_id, execute=execute,
                                                  options=req.options))
    finally:
        if execute:
            for n in names:
                if was[n] == "RUNNING":
                    client.resume(n)
    return ConnectOutcome(ConnectPlan(f"rollback to {snapshot_id}", plans), None,
                          {", ".join(names): outcome})
