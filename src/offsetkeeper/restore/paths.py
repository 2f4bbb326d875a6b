"""Where a restore keeps its files inside a backup (local paths or fsspec URLs).

    DEST/BACKUP_ID/mappings/RESTORE_ID/TOPIC/PARTITION/chunk-<first source offset>.parquet
    DEST/BACKUP_ID/restores/RESTORE_ID.json
"""

from __future__ import annotations

from offsetkeeper.errors import StoreError
from offsetkeeper.storage import join, open_fs, write_bytes_atomic

__all__ = ["backup_root", "join", "mappings_root", "open_fs", "state_path", "write_bytes_atomic"]


def backup_root(destination: str, backup_id: str) -> str:
    if not backup_id or "/" in backup_id:
        raise StoreError(f"backup id '{backup_id}' is not valid (expected a name without '/')")
    return join(destination, backup_id)


def mappings_root(destination: str, backup_id: str, restore_id: str) -> str:
    return join(backup_root(destination, backup_id), "mappings", restore_id)


def state_path(destination: str, backup_id: str, restore_id: str) -> str:
    return join(backup_root(destination, backup_id), "restores", f"{restore_id}.json")
