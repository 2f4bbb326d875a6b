"""Where a restore keeps its files inside a backup (local paths or fsspec URLs).

    DEST/BACKUP_ID/mappings/RESTORE_ID/TOPIC/PARTITION/chunk-<first source offset>.parquet
    DEST/BACKUP_ID/restores/RESTORE_ID.json
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from offsetkeeper.errors import StoreError


def open_fs(url: str) -> tuple[Any, str]:
    """(fsspec filesystem, path within it) for a local path or URL."""
    from fsspec.core import url_to_fs

    return url_to_fs(url)


def join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *parts])


def backup_root(destination: str, backup_id: str) -> str:
    if not backup_id or "/" in backup_id:
        raise StoreError(f"backup id '{backup_id}' is not valid (expected a name without '/')")
    return join(destination, backup_id)


def mappings_root(destination: str, backup_id: str, restore_id: str) -> str:
    return join(backup_root(destination, backup_id), "mappings", restore_id)


def state_path(destination: str, backup_id: str, restore_id: str) -> str:
    return join(backup_root(destination, backup_id), "restores", f"{restore_id}.json")


def write_bytes_atomic(url: str, data: bytes) -> None:
    """Write `data` to `url` so readers see either nothing or the whole file (tmp + rename)."""
    fs, path = open_fs(url)
    parent = path.rsplit("/", 1)[0]
    fs.makedirs(parent, exist_ok=True)
    tmp = join(parent, f".tmp-{uuid.uuid4().hex}")
    with fs.open(tmp, "wb") as f:
        f.write(data)
    if type(fs).__name__ == "LocalFileSystem":
        os.replace(tmp, path)
    else:
        fs.mv(tmp, path)
