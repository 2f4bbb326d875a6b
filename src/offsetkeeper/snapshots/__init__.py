"""Offset snapshots: take, store, compare and roll back the committed offsets of groups.

    model     Snapshot, GroupSnapshot, SnapshotSummary (JSON with a schema_version)
    store     SnapshotStore (a directory or fsspec URL, one file per snapshot), resolve_store_url
    capture   take_snapshot(admin, groups) — reads the cluster, changes nothing
    compare   diff(a, b), verify(admin, snapshot) -> list[OffsetDiff]
    rollback  rollback_target(snapshot) -> FromOffsets, check_cluster, plan_rollback
"""

from __future__ import annotations

from typing import Any

from offsetkeeper.snapshots.compare import Live, OffsetDiff, diff, diff_live, verify
from offsetkeeper.snapshots.model import (
    SCHEMA_VERSION,
    GroupSnapshot,
    Snapshot,
    SnapshotSummary,
    new_snapshot_id,
)
from offsetkeeper.snapshots.rollback import (
    check_cluster,
    cluster_mismatch,
    plan_rollback,
    rollback_groups,
    rollback_target,
)
from offsetkeeper.snapshots.store import SnapshotStore, default_store_url, resolve_store_url

__all__ = [
    "SCHEMA_VERSION",
    "GroupSnapshot",
    "Live",
    "OffsetDiff",
    "Snapshot",
    "SnapshotStore",
    "SnapshotSummary",
    "check_cluster",
    "cluster_mismatch",
    "default_store_url",
    "diff",
    "diff_live",
    "new_snapshot_id",
    "plan_rollback",
    "resolve_store_url",
    "rollback_groups",
    "rollback_target",
    "snapshot_and_save",
    "take_snapshot",
    "verify",
]


def __getattr__(name: str) -> Any:
    # capture talks to Kafka (imports confluent-kafka): load it only when asked for.
    if name in ("take_snapshot", "snapshot_and_save"):
        from offsetkeeper.snapshots import capture

        return getattr(capture, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
