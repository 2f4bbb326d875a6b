"""Reading backup data files with pyarrow (no Spark): one partition's records in offset order,
checked against the manifest.

A restore trusts nothing it reads back. Before anything is written, `check_segments` compares
each run's files with the manifest using the Parquet footers only (record counts, offset
ranges, overlaps). While the records are read, `read_records` checks every batch (offsets
strictly increasing and inside the segment's range) and, at the end of each segment, its record
count and checksum (backup/checksum.py) against the manifest. A file that holds offsets 0–499
twice, a shifted or edited record, or a truncated file stops the read with a `StoreError` that
names the file or the partition.

`Selection` is the one definition of "which records of a partition a restore takes": offsets
after a resume point and timestamps in `[from_time_ms, to_time_ms)`. The restore writer, the dry
run and `restore validate` all use it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pyarrow as pa

from offsetkeeper.arrowbuf import int_scalar, int_values
from offsetkeeper.backup import checksum as ck
from offsetkeeper.errors import StoreError
from offsetkeeper.storage import is_local, open_fs

READ_COLUMNS = ["offset", "timestamp", "key", "value", "headers"]
BATCH_ROWS = 20_000


@dataclass(frozen=True)
class Selection:
    """The records of a partition a restore takes: offset > `resume_after`, timestamp in
    `[from_time_ms, to_time_ms)` (either bound None = open)."""

    resume_after: int = -1
    from_time_ms: int | None = None
    to_time_ms: int | None = None

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The selected rows of `batch` (the batch itself when all qualify)."""
        import pyarrow.compute as pc

        offs, ts = batch.column("offset"), batch.column("timestamp")
        if offs[0].as_py() > self.resume_after and self.from_time_ms is None and self.to_time_ms is None:
            return batch
        mask = pc.greater(offs, int_scalar(self.resume_after))
        if self.from_time_ms is not None:
            mask = pc.and_(mask, pc.greater_equal(ts, int_scalar(self.from_time_ms)))
        if self.to_time_ms is not None:
            mask = pc.and_(mask, pc.less(ts, int_scalar(self.to_time_ms)))
        return batch.filter(mask)


@dataclass(frozen=True)
class SegmentFiles:
    """What the manifest says about one run of one partition, and where its files are."""

    label: str                 # "orders:0 run 2", for messages
    files: tuple[str, ...]     # absolute paths or URLs
    start_offset: int
    end_offset: int
    record_count: int
    checksum: str

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "files": list(self.files)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SegmentFiles:
        return cls(**{**d, "files": tuple(d["files"])})


def partition_segments(base: str, manifest: Any, topic: str, partition: int) -> list[SegmentFiles]:
    """The segments of one backed-up partition (`base` = the backup directory), by offset."""
    from offsetkeeper.storage import join

    t = manifest.topic(topic)
    entry = t.partition(partition) if t is not None else None
    if entry is None:
        return []
    return [SegmentFiles(f"{topic}:{partition} run {s.run}", tuple(join(base, f) for f in s.files),
                         s.start_offset, s.end_offset, s.record_count, s.checksum)
            for s in sorted(entry.segments, key=lambda s: s.start_offset)]


# -- footers -----------------------------------------------------------------------------------

def _open(fs, path: str):
    """A file for pyarrow: the plain path for local files (native, faster), else an fsspec file."""
    return path if is_local(fs) else fs.open(path, "rb")


