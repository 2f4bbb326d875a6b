"""Rollback = a reset to the offsets of a snapshot, through the one reset planner/executor."""

from __future__ import annotations

from typing import TYPE_CHECKING

from offsetkeeper.errors import UsageError
from offsetkeeper.reset.targets import FromOffsets
from offsetkeeper.snapshots.model import Snapshot

if TYPE_CHECKING:
    from offsetkeeper.kafka.admin import KafkaAdmin
    from offsetkeeper.reset.plan import ResetPlan


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


def cluster_mismatch(
    snapshot: Snapshot, live_cluster_id: str, *, allow_mismatch: bool = False
) -> str | None:
    """Refuse to apply a snapshot to a cluster other than the one it was taken on (pure).

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


def check_cluster(admin: KafkaAdmin, snapshot: Snapshot, *, allow: bool = False) -> str | None:
    """`cluster_mismatch` against the cluster `admin` talks to (reads its cluster id)."""
    return cluster_mismatch(snapshot, admin.cluster_id(), allow_mismatch=allow)


def plan_rollback(
    admin: KafkaAdmin, snapshot: Snapshot, *, allow_cluster_mismatch: bool = False
) -> tuple[ResetPlan, str | None]:
    """Check the cluster, then plan a reset of the snapshot's groups to its offsets (nothing is
    changed; execute the plan with `reset.apply.apply_plan`). Returns the plan and a note
    about the cluster id for the user, if any."""
    from offsetkeeper.reset.facts import build_plan
    from offsetkeeper.reset.plan import ResetScope

    note = check_cluster(admin, snapshot, allow=allow_cluster_mismatch)
    target = rollback_target(snapshot)
    scope = ResetScope(groups=rollback_groups(snapshot), topics=(), all_topics=True)
    return build_plan(admin, scope, target, label=f"rollback to {snapshot.id}"), note
