"""Pruning the class-data-sharing archives (JDK AppCDS) in the user cache: the admin helper's
(kafka/jvm.py) and Spark's (spark/cds.py).

An archive's name is keyed by the installation it belongs to (Java, jars, their paths), so each
virtualenv, worktree or upgrade makes a new one (0.2–13 MB for the helper, 110–200 MB for Spark),
and nothing removed the old ones: 41 helper archives and 11 Spark archives or unfinished dumps
(1.9 GB) piled up here in one day. Each user of an archive touches it when it maps it (its mtime
is its last use), and whoever starts creating a new one prunes the others:

- an archive used within KEEP_RECENT_S stays (installations in use side by side never delete
  each other's), and so do the KEEP_OTHERS most recently used others if used within
  KEEP_IDLE_MAX_S (two used in turn do not rebuild each other's); the rest is deleted;
- unfinished builds (temporary files, markers) older than `stale_s` are deleted: their writer
  is gone (a build writes its file within seconds of its JVM's exit).

Safe while other processes use the directory: every step is one unlink that may find the file
gone already; a JVM that mapped an archive keeps it when the file is unlinked; one about to map
a deleted archive starts without it (-Xshare:auto, silently) and its next start builds it anew;
an archive appears under its final name only when complete (a rename), so no reader ever sees
half of one.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

KEEP_RECENT_S = 3600.0
KEEP_OTHERS = 2
KEEP_IDLE_MAX_S = 14 * 86400.0


def _unlink(path: Path) -> bool:
    try:
        path.unlink()
        return True
    except OSError:  # gone already (another process pruned it), or not ours to delete
        return False


def prune(directory: Path, *, archives: str, unfinished: Sequence[str], keep: Path,
          stale_s: float, now: float | None = None) -> list[Path]:
    """Delete the archives matching `archives` (a glob in `directory`) other than `keep` that
    are neither used recently nor among the most recently used, and the files matching the
    `unfinished` globs older than `stale_s`. `keep`'s own files (its name stem followed by a
    dot: its temporary file, its marker) are left to their builder. Returns what was deleted."""
    now = time.time() if now is None else now
    own = f"{keep.stem}."
    found: list[tuple[float, Path]] = []
    for path in directory.glob(archives):
        if path == keep or path.name.startswith(own):
            continue
        try:
            found.append((path.stat().st_mtime, path))
        except OSError:
            continue
    found.sort(reverse=True)
    removed = [p for i, (used, p) in enumerate(found)
               if now - used >= KEEP_RECENT_S
               and (i >= KEEP_OTHERS or now - used >= KEEP_IDLE_MAX_S) and _unlink(p)]
    for pattern in unfinished:
        for path in directory.glob(pattern):
            if path.name.startswith(own):
                continue
            try:
                stale = now - path.stat().st_mtime > stale_s
            except OSError:
                continue
            if stale and _unlink(path):
                removed.append(path)
    return removed


def touch_in_use(archive: Path, *, every_s: float = 600.0) -> None:
    """Mark `archive` as used now (its mtime), at most every `every_s` seconds: what `prune`
    reads as its last use. The JVM checks an archive by its header and class path, not by the
    file's times."""
    try:
        if time.time() - archive.stat().st_mtime > every_s:
            os.utime(archive)
    except OSError:
        pass
