"""Where a restore keeps its files inside a backup (local paths or fsspec URLs).

    DEST/BACKUP_ID/mappings/RESTORE_ID/TOPIC/PARTITION/chunk-<first source offset>.parquet
    DEST/BACKUP_ID/restores/RESTORE_ID.json
"""

from __future__ import annotations

from offsetkeeper.storage import join, open_fs, write_bytes_atomic

__all__ = ["backup_root", "join", "mappings_root", "open_fs", "state_path", "write_bytes_atomic"]


def backup_root(destination: str, backup_id: str) -> str:
    """DEST/BACKUP_ID; the id is checked (no '/', no '..'), so paths stay inside DEST."""
    from offsetkeeper.backup.manifest import validate_backup_id

    validate_backup_id(backup_id)
    return join(destination, backup_id)


def mappings_root(destination: str, backup_id: str, restore_id: str) -> str:
    from offsetkeeper.restore.state import validate_restore_id

    return join(backup_root(destination, backup_id), "mappings", validate_restore_id(restore_id))


def state_path(destination: str, backup_id: str, restore_id: str) -> str:
    from offsetkeeper.restore.state import validate_restore_id

    return join(backup_root(destination, backup_id), "restores", f"{validate_restore_id(restore_id)}.json")
