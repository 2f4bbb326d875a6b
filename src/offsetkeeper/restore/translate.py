"""Consumer-group translation: source committed offsets -> target offsets, through the mapping.

A source committed offset C (the next record the group reads) becomes the target offset of the
first restored record whose source offset is >= C; when C is past the last restored record,
the target log end of that partition (recorded when the restore finished). This is exact on
compacted and transactional topics, whose offsets have gaps: nothing is interpolated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from offsetkeeper.errors import UnknownGroupError, UsageError
from offsetkeeper.models import TopicPartition
from offsetkeeper.reset.targets import FromOffsets
from offsetkeeper.restore.mapping import (
    PartitionMapping,
    check_mapping,
    mapping_root_for,
    partition_mappings,
    read_mapping,
)
from offsetkeeper.restore.state import RestoreState, resolve_restore


@dataclass(frozen=True)
class TranslatedOffset:
    group: str
    source: TopicPartition
    committed: int                 # C, on the source
    target: TopicPartition
    target_offset: int
    source_record: int | None      # source offset of the record the group reads next (None = log end)

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "topic": self.source.topic, "partition": self.source.partition,
                "committed": self.committed, "target_topic": self.target.topic,
                "target_partition": self.target.partition, "target_offset": self.target_offset,
                "next_source_offset": self.source_record}


def translate_offsets(committed: Mapping[str, Mapping[TopicPartition, int]],
                      mappings: Mapping[TopicPartition, PartitionMapping]) -> list[TranslatedOffset]:
    """Pure: translate each group's committed offsets; partitions not restored are left out."""
    out = []
    for group in sorted(committed):
        for src, c in sorted(committed[group].items()):
            m = mappings.get(src)
            if m is None:
                continue
            out.append(TranslatedOffset(group, src, c, m.target, m.translate(c),
                                        m.first_source_at_or_after(c)))
    return out


def load_restore_mappings(destination: str, backup_id: str, restore_id: str | None
                          ) -> tuple[RestoreState, dict[TopicPartition, PartitionMapping]]:
    """The restore's state and its mapping per source partition (with target log ends)."""
    state = resolve_restore(destination, backup_id, restore_id)
    table = read_mapping(mapping_root_for(destination, backup_id, state.restore_id))
    check_mapping(table, state)  # a tampered chunk is refused, never translated
    return state, partition_mappings(table, state.log_ends(), state.route_map())


def committed_from_backup(destination: str, backup_id: str) -> dict[str, dict[TopicPartition, int]]:
    from offsetkeeper.restore.backup_view import load_backup_view

    return {g: dict(o) for g, o in load_backup_view(destination, backup_id).groups.items()}


def committed_from_cluster(conn, topics: set[str]) -> dict[str, dict[TopicPartition, int]]:
    """Committed offsets of every group on `topics`, read from a live (source) cluster. A group
    deleted between listing and reading is skipped, never an error."""
    from offsetkeeper.errors import UnknownGroupError
    from offsetkeeper.kafka.admin import KafkaAdmin
    from offsetkeeper.kafka.ports import unwrap_each

    with KafkaAdmin(conn) as admin:
        each = admin.committed_offsets_each(g.group_id for g in admin.list_groups())
        many = unwrap_each({g: r for g, r in each.items() if not isinstance(r, UnknownGroupError)})
    return {g: {tp: c.offset for tp, c in offs.items() if tp.topic in topics}
            for g, offs in many.items() if any(tp.topic in topics for tp in offs)}


def committed_from_snapshot(snapshot_id: str, store: str | None = None) -> dict[str, dict[TopicPartition, int]]:
    """Committed offsets recorded in an offset snapshot (of the source cluster)."""
    from offsetkeeper.snapshots.store import SnapshotStore

    snap = SnapshotStore(store).load(snapshot_id)
    return {g: dict(o) for g, o in snap.offsets().items()}


def check_offsets_source(source: str) -> str:
    """`backup`, `live` or `snapshot:ID` (UsageError otherwise)."""
    if source in ("backup", "live") or (source.startswith("snapshot:") and source[9:]):
        return source
    raise UsageError(f"group offset source '{source}' is not one of: backup, live, snapshot:ID")


def read_committed(destination: str, backup_id: str, source: str, topics: set[str], *,
                   source_connection=None, snapshot_store: str | None = None,
                   ) -> dict[str, dict[TopicPartition, int]]:
    """The source committed offsets to translate, read once from `source` (backup | live |
    snapshot:ID). Pass the result as `committed` so that what is reported, committed and
    validated is the same read."""
    check_offsets_source(source)
    if source == "backup":
        return committed_from_backup(destination, backup_id)
    if source == "live":
        if source_connection is None:
            raise UsageError("--group-offsets live needs the source cluster (--source-bootstrap-server)")
        return committed_from_cluster(source_connection, topics)
    return committed_from_snapshot(source[9:], snapshot_store)


def translate_groups(destination: str, backup_id: str, restore_id: str | None = None,
                     groups: list[str] | None = None, *, source: str = "backup",
                     committed: Mapping[str, Mapping[TopicPartition, int]] | None = None,
                     source_connection=None, snapshot_store: str | None = None,
                     ) -> tuple[RestoreState, list[TranslatedOffset]]:
    """Translate group offsets (see offsets_from_mapping) and return every translated row."""
    state, mappings = load_restore_mappings(destination, backup_id, restore_id)
    if committed is None:
        committed = read_committed(destination, backup_id, source, {s.topic for s in mappings},
                                   source_connection=source_connection, snapshot_store=snapshot_store)
    if groups:
        missing = [g for g in groups if g not in committed]
        if missing:
            raise UnknownGroupError(f"group '{missing[0]}' has no offsets in the {source} offsets of "
                                    f"backup '{backup_id}'", group=missing[0])
        committed = {g: committed[g] for g in groups}
    return state, translate_offsets(committed, mappings)


def offsets_from_mapping(destination: str, backup_id: str, restore_id: str | None = None,
                         groups: list[str] | None = None, *, source: str = "backup",
                         committed: Mapping[str, Mapping[TopicPartition, int]] | None = None,
                         source_connection=None, snapshot_store: str | None = None) -> FromOffsets:
    """Target offsets for consumer groups after restore `restore_id` of backup `backup_id`.

    The group offsets come from the backup manifest (`source="backup"`, the default), the live
    source cluster (`source="live"` with `source_connection`), an offset snapshot of the source
    (`source="snapshot:ID"`, from `snapshot_store`), or are given (`committed`):
    {group: {TopicPartition(source topic, p): offset}}. `restore_id`
    None = the backup's most recent completed restore; `groups` None = every group.
    Returns FromOffsets keyed by target topic/partition, for the reset pipeline.
    """
    state, rows = translate_groups(destination, backup_id, restore_id, groups, source=source,
                                   committed=committed, source_connection=source_connection,
                                   snapshot_store=snapshot_store)
    label = "given" if committed is not None else source
    return target_from_rows(rows, f"mapping {destination}/{backup_id}:{state.restore_id} ({label} offsets)")


def target_from_rows(rows: list[TranslatedOffset], label: str) -> FromOffsets:
    """The reset target that commits exactly the translated rows (reported == committed)."""
    offsets: dict[str | None, dict[TopicPartition, int]] = {}
    for r in rows:
        offsets.setdefault(r.group, {})[r.target] = r.target_offset
    return FromOffsets(offsets=offsets, source=label)
