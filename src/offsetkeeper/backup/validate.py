"""Validation of a backup: the manifest against itself and its files (quick), and against the
records in the files (``deep``: re-reads the data, recomputes counts and checksums in Spark)."""

from __future__ import annotations

import itertools
import posixpath
from dataclasses import dataclass, field

from offsetkeeper.backup import checksum as ck
from offsetkeeper.backup.manifest import Manifest, backup_dir, join, load_manifest


@dataclass(frozen=True)
class Problem:
    where: str  # "topic:partition run N", a file, or "manifest"
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass
class ValidationReport:
    backup_id: str
    deep: bool
    files_checked: int = 0
    partitions_checked: int = 0
    records_checked: int = 0
    problems: list[Problem] = field(default_factory=list)
    # data/run=N directories no manifest run lists: an increment that did not finish (killed
    # or failed); not part of the backup, replaced by the next run — not a problem
    unfinished_runs: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict:
        return {"backup_id": self.backup_id, "deep": self.deep, "ok": self.ok,
                "files_checked": self.files_checked, "partitions_checked": self.partitions_checked,
                "records_checked": self.records_checked,
                "problems": [{"where": p.where, "message": p.message} for p in self.problems],
                "unfinished_runs": self.unfinished_runs}


def check_manifest(m: Manifest) -> list[Problem]:
    """Internal consistency: totals equal the sum of segments, segments contiguous, sane ranges."""
    out = []
    for t in m.topics:
        if t.partition_count < len(t.partitions):
            out.append(Problem(f"topic {t.name}", f"partition_count {t.partition_count} is below "
                                                  f"the {len(t.partitions)} partitions listed"))
        for p in t.partitions:
            where = f"{t.name}:{p.partition}"
            segs = sorted(p.segments, key=lambda s: s.start_offset)
            n = sum(s.record_count for s in segs)
            if p.record_count != n:
                out.append(Problem(where, f"record_count {p.record_count} differs from the sum "
                                          f"of its segments {n}"))
            if segs and p.checksum != ck.add(*(s.checksum for s in segs)):
                out.append(Problem(where, "checksum differs from the sum of its segments' checksums"))
            if p.start_offset > p.end_offset:
                out.append(Problem(where, f"start_offset {p.start_offset} > end_offset {p.end_offset}"))
            for a, b in itertools.pairwise(segs):
                if a.end_offset != b.start_offset:
                    out.append(Problem(where, f"run {a.run} ends at {a.end_offset} but run {b.run} "
                                              f"starts at {b.start_offset}"))
            for s in segs:
                sw = f"{where} run {s.run}"
                if s.record_count > s.end_offset - s.start_offset:
                    out.append(Problem(sw, f"record_count {s.record_count} exceeds the offset range "
                                           f"[{s.start_offset}, {s.end_offset})"))
                if s.record_count and not s.files:
                    out.append(Problem(sw, f"{s.record_count} records but no files"))
                if (s.first_offset is not None and s.first_offset < s.start_offset) or (
                        s.last_offset is not None and s.last_offset >= s.end_offset):
                    out.append(Problem(sw, "first/last offset outside the segment's range"))
    return out


def _file_problems(base: str, m: Manifest, report: ValidationReport, *, footers: bool) -> set[str]:
    """Missing or unreadable files; returns the relative paths that are bad."""
    import fsspec

    fs, root = fsspec.core.url_to_fs(base)
    bad: set[str] = set()
    for rel in m.files():
        report.files_checked += 1
        path = posixpath.join(root, rel)
        if not fs.exists(path):
            report.problems.append(Problem(rel, "file is missing"))
            bad.add(rel)
            continue
        if footers:
            import pyarrow.parquet as pq

            try:
                with fs.open(path, "rb") as f:
                    pq.read_metadata(f)
            except Exception as exc:
                report.problems.append(Problem(rel, f"not a readable Parquet file ({_short(exc)})"))
                bad.add(rel)
    return bad


