"""Connector offsets snapshots: one JSON file per snapshot in the snapshot store's
``connect/`` directory (beside the consumer-group snapshots), written atomically::

    {"kind": "offsetkeeper-connect-snapshot", "schema_version": 1,
     "id": "csnap-20261127T051500.123Z-1a2b", "created_at": "...", "worker": "<masked url>",
     "description": "before connect reset ...",
     "connectors": {"NAME": {"type": "source", "state": "RUNNING",
                             "offsets": [{"partition": {...}, "offset": {...}}]}}}
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from offsetkeeper.connect.model import entries_json, parse_entries
from offsetkeeper.connect.plan import ConnectorFacts
from offsetkeeper.errors import NotFoundError, SnapshotFormatError, UsageError
from offsetkeeper.times import id_stamp, iso_datetime

KIND = "offsetkeeper-connect-snapshot"
PREFIX = "csnap-"
SAFE_ID = re.compile(r"^csnap-[0-9TZ.]+-[0-9a-f]{4,16}$")


@dataclass(frozen=True)
class ConnectSnapshot:
    id: str
    created_at: str
    worker: str
    description: str
    connectors: dict[str, ConnectorFacts]

    def to_json(self) -> str:
        return json.dumps({
            "kind": KIND, "schema_version": 1, "id": self.id, "created_at": self.created_at,
            "worker": self.worker, "description": self.description,
            "connectors": {n: {"type": f.type, "state": f.state,
                               **entries_json(f.offsets)} for n, f in self.connectors.items()},
        }, indent=1)


def new_snapshot(worker: str, description: str,
                 connectors: dict[str, ConnectorFacts]) -> ConnectSnapshot:
    now = datetime.now(UTC)
    sid = f"{PREFIX}{id_stamp(now)}-{secrets.token_hex(2)}"
    return ConnectSnapshot(sid, iso_datetime(now), worker, description, dict(connectors))


def parse_snapshot(text: str, *, where: str) -> ConnectSnapshot:
    try:
        doc = json.loads(text)
        if not isinstance(doc, dict) or doc.get("kind") != KIND:
            raise ValueError("not a connector offsets snapshot")
        if doc.get("schema_version") != 1:
            raise ValueError(f"schema_version {doc.get('schema_version')!r} (this offsetkeeper "
                             "reads 1)")
        conns = {}
        for name, c in doc["connectors"].items():
            conns[name] = ConnectorFacts(name, str(c["type"]), str(c["state"]),
                                         parse_entries(c, where=f"{where} connector {name}"))
        return ConnectSnapshot(str(doc["id"]), str(doc["created_at"]), str(doc.get("worker", "")),
                               str(doc.get("description", "")), conns)
    except UsageError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SnapshotFormatError(f"{where} is not a connector offsets snapshot: {exc}") from None


def check_id(sid: str) -> str:
    if not SAFE_ID.match(sid or ""):
        raise UsageError(f"'{sid}' is not a connector snapshot id (expected something like "
                         "csnap-20261127T051500.123Z-1a2b)")
    return sid


class ConnectSnapshotStore:
    """``STORE/connect/<id>.json`` on the snapshot store's file system (local or fsspec)."""

    def __init__(self, store) -> None:
        self.store = store  # a snapshots.store.SnapshotStore
        self.dir = store.root.rstrip("/") + "/connect"

    def save(self, snap: ConnectSnapshot) -> str:
        fs = self.store.fs
        fs.makedirs(self.dir, exist_ok=True)
        final = f"{self.dir}/{snap.id}.json"
        tmp = f"{self.dir}/.{snap.id}.json.tmp"
        fs.pipe_file(tmp, snap.to_json().encode())
        fs.mv(tmp, final)
        return snap.id

    def load(self, sid: str) -> ConnectSnapshot:
        path = f"{self.dir}/{check_id(sid)}.json"
        try:
            text = self.store.fs.cat_file(path).decode()
        except FileNotFoundError:
            raise NotFoundError(f"no connector snapshot {sid} in {self.store.display_url}") from None
        return parse_snapshot(text, where=f"snapshot {sid}")