def _short(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return (lines[0] if lines else type(exc).__name__)[:200]


def _footer(fs, path: str):
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(_open(fs, path)).metadata
    except FileNotFoundError:
        raise StoreError(f"backup file {path} is missing") from None
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(f"backup file {path} cannot be read: {_short(exc)}") from None


def offset_range(md) -> tuple[int, int] | None:
    """(min, max) offset of a file from its footer statistics; (0, -1) when empty; None when
    the statistics are missing."""
    lo = hi = None
    if "offset" not in md.schema.names:
        return None
    idx = md.schema.names.index("offset")
    for g in range(md.num_row_groups):
        st = md.row_group(g).column(idx).statistics
        if st is None or not st.has_min_max:
            if md.row_group(g).num_rows:
                return None
            continue
        lo = st.min if lo is None else min(lo, st.min)
        hi = st.max if hi is None else max(hi, st.max)
    return (lo, hi) if lo is not None else (0, -1)


@dataclass(frozen=True)
class _FileInfo:
    path: str
    rows: int
    range: tuple[int, int] | None


def _file_infos(seg: SegmentFiles) -> tuple[Any, list[_FileInfo]]:
    if not seg.files:
        return None, []
    fs = open_fs(seg.files[0])[0]
    infos = []
    for f in seg.files:
        path = open_fs(f)[1]
        md = _footer(fs, path)
        infos.append(_FileInfo(path, md.num_rows, offset_range(md)))
    return fs, sorted(infos, key=lambda i: i.range[0] if i.range else 0)


def _check_footers(seg: SegmentFiles, infos: list[_FileInfo]) -> None:
    rows = sum(i.rows for i in infos)
    if rows != seg.record_count:
        raise StoreError(f"the backup files of {seg.label} hold {rows} records but the manifest "
                         f"says {seg.record_count}; the backup was changed after it was written")
    for i in infos:
        if i.range is not None and i.rows and (i.range[0] < seg.start_offset or i.range[1] >= seg.end_offset):
            raise StoreError(f"backup file {i.path} holds offsets {i.range[0]}..{i.range[1]}, outside "
                             f"[{seg.start_offset}, {seg.end_offset}) of {seg.label} in the manifest")
    for a, b in itertools.pairwise(i for i in infos if i.rows and i.range is not None):
        if b.range[0] <= a.range[1]:
            raise StoreError(f"backup files {a.path} and {b.path} of {seg.label} overlap "
                             f"(offsets {b.range[0]}..{min(a.range[1], b.range[1])} twice)")


def check_segments(segments: Sequence[SegmentFiles]) -> None:
    """Compare the files of each segment with the manifest using their footers only (counts,
    offset ranges, overlaps; segments must not overlap each other). Raises StoreError."""
    for a, b in itertools.pairwise(sorted(segments, key=lambda s: s.start_offset)):
        if b.start_offset < a.end_offset:
            raise StoreError(f"{a.label} and {b.label} overlap in the manifest "
                             f"([{a.start_offset}, {a.end_offset}) and [{b.start_offset}, {b.end_offset}))")
    for seg in segments:
        _check_footers(seg, _file_infos(seg)[1])


# -- records -----------------------------------------------------------------------------------

def _batches(fs, path: str, batch_rows: int) -> Iterator[pa.RecordBatch]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(_open(fs, path))
        # One row group at a time: iter_batches over the whole file keeps most of it in memory,
        # so a restore's memory would grow with the size of the backup files.
        for g in range(pf.metadata.num_row_groups):
            for b in pf.iter_batches(batch_size=batch_rows, columns=READ_COLUMNS, row_groups=[g]):
                if b.num_rows:
                    yield b
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(f"backup file {path} cannot be read: {_short(exc)}") from None


def _read_segment(seg: SegmentFiles, sel: Selection, batch_rows: int) -> Iterator[pa.RecordBatch]:
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    fs, infos = _file_infos(seg)
    _check_footers(seg, infos)
    complete = True  # every file of the segment read: its count and checksum can be checked
    count, last = 0, None
    # The checksum (numpy, which releases the GIL) runs beside the consumer of the batches (a
    # producer loop in Python), so checking costs little wall time.
    pool = ThreadPoolExecutor(1, thread_name_prefix="offsetkeeper-checksum")
    sums: list = []
    total = 0
    try:
        for info in infos:
            if info.range is not None and info.range[1] <= sel.resume_after:
                complete = False
                continue
            for b in _batches(fs, info.path, batch_rows):
                offs = int_values(b.column("offset"))
                bad = np.nonzero(np.diff(offs) <= 0)[0]
                if len(bad) or (last is not None and offs[0] <= last):
                    at = int(offs[bad[0] + 1]) if len(bad) else int(offs[0])
                    raise StoreError(f"backup file {info.path} of {seg.label} is not in strictly "
                                     f"increasing offset order (offset {at} follows a later or equal one)")
                if offs[0] < seg.start_offset or offs[-1] >= seg.end_offset:
                    raise StoreError(f"backup file {info.path} holds offsets outside [{seg.start_offset}, "
                                     f"{seg.end_offset}) of {seg.label} in the manifest")
                last = int(offs[-1])
                count += b.num_rows
                if complete:
                    sums.append(pool.submit(ck.batch_checksum, b))
                    if len(sums) > 3:  # bound the batches held in memory
                        total += sums.pop(0).result()
                out = sel.apply(b)
                if out.num_rows:
                    yield out
        checksum = total + sum(f.result() for f in sums)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    if complete and count != seg.record_count:
        raise StoreError(f"the backup files of {seg.label} hold {count} records but the manifest "
                         f"says {seg.record_count}; the backup was changed after it was written")
    if complete and ck.to_hex(checksum) != seg.checksum:
        raise StoreError(f"the records of {seg.label} do not match the manifest's checksum "
                         f"({ck.to_hex(checksum)}, manifest {seg.checksum}); the backup was changed "
                         "after it was written")


def read_records(segments: Sequence[SegmentFiles], sel: Selection = Selection(), *,
                 batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """The selected records of one partition (columns `READ_COLUMNS`), in offset order, every
    segment checked against the manifest as it is read (StoreError on any difference)."""
    check_segments(segments)
    for seg in sorted(segments, key=lambda s: s.start_offset):
        yield from _read_segment(seg, sel, batch_rows)


def read_files(files: Sequence[str], sel: Selection = Selection(), *,
               batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """The selected records of loose files of one partition (no manifest to check against), in
    offset order. Files with disjoint offset ranges are streamed in the order of their ranges;
    if ranges overlap, everything is read and sorted instead."""
    import pyarrow.parquet as pq

    if not files:
        return
    fs = open_fs(files[0])[0]
    paths = [open_fs(f)[1] for f in files]
    ranges = [offset_range(_footer(fs, p)) for p in paths]
    disjoint = all(r is not None for r in ranges)
    ordered = sorted(((r, p) for r, p in zip(ranges, paths, strict=True) if r is None or r[1] >= r[0]),
                     key=lambda x: x[0][0] if x[0] else 0)
    if disjoint:
        disjoint = all(a[0][1] < b[0][0] for a, b in itertools.pairwise(ordered))
    if not disjoint:
        t = pa.concat_tables([pq.read_table(_open(fs, p), columns=READ_COLUMNS) for p in paths]).sort_by("offset")
        for b in t.to_batches(max_chunksize=batch_rows):
            if b.num_rows:
                yield sel.apply(b)
        return
    last = None
    for (_lo, hi), p in ordered:
        if hi <= sel.resume_after:
            continue
        for b in _batches(fs, p, batch_rows):
            offs = b.column("offset")
            if last is not None and offs[0].as_py() <= last:
                raise StoreError(f"backup file {p} is not in offset order")
            last = offs[-1].as_py()
            yield sel.apply(b)


# -- summaries without Spark -------------------------------------------------------------------

@dataclass
class SelectionStats:
    """What a selection of one partition holds (the dry run and `restore validate`)."""

    records: int = 0
    bytes: int = 0                  # key + value bytes
    first_offset: int | None = None
    last_offset: int | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    checksum_sum: int = 0           # sum of record hashes (checksum.to_hex for the checksum)

    @property
    def checksum(self) -> str:
        return ck.to_hex(self.checksum_sum)

    def add(self, b: pa.RecordBatch, *, checksum: bool) -> None:
        import pyarrow.compute as pc

        if not b.num_rows:
            return
        offs, ts = b.column("offset"), b.column("timestamp")
        if self.first_offset is None:
            self.first_offset, self.first_timestamp = offs[0].as_py(), ts[0].as_py()
        self.last_offset, self.last_timestamp = offs[-1].as_py(), ts[-1].as_py()
        self.records += b.num_rows
        self.bytes += (pc.sum(pc.binary_length(b.column("key"))).as_py() or 0) + \
            (pc.sum(pc.binary_length(b.column("value"))).as_py() or 0)
        if checksum:
            self.checksum_sum += ck.batch_checksum(b)


def selection_stats(segments: Sequence[SegmentFiles], sel: Selection, *,
                    checksum: bool = False) -> SelectionStats:
    """Count (and optionally checksum) the selected records of one partition with pyarrow,
    checking the files against the manifest as they are read."""
    stats = SelectionStats()
    for b in read_records(segments, sel):
        stats.add(b, checksum=checksum)
    return stats
