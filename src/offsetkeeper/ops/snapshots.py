"""Snapshot operations: take, list, load, compare with live offsets (rollback is in ops.reset)."""

from __future__ import annotations

from pathlib import Path

from offsetkeeper.ops.reset import snapshot_store_url


def open_snapshot_store(store: str | None = None, config_path: Path | None = None):
    """The SnapshotStore chosen by the flag, $OFFSETKEEPER_SNAPSHOT_STORE, the config, or the
    default directory."""
    from offsetkeeper.snapshots.store import SnapshotStore

    return SnapshotStore(snapshot_store_url(store, config_path))


def create_snapshot(admin, groups: list[str] | None, *, description: str = "",
                    store: str | None = None, config_path: Path | None = None) -> str:
    """Snapshot the committed offsets of `groups` (None = every group); returns the id."""
    from offsetkeeper.snapshots.capture import take_snapshot

    st = open_snapshot_store(store, config_path)
    return st.save(take_snapshot(admin, groups, description=description))


def list_snapshots(*, store: str | None = None, config_path: Path | None = None):
    """Summaries of every snapshot in the store, oldest first."""
    return open_snapshot_store(store, config_path).list()


def diff_with_live(admin, snapshot_id: str, *, store: str | None = None,
                   config_path: Path | None = None):
    """Per partition, the snapshot's offset against the live committed offset."""
    from offsetkeeper.snapshots.compare import diff_live

    st = open_snapshot_store(store, config_path)
    return diff_live(admin, st.load(snapshot_id))
