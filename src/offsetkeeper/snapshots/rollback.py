"""Rollback = a reset to the offsets of a snapshot, through the one reset planner/executor."""

from __future__ import annotations

from typing import TYPE_CHECKING

from offsetkeeper.errors import UsageError
from offsetkeeper.kafka.ports import AdminPort, ClusterPort
from offsetkeeper.models import GroupType
from offsetkeeper.reset.targets import FromOffsets
from offsetkeeper.snapshots.model import Snapshot, servers

if TYPE_CHECKING:
    from offsetkeeper.reset.plan import ResetPlan


def rollback_target(snapshot: Snapshot) -> FromOffsets:
    """The reset target that puts every group of the snapshot back to its snapshot offsets.

    Only the partitions the snapshot holds are changed; groups without offsets are left out.
    Partitions the snapshot recorded as having NO committed offset (those a reset was about to
    commit to) get theirs deleted (OffsetDelete), so the group is exactly as before; each
    offset is committed with the commit metadata the snapshot recorded.
    """
    offsets = snapshot.offsets()
    deletes = snapshot.uncommitted()
    if not offsets and not deletes:
        raise UsageError(f"snapshot {snapshot.id} holds no committed offsets; nothing to roll back")
    # The commit metadata goes back too, exactly; one the snapshot could not read (null) is
    # left as the partition has it now.
    metadata = {g: {tp: c.metadata for tp, c in gs.offsets.items() if c.metadata is not None}
                for g, gs in snapshot.groups.items() if gs.offsets}
    return FromOffsets(offsets, source=f"snapshot {snapshot.id}", deletes=deletes,
                       metadata=metadata)


def rollback_groups(snapshot: Snapshot) -> tuple[str, ...]:
    """The groups a rollback of this snapshot changes (those with offsets in it, or with
    partitions it recorded as uncommitted), sorted."""
    return tuple(sorted({*snapshot.offsets(), *snapshot.uncommitted()}))


def rollback_group_type(snapshot: Snapshot) -> GroupType:
    """Whether the snapshot's groups hold committed offsets or share start offsets (a rollback
    restores one kind at a time; offsetkeeper's own snapshots never mix them)."""
    groups = rollback_groups(snapshot)
    types = {snapshot.groups[g].group_type for g in groups}
    if len(types) > 1:
        raise UsageError(f"snapshot {snapshot.id} holds both share groups and consumer groups; "
                         "roll them back from separate snapshots")
    return types.pop() if types else GroupType.CONSUMER


def cluster_mismatch(
    snapshot: Snapshot, live_cluster_id: str, live_bootstrap: str = "", *,
    allow_mismatch: bool = False,
) -> str | None:
    """Refuse to apply a snapshot to a cluster other than the one it was taken on (pure).

    - cluster ids differ, or either is unknown: UsageError, unless `allow_mismatch` (then a note);
    - same id but the bootstrap servers share no host:port: a warning note (some brokers give
      every cluster the same id, so the id alone cannot prove it is the same cluster);
    - otherwise None.
    """
    taken, live = snapshot.cluster_id, live_cluster_id
    if not taken or not live or taken != live:
        if not taken or not live:
            problem = (f"cannot tell whether snapshot {snapshot.id} was taken on this cluster "
                       f"(cluster id of the snapshot: {taken or 'unknown'}, "
                       f"of this cluster: {live or 'unknown'})")
        else:
            problem = f"snapshot {snapshot.id} was taken on cluster {taken} but this is cluster {live}"
        if not allow_mismatch:
            raise UsageError(f"{problem}; pass --allow-cluster-mismatch to apply it anyway")
        return f"{problem}; applying it because --allow-cluster-mismatch was given"
    taken_servers = servers(snapshot.bootstrap_servers)
    if live_bootstrap and taken_servers and not taken_servers & servers(live_bootstrap):
        return (f"warning: snapshot {snapshot.id} was taken through {snapshot.bootstrap_servers}, "
                f"this command talks to {live_bootstrap} (same cluster id {live})")
    return None


def check_cluster(admin: ClusterPort, snapshot: Snapshot, *, allow: bool = False) -> str | None:
    """`cluster_mismatch` against the cluster `admin` talks to (its id and bootstrap servers)."""
    return cluster_mismatch(snapshot, admin.cluster_id(), admin.bootstrap_servers,
                            allow_mismatch=allow)


def plan_rollback(
    admin: AdminPort, snapshot: Snapshot, *, allow_cluster_mismatch: bool = False
) -> tuple[ResetPlan, str | None]:
    """Check the cluster, then plan a reset of the snapshot's groups to its offsets (nothing is
    changed; execute the plan with `reset.apply.apply_plan`). Returns the plan and a note
    about the cluster id for the user, if any. A snapshot of share groups is planned through
    the admin's share view: the plan restores their start offsets, and deletes the start
    offsets of partitions the snapshot recorded without one."""
    from offsetkeeper.reset.facts import build_plan
    from offsetkeeper.reset.plan import ResetScope

    note = check_cluster(admin, snapshot, allow=allow_cluster_mismatch)
    target = rollback_target(snapshot)
    scope = ResetScope(groups=rollback_groups(snapshot), topics=(), all_topics=True)
    group_type = rollback_group_type(snapshot)
    if group_type is not GroupType.CONSUMER:
        admin = admin.for_group_type(group_type)
    return build_plan(admin, scope, target, label=f"rollback to {snapshot.id}"), note
