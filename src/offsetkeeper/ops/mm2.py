"""`mm2 status` and MirrorMaker 2's own answer: what a failover to the target cluster would do
to each group, from MM2's checkpoints read directly (mm2/), and RemoteClusterUtils'
translation through the JVM admin helper (the oracle the tests compare with).

Moving the groups is `offsets reset --from-mm2 --source-alias A` (ops/targets.py): the one
executor, with its snapshot and rollback.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from offsetkeeper.errors import OffsetkeeperError, UsageError
from offsetkeeper.kafka.ports import AdminPort, ClusterPort, CommittedOffsetsPort
from offsetkeeper.mm2.records import OffsetSync, latest_checkpoints, latest_offset_syncs
from offsetkeeper.mm2.target import source_topic
from offsetkeeper.models import TopicPartition

__all__ = ["MM2Report", "MM2Row", "mm2_status"]


@dataclass(frozen=True)
class MM2Row:
    """One group's partition as a failover would find it."""

    group: str
    topic: str  # on the target (renamed)
    partition: int
    checkpoint_source_offset: int  # the group's source offset MM2 last checkpointed
    translated: int  # where the group would resume on the target
    checkpoint_age_s: float | None
    target_committed: int | None
    target_log_end: int | None
    source_committed: int | None = None  # with the source cluster
    # the group's source progress past the checkpoint (source offsets; exact in records unless
    # the topic is compacted or transactional). A failover re-reads these, plus whatever MM2's
    # conservative translation adds (docs/connect.md, "MirrorMaker 2").
    reread_past_checkpoint: int | None = None
    # MM2's latest offset sync of the source partition (with the source cluster): source
    # offset `sync_upstream` is target offset `sync_downstream`; translations start from the
    # newest sync at or below a group's offset, so an old sync means a coarse translation.
    sync_upstream: int | None = None
    sync_downstream: int | None = None
    sync_age_s: float | None = None
    note: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class MM2Report:
    rows: tuple[MM2Row, ...]
    source_alias: str
    skipped_records: int = 0
    offset_syncs_topic: str | None = None  # where the syncs were read (None: not read)
    skipped_sync_records: int = 0
    notes: tuple[str, ...] = ()


def mm2_status(target_admin: AdminPort, source_alias: str, *,
               source_admin: CommittedOffsetsPort | None = None,
               groups: tuple[str, ...] = (), target_alias: str | None = None) -> MM2Report:
    """Every checkpointed group (or `groups`) with MM2's translation, the checkpoint's age,
    the target's committed offset and log end, and (with `source_admin`) the group's source
    offset, how many records a failover would re-read at most, and MM2's latest offset sync of
    each partition with its age (`target_alias` names the syncs topic
    ``mm2-offset-syncs.<target alias>.internal``; found by name when there is one)."""
    if not source_alias or "." in source_alias:
        raise UsageError(f"--source-alias {source_alias!r} is not a cluster alias (expected e.g. A)")
    if target_alias is not None and (not target_alias or "." in target_alias):
        raise UsageError(f"--target-alias {target_alias!r} is not a cluster alias (expected e.g. B)")
    latest, skipped = latest_checkpoints(target_admin.conn.client_config(), source_alias)
    wanted = set(groups) if groups else None
    items = sorted((k, c) for k, c in latest.items() if wanted is None or k[0] in wanted)
    tps = {TopicPartition(t, p) for (_, t, p), _ in items}
    wms = target_admin.watermarks(tps) if tps else {}
    target_committed = _committed(target_admin, {g for (g, _, _), _ in items})
    source_committed = _committed(source_admin, {g for (g, _, _), _ in items}) \
        if source_admin is not None else {}
    syncs: dict[tuple[str, int], OffsetSync] = {}
    syncs_topic, sync_skipped, notes = None, 0, []
    if source_admin is not None:
        syncs_topic, where = _find_syncs_topic(source_admin, target_admin, target_alias)
        if syncs_topic is None:
            notes.append(where)
        else:
            try:
                alias = syncs_topic[len(SYNCS_PREFIX):-len(SYNCS_SUFFIX)]
                syncs, sync_skipped = latest_offset_syncs(where.conn.client_config(), alias)
            except OffsetkeeperError as exc:
                notes.append(f"offset syncs not read: {exc}")
                syncs_topic = None
    now = time.time() * 1000
    rows = []
    for (g, t, p), c in items:
        tp = TopicPartition(t, p)
        wm = wms.get(tp)
        src = source_committed.get(g, {}).get(TopicPartition(source_topic(source_alias, t), p))
        row_notes = []
        if wm is not None and c.downstream > wm.high:
            row_notes.append("translated offset beyond the target's log end")
        if src is not None and src < c.upstream:
            row_notes.append("the group moved back on the source since the checkpoint")
        sync = syncs.get((source_topic(source_alias, t), p))
        if syncs_topic is not None and sync is None:
            row_notes.append("no offset sync of this partition")
        rows.append(MM2Row(
            g, tp.topic, p, c.upstream, c.downstream, _age_s(now, c.timestamp_ms),
            target_committed.get(g, {}).get(tp), None if wm is None else wm.high,
            src, None if src is None else max(0, src - c.upstream),
            None if sync is None else sync.upstream, None if sync is None else sync.downstream,
            None if sync is None else _age_s(now, sync.timestamp_ms), "; ".join(row_notes)))
    for g in sorted((wanted or set()) - {g for (g, _, _), _ in items}):
        rows.append(MM2Row(g, "", -1, -1, -1, None, None, None,
                           note=f"no MM2 checkpoint from {source_alias}"))
    return MM2Report(tuple(rows), source_alias, skipped, syncs_topic, sync_skipped, tuple(notes))


def _age_s(now_ms: float, timestamp_ms: int | None) -> float | None:
    return None if timestamp_ms is None else max(0.0, (now_ms - timestamp_ms) / 1000)


SYNCS_PREFIX, SYNCS_SUFFIX = "mm2-offset-syncs.", ".internal"


def _find_syncs_topic(source_admin: ClusterPort, target_admin: ClusterPort,
                     target_alias: str | None):
    """(topic, the admin of the cluster holding it) or (None, why not). MM2 keeps its offset
    syncs on the source cluster unless offset-syncs.topic.location=target."""
    for admin in (source_admin, target_admin):
        names = sorted(n for n in admin.topic_partitions()
                       if n.startswith(SYNCS_PREFIX) and n.endswith(SYNCS_SUFFIX))
        if target_alias is not None:
            wanted = f"{SYNCS_PREFIX}{target_alias}{SYNCS_SUFFIX}"
            if wanted in names:
                return wanted, admin
        elif len(names) == 1:
            return names[0], admin
        elif len(names) > 1:
            return None, (f"offset syncs not read: several MM2 targets ({', '.join(names)}); "
                          "name one with --target-alias")
    if target_alias is not None:
        return None, (f"offset syncs not read: no topic {SYNCS_PREFIX}{target_alias}"
                      f"{SYNCS_SUFFIX} on the source or the target cluster")
    return None, "offset syncs not read: no mm2-offset-syncs.*.internal topic on either cluster"


def _committed(admin: CommittedOffsetsPort, groups: set[str]) -> dict[str, dict[TopicPartition, int]]:
    out: dict[str, dict[TopicPartition, int]] = {}
    if not groups:
        return out
    for g, got in admin.committed_offsets_each(sorted(groups)).items():
        if isinstance(got, Exception):
            continue
        out[g] = {tp: c.offset for tp, c in got.items()}
    return out
