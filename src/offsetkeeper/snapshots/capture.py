"""Taking snapshots from a live cluster (reads only; nothing is changed)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime

from offsetkeeper.kafka.errors import unknown_group
from offsetkeeper.kafka.ports import AdminPort, GroupsPort, unwrap_each
from offsetkeeper.models import GroupType, TopicPartition, check_names
from offsetkeeper.snapshots.model import GroupSnapshot, Snapshot, format_time, new_snapshot_id
from offsetkeeper.snapshots.store import SnapshotStore


def _group_ids(admin: GroupsPort, groups: Iterable[str] | None) -> list[str]:
    if groups is None:
        return [g.group_id for g in admin.list_groups()]
    return list(dict.fromkeys(groups))


def live_groups(admin: AdminPort, groups: Iterable[str], *,
                reads: tuple[Mapping, Mapping] | None = None) -> dict[str, GroupSnapshot]:
    """State and committed offsets (with metadata) of each group, as the cluster has them now.
    `reads`: (describe answers, committed offsets) of these groups the caller has just read."""
    ids = list(dict.fromkeys(groups))
    if not ids:
        return {}
    if reads is not None and all(g in reads[0] and g in reads[1] for g in ids):
        infos = unwrap_each({g: reads[0][g] for g in ids})
        committed = unwrap_each({g: reads[1][g] for g in ids})
    else:
        infos = admin.describe_groups(ids)
        # the describe just made is the coordinator check the offset read needs: not made twice
        committed = unwrap_each(admin.committed_offsets_each(ids, described=infos))
    # through the share view (`KafkaAdmin.for_group_type`): share groups' start offsets
    group_type = GroupType(admin.group_type)
    return {
        g: GroupSnapshot(state=infos[g].state if g in infos else "unknown",
                         offsets=dict(sorted(committed.get(g, {}).items())),
                         group_type=group_type)
        for g in ids
    }


def take_snapshot(
    admin: AdminPort, groups: list[str] | None, *, description: str = "",
    must_exist: bool = False, uncommitted: Mapping[str, Iterable[TopicPartition]] | None = None,
    reads: tuple[Mapping, Mapping] | None = None,
) -> Snapshot:
    """Read the committed offsets of `groups` (None = every group of the cluster), the log
    start/end of every partition of the topics they have offsets for, and the cluster id.

    Groups without committed offsets are recorded with an empty offset map; with `must_exist`
    a named group the cluster does not know (dead, no offsets) is an UnknownGroupError (a
    typo must not be saved as an empty snapshot). `uncommitted`: per group, the partitions a
    change is about to commit to; those without a committed offset now are recorded as such,
    so a rollback deletes what the change commits there. `reads`: the groups' describe answers
    and committed offsets as the caller has just read them (the reset executor), not read again.
    """
    when = datetime.now(UTC)
    if groups is not None:
        check_names(groups)
    ids = _group_ids(admin, groups)
    state = live_groups(admin, ids, reads=reads)
    for g, tps in (uncommitted or {}).items():
        if g in state:
            none = frozenset(tp for tp in tps if tp not in state[g].offsets)
            if none:
                state[g] = replace(state[g], uncommitted=none)
    if must_exist and groups is not None:
        for g, gs in state.items():
            if gs.state in ("dead", "unknown") and not gs.offsets:
                raise unknown_group(admin, g)
    topics = sorted({tp.topic for gs in state.values() for tp in gs.offsets})
    existing = admin.topic_partitions(None) if topics else {}
    tps = {TopicPartition(t, p) for t in topics for p in existing.get(t, [])}
    # A partition a group committed to that no longer exists still gets no watermarks.
    watermarks = admin.watermarks(tps) if tps else {}
    return Snapshot(
        id=new_snapshot_id(when),
        created_at=format_time(when),
        cluster_id=admin.cluster_id(),
        bootstrap_servers=admin.bootstrap_servers,
        description=description,
        groups=state,
        partitions=dict(sorted(watermarks.items())),
    )


def snapshot_and_save(
    admin: AdminPort,
    groups: list[str] | None,
    store: SnapshotStore | str | None = None,
    *,
    description: str = "",
    must_exist: bool = False,
    uncommitted: Mapping[str, Iterable[TopicPartition]] | None = None,
) -> Snapshot:
    """`take_snapshot` then save it to `store` (a SnapshotStore, a URL, or None = default)."""
    snap = take_snapshot(admin, groups, description=description, must_exist=must_exist,
                         uncommitted=uncommitted)
    (store if isinstance(store, SnapshotStore) else SnapshotStore(store)).save(snap)
    return snap


def snapshot_fn(store_url: str | None):
    """A `snapshot_fn` for the reset executor (`ApplyOptions.snapshot_fn`): snapshot the groups
    about to change into the store at `store_url` and return the snapshot id."""
    from offsetkeeper.snapshots.store import SnapshotStore

    def take(admin: AdminPort, groups: list[str], description: str, *,
             uncommitted: Mapping[str, Iterable[TopicPartition]] | None = None,
             reads: tuple[Mapping, Mapping] | None = None) -> str:
        return SnapshotStore(store_url).save(take_snapshot(admin, groups, description=description,
                                                           uncommitted=uncommitted, reads=reads))

    take.takes_reads = True  # the executor's reads: see reset.apply.SnapshotFn
    return take
