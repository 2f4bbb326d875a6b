"""Backups and restores for the dashboard: read-only, no Spark, through ops.backup/ops.restore.

Lists manifests under the configured destinations, the restores of a backup with their status,
the offset-mapping summary of a restore (pyarrow reads of the mapping files), and the quick
validation (manifest consistency and every data file present). Only destinations from the
configuration are read: the browser names a destination by its index, never by a path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from offsetkeeper.errors import UsageError
from offsetkeeper.ops.itemerr import guarded
from offsetkeeper.redact import mask_url

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
def shown(url: str) -> str:
    """A destination as pages show it: a password in the URL replaced (`redact.mask_url`)."""
    return mask_url(url, known=url)


@dataclass(frozen=True)
class BackupLine:
    backup_id: str
    created_at: str = ""
    updated_at: str = ""
    source: str = ""
    topics: int = 0
    partitions: int = 0
    records: int = 0
    groups: int = 0
    runs: int = 0
    error: str | None = None  # the manifest cannot be read: why


@dataclass(frozen=True)
class RestoreLine:
    restore_id: str
    status: str
    target_cluster: str
    routes: int
    runs: int
    error: str | None


@dataclass(frozen=True)
class BackupDetail:
    line: BackupLine
    topics: list[dict[str, Any]]
    groups: list[dict[str, Any]]
    restores: list[RestoreLine]
    validation_ok: bool
    problems: list[str] = field(default_factory=list)
    files_checked: int = 0


def _line(m) -> BackupLine:
    return BackupLine(m.backup_id, m.created_at, m.updated_at, m.source.bootstrap_servers,
                      len(m.topics), sum(len(t.partitions) for t in m.topics), m.record_count,
                      len(m.groups), m.last_run)


def list_destination(dest: str) -> list[BackupLine]:
    """Every backup under one destination; one whose manifest cannot be read carries the error."""
    from offsetkeeper.ops.backup import list_backups

    return [_line(e.manifest) if e.manifest is not None else BackupLine(e.backup_id, error=e.error)
            for e in list_backups(dest)]


def _ref(dest: str, backup_id: str) -> str:
    return f"{dest.rstrip('/')}/{backup_id}"


def _restores(dest: str, backup_id: str) -> list[RestoreLine]:
    from offsetkeeper.ops.restore import list_restores

    return [RestoreLine(s.restore_id, str(s.status), s.target_cluster, len(s.routes), s.runs,
                        s.error) for s in list_restores(_ref(dest, backup_id))]


def backup_detail(dest: str, backup_id: str) -> BackupDetail:
    """Manifest summary, group offsets, restores and the quick validation of one backup."""
    from offsetkeeper.ops.backup import describe_backup, validate_backup

    m = describe_backup(dest, backup_id)
    topics = [{"topic": t.name, "partition": p.partition, "start_offset": p.start_offset,
               "end_offset": p.end_offset, "records": p.record_count,
               "gaps": len(p.gaps)} for t in m.topics for p in t.partitions]
    groups = [{"group": g.group, "topic": o.topic, "partition": o.partition, "offset": o.offset}
              for g in m.groups for o in g.offsets]
    report = validate_backup(dest, backup_id, deep=False)
    return BackupDetail(_line(m), topics, groups, _restores(dest, backup_id), report.ok,
                        [str(p) for p in report.problems], report.files_checked)


def mapping_summary(dest: str, backup_id: str, restore_id: str) -> tuple[str, list[dict]]:
    """The restore's status and, per source partition, first/last source and target offsets."""
    from offsetkeeper.ops.restore import mapping_summary as _summary

    if not _ID.fullmatch(restore_id):
        # Ids name files inside the backup: nothing like ../ may reach the path.
        raise UsageError(f"restore id '{restore_id}' is invalid: use letters, digits, '.', '_', '-'")
    ms = _summary(_ref(dest, backup_id), restore_id)
    return ms.status, ms.partitions


def destination(dests: list[str], index: str) -> str:
    """The configured destination at `index` (the browser never sends a path)."""
    if not index.isdigit() or int(index) >= len(dests):
        raise UsageError(f"backup destination #{index} is not configured")
    return dests[int(index)]


def safe_list(dests: list[str]) -> list[tuple[int, str, list[BackupLine], str | None]]:
    """Per destination: its backups, or the one-line error that kept us from reading it."""
    out = []
    for i, d in enumerate(dests):
        # Anything (an s3:// destination without s3fs, a corrupt manifest) is this
        # destination's error line, never a failed page.
        lines, err = guarded(lambda d=d: list_destination(d), [],
                             what=f"backup destination {shown(d)}", known=d)
        out.append((i, shown(d), lines, err))
    return out