def _unfinished_runs(base: str, m: Manifest) -> list[int]:
    """Run numbers under data/ that the manifest does not record."""
    import fsspec

    fs, root = fsspec.core.url_to_fs(base)
    data = posixpath.join(root, "data")
    if not fs.exists(data):
        return []
    recorded = {r.run for r in m.runs} | {s.run for t in m.topics for p in t.partitions
                                          for s in p.segments}
    found = []
    for entry in fs.ls(data, detail=False):
        name = posixpath.basename(entry.rstrip("/"))
        if name.startswith("run=") and name[4:].isdigit() and int(name[4:]) not in recorded:
            found.append(int(name[4:]))
    return sorted(found)


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]


def _locate_corrupt(base: str, files: list[str]) -> list[Problem]:
    """Read each file fully with pyarrow to name the ones Spark could not read."""
    import fsspec
    import pyarrow.parquet as pq

    fs, root = fsspec.core.url_to_fs(base)
    out = []
    for rel in files:
        try:
            with fs.open(posixpath.join(root, rel), "rb") as f:
                pq.read_table(f)
        except Exception as exc:
            out.append(Problem(rel, f"data cannot be read ({_short(exc)})"))
    return out


def validate_backup(destination: str, backup_id: str, *, deep: bool = False, spark=None,
                    master: str | None = None, spark_conf: dict | None = None) -> ValidationReport:
    """Check a backup. Quick: manifest consistency and that every file exists. Deep: also read
    every file and compare counts, checksums and offsets per partition and run with the manifest.
    Raises StoreError only when the manifest itself cannot be read."""
    m = load_manifest(destination, backup_id)
    base = backup_dir(destination, backup_id)
    report = ValidationReport(backup_id=backup_id, deep=deep)
    report.problems.extend(check_manifest(m))
    bad = _file_problems(base, m, report, footers=deep)
    report.unfinished_runs = _unfinished_runs(base, m)
    report.partitions_checked = sum(len(t.partitions) for t in m.topics)
    if not deep:
        return report

    from pyspark.sql import functions as F

    from offsetkeeper.backup.manifest import RECORD_DDL

    if spark is None:
        from offsetkeeper.spark.session import get_spark

        spark = get_spark(master, spark_conf, app_name=f"offsetkeeper validate {backup_id}")
    good = [f for f in m.files() if f not in bad]
    actual: dict[tuple[str, int, int], dict] = {}
    if good:
        df = (spark.read.schema(f"{RECORD_DDL}, run int").option("basePath", join(base, "data"))
              .parquet(*[join(base, f) for f in good]))
        h = ck.hash_column().cast("decimal(20,0)")
        try:
            rows = df.groupBy("topic", "partition", "run").agg(
                F.count(F.lit(1)).alias("n"), F.sum(h).alias("s"),
                F.min("offset").alias("lo"), F.max("offset").alias("hi"),
                F.count_distinct("offset").alias("distinct")).collect()
        except Exception:
            located = _locate_corrupt(base, good)
            if not located:
                raise
            report.problems.extend(located)
            bad |= {p.where for p in located}
            return report
        actual = {(r["topic"], r["partition"], r["run"]): {
            "n": int(r["n"]), "checksum": ck.to_hex(int(r["s"] or 0)), "lo": r["lo"], "hi": r["hi"],
            "distinct": int(r["distinct"])} for r in rows}
    for t in m.topics:
        for p in t.partitions:
            for s in p.segments:
                where = f"{t.name}:{p.partition} run {s.run}"
                if any(f in bad for f in s.files):
                    continue  # already reported per file
                a = actual.get((t.name, p.partition, s.run), {"n": 0, "checksum": ck.ZERO,
                                                             "lo": None, "hi": None, "distinct": 0})
                report.records_checked += a["n"]
                if a["n"] != s.record_count:
                    report.problems.append(Problem(where, f"manifest says {s.record_count} records, "
                                                          f"the files hold {a['n']}"))
                elif a["checksum"] != s.checksum:
                    report.problems.append(Problem(where, f"checksum mismatch: manifest {s.checksum}, "
                                                          f"files {a['checksum']}"))
                if a["distinct"] != a["n"]:
                    report.problems.append(Problem(where, "the files hold duplicate offsets"))
                if a["n"] and (a["lo"] < s.start_offset or a["hi"] >= s.end_offset):
                    report.problems.append(Problem(
                        where, f"offsets {a['lo']}..{a['hi']} fall outside "
                               f"[{s.start_offset}, {s.end_offset})"))
    return report
