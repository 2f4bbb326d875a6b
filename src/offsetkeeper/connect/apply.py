"""Executing a connector plan: the one code path that changes connector offsets through Connect.

Why not reset/apply.py: that executor commits consumer-group offsets with the Admin API; a
source connector's offsets are not a group's, they live in the worker's offsets topic and only
the worker may write them (KIP-875's PATCH/DELETE, while the connector is STOPPED). So Connect
changes have their own executor with the same shape — plan -> apply -> report, a snapshot
before anything changes, every change read back — and sink connectors given a consumer-group
target go through reset/apply.py itself (ops/connect.py), with the connector stopped around it.

The sequence for the connectors of a plan that have something to do:
1. stop each RUNNING or PAUSED one (PUT /stop) and wait until the worker reports it STOPPED;
2. read their offsets again and plan again from them (a running source connector moved on
   since the dry run), then take ONE snapshot of all of them (`snapshot_fn`) — nothing has
   changed yet;
3. per connector: PATCH (alter) or DELETE (reset), retrying while the worker rebalances (409);
4. read back through the REST API (a worker may answer with its previous view for a moment
   after the change: asked again for up to `readback_s`) and, for source connectors, once for
   all of them, from the offsets topic with an independent reader (`topic_reader`); a
   partition counts as changed only when both agree with the plan;
5. put each connector back in the state it was in (resume a RUNNING one, pause a PAUSED one),
   also when its change failed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum

from offsetkeeper.connect.model import OffsetEntry, canonical, parse_entries
from offsetkeeper.connect.plan import Action, ConnectorFacts, ConnectorPlan, ConnectPlan
from offsetkeeper.connect.rest import ConnectClient, ConnectError
from offsetkeeper.errors import OffsetkeeperError


class ConnectorOutcome(StrEnum):
    SUCCESS = "success"
    REFUSED = "refused"
    FAILED = "failed"
    NOTHING = "nothing-to-do"


@dataclass(frozen=True)
class ConnectorResult:
    """What happened to one connector."""

    name: str
    status: ConnectorOutcome
    message: str = ""
    state_before: str = ""
    state_after: str = ""
    readback: str = ""  # "rest" or "rest+offsets-topic" when verified

    def as_dict(self) -> dict:
        return {"connector": self.name, "status": str(self.status), "message": self.message,
                "state_before": self.state_before, "state_after": self.state_after,
                "readback": self.readback}


@dataclass(frozen=True)
class ConnectReport:
    """The outcome of applying a connector plan."""

    results: tuple[ConnectorResult, ...]
    snapshot_id: str | None = None
    plan: ConnectPlan | None = field(default=None, compare=False)

    @property
    def ok(self) -> bool:
        return all(r.status in (ConnectorOutcome.SUCCESS, ConnectorOutcome.NOTHING)
                   for r in self.results)

    def as_dict(self) -> dict:
        return {"status": "SUCCESS" if self.ok else "FAILED", "snapshot": self.snapshot_id,
                "connectors": [r.as_dict() for r in self.results]}


def connector_state(client: ConnectClient, name: str) -> str:
    st = client.status(name)
    conn = st.get("connector")
    state = conn.get("state") if isinstance(conn, dict) else None
    return state if isinstance(state, str) else "UNKNOWN"


def read_facts(client: ConnectClient, name: str) -> ConnectorFacts:
    """The connector's type, state and offsets as the worker reports them now."""
    info = client.info(name)
    type_ = info.get("type") if isinstance(info.get("type"), str) else "unknown"
    state = connector_state(client, name)
    offsets = parse_entries(client.offsets(name), where=f"the offsets of connector {name}")
    return ConnectorFacts(name, type_, state, offsets)


