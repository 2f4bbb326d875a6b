"""Where snapshots live: a directory (local path or any fsspec URL), one JSON file per snapshot.

    STORE/snap-20261121T194501.123Z-1a2b.json

Files are written atomically: a hidden temporary file next to the target, then a rename
(``os.replace`` on local disks, ``fs.mv`` elsewhere), so a reader never sees half a snapshot.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from offsetkeeper.errors import NotFoundError, StoreError, UsageError
from offsetkeeper.redact import mask_url
from offsetkeeper.snapshots.model import (
    SAFE_ID,
    Snapshot,
    SnapshotFormatError,
    SnapshotOrigin,
    SnapshotSummary,
    same_cluster,
)
from offsetkeeper.storage import local_path, read_regular_file, write_bytes_atomic

STORE_ENV = "OFFSETKEEPER_SNAPSHOT_STORE"
SUFFIX = ".json"
LATEST = "latest"
# A snapshot of 800 groups x 100 partitions is ~10 MB of JSON; a file far beyond that is not
# one of ours, and reading it whole would cost the reader its memory.
MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024

if TYPE_CHECKING:  # the config file's models load pydantic and YAML
    import fsspec

    from offsetkeeper.config import ConfigFile


def default_store_url() -> str:
    """``user_data_dir("offsetkeeper")/snapshots`` (e.g. ~/.local/share/offsetkeeper/snapshots)."""
    import platformdirs

    return str(Path(platformdirs.user_data_dir("offsetkeeper")) / "snapshots")


def resolve_store_url(cli_value: str | None, config: ConfigFile | None = None) -> str:
    """The store to use: ``--store``, else $OFFSETKEEPER_SNAPSHOT_STORE, else the config
    file's ``snapshots.store``, else the default under the user's data directory."""
    if cli_value:
        return str(cli_value)
    if os.environ.get(STORE_ENV):
        return os.environ[STORE_ENV]
    if config is not None and config.snapshots.store:
        return config.snapshots.store
    return default_store_url()


def check_id(snapshot_id: str) -> str:
    """Reject ids that cannot name a file in the store (UsageError, exit 2)."""
    if not SAFE_ID.match(snapshot_id or ""):
        raise UsageError(f"'{snapshot_id}' is not a snapshot id "
                         "(expected something like snap-20261121T194501.123Z-1a2b)")
    return snapshot_id


class SnapshotStore:
    """A directory of snapshot files on the local disk or behind any fsspec URL.

    Without a URL: $OFFSETKEEPER_SNAPSHOT_STORE, else the default under the user's data dir.
    """

    def __init__(self, url: str | None = None) -> None:
        self.url = str(url) if url else resolve_store_url(None)
        target = self.url if "://" in self.url else str(Path(self.url).expanduser())
        root = local_path(target)
        self._fs: fsspec.AbstractFileSystem | None = None
        if root is None:
            import fsspec  # here: a dry run resolves the store's URL only (~20 ms to import)

            try:
                self._fs, root = fsspec.core.url_to_fs(target)
            except (ValueError, ImportError) as exc:
                raise UsageError(f"snapshot store '{self.display_url}' cannot be opened: "
                                 f"{mask_url(exc, known=self.url)}") from exc
        self.root = root.rstrip("/") or "/"
        self._local = self._fs is None or "file" in _protocols(self._fs)

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        """The store's fsspec filesystem; for a local directory made on first use (saving a
        snapshot there, what a reset does, needs none)."""
        if self._fs is None:
            import fsspec

            self._fs = fsspec.filesystem("file")
        return self._fs

    def __repr__(self) -> str:
        return f"SnapshotStore({self.display_url!r})"

    @property
    def display_url(self) -> str:
        """The store's URL as output shows it: credentials masked (`redact.mask_url`)."""
        return mask_url(self.url, known=self.url)

    # -- paths ---------------------------------------------------------------------------------
    def path(self, snapshot_id: str) -> str:
        """Where the snapshot with this id is (or would be) stored."""
        return f"{self.root}/{check_id(snapshot_id)}{SUFFIX}"

    def display(self, path: str) -> str:
        """A path as a user would type it (the URL with its protocol, a plain local path)."""
        return mask_url(path if self._local else self.fs.unstrip_protocol(path), known=self.url)

    # -- operations ----------------------------------------------------------------------------
    def save(self, snapshot: Snapshot) -> str:
        """Write a snapshot atomically; returns its id. An existing id is never overwritten."""
        final = self.path(snapshot.id)
        try:
            exists = os.path.lexists(final) if self._fs is None else self.fs.exists(final)
        except OSError as exc:
            raise StoreError(f"cannot read snapshot store {self.display(self.root)}: "
                             f"{exc.strerror or exc}") from None
        if exists:
            raise StoreError(f"snapshot {snapshot.id} already exists: {self.display(final)}")
        write_bytes_atomic(self.display(final), snapshot.to_json().encode(), fsync=True,
                           what=f"snapshot {snapshot.id} to")
        return snapshot.id

    def resolve(self, ref: str, *, cluster: tuple[str, str] | None = None) -> str:
        """An id as given, or for ``latest`` the newest snapshot that is not an automatic
        pre-rollback snapshot and — when `cluster` (cluster id, bootstrap servers) is given —
        was taken on that cluster (see `model.same_cluster`)."""
        if ref != LATEST:
            return check_id(ref)
        ids = self.ids()
        if not ids:
            raise StoreError(f"the snapshot store {self.display_url} holds no snapshots")
        for sid in ids:
            try:
                snap = self._read(sid)
            except (StoreError, NotFoundError):
                continue  # a corrupt file is listed by `snapshots list`, never picked as latest
            if snap.kind is SnapshotOrigin.BEFORE_ROLLBACK:
                continue
            if cluster is not None and not same_cluster(snap, *cluster):
                continue
            return sid
        where = f" of the cluster at {cluster[1]}" if cluster else ""
        raise StoreError(f"the snapshot store {self.display_url} holds no snapshot{where} to use as "
                         "'latest' (automatic pre-rollback snapshots are never 'latest'; "
                         "give the id)")

    def load(self, snapshot_id: str, *, cluster: tuple[str, str] | None = None) -> Snapshot:
        """Read a snapshot (``latest``: see `resolve`); StoreError (naming the id and file)
        when missing or corrupt."""
        return self._read(self.resolve(snapshot_id, cluster=cluster))

    def _read(self, snapshot_id: str) -> Snapshot:
        path = self.path(snapshot_id)
        shown = self.display(path)
        try:
            data = read_regular_file(self._fs, path, local=self._local, limit=MAX_SNAPSHOT_BYTES,
                                     what=f"snapshot {snapshot_id} ({shown})")
        except FileNotFoundError:
            raise NotFoundError(f"snapshot {snapshot_id} not found: no file {shown} "
                                "(see `offsetkeeper snapshots list`)") from None
        except OSError as exc:
            raise StoreError(f"cannot read snapshot {snapshot_id} from {shown}: "
                             f"{exc.strerror or exc}") from exc
        try:
            snap = Snapshot.from_json(data)
        except SnapshotFormatError as exc:
            raise StoreError(f"snapshot {snapshot_id} is corrupt: {shown}: {exc}") from exc
        if snap.id != snapshot_id:
            raise StoreError(f"snapshot {snapshot_id} is corrupt: {shown} holds id {snap.id}")
        return snap

    def ids(self) -> list[str]:
        """Ids of the stored snapshots, newest first (ids sort by time)."""
        try:
            if not self.fs.exists(self.root):
                return []
            names = [p.rstrip("/").rsplit("/", 1)[-1] for p in self.fs.ls(self.root, detail=False)]
        except OSError as exc:
            raise StoreError(f"cannot list the snapshot store {self.display_url}: "
                             f"{exc.strerror or exc}") from exc
        ids = [n[: -len(SUFFIX)] for n in names if n.endswith(SUFFIX) and not n.startswith(".")]
        return sorted((i for i in ids if SAFE_ID.match(i)), reverse=True)

    def list(self) -> list[SnapshotSummary]:
        """A summary of every stored snapshot, newest first; unreadable files are listed with
        their error instead of stopping the listing."""
        out = []
        for sid in self.ids():
            try:
                out.append(self._read(sid).summary())
            except (StoreError, NotFoundError) as exc:
                out.append(SnapshotSummary(sid, "", "", "", 0, 0, error=exc.message))
        return out

    def delete(self, snapshot_id: str) -> str:
        """Remove a snapshot file; returns its id. StoreError when there is none."""
        snapshot_id = self.resolve(snapshot_id)
        path = self.path(snapshot_id)
        try:
            self.fs.rm_file(path)
        except FileNotFoundError:
            raise NotFoundError(f"snapshot {snapshot_id} not found: no file "
                                f"{self.display(path)}") from None
        except OSError as exc:
            raise StoreError(f"cannot delete snapshot {snapshot_id} ({self.display(path)}): "
                             f"{exc.strerror or exc}") from exc
        return snapshot_id


def _protocols(fs: fsspec.AbstractFileSystem) -> tuple[str, ...]:
    p = fs.protocol
    return (p,) if isinstance(p, str) else tuple(p)
