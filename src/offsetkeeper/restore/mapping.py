"""The offset mapping: for every restored record, its source offset and its target offset.

Stored with the backup as Parquet chunks, one file per produced chunk, written atomically:

    DEST/BACKUP_ID/mappings/RESTORE_ID/SOURCE_TOPIC/SOURCE_PARTITION/chunk-<first offset>.parquet

Columns: restore_id, topic, partition (the source), source_offset, target_topic,
target_partition, target_offset, timestamp. Lookups and translation are pure functions over
a partition's sorted offsets (`PartitionMapping`).
"""

from __future__ import annotations

import io
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from offsetkeeper import arrowbuf as ab
from offsetkeeper.errors import StoreError
from offsetkeeper.models import TopicPartition
from offsetkeeper.restore.paths import join, mappings_root, open_fs, write_bytes_atomic

MAPPING_SCHEMA = pa.schema([
    ("restore_id", pa.string()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("source_offset", pa.int64()),
    ("target_topic", pa.string()),
    ("target_partition", pa.int32()),
    ("target_offset", pa.int64()),
    ("timestamp", pa.int64()),
])


def chunk_url(root: str, source: TopicPartition, first_source_offset: int) -> str:
    return join(root, source.topic, str(source.partition), f"chunk-{first_source_offset:020d}.parquet")


def write_chunk(root: str, restore_id: str, source: TopicPartition, target: TopicPartition,
                source_offsets: Sequence[int], target_offsets: Sequence[int],
                timestamps: Sequence[int]) -> str:
    """Write one mapping chunk atomically; returns its URL."""
    n = len(source_offsets)
    table = pa.table({
        "restore_id": ab.repeated_string(restore_id, n),
        "topic": ab.repeated_string(source.topic, n),
        "partition": ab.repeated_int(source.partition, n, pa.int32()),
        "source_offset": ab.ints(source_offsets, pa.int64()),
        "target_topic": ab.repeated_string(target.topic, n),
        "target_partition": ab.repeated_int(target.partition, n, pa.int32()),
        "target_offset": ab.ints(target_offsets, pa.int64()),
        "timestamp": ab.ints(timestamps, pa.int64()),
    }, schema=MAPPING_SCHEMA)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    url = chunk_url(root, source, source_offsets[0])
    write_bytes_atomic(url, buf.getvalue())
    return url


def read_mapping(root: str, source: TopicPartition | None = None) -> pa.Table:
    """All mapping rows under `root` (optionally of one source partition), sorted."""
    fs, path = open_fs(root)
    if source is not None:
        path = join(path, source.topic, str(source.partition))
    if not fs.exists(path):
        return _empty()
    files = sorted(f for f in fs.find(path) if f.rsplit("/", 1)[-1].startswith("chunk-")
                   and f.endswith(".parquet"))
    tables = []
    for f in files:
        tables.append(_read_chunk(fs, f))
    if not tables:
        return _empty()
    t = pa.concat_tables(tables)
    return t.sort_by([("topic", "ascending"), ("partition", "ascending"),
                      ("source_offset", "ascending")])


def _empty() -> pa.Table:
    # not Schema.empty_table(): that imports pandas, 0.3 CPU s in every fresh Spark Python worker
    return pa.Table.from_batches([], schema=MAPPING_SCHEMA)


def _read_chunk(fs, f: str) -> pa.Table:
    """One chunk, refused (StoreError, one line) unless it has exactly the mapping schema."""
    try:
        with fs.open(f, "rb") as fh:
            t = pq.read_table(fh)
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(f"mapping chunk {f} cannot be read: {_first_line(exc)}") from None
    names = set(t.schema.names)
    want = set(MAPPING_SCHEMA.names)
    if names != want:
        odd = sorted(want - names) or sorted(names - want)
        raise StoreError(f"mapping chunk {f} does not have the mapping columns "
                         f"({'missing' if want - names else 'unexpected'}: {', '.join(odd)})")
    try:
        return t.select(MAPPING_SCHEMA.names).cast(MAPPING_SCHEMA)
    except (pa.ArrowException, ValueError) as exc:
        raise StoreError(f"mapping chunk {f} has columns of the wrong type: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return (lines[0] if lines else type(exc).__name__)[:200]


def _increasing(values, what: str, source: TopicPartition) -> None:
    import numpy as np

    a = np.asarray(values, dtype=np.int64)
    if len(a) and a[0] < 0:  # increasing: the first is the smallest (int64: always < 2^63)
        raise StoreError(f"the mapping of {source} is corrupt: {what} {int(a[0])} is negative; "
                         "was a chunk edited?", topic=source.topic, partition=source.partition)
    bad = np.nonzero(np.diff(a) <= 0)[0]
    if len(bad):
        raise StoreError(f"the mapping of {source} is corrupt: {what} {int(a[bad[0] + 1])} follows "
                         f"{int(a[bad[0]])} (offsets must increase); was a chunk edited?",
                         topic=source.topic, partition=source.partition)


def check_route_rows(table: pa.Table, restore_id: str, source: TopicPartition, target: TopicPartition,
                     start_log_end: int | None = None, end_log_end: int | None = None) -> None:
    """The rows of one source partition's mapping (sorted by source offset) must belong to this
    restore and route, and both offsets must increase (the target ones inside
    [start_log_end, end_log_end)). StoreError names the first row that does not."""
    if not table.num_rows:
        return
    import pyarrow.compute as pc

    for col, want in (("restore_id", restore_id), ("topic", source.topic), ("partition", source.partition),
                      ("target_topic", target.topic), ("target_partition", target.partition)):
        bad = pc.not_equal(table.column(col), ab.scalar(want, table.schema.field(col).type))
        if pc.any(bad).as_py() or table.column(col).null_count:
            i = pc.index(bad, True).as_py() if pc.any(bad).as_py() else 0
            got = table.column(col)[i].as_py()
            raise StoreError(f"the mapping of {source} is corrupt: a row has {col} {got!r} where the "
                             f"restore state says {want!r}; was a chunk edited?",
                             topic=source.topic, partition=source.partition)
    for col in ("source_offset", "target_offset"):
        if table.column(col).null_count:
            raise StoreError(f"the mapping of {source} is corrupt: a row has no {col.replace('_', ' ')}; "
                             "was a chunk edited?", topic=source.topic, partition=source.partition)
    _increasing(ab.int_values(table.column("source_offset")), "source offset", source)
    tgt = ab.int_values(table.column("target_offset"))
    _increasing(tgt, "target offset", source)
    if start_log_end is not None and tgt[0] < start_log_end:
        raise StoreError(f"the mapping of {source} is corrupt: target offset {int(tgt[0])} is below "
                         f"{start_log_end}, where the restore started writing {target}",
                         topic=source.topic, partition=source.partition)
    if end_log_end is not None and tgt[-1] >= end_log_end:
        raise StoreError(f"the mapping of {source} is corrupt: target offset {int(tgt[-1])} is at or "
                         f"past {end_log_end}, the log end of {target} after the restore",
                         topic=source.topic, partition=source.partition)


def check_mapping(table: pa.Table, state: Any) -> None:
    """Every row of a restore's mapping must follow one of the restore state's routes (see
    check_route_rows). `state` is a restore.state.RestoreState."""
    import pyarrow.compute as pc

    routes = {r.source: r for r in state.routes}
    keys = pa.Table.from_arrays([table.column("topic"), table.column("partition")],
                                names=["topic", "partition"]).group_by(["topic", "partition"]).aggregate([])
    for t, p in zip(keys.column("topic").to_pylist(), keys.column("partition").to_pylist(), strict=True):
        src = TopicPartition(t, p)
        r = routes.get(src)
        if r is None:
            raise StoreError(f"the mapping holds rows for {src}, which restore '{state.restore_id}' "
                             "did not restore; was a chunk edited or copied in?", topic=t, partition=p)
        rows = table.filter(pc.and_(pc.equal(table.column("topic"), ab.scalar(t, pa.string())),
                                     pc.equal(table.column("partition"), ab.scalar(p, pa.int32()))))
        check_route_rows(rows, state.restore_id, src, r.target, r.start_log_end, r.end_log_end)


@dataclass(frozen=True)
class PartitionMapping:
    """The mapping of one source partition, sorted by source offset."""

    source: TopicPartition
    target: TopicPartition
    source_offsets: tuple[int, ...]
    target_offsets: tuple[int, ...]
    timestamps: tuple[int, ...] = ()
    target_log_end: int | None = None  # the target partition's log end after the restore

    def __post_init__(self) -> None:
        if len(self.source_offsets) != len(self.target_offsets):
            raise ValueError("source and target offsets differ in length")

    @property
    def count(self) -> int:
        return len(self.source_offsets)

    def lookup(self, source_offset: int) -> int | None:
        """The target offset of the record restored from `source_offset`; None if not restored."""
        i = bisect_left(self.source_offsets, source_offset)
        if i < len(self.source_offsets) and self.source_offsets[i] == source_offset:
            return self.target_offsets[i]
        return None

    def translate(self, committed: int) -> int:
        """Target offset for a source committed offset C: the target offset of the first restored
        record with source offset >= C; past the last one, the target log end."""
        i = bisect_left(self.source_offsets, committed)
        if i < len(self.source_offsets):
            return self.target_offsets[i]
        if self.target_log_end is not None:
            return self.target_log_end
        if not self.target_offsets:
            raise StoreError(f"no record of {self.source} was restored and the target log end "
                             "is unknown (the restore did not finish)", topic=self.source.topic,
                             partition=self.source.partition)
        return self.target_offsets[-1] + 1

    def first_source_at_or_after(self, committed: int) -> int | None:
        i = bisect_left(self.source_offsets, committed)
        return self.source_offsets[i] if i < len(self.source_offsets) else None


def partition_mappings(table: pa.Table, log_ends: dict[TopicPartition, int] | None = None,
                       routes: dict[TopicPartition, TopicPartition] | None = None,
                       ) -> dict[TopicPartition, PartitionMapping]:
    """Group a mapping table into PartitionMappings; `routes` adds partitions with no rows."""
    log_ends = log_ends or {}
    cols = {c: table.column(c).to_pylist() for c in
            ("topic", "partition", "source_offset", "target_topic", "target_partition",
             "target_offset", "timestamp")}
    groups: dict[TopicPartition, tuple[TopicPartition, list, list, list]] = {}
    for i in range(table.num_rows):
        src = TopicPartition(cols["topic"][i], cols["partition"][i])
        g = groups.get(src)
        if g is None:
            g = groups[src] = (TopicPartition(cols["target_topic"][i], cols["target_partition"][i]), [], [], [])
        g[1].append(cols["source_offset"][i])
        g[2].append(cols["target_offset"][i])
        g[3].append(cols["timestamp"][i])
    out = {}
    for src, (tgt, so, to, ts) in groups.items():
        order = sorted(range(len(so)), key=so.__getitem__)
        out[src] = PartitionMapping(src, tgt, tuple(so[i] for i in order), tuple(to[i] for i in order),
                                    tuple(ts[i] for i in order), log_ends.get(tgt))
    for src, tgt in (routes or {}).items():
        if src not in out:
            out[src] = PartitionMapping(src, tgt, (), (), (), log_ends.get(tgt))
    return out


def summary_rows(mappings: dict[TopicPartition, PartitionMapping]) -> list[dict[str, Any]]:
    """Per source partition: source/target first/last offsets and the record count."""
    rows = []
    for src in sorted(mappings):
        m = mappings[src]
        rows.append({
            "topic": src.topic, "partition": src.partition,
            "target_topic": m.target.topic, "target_partition": m.target.partition,
            "records": m.count,
            "source_first": m.source_offsets[0] if m.count else None,
            "source_last": m.source_offsets[-1] if m.count else None,
            "target_first": m.target_offsets[0] if m.count else None,
            "target_last": m.target_offsets[-1] if m.count else None,
            "target_log_end": m.target_log_end,
        })
    return rows


def mapping_root_for(destination: str, backup_id: str, restore_id: str) -> str:
    return mappings_root(destination, backup_id, restore_id)


def lookup_row(mappings: dict[TopicPartition, PartitionMapping], topic: str, partition: int,
               offset: int) -> dict[str, Any]:
    """The answer of `mapping lookup` for one source offset."""
    from offsetkeeper.errors import UsageError

    src = TopicPartition(topic, partition)
    m = mappings.get(src)
    if m is None:
        known = ", ".join(str(s) for s in sorted(mappings)) or "none"
        raise UsageError(f"{src} was not restored (restored partitions: {known})",
                         topic=topic, partition=partition)
    exact = m.lookup(offset)
    row = {"topic": topic, "partition": partition, "offset": offset, "restored": exact is not None,
           "target_topic": m.target.topic, "target_partition": m.target.partition}
    if exact is not None:
        return {**row, "target_offset": exact, "note": "record restored"}
    nxt = m.first_source_at_or_after(offset)
    target = m.translate(offset)
    note = (f"not restored; the next restored record is source offset {nxt}" if nxt is not None
            else "past the last restored record; target log end")
    return {**row, "target_offset": target, "note": note}