def _wait_state(client: ConnectClient, name: str, wanted: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        st = client.status(name)
        conn = st.get("connector") if isinstance(st.get("connector"), dict) else {}
        tasks = st.get("tasks") if isinstance(st.get("tasks"), list) else []
        if conn.get("state") == wanted and (wanted != "STOPPED" or not tasks):
            return
        if time.monotonic() > deadline:
            raise ConnectError(f"connector {name} did not reach {wanted} within "
                               f"{timeout_s:.0f}s (it is {conn.get('state')})", connector=name)
        time.sleep(0.3)


def _retry(fn: Callable[[], object], *, retries: int = 8) -> object:
    """Retry while the worker rebalances (409) or forwards to a leader not yet known."""
    delay = 0.5
    for attempt in range(retries + 1):
        try:
            return fn()
        except ConnectError as exc:
            if exc.status != 409 or attempt == retries:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
    raise AssertionError("unreachable")


def _same(a: tuple[OffsetEntry, ...], b: tuple[OffsetEntry, ...]) -> bool:
    return ({e.key: canonical(e.offset) for e in a if e.offset is not None}
            == {e.key: canonical(e.offset) for e in b if e.offset is not None})


def apply_connect_plan(
    client: ConnectClient, plan: ConnectPlan, *,
    replan: Callable[[ConnectorFacts], ConnectorPlan],
    snapshot_fn: Callable[[dict[str, ConnectorFacts]], str] | None,
    topic_reader: Callable[[set[str]], dict[str, tuple[OffsetEntry, ...]]] | None = None,
    wait_s: float = 120.0,
) -> ConnectReport:
    """Apply `plan` (see the module docstring); `replan` plans one connector again from its
    stopped facts with the same target; `topic_reader(names)` reads source connectors'
    offsets from the offsets topic, in one read after all changes (None: REST read-back only)."""
    results: dict[str, ConnectorResult] = {}
    todo: list[ConnectorPlan] = []
    for cp in plan.connectors:
        if cp.refused:
            results[cp.name] = ConnectorResult(cp.name, ConnectorOutcome.REFUSED, cp.refused,
                                               cp.state, cp.state)
        elif cp.action is Action.NOTHING:
            results[cp.name] = ConnectorResult(cp.name, ConnectorOutcome.NOTHING, "",
                                               cp.state, cp.state)
        else:
            todo.append(cp)
    was: dict[str, str] = {}
    stopped: list[str] = []
    snapshot_id = None
    try:
        # 1. stop all, then wait for each (the worker stops them in parallel)
        for cp in todo:
            try:
                was[cp.name] = connector_state(client, cp.name)
                if was[cp.name] != "STOPPED":
                    _retry(lambda n=cp.name: client.stop(n))
                    stopped.append(cp.name)
            except OffsetkeeperError as exc:
                results[cp.name] = ConnectorResult(cp.name, ConnectorOutcome.FAILED,
                                                   f"could not stop it: {exc}",
                                                   was.get(cp.name, cp.state))
        for cp in todo:
            if cp.name in results:
                continue
            try:
                _wait_state(client, cp.name, "STOPPED", wait_s)
            except OffsetkeeperError as exc:
                results[cp.name] = ConnectorResult(cp.name, ConnectorOutcome.FAILED,
                                                   f"could not stop it: {exc}",
                                                   was.get(cp.name, cp.state))
        live = [cp for cp in todo if cp.name not in results]
        # 2. plan again from the stopped connectors, one snapshot of all of them
        facts: dict[str, ConnectorFacts] = {}
        final: list[ConnectorPlan] = []
        for cp in live:
            try:
                f = read_facts(client, cp.name)
                facts[cp.name] = ConnectorFacts(f.name, f.type, was[cp.name], f.offsets)
                again = replan(f)
                if again.refused:
                    results[cp.name] = ConnectorResult(cp.name, ConnectorOutcome.REFUSED,
                                                       again.refused, was[cp.name])
                elif again.action is Action.NOTHING:
                    results[cp.name] = ConnectorResult(cp.name, ConnectorOutcome.NOTHING, "",
                                                       was[cp.name])
                else:
                    final.append(again)
            except OffsetkeeperError as exc:
                results[cp.name] = ConnectorResult(cp.name, ConnectorOutcome.FAILED,
                                                   f"could not read its offsets: {exc}",
                                                   was[cp.name])
        if final and snapshot_fn is not None:
            snapshot_id = snapshot_fn({cp.name: facts[cp.name] for cp in final})
        # 3. + 4. change and read back
        for cp in final:
            results[cp.name] = _apply_one(client, cp, was[cp.name])
        sources = {cp.name: cp for cp in final if cp.type == "source"
                   and results[cp.name].status is ConnectorOutcome.SUCCESS}
        if sources and topic_reader is not None:
            _check_topic(results, sources, topic_reader)
    finally:
        # 5. back to the state each was in
        for name in stopped:
            before = results.get(name)
            try:
                if was.get(name) == "PAUSED":
                    _retry(lambda n=name: client.request("PUT", f"/connectors/{_q(n)}/pause"))
                else:
                    _retry(lambda n=name: client.resume(n))
                after = was.get(name, "")
            except OffsetkeeperError as exc:
                after = "STOPPED"
                if before is not None:
                    results[name] = ConnectorResult(
                        name, ConnectorOutcome.FAILED,
                        f"{before.message + '; ' if before.message else ''}could not resume it: "
                        f"{exc}", before.state_before, after, before.readback)
                continue
            if before is not None:
                results[name] = ConnectorResult(name, before.status, before.message,
                                                before.state_before, after, before.readback)
    # a connector offsetkeeper did not stop stays in the state it was in
    ordered = tuple(r if r.state_after else replace(r, state_after=r.state_before)
                    for r in (results[cp.name] for cp in plan.connectors if cp.name in results))
    return ConnectReport(ordered, snapshot_id, plan)


def _q(name: str) -> str:
    import urllib.parse

    return urllib.parse.quote(name, safe="")


def _check_topic(results: dict[str, ConnectorResult], sources: dict[str, ConnectorPlan],
                 topic_reader: Callable[[set[str]], dict[str, tuple[OffsetEntry, ...]]]) -> None:
    """The independent read-back of source connectors: one read of the offsets topic."""
    try:
        found = topic_reader(set(sources))
    except OffsetkeeperError as exc:
        for name in sources:
            results[name] = replace(results[name], status=ConnectorOutcome.FAILED,
                                    message=f"changed, but reading the offsets topic failed: {exc}")
        return
    for name, cp in sources.items():
        if _same(found.get(name, ()), cp.expected):
            results[name] = replace(results[name], readback="rest+offsets-topic")
        else:
            results[name] = replace(results[name], status=ConnectorOutcome.FAILED,
                                    message="the offsets topic holds other offsets than planned")


def _apply_one(client: ConnectClient, cp: ConnectorPlan, was: str, *,
               readback_s: float = 30.0) -> ConnectorResult:
    try:
        if cp.action is Action.RESET:
            _retry(lambda: client.reset_offsets(cp.name))
        else:
            body = [{"partition": c.partition, "offset": c.after} for c in cp.changes]
            _retry(lambda: client.alter_offsets(cp.name, body))
    except ConnectError as exc:
        status = ConnectorOutcome.REFUSED if exc.status in (400, 409) else ConnectorOutcome.FAILED
        return ConnectorResult(cp.name, status, f"the worker refused the change: {exc}", was)
    deadline = time.monotonic() + readback_s
    while True:
        try:
            back = parse_entries(client.offsets(cp.name), where=f"connector {cp.name} read back")
        except OffsetkeeperError as exc:
            return ConnectorResult(cp.name, ConnectorOutcome.FAILED,
                                   f"changed, but reading it back failed: {exc}", was)
        if _same(back, cp.expected):
            break
        if time.monotonic() > deadline:
            return ConnectorResult(cp.name, ConnectorOutcome.FAILED,
                                   "the worker reports other offsets than planned after the "
                                   f"change (asked for {readback_s:.0f}s)", was, readback="rest")
        time.sleep(0.5)
    return ConnectorResult(cp.name, ConnectorOutcome.SUCCESS, "", was, readback="rest")
