"""Explicit-offset reset targets read from elsewhere: CSV files, snapshots, restore mappings."""

from __future__ import annotations

from pathlib import Path

from offsetkeeper.config import load_config_file
from offsetkeeper.errors import UsageError
from offsetkeeper.reset.parse import decode_utf8, parse_offsets_csv
from offsetkeeper.reset.targets import FromOffsets


def from_file(path: str | Path) -> FromOffsets:
    """Offsets from a --from-file CSV (both forms; see parse_offsets_csv)."""
    p = Path(path).expanduser()
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise UsageError(f"--from-file {p} cannot be read: {exc.strerror or exc}") from None
    return parse_offsets_csv(decode_utf8(data, source=str(p)), source=str(p))


def snapshot_store_url(cli_value: str | None, config_path) -> str:
    """The snapshot store: the flag, $OFFSETKEEPER_SNAPSHOT_STORE, the config, else the default."""
    from offsetkeeper.snapshots.store import resolve_store_url

    return resolve_store_url(cli_value, load_config_file(config_path))


def _load_snapshot(snapshot_id: str, store: str | None, config_path):
    from offsetkeeper.snapshots.store import SnapshotStore

    return SnapshotStore(snapshot_store_url(store, config_path)).load(snapshot_id)


def from_snapshot(snapshot_id: str, *, store: str | None = None, config=None) -> FromOffsets:
    """Offsets recorded in a snapshot (rollback)."""
    from offsetkeeper.snapshots.rollback import rollback_target

    return rollback_target(_load_snapshot(snapshot_id, store, config))


def snapshot_target(admin, ref: str, store: str | None, config, *,
                    allow: bool) -> tuple[FromOffsets, str | None]:
    """The rollback target of a snapshot for the cluster `admin` talks to: `latest` means the
    newest snapshot of that cluster (never an automatic pre-rollback one); a snapshot of
    another cluster is refused unless `allow`. Returns the target and a note for the user."""
    from offsetkeeper.snapshots.rollback import check_cluster, rollback_target
    from offsetkeeper.snapshots.store import SnapshotStore

    snap = SnapshotStore(snapshot_store_url(store, config)).load(
        ref, cluster=(admin.cluster_id(), admin.conn.bootstrap_servers))
    return rollback_target(snap), check_cluster(admin, snap, allow=allow)


def check_snapshot_cluster(admin, snapshot_id: str, store: str | None, config, *, allow: bool) -> str | None:
    """Refuse to roll a snapshot of one cluster onto another unless explicitly allowed; returns
    a note for the user when it is allowed."""
    from offsetkeeper.snapshots.rollback import check_cluster

    return check_cluster(admin, _load_snapshot(snapshot_id, store, config), allow=allow)


def parse_mapping_ref(ref: str) -> tuple[str, str, str | None]:
    """`DEST/BACKUP_ID[:RESTORE_ID]` -> (destination, backup_id, restore_id or None)."""
    base, sep, tail = ref.rpartition(":")
    if sep and tail and "/" not in tail:
        ref, restore_id = base, tail
    else:
        restore_id = None
    ref = ref.rstrip("/")
    dest, _, backup_id = ref.rpartition("/")
    if not backup_id or not dest:
        raise UsageError(f"--from-mapping '{ref}' must be BACKUP_DIR[:RESTORE_ID], "
                         "e.g. /backups/nightly-1:restore-1")
    return dest, backup_id, restore_id


def from_mapping(ref: str, groups: list[str] | None = None) -> FromOffsets:
    """Group offsets captured in a backup, translated through a restore's offset mapping."""
    from offsetkeeper.restore.translate import offsets_from_mapping

    dest, backup_id, restore_id = parse_mapping_ref(ref)
    return offsets_from_mapping(dest, backup_id, restore_id, groups)
