"""Planning a change of connector offsets: pure (facts in, plan out), nothing is touched.

A `ConnectorPlan` says, for one connector, what the worker will be asked to do: ``alter``
(PATCH the listed partitions; an entry with a null offset removes that partition's offset),
``reset`` (DELETE every offset), or nothing; plus each partition's offset before and after, so
the plan can be shown, executed, and read back against. Refusals (the worker's state forbids it,
a bad entry for a sink connector) are decided here and shown in the dry run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from offsetkeeper.connect.model import OffsetEntry, canonical, sink_position


class Action(StrEnum):
    ALTER = "alter"
    RESET = "reset"
    NOTHING = "nothing"


@dataclass(frozen=True)
class Change:
    """One connector partition: its offset now and after the change (None: no offset)."""

    partition: dict
    before: dict | None
    after: dict | None

    def as_dict(self) -> dict:
        return {"partition": self.partition, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class ConnectorFacts:
    """What the worker says about one connector right now."""

    name: str
    type: str  # "source" | "sink" | "unknown"
    state: str  # RUNNING, PAUSED, STOPPED, FAILED, ...
    offsets: tuple[OffsetEntry, ...]


@dataclass(frozen=True)
class ConnectorPlan:
    """What will be done to one connector's offsets."""

    name: str
    type: str
    state: str
    action: Action
    changes: tuple[Change, ...] = ()
    expected: tuple[OffsetEntry, ...] = ()  # the offsets the read-back must find
    refused: str | None = None
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {"connector": self.name, "type": self.type, "state": self.state,
                "action": str(self.action), "refused": self.refused, "notes": list(self.notes),
                "changes": [c.as_dict() for c in self.changes]}


@dataclass(frozen=True)
class ConnectPlan:
    """A plan over one or more connectors (bulk)."""

    target: str
    connectors: tuple[ConnectorPlan, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict:
        return {"target": self.target, "connectors": [c.as_dict() for c in self.connectors]}


# States in which the worker accepts an offsets change (KIP-875: only STOPPED; offsetkeeper
# stops a RUNNING or PAUSED connector first and puts it back afterwards).
MOVABLE_STATES = ("RUNNING", "PAUSED", "STOPPED")


def refusal(facts: ConnectorFacts) -> str | None:
    """Why offsetkeeper will not change this connector's offsets (None: it may)."""
    if facts.state not in MOVABLE_STATES:
        return (f"connector {facts.name} is {facts.state}; offsetkeeper changes offsets of "
                f"RUNNING, PAUSED or STOPPED connectors only (fix or restart it first)")
    if facts.type not in ("source", "sink"):
        return f"connector {facts.name} is of type {facts.type!r} (expected source or sink)"
    return None


def plan_alter(facts: ConnectorFacts, target: tuple[OffsetEntry, ...], *,
               exact: bool = False) -> ConnectorPlan:
    """Set the listed partitions to the listed offsets (a null offset removes one). `exact`
    (rollback): partitions that have an offset now and are not listed are removed too, so the
    connector ends with exactly `target`."""
    refused = refusal(facts)
    if refused is None and facts.type == "sink":
        bad = [e for e in target if sink_position(e) is None]
        if bad:
            refused = (f"sink connector {facts.name}: partition {bad[0].describe_partition()} is "
                       "not {\"kafka_topic\": T, \"kafka_partition\": N} with offset "
                       "{\"kafka_offset\": N}")
    now = {e.key: e for e in facts.offsets}
    wanted = {e.key: e for e in target}
    if exact:
        for key, e in now.items():
            if key not in wanted:
                wanted[key] = OffsetEntry(e.partition, None)
    changes = []
    for key, e in wanted.items():
        before = now[key].offset if key in now else None
        if canonical(before) != canonical(e.offset):
            changes.append(Change(e.partition, before, e.offset))
    expected = {k: v for k, v in now.items()}
    for c in changes:
        key = canonical(c.partition)
        if c.after is None:
            expected.pop(key, None)
        else:
            expected[key] = OffsetEntry(c.partition, c.after)
    notes = []
    if facts.state == "RUNNING":
        notes.append("the connector runs: its offsets may move until --execute stops it; "
                     "the plan is made again from the stopped connector's offsets")
    action = Action.ALTER if changes else Action.NOTHING
    return ConnectorPlan(facts.name, facts.type, facts.state, action, tuple(changes),
                         tuple(expected.values()), refused, tuple(notes))


def plan_delete_all(facts: ConnectorFacts) -> ConnectorPlan:
    """Remove every offset of the connector (DELETE): a source connector starts over as if
    new, a sink connector's group loses its committed offsets (it then follows
    consumer.auto.offset.reset)."""
    changes = tuple(Change(e.partition, e.offset, None) for e in facts.offsets
                    if e.offset is not None)
    action = Action.RESET if changes else Action.NOTHING
    return ConnectorPlan(facts.name, facts.type, facts.state, action, changes, (),
                         refusal(facts))
