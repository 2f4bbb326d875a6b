"""What a snapshot is: the committed offsets of some groups at one moment, and how it is stored.

A snapshot holds, per group, its state and committed offsets (with commit metadata), plus the
log start/end of every partition of the topics those groups had offsets for, the cluster id and
the time. It is serialised as one JSON document with a ``schema_version``::

    {"schema_version": 1, "id": "snap-20261121T194501.123Z-1a2b",
     "created_at": "2026-11-21T19:45:01.123Z", "cluster_id": "...",
     "bootstrap_servers": "...", "description": "...",
     "groups": {"payments": {"state": "empty",
                             "offsets": [{"topic": "orders", "partition": 0,
                                          "offset": 42, "metadata": ""}]}},
     "partitions": [{"topic": "orders", "partition": 0, "log_start": 0, "log_end": 50}]}

A snapshot taken right before a change also records, per group, the partitions about to change
that had NO committed offset (``"uncommitted": [{"topic": ..., "partition": ...}]``): rolling
back deletes the commits the change made there (OffsetDelete), so the group is exactly as
before. Such a snapshot is written as schema version 2 (a version 1 reader, which would leave
those commits in place, refuses it); others stay version 1.

A share group's snapshot holds its share-partition start offsets as "offsets" and says
``"type": "share"``; "uncommitted" then lists partitions that had no start offset. Such a
snapshot is written as schema version 3: an older reader would roll it back as a consumer group.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from offsetkeeper.errors import SnapshotFormatError
from offsetkeeper.models import (
    CommittedOffset,
    GroupType,
    TopicPartition,
    Watermarks,
    offset_problem,
)
from offsetkeeper.times import id_stamp, iso_datetime

SCHEMA_VERSION = 1  # written when no group records uncommitted partitions
UNCOMMITTED_VERSION = 2  # written when one does (a version 1 reader would ignore them)
SHARE_VERSION = 3  # written when a group is a share group (start offsets, "type": "share")
NEWEST_VERSION = SHARE_VERSION  # the newest this offsetkeeper reads

# Descriptions of the snapshots offsetkeeper takes by itself right before it changes offsets.
ROLLBACK_PREFIX = "before rollback to "
RESET_PREFIX = "before reset "


class SnapshotOrigin(StrEnum):
    """Why a snapshot exists. `latest` never picks BEFORE_ROLLBACK: running
    `snapshots rollback latest --execute` twice must not undo the first rollback."""

    MANUAL = "manual"              # snapshots create
    BEFORE_RESET = "before-reset"  # automatic, before offsets reset --execute
    BEFORE_ROLLBACK = "before-rollback"  # automatic, before snapshots rollback --execute

    @classmethod
    def from_description(cls, description: str) -> SnapshotOrigin:
        if description.startswith(ROLLBACK_PREFIX):
            return cls.BEFORE_ROLLBACK
        if description.startswith(RESET_PREFIX):
            return cls.BEFORE_RESET
        return cls.MANUAL

# What may name a snapshot at all (ids are file names in the store: no separators).
SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


format_time = iso_datetime  # ISO-8601 UTC with milliseconds and a Z: 2026-11-21T19:45:01.123Z


def new_snapshot_id(when: datetime | None = None, *, suffix: str | None = None) -> str:
    """A new id that sorts by time: ``snap-20261121T194501.123Z-1a2b``."""
    suffix = suffix if suffix is not None else secrets.token_hex(2)
    return f"snap-{id_stamp(when)}-{suffix}"


@dataclass(frozen=True)
class GroupSnapshot:
    """One group as the snapshot saw it."""

    state: str
    offsets: dict[TopicPartition, CommittedOffset] = field(default_factory=dict)
    # Partitions about to change that had no committed offset (a rollback deletes theirs).
    uncommitted: frozenset[TopicPartition] = frozenset()
    # SHARE: `offsets` are share-partition start offsets (rolled back through the share view).
    group_type: GroupType = GroupType.CONSUMER


@dataclass(frozen=True)
class SnapshotSummary:
    """One line of `snapshots list`."""

    id: str
    created_at: str
    cluster_id: str
    description: str
    groups: int
    partitions: int
    error: str | None = None
    bootstrap_servers: str = ""
    origin: str = ""

    def as_row(self) -> dict[str, Any]:
        return {"id": self.id, "created_at": self.created_at, "cluster_id": self.cluster_id,
                "bootstrap_servers": self.bootstrap_servers, "origin": self.origin,
                "groups": self.groups, "partitions": self.partitions,
                "description": self.description, "error": self.error}


def servers(bootstrap_servers: str) -> set[str]:
    """The host:port entries of a bootstrap list, normalised (case, blanks, order)."""
    return {s.strip().lower() for s in bootstrap_servers.split(",") if s.strip()}


def same_cluster(snapshot: Snapshot, cluster_id: str, bootstrap_servers: str) -> bool:
    """Whether a snapshot was taken on the cluster a command talks to.

    Cluster ids decide when both are known: Apache Kafka gives every cluster its own id, so the
    same cluster reached through other brokers or names is found. (The former development
    broker gave every instance the same id; requiring a shared host:port as well made `latest`
    miss the cluster's own snapshots taken through another address.) Without an id on either
    side, the bootstrap lists must share a host:port — or the snapshot's must be unknown."""
    if snapshot.cluster_id and cluster_id:
        return snapshot.cluster_id == cluster_id
    taken = servers(snapshot.bootstrap_servers)
    return not taken or bool(taken & servers(bootstrap_servers))


@dataclass(frozen=True)
class Snapshot:
    """Committed offsets of some groups plus partition watermarks, on one cluster, at one time."""

    id: str
    created_at: str
    cluster_id: str
    bootstrap_servers: str
    description: str
    groups: dict[str, GroupSnapshot] = field(default_factory=dict)
    partitions: dict[TopicPartition, Watermarks] = field(default_factory=dict)
    origin: SnapshotOrigin | None = None  # None: derived from the description

    def __post_init__(self) -> None:
        if self.origin is None:
            object.__setattr__(self, "origin", SnapshotOrigin.from_description(self.description))

    @property
    def kind(self) -> SnapshotOrigin:
        """Why the snapshot was taken (stored, or derived from the description)."""
        return self.origin or SnapshotOrigin.from_description(self.description)

    # -- views ---------------------------------------------------------------------------------
    def offsets(self) -> dict[str, dict[TopicPartition, int]]:
        """Committed offset per group and partition (groups without offsets are left out)."""
        return {g: {tp: c.offset for tp, c in gs.offsets.items()}
                for g, gs in sorted(self.groups.items()) if gs.offsets}

    def uncommitted(self) -> dict[str, frozenset[TopicPartition]]:
        """Per group, the partitions that had no committed offset (groups without any are left
        out): a rollback deletes the offsets committed there since."""
        return {g: gs.uncommitted for g, gs in sorted(self.groups.items()) if gs.uncommitted}

    def partition_count(self) -> int:
        """Distinct group/partition pairs with a committed offset."""
        return sum(len(gs.offsets) for gs in self.groups.values())

    def summary(self) -> SnapshotSummary:
        return SnapshotSummary(self.id, self.created_at, self.cluster_id, self.description,
                               len(self.groups), self.partition_count(),
                               bootstrap_servers=self.bootstrap_servers, origin=self.kind.value)

    def lag_note(self) -> str:
        """Which lag `rows()` shows: log end minus the offset recorded, which for a share group
        is its start offset — not the broker's share lag (records not yet acknowledged)."""
        share = any(gs.group_type is GroupType.SHARE for gs in self.groups.values())
        return ("LAG = log end - the offset recorded: for share groups the start offset, so it "
                "counts acknowledged records after it too (not the broker's share lag, which "
                "counts only unacknowledged ones)" if share else
                "LAG = log end - committed offset, at the time of the snapshot")

    def rows(self) -> list[dict[str, Any]]:
        """One row per group and partition, sorted, with the watermarks and the lag then."""
        rows = []
        for g, gs in sorted(self.groups.items()):
            if not gs.offsets:
                rows.append({"group": g, "state": gs.state, "topic": None, "partition": None,
                             "offset": None, "metadata": None, "log_start": None,
                             "log_end": None, "lag": None})
            for tp, c in sorted(gs.offsets.items()):
                wm = self.partitions.get(tp)
                rows.append({
                    "group": g, "state": gs.state, "topic": tp.topic, "partition": tp.partition,
                    "offset": c.offset, "metadata": c.metadata,
                    "log_start": wm.low if wm else None, "log_end": wm.high if wm else None,
                    "lag": wm.high - c.offset if wm else None,  # negative: beyond log end
                })
        return rows

    # -- serialisation -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        needs_v2 = any(gs.uncommitted for gs in self.groups.values())
        needs_v3 = any(gs.group_type is not GroupType.CONSUMER for gs in self.groups.values())
        return {
            "schema_version": SHARE_VERSION if needs_v3 else
            UNCOMMITTED_VERSION if needs_v2 else SCHEMA_VERSION,
            "id": self.id,
            "created_at": self.created_at,
            "cluster_id": self.cluster_id,
            "bootstrap_servers": self.bootstrap_servers,
            "description": self.description,
            "origin": self.kind.value,
            "groups": {
                g: {"state": gs.state,
                    **({"type": str(gs.group_type)}
                       if gs.group_type is not GroupType.CONSUMER else {}),
                    "offsets": [{"topic": tp.topic, "partition": tp.partition,
                                 "offset": c.offset, "metadata": c.metadata}
                                for tp, c in sorted(gs.offsets.items())],
                    **({"uncommitted": [{"topic": tp.topic, "partition": tp.partition}
                                        for tp in sorted(gs.uncommitted)]}
                       if gs.uncommitted else {})}
                for g, gs in sorted(self.groups.items())
            },
            "partitions": [{"topic": tp.topic, "partition": tp.partition,
                            "log_start": wm.low, "log_end": wm.high}
                           for tp, wm in sorted(self.partitions.items())],
        }

    def to_json(self) -> str:
        return readable_json(self.to_dict()) + "\n"

    @classmethod
    def from_dict(cls, doc: Any) -> Snapshot:
        """Build a snapshot from its document; SnapshotFormatError says what is wrong."""
        if not isinstance(doc, dict):
            raise SnapshotFormatError("the document is not a JSON object")
        version = doc.get("schema_version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise SnapshotFormatError("'schema_version' is missing")
        if version > NEWEST_VERSION:
            raise SnapshotFormatError(
                f"schema_version {version} is newer than this offsetkeeper reads "
                f"({NEWEST_VERSION}); upgrade offsetkeeper")
        if version < 1:
            raise SnapshotFormatError(f"schema_version {version} is not valid")
        try:
            groups = {
                str(g): GroupSnapshot(
                    state=_str(gd, "state"),
                    offsets=_once(((TopicPartition(_str(o, "topic"), _offset(o, "partition")),
                                    CommittedOffset(_offset(o, "offset"), _metadata(o)))
                                   for o in _list(gd, "offsets")), f"group {str(g)[:200]!r}"),
                    uncommitted=frozenset(
                        TopicPartition(_str(u, "topic"), _offset(u, "partition"))
                        for u in (_list(gd, "uncommitted") if "uncommitted" in gd else [])),
                    group_type=_group_type(gd),
                )
                for g, gd in _dict(doc, "groups").items()
            }
            partitions = {TopicPartition(_str(p, "topic"), _offset(p, "partition")):
                          Watermarks(_offset(p, "log_start"), _offset(p, "log_end"))
                          for p in _list(doc, "partitions")}
            origin_text = _str(doc, "origin", "")
            try:
                origin = SnapshotOrigin(origin_text) if origin_text else None
            except ValueError:
                raise SnapshotFormatError(f"'origin' {origin_text!r} is not one of "
                                          f"{', '.join(o.value for o in SnapshotOrigin)}") from None
            return cls(
                origin=origin,
                id=_str(doc, "id"),
                created_at=_str(doc, "created_at"),
                cluster_id=_str(doc, "cluster_id", ""),
                bootstrap_servers=_str(doc, "bootstrap_servers", ""),
                description=_str(doc, "description", ""),
                groups=groups,
                partitions=partitions,
            )
        except (TypeError, AttributeError) as exc:
            raise SnapshotFormatError(f"unexpected structure ({exc})") from exc

    @classmethod
    def from_json(cls, text: str | bytes) -> Snapshot:
        try:
            doc = json.loads(text, object_pairs_hook=_unique_keys)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise SnapshotFormatError(f"not valid JSON ({exc})") from exc
        except RecursionError:  # a hostile or corrupt file: one bad item, not a crash
            raise SnapshotFormatError("nested too deeply to be a snapshot") from None
        return cls.from_dict(doc)


_MISSING = object()


def readable_json(doc: Any, level: int = 0) -> str:
    """`doc` as indented JSON with every innermost object or list (one offset, one partition)
    on one line: as readable as `indent=2`, and written by json's C encoder (`indent` makes
    json use its pure-Python encoder, which took most of a 1,600-partition reset's snapshot)."""
    pad, inner = "  " * level, "  " * (level + 1)
    if isinstance(doc, dict) and doc and any(isinstance(v, dict | list) for v in doc.values()):
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {readable_json(v, level + 1)}"
                 for k, v in doc.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(doc, list) and doc and any(isinstance(v, dict | list) for v in doc):
        return "[\n" + ",\n".join(f"{inner}{readable_json(v, level + 1)}" for v in doc) + f"\n{pad}]"
    return json.dumps(doc, ensure_ascii=False)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are unique: a group named twice would otherwise be the last one
    silently (a hand-edited or hostile file)."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise SnapshotFormatError(f"key {k[:200]!r} appears twice in one object")
        out[k] = v
    return out


def _once(items, where: str) -> dict:
    """The (partition, offset) pairs as a dict; a partition listed twice is an error (which of
    the two would a rollback restore?), as it is in a CSV plan."""
    out: dict = {}
    for tp, v in items:
        if tp in out:
            raise SnapshotFormatError(f"{where} lists {tp.topic[:249]}:{tp.partition} twice")
        out[tp] = v
    return out


def _group_type(gd: Any) -> GroupType:
    text = _str(gd, "type", GroupType.CONSUMER.value)
    try:
        return GroupType(text)
    except ValueError:
        raise SnapshotFormatError(f"'type' {text!r} is not one of "
                                  f"{', '.join(t.value for t in GroupType)}") from None


def _get(d: Any, key: str, default: Any) -> Any:
    if not isinstance(d, dict):
        raise SnapshotFormatError(f"expected an object holding '{key}', got {type(d).__name__}")
    v = d.get(key, default)
    if v is _MISSING:
        raise SnapshotFormatError(f"'{key}' is missing")
    return v


def _metadata(o: Any) -> str | None:
    """Commit metadata of an offset entry: a string, or null when the client could not read it."""
    return None if isinstance(o, dict) and o.get("metadata", "") is None else _str(o, "metadata", "")


def _str(d: Any, key: str, default: Any = _MISSING) -> str:
    v = _get(d, key, default)
    if not isinstance(v, str):
        raise SnapshotFormatError(f"'{key}' must be a string, got {json.dumps(v)[:40]}")
    return v


def _int(d: Any, key: str) -> int:
    v = _get(d, key, _MISSING)
    if not isinstance(v, int) or isinstance(v, bool):
        raise SnapshotFormatError(f"'{key}' must be an integer, got {json.dumps(v)[:40]}")
    return v


def _offset(d: Any, key: str) -> int:
    """An offset (or partition number): an integer in [0, 2^63)."""
    v = _int(d, key)
    if (problem := offset_problem(v)) is not None:
        raise SnapshotFormatError(f"'{key}': {problem} (valid: 0 <= {key} < 2^63)")
    return v


def _list(d: Any, key: str) -> list[Any]:
    v = _get(d, key, _MISSING)
    if not isinstance(v, list):
        raise SnapshotFormatError(f"'{key}' must be a list")
    return v


def _dict(d: Any, key: str) -> dict[str, Any]:
    v = _get(d, key, _MISSING)
    if not isinstance(v, dict):
        raise SnapshotFormatError(f"'{key}' must be an object")
    return v
