"""Snapshot operations: take, list, show, compare (with each other or the live cluster),
verify, delete (rollback is in ops.reset).

The command line and the library/dashboard get the same behaviour from here:

- a named group the cluster does not know is refused (UnknownGroupError with a suggestion),
  never saved as an empty snapshot (a typo must not look like a backup);
- ``latest`` compared with a live cluster is the newest snapshot *of that cluster* (never an
  automatic pre-rollback snapshot), as in `snapshots rollback latest`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from offsetkeeper.errors import UsageError
from offsetkeeper.kafka.ports import AdminPort
from offsetkeeper.ops.reset import snapshot_store_url

if TYPE_CHECKING:
    from offsetkeeper.snapshots.compare import OffsetDiff
    from offsetkeeper.snapshots.model import Snapshot, SnapshotSummary
    from offsetkeeper.snapshots.store import SnapshotStore

__all__ = ["CreateSnapshotRequest", "LiveDiff", "SavedSnapshot",
           "SnapshotDiff", "SnapshotListing", "compare_snapshots", "compare_with_live",
           "create_snapshot", "delete_snapshot", "diff_with_live", "list_snapshots",
           "load_snapshot", "open_snapshot_store", "save_snapshot", "snapshot_listing"]


def open_snapshot_store(store: str | None = None, config_path: Path | None = None) -> SnapshotStore:
    """The SnapshotStore chosen by the flag, $OFFSETKEEPER_SNAPSHOT_STORE, the config, or the
    default directory."""
    from offsetkeeper.snapshots.store import SnapshotStore

    return SnapshotStore(snapshot_store_url(store, config_path))


# -- create ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class CreateSnapshotRequest:
    """`snapshots create`: the groups (None = every group of the cluster) and where to keep it."""

    groups: tuple[str, ...] | None
    description: str = ""
    store: str | None = None
    config_path: Path | None = None


@dataclass(frozen=True)
class SavedSnapshot:
    snapshot: Snapshot
    path: str  # where it was written, as a user would type it

    @property
    def empty_groups(self) -> list[tuple[str, str]]:
        """(group, state) of the groups recorded without committed offsets."""
        return [(g, gs.state) for g, gs in sorted(self.snapshot.groups.items()) if not gs.offsets]


def save_snapshot(admin: AdminPort, req: CreateSnapshotRequest) -> SavedSnapshot:
    """Read the groups' committed offsets (and their partitions' log start/end, the cluster id)
    and save them. A named group the cluster does not know is an UnknownGroupError and nothing
    is saved."""
    from offsetkeeper.snapshots.capture import snapshot_and_save

    if req.groups is not None and not req.groups:
        raise UsageError("no group given: name the groups to snapshot (or None for every group)")
    st = open_snapshot_store(req.store, req.config_path)
    snap = snapshot_and_save(admin, None if req.groups is None else list(req.groups), st,
                             description=req.description, must_exist=True)
    return SavedSnapshot(snap, st.display(st.path(snap.id)))


def create_snapshot(admin: AdminPort, groups: Sequence[str] | None, *, description: str = "",
                    store: str | None = None, config_path: Path | None = None) -> str:
    """Snapshot the committed offsets of `groups` (None = every group); returns the id. A named
    group the cluster does not know is refused (UnknownGroupError), as `snapshots create` does."""
    req = CreateSnapshotRequest(None if groups is None else tuple(groups), description, store,
                                config_path)
    return save_snapshot(admin, req).snapshot.id


# -- read -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SnapshotListing:
    store: str  # the store's URL, credentials masked
    snapshots: list[SnapshotSummary]


def snapshot_listing(*, store: str | None = None, config_path: Path | None = None
                     ) -> SnapshotListing:
    """The store and a summary of every snapshot in it, oldest first."""
    st = open_snapshot_store(store, config_path)
    return SnapshotListing(st.display_url, st.list())


def list_snapshots(*, store: str | None = None, config_path: Path | None = None):
    """Summaries of every snapshot in the store, oldest first."""
    return snapshot_listing(store=store, config_path=config_path).snapshots


def load_snapshot(snapshot_id: str, *, store: str | None = None,
                  config_path: Path | None = None) -> Snapshot:
    """One snapshot (``latest``: the newest that is not a pre-rollback snapshot, any cluster)."""
    return open_snapshot_store(store, config_path).load(snapshot_id)


def delete_snapshot(snapshot_id: str, *, store: str | None = None,
                    config_path: Path | None = None) -> str:
    """Delete one stored snapshot (the cluster is not touched); returns the file removed."""
    return open_snapshot_store(store, config_path).delete(snapshot_id)


# -- compare --------------------------------------------------------------------------------
class _Diffs:
    diffs: list[OffsetDiff]

    @property
    def columns(self) -> list[str]:
        """The columns of `rows()`: group, topic, partition, before, after, delta, change."""
        from offsetkeeper.snapshots.compare import DIFF_COLUMNS

        return DIFF_COLUMNS

    def rows(self) -> list[dict]:
        return [d.as_row() for d in self.diffs]


@dataclass(frozen=True)
class SnapshotDiff(_Diffs):
    """Two snapshots' differing committed offsets (BEFORE = first, AFTER = second)."""

    before: Snapshot
    after: Snapshot
    diffs: list[OffsetDiff]

    @property
    def notes(self) -> tuple[str, ...]:
        a, b = self.before, self.after
        if a.cluster_id != b.cluster_id:
            return (f"the snapshots were taken on different clusters "
                    f"({a.cluster_id or '?'} and {b.cluster_id or '?'})",)
        return ()


def compare_snapshots(first: str, second: str, *, store: str | None = None,
                      config_path: Path | None = None) -> SnapshotDiff:
    """The committed offsets that differ from snapshot `first` to snapshot `second`."""
    from offsetkeeper.snapshots.compare import diff

    st = open_snapshot_store(store, config_path)
    a = st.load(first)
    b = st.load(second)
    return SnapshotDiff(a, b, diff(a, b))


@dataclass(frozen=True)
class LiveDiff(_Diffs):
    """A snapshot against the live committed offsets of its groups (BEFORE = snapshot)."""

    snapshot: Snapshot
    diffs: list[OffsetDiff]
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when every live offset equals the snapshot's (`snapshots verify`)."""
        return not self.diffs


def compare_with_live(admin: AdminPort, snapshot_id: str, *, store: str | None = None,
                      config_path: Path | None = None) -> LiveDiff:
    """Per partition, the snapshot's offset against the live committed offset. ``latest`` is
    the newest snapshot of the cluster `admin` talks to; a snapshot of another cluster is
    compared all the same, with a note saying so."""
    from offsetkeeper.snapshots.compare import diff_live
    from offsetkeeper.snapshots.model import same_cluster

    st = open_snapshot_store(store, config_path)
    live_id, servers = admin.cluster_id(), admin.bootstrap_servers
    snap = st.load(snapshot_id, cluster=(live_id, servers))
    notes = () if same_cluster(snap, live_id, servers) else (
        f"snapshot {snap.id} was taken on cluster {snap.cluster_id or '?'} "
        f"({snap.bootstrap_servers}); this is cluster {live_id or '?'} ({servers})",)
    return LiveDiff(snap, diff_live(admin, snap), notes)


def diff_with_live(admin: AdminPort, snapshot_id: str, *, store: str | None = None,
                   config_path: Path | None = None) -> list[OffsetDiff]:
    """The differences of `compare_with_live` (``latest``: the newest snapshot of this
    cluster)."""
    return compare_with_live(admin, snapshot_id, store=store, config_path=config_path).diffs
