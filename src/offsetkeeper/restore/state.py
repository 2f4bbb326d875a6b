"""The state of one restore, kept beside the backup so a rerun can continue where it stopped.

`DEST/BACKUP_ID/restores/RESTORE_ID.json`, written atomically by the driver:
status (running | completed | failed, with the error), the options that decide what goes where (a rerun must use the
same), and per route the target log end before the restore started and after it finished.
"""

from __future__ import annotations

import enum
import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from offsetkeeper.errors import StoreError, UsageError
from offsetkeeper.models import TopicPartition
from offsetkeeper.restore.paths import (
    RESTORE_ID_RE,
    backup_root,
    join,
    open_fs,
    state_path,
    validate_restore_id,
    write_bytes_atomic,
)


class RestoreStatus(enum.StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


@dataclass
class RouteState:
    source_topic: str
    source_partition: int
    target_topic: str
    target_partition: int
    start_log_end: int
    end_log_end: int | None = None

    @property
    def source(self) -> TopicPartition:
        return TopicPartition(self.source_topic, self.source_partition)

    @property
    def target(self) -> TopicPartition:
        return TopicPartition(self.target_topic, self.target_partition)


@dataclass
class RestoreState:
    restore_id: str
    backup_id: str
    target_cluster: str
    fingerprint: dict[str, Any]
    routes: list[RouteState] = field(default_factory=list)
    status: RestoreStatus = RestoreStatus.RUNNING
    started_at_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    finished_at_ms: int | None = None
    runs: int = 0
    target_cluster_id: str = ""
    error: str | None = None          # why the last run failed (status failed)

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), indent=2, sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes) -> RestoreState:
        """Parse and check a state file (strict types: a list, or a string where a number
        belongs, is refused with a ValueError naming the field)."""
        from pydantic import TypeAdapter, ValidationError

        try:
            st = TypeAdapter(cls).validate_json(data, strict=True)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(x) for x in err["loc"]) or "the document"
            raise ValueError(f"field '{loc}': {err['msg'].lower()}") from None
        validate_restore_id(st.restore_id)
        return st

    def log_ends(self) -> dict[TopicPartition, int]:
        return {r.target: r.end_log_end for r in self.routes if r.end_log_end is not None}

    def route_map(self) -> dict[TopicPartition, TopicPartition]:
        return {r.source: r.target for r in self.routes}


def save_state(destination: str, backup_id: str, state: RestoreState) -> None:
    write_bytes_atomic(state_path(destination, backup_id, state.restore_id), state.to_json())


def load_state(destination: str, backup_id: str, restore_id: str) -> RestoreState | None:
    fs, path = open_fs(state_path(destination, backup_id, restore_id))
    if not fs.exists(path):
        return None
    try:
        with fs.open(path, "rb") as f:
            return RestoreState.from_json(f.read())
    except (OSError, ValueError, TypeError, UsageError) as exc:
        raise StoreError(f"restore state {path} is corrupt: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return (lines[0] if lines else type(exc).__name__)[:300]


def list_states(destination: str, backup_id: str) -> list[RestoreState]:
    """Every restore of a backup, oldest first (StoreError when a state file is corrupt)."""
    fs, path = open_fs(join(backup_root(destination, backup_id), "restores"))
    if not fs.exists(path):
        return []
    out = []
    for f in sorted(fs.ls(path, detail=False)):
        name = f.rsplit("/", 1)[-1]
        if name.endswith(".json") and RESTORE_ID_RE.fullmatch(name[:-5]):
            st = load_state(destination, backup_id, name[:-5])
            if st is not None:
                out.append(st)
    return sorted(out, key=lambda s: s.started_at_ms)


def resolve_restore(destination: str, backup_id: str, restore_id: str | None) -> RestoreState:
    """The named restore of a backup, or its most recent completed one."""
    if restore_id:
        validate_restore_id(restore_id, flag="--restore")
        st = load_state(destination, backup_id, restore_id)
        if st is None:
            known = ", ".join(s.restore_id for s in list_states(destination, backup_id)) or "none"
            raise UsageError(f"backup '{backup_id}' has no restore '{restore_id}' (restores: {known})")
        return st
    done = [s for s in list_states(destination, backup_id) if s.status is RestoreStatus.COMPLETED]
    if not done:
        raise UsageError(f"backup '{backup_id}' has no completed restore; give a restore id")
    return done[-1]
