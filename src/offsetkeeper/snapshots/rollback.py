"""Rollback = a reset to the offsets of a snapshot, through the one reset planner/executor."""

from __future__ import annotations

from offsetkeeper.errors import UsageError
from offsetkeeper.reset.targets import FromOffsets
from offsetkeeper.snapshots.model import Snapshot


def rollback_target(snapshot: Snapshot) -> FromOffsets:
    """The reset target that puts every group of the snapshot back to its snapshot offsets.

    Only the partitions the snapshot holds are changed; groups without offsets are left out.
    """
    offsets = snapshot.offsets()
    if not offsets:
        raise UsageError(f"snapshot {snapshot.id} holds no committed offsets; nothing to roll back")
    return FromOffsets(offsets, source=f"snapshot {snapshot.id}")


def rollback_groups(snapshot: Snapshot) -> tuple[str, ...]:
    """The groups a rollback of this snapshot changes (those with offsets in it), sorted."""
    return tuple(snapshot.offsets())


def check_cluster(
    snapshot: Snapshot, live_cluster_id: str, *, allow_mismatch: bool = False
) -> str | None:
    """Refuse to apply a snapshot to a cluster other than the one it was taken on.

    Returns None when the ids match, a note to show the user when they differ but
    `allow_mismatch` is set (or an id is unknown), and raises UsageError otherwise.
    """
    taken, live = snapshot.cluster_id, live_cluster_id
    if taken and live and taken == live:
        return None
    if not taken or not live:
        return (f"cannot tell whether snapshot {snapshot.id} was taken on this cluster "
                f"(cluster id of the snapshot: {taken or 'unknown'}, "
                f"of this cluster: {live or 'unknown'})")
    if not allow_mismatch:
        raise UsageError(
            f"snapshot {snapshot.id} was taken on cluster {taken} but this is cluster {live}; "
            "pass --allow-cluster-mismatch to apply it to a different cluster")
    return (f"snapshot {snapshot.id} was taken on cluster {taken}; applying it to cluster "
            f"{live} because --allow-cluster-mismatch was given")
