"""Where a restore keeps its files inside a backup (local paths or fsspec URLs).

    DEST/BACKUP_ID/mappings/RESTORE_ID/TOPIC/PARTITION/chunk-<first source offset>.parquet
    DEST/BACKUP_ID/restores/RESTORE_ID.json
"""

from __future__ import annotations

import re

from offsetkeeper.errors import UsageError
from offsetkeeper.storage import join, open_fs, write_bytes_atomic

__all__ = ["RESTORE_ID_RE", "backup_root", "join", "mappings_root", "open_fs", "state_path",
           "validate_restore_id", "write_bytes_atomic"]

RESTORE_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


def validate_restore_id(restore_id: str, *, flag: str = "restore id") -> str:
    """A restore id names files inside the backup: letters, digits, '.', '_', '-' only (so
    `../../x` cannot leave the backup)."""
    if not RESTORE_ID_RE.fullmatch(restore_id or ""):
        raise UsageError(f"{flag} '{restore_id}' is invalid: use letters, digits, '.', '_' and '-' "
                         "(starting with a letter or digit)")
    return restore_id


def backup_root(destination: str, backup_id: str) -> str:
    """DEST/BACKUP_ID; the id is checked (no '/', no '..'), so paths stay inside DEST."""
    from offsetkeeper.backup.manifest import validate_backup_id

    validate_backup_id(backup_id)
    return join(destination, backup_id)


def mappings_root(destination: str, backup_id: str, restore_id: str) -> str:
    return join(backup_root(destination, backup_id), "mappings", validate_restore_id(restore_id))


def state_path(destination: str, backup_id: str, restore_id: str) -> str:
    return join(backup_root(destination, backup_id), "restores", f"{validate_restore_id(restore_id)}.json")
