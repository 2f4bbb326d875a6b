"""What a restore needs to know about a backup, read from its manifest (backup/manifest.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from offsetkeeper.models import TopicPartition


@dataclass(frozen=True)
class PartitionMeta:
    """One backed-up partition: offsets [start_offset, end_offset) and what was stored."""

    start_offset: int
    end_offset: int
    record_count: int
    checksum: str | None = None


@dataclass(frozen=True)
class TopicMeta:
    partition_count: int
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class BackupView:
    destination: str
    backup_id: str
    topics: Mapping[str, TopicMeta]
    partitions: Mapping[TopicPartition, PartitionMeta]
    groups: Mapping[str, Mapping[TopicPartition, int]]
    manifest: Any = None  # offsetkeeper.backup.manifest.Manifest


def view_from_manifest(destination: str, backup_id: str, m: Any) -> BackupView:
    """Build a BackupView from a `Manifest`."""
    topics = {t.name: TopicMeta(t.partition_count, dict(t.configs)) for t in m.topics}
    parts = {TopicPartition(t.name, p.partition): PartitionMeta(p.start_offset, p.end_offset,
                                                                 p.record_count, p.checksum)
             for t in m.topics for p in t.partitions}
    groups = {g.group: {TopicPartition(o.topic, o.partition): o.offset for o in g.offsets}
              for g in m.groups}
    return BackupView(destination, backup_id, topics, parts, groups, m)


def load_backup_view(destination: str, backup_id: str) -> BackupView:
    """Read the manifest of backup `backup_id` under `destination` (StoreError if missing)."""
    from offsetkeeper.backup.manifest import load_manifest

    return view_from_manifest(destination, backup_id, load_manifest(destination, backup_id))
