"""Reading and writing checkpoint files in a local path or an fsspec URL.

Files are replaced atomically (temp + rename). Hadoop's local filesystem keeps a checksum
beside each file (``offsets/.N.crc``) and refuses a file whose checksum no longer matches, so a
rewritten ``offsets/N`` has its stale ``.crc`` removed (Hadoop then reads without checking;
the next file Spark writes gets a new one). Every file changed is copied first (`backup`).
"""

from __future__ import annotations

import base64
import json
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from offsetkeeper.errors import StoreError, UsageError
from offsetkeeper.storage import join, open_fs, write_bytes_atomic, write_text_atomic
from offsetkeeper.streaming.checkpoint import (
    CheckpointState,
    OffsetLogEntry,
    batch_ids,
    parse_initial_offsets,
    parse_offset_log,
)
from offsetkeeper.times import id_stamp, iso_datetime

BACKUP_DIR = "offsetkeeper-resets"


def _mtime(info: dict) -> float | None:
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        v = info.get(key)
        if v is None:
            continue
        if isinstance(v, int | float):
            return float(v)
        if isinstance(v, datetime):
            return v.timestamp()
        try:
            return datetime.fromisoformat(str(v).replace("Z", "+00:00")).timestamp()
        except ValueError:
            continue
    return None


class CheckpointStore:
    """One checkpoint location (path or URL)."""

    def __init__(self, location: str) -> None:
        self.location = str(location).rstrip("/")
        self.fs, self.root = open_fs(self.location)

    def url(self, *parts: str) -> str:
        return join(self.location, *parts)

    def _path(self, *parts: str) -> str:
        return join(self.root, *parts)

    def _names(self, sub: str) -> list[str]:
        p = self._path(sub)
        if not self.fs.exists(p):
            return []
        return [str(x).rstrip("/").rsplit("/", 1)[-1] for x in self.fs.ls(p, detail=False)]

    def read_text(self, *parts: str) -> str:
        try:
            with self.fs.open(self._path(*parts), "rb") as f:
                return f.read().decode("utf-8")
        except FileNotFoundError:
            raise StoreError(f"{self.url(*parts)} does not exist") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise StoreError(f"cannot read {self.url(*parts)}: {exc}") from None

    def read_bytes(self, *parts: str) -> bytes | None:
        p = self._path(*parts)
        if not self.fs.exists(p):
            return None
        with self.fs.open(p, "rb") as f:
            return f.read()

    def state(self) -> CheckpointState:
        """The checkpoint's batches, query id, state directory and newest change."""
        if not self.fs.exists(self.root) or not self.fs.isdir(self.root):
            raise UsageError(f"checkpoint {self.location} does not exist or is not a directory")
        offsets = batch_ids(self._names("offsets"))
        if not offsets and not self.fs.exists(self._path("metadata")):
            raise UsageError(f"{self.location} is not a Spark streaming checkpoint (no metadata "
                             "file, no offsets/ directory)")
        commits = batch_ids(self._names("commits"))
        query_id = None
        if self.fs.exists(self._path("metadata")):
            try:
                query_id = json.loads(self.read_text("metadata").splitlines()[0]).get("id")
            except (ValueError, IndexError, AttributeError):
                raise StoreError(f"{self.url('metadata')} is not Spark's query metadata JSON") from None
        newest = None
        for sub, ids in (("offsets", offsets), ("commits", commits)):
            if ids:
                t = _mtime(self.fs.info(self._path(sub, str(ids[-1]))))
                newest = t if newest is None or (t is not None and t > newest) else newest
        initial = {}
        for name in self._names("sources"):
            if name.isdigit():
                raw = self.read_bytes("sources", name, "0")
                if raw is not None:
                    found = parse_initial_offsets(raw.decode("utf-8", "replace"),
                                                  where=f"sources/{name}/0")
                    if found is not None:
                        initial[int(name)] = found
        stateful = self.fs.exists(self._path("state")) and bool(self._names("state"))
        return CheckpointState(self.location, query_id, offsets, commits, stateful=stateful,
                               newest_change_s=newest, initial=initial)

    def offset_entry(self, batch_id: int) -> OffsetLogEntry:
        return parse_offset_log(batch_id, self.read_text("offsets", str(batch_id)),
                                where=self.url("offsets", str(batch_id)))

    # -- writing ---------------------------------------------------------------------------
    def write_text(self, rel: str, text: str) -> None:
        write_text_atomic(self.url(rel), text, what="checkpoint file")

    def write_bytes(self, rel: str, data: bytes) -> None:
        write_bytes_atomic(self.url(rel), data, what="checkpoint file")

    def remove(self, rel: str) -> None:
        p = self._path(rel)
        if self.fs.exists(p):
            try:
                self.fs.rm(p)
            except OSError as exc:
                raise StoreError(f"cannot remove {self.url(rel)}: {exc}") from None

    # -- reset records ---------------------------------------------------------------------
    def save_record(self, record: ResetRecord) -> str:
        url = self.url(BACKUP_DIR, record.reset_id, "reset.json")
        write_text_atomic(url, json.dumps(asdict(record), indent=2), what="reset record")
        return url

    def records(self) -> list[str]:
        return sorted(n for n in self._names(BACKUP_DIR) if not n.startswith("."))

    def load_record(self, reset_id: str) -> ResetRecord:
        ids = self.records()
        if reset_id == "latest":
            if not ids:
                raise UsageError(f"checkpoint {self.location} has no offsetkeeper reset to roll back")
            reset_id = ids[-1]
        if reset_id not in ids:
            raise UsageError(f"no reset '{reset_id}' in {self.location} (have: "
                             f"{', '.join(ids) or 'none'})")
        try:
            raw = json.loads(self.read_text(BACKUP_DIR, reset_id, "reset.json"))
            raw["files"] = [FileChange(**f) for f in raw["files"]]
            return ResetRecord(**raw)
        except (ValueError, TypeError, KeyError):
            raise StoreError(f"reset record {reset_id} in {self.location} is corrupt") from None


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


@dataclass(frozen=True)
class FileChange:
    """One checkpoint file a reset changed: its content before (base64, None = absent) and
    after (None = removed)."""

    path: str
    before_b64: str | None
    after_b64: str | None

    @staticmethod
    def of(path: str, before: bytes | None, after: bytes | None) -> FileChange:
        return FileChange(path, _b64(before), _b64(after))

    @property
    def before(self) -> bytes | None:
        return None if self.before_b64 is None else base64.b64decode(self.before_b64)

    @property
    def after(self) -> bytes | None:
        return None if self.after_b64 is None else base64.b64decode(self.after_b64)


@dataclass(frozen=True)
class ResetRecord:
    """What `streaming reset --execute` changed, kept in the checkpoint for `rollback`."""

    reset_id: str
    created_at: str
    target: str
    last_planned: int | None
    files: list[FileChange] = field(default_factory=list)
    rolled_back: bool = False

    @staticmethod
    def new(target: str, last_planned: int | None) -> ResetRecord:
        now = datetime.now(UTC)
        rid = id_stamp(now) + "-" + uuid.uuid4().hex[:6]
        return ResetRecord(rid, iso_datetime(now), target, last_planned)
