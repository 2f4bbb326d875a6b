"""What a restore needs to know about a backup, read from its manifest.

The backup side owns the manifest format (`offsetkeeper.backup.manifest`); this module turns
whatever `load_manifest` returns into a small frozen view, so restore code does not depend on
the manifest's field layout. Without the backup package (or for raw manifest.json files) it
reads the JSON itself, following docs/design.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from offsetkeeper.errors import StoreError
from offsetkeeper.models import TopicPartition
from offsetkeeper.restore.paths import backup_root, join, open_fs


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
    manifest: Any = None  # the backup package's Manifest object, when it was used


def _get(obj: Any, *names: str, default: Any = None) -> Any:
    for n in names:
        if isinstance(obj, Mapping):
            if n in obj:
                return obj[n]
        elif hasattr(obj, n):
            return getattr(obj, n)
    return default


def _items(obj: Any) -> list[tuple[Any, Any]]:
    if obj is None:
        return []
    if isinstance(obj, Mapping):
        return list(obj.items())
    return [(None, x) for x in obj]


def _to_dict(obj: Any) -> Any:
    """Dataclass / pydantic objects to plain dicts (recursively), so one parser serves both."""
    if hasattr(obj, "model_dump"):
        return obj.model_dump()
    import dataclasses

    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    return obj


def _tp_key(key: Any, item: Any, topic: str | None = None) -> TopicPartition:
    if isinstance(key, TopicPartition):
        return key
    t = _get(item, "topic", default=topic)
    p = _get(item, "partition", default=key)
    if isinstance(key, str) and ":" in key and t is None:
        t, p = key.rsplit(":", 1)
    return TopicPartition(str(t), int(p))


def view_from_manifest(destination: str, backup_id: str, manifest: Any) -> BackupView:
    """Build a BackupView from a manifest object or its JSON dict."""
    m = _to_dict(manifest)
    topics: dict[str, TopicMeta] = {}
    parts: dict[TopicPartition, PartitionMeta] = {}
    for tkey, t in _items(_get(m, "topics", default={})):
        name = str(_get(t, "name", "topic", default=tkey))
        pinfo = _get(t, "partitions", default={})
        count = _get(t, "partition_count", "num_partitions", default=None)
        if count is None:
            count = pinfo if isinstance(pinfo, int) else len(_items(pinfo))
        configs = {str(k): str(v) for k, v in (_get(t, "configs", "config", default={}) or {}).items()}
        topics[name] = TopicMeta(int(count), configs)
        if isinstance(pinfo, int):
            continue
        for pkey, p in _items(pinfo):
            tp = _tp_key(pkey, p, name)
            parts[tp] = PartitionMeta(
                start_offset=int(_get(p, "start_offset", default=0) or 0),
                end_offset=int(_get(p, "end_offset", default=0) or 0),
                record_count=int(_get(p, "record_count", "records", default=0) or 0),
                checksum=_get(p, "checksum"),
            )
    for pkey, p in _items(_get(m, "partitions", default=None)):
        tp = _tp_key(pkey, p)
        parts.setdefault(tp, PartitionMeta(int(_get(p, "start_offset", default=0) or 0),
                                           int(_get(p, "end_offset", default=0) or 0),
                                           int(_get(p, "record_count", default=0) or 0),
                                           _get(p, "checksum")))
    groups: dict[str, dict[TopicPartition, int]] = {}
    for gkey, g in _items(_get(m, "groups", "group_offsets", "consumer_groups", default={})):
        gname = str(_get(g, "group", "group_id", default=gkey)) if not isinstance(g, int) else gkey
        offs = _get(g, "offsets", default=g) if not isinstance(g, (int, list)) else g
        out: dict[TopicPartition, int] = {}
        if isinstance(offs, list):  # [{topic, partition, offset}, ...]
            for o in offs:
                out[TopicPartition(str(_get(o, "topic")), int(_get(o, "partition")))] = int(
                    _get(_get(o, "offset"), "offset", default=_get(o, "offset")))
        else:
            for k, v in _items(offs):
                if isinstance(v, Mapping) and "offset" not in v:  # {topic: {partition: offset}}
                    for pk, pv in v.items():
                        out[TopicPartition(str(k), int(pk))] = int(_get(pv, "offset", default=pv))
                else:
                    out[_tp_key(k, v)] = int(_get(v, "offset", default=v))
        groups[gname] = out
    return BackupView(destination, backup_id, topics, parts, groups, manifest)


def load_backup_view(destination: str, backup_id: str) -> BackupView:
    """Read the manifest of backup `backup_id` under `destination`."""
    try:
        from offsetkeeper.backup.manifest import load_manifest  # the backup side (issue 4)
    except ImportError:
        load_manifest = None
    if load_manifest is not None:
        return view_from_manifest(destination, backup_id, load_manifest(destination, backup_id))
    fs, root = open_fs(backup_root(destination, backup_id))
    path = join(root, "manifest.json")
    if not fs.exists(path):
        raise StoreError(f"backup '{backup_id}' has no manifest at {path} (incomplete or wrong id)")
    try:
        with fs.open(path, "rb") as f:
            raw = json.loads(f.read())
    except (OSError, ValueError) as exc:
        raise StoreError(f"manifest {path} cannot be read: {exc}") from exc
    return view_from_manifest(destination, backup_id, raw)
