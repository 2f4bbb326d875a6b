"""`run_backup`: one run of a backup (first or incremental) on Spark.

Steps: select topics; fix the end offset of every partition (the snapshot); capture the
committed offsets of every group with offsets on those topics and the topics' configs; read
the planned ranges with the ``offsetkeeper-kafka`` data source and write them as zstd Parquet
to ``data/run=N/topic=T/partition=P``; recompute counts, checksums and timestamps from the
written files; write the manifest last, atomically. A run that fails before the manifest is
written leaves the previous backup intact (its files are ignored and overwritten next time).
"""

from __future__ import annotations

import contextlib
import posixpath
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from offsetkeeper.backup import checksum as ck
from offsetkeeper.backup.config import BackupConfig
from offsetkeeper.backup.manifest import (
    Gap,
    GroupOffset,
    GroupOffsets,
    Manifest,
    PartitionEntry,
    RunInfo,
    Segment,
    SourceInfo,
    TopicEntry,
    backup_dir,
    join,
    load_manifest,
    manifest_exists,
    now_iso,
    save_manifest,
)
from offsetkeeper.backup.plan import RunPlan, plan_run
from offsetkeeper.backup.topics import select_topics
from offsetkeeper.errors import OffsetkeeperError, StoreError, UnknownGroupError, UsageError
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.models import TopicPartition


@dataclass(frozen=True)
class BackupProgress:
    """Sent to the `progress` callback while a run is going."""

    phase: str  # planning | reading | summarising | done
    partitions_done: int
    partitions_total: int
    records: int
    offsets_total: int


@dataclass(frozen=True)
class BackupResult:
    backup_id: str
    location: str
    run: int
    records: int  # records written by this run
    partitions: int  # partitions read by this run (with new offsets)
    bytes_written: int
    gaps: list[tuple[str, int, Gap]]
    manifest: Manifest
    seconds_total: float
    seconds_spark_start: float
    timings: dict[str, float] = field(default_factory=dict)
    topics: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        return {
            "backup_id": self.backup_id, "location": self.location, "run": self.run,
            "topics": self.topics, "partitions_read": self.partitions, "records": self.records,
            "bytes_written": self.bytes_written,
            "gaps": [{"topic": t, "partition": p, "start": g.start, "end": g.end}
                     for t, p, g in self.gaps],
            "total_records": self.manifest.record_count,
            "seconds": round(self.seconds_total, 2),
            "seconds_spark_start": round(self.seconds_spark_start, 2),
            "timings": {k: round(v, 2) for k, v in self.timings.items()},
        }


ProgressFn = Callable[[BackupProgress], None]


@dataclass
class _Facts:
    partitions: dict[str, list[int]]
    log_start: dict[tuple[str, int], int]
    log_end: dict[tuple[str, int], int]
    configs: dict[str, dict[str, str]]
    groups: list[GroupOffsets]
    cluster_id: str


def _gather(admin: KafkaAdmin, config: BackupConfig, run: int) -> _Facts:
    available = admin.topic_partitions()  # internal topics (__*) are never backed up
    topics = select_topics(available, config.include, config.exclude)
    if not topics:
        raise UsageError(f"no topic matches {', '.join(config.include)}"
                         + (f" (excluding {', '.join(config.exclude)})" if config.exclude else ""))
    parts = {t: available[t] for t in topics}
    tps = [TopicPartition(t, p) for t in topics for p in parts[t]]
    # the snapshot: end offsets first, then the groups' committed offsets
    ends = admin.end_offsets(tps, read_committed=True)
    wm = admin.watermarks(tps)
    captured = now_iso()
    groups = _group_offsets(admin, set(topics), captured, run)
    configs = admin.topic_configs(topics)
    try:
        cluster_id = admin.cluster_id()
    except OffsetkeeperError:
        cluster_id = ""
    return _Facts(
        partitions=parts,
        log_start={(tp.topic, tp.partition): wm[tp].low for tp in tps},
        log_end={(tp.topic, tp.partition): ends[tp] for tp in tps},
        configs=configs, groups=groups, cluster_id=cluster_id,
    )


def _group_offsets(admin: KafkaAdmin, topics: set[str], captured: str, run: int) -> list[GroupOffsets]:
    out = []
    listing = [g.group_id for g in admin.list_groups()]
    futures = {g: admin.committed_offsets_async(g) for g in listing}
    fetched = {}
    for gid, fut in futures.items():
        try:
            fetched[gid] = admin.committed_result(gid, fut)
        except UnknownGroupError:  # deleted since it was listed: it has no offsets to keep
            continue
    for gid, offs in sorted(fetched.items()):
        mine = sorted((tp, o) for tp, o in offs.items() if tp.topic in topics)
        if mine:
            out.append(GroupOffsets(group=gid, captured_at=captured, run=run, offsets=[
                GroupOffset(topic=tp.topic, partition=tp.partition, offset=o.offset,
                            metadata=o.metadata) for tp, o in mine]))
    return out


def _source_options(config: BackupConfig, plan: RunPlan, report_path: str) -> dict[str, str]:
    import json

    todo = plan.to_read
    assign: dict[str, list[int]] = {}
    start: dict[str, dict[str, int]] = {}
    end: dict[str, dict[str, int]] = {}
    for p in todo:
        assign.setdefault(p.topic, []).append(p.partition)
        start.setdefault(p.topic, {})[str(p.partition)] = p.start
        end.setdefault(p.topic, {})[str(p.partition)] = p.end
    opts = {f"kafka.{k}": v for k, v in config.connection.client_config().items()}
    opts["kafka.isolation.level"] = "read_committed"
    opts.update({
        "assign": json.dumps(assign),
        "startingOffsets": json.dumps(start),
        "endingOffsets": json.dumps(end),
        "reportPath": report_path,
        "failOnDataLoss": "false",
    })
    if config.max_records_per_task:
        opts["maxRecordsPerPartition"] = str(config.max_records_per_task)
    if config.min_partitions:
        opts["minPartitions"] = str(config.min_partitions)
    return opts


class _ProgressWatcher:
    """Polls the task reports and tells the progress callback how far the read is."""

    def __init__(self, fn: ProgressFn | None, plan: RunPlan, report_path: str) -> None:
        self.fn, self.plan, self.path = fn, plan, report_path
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self.sizes = {(p.topic, p.partition): p.size for p in plan.to_read}

    def snapshot(self, phase: str) -> BackupProgress:
        from offsetkeeper.spark.kafka_source import read_reports

        covered: dict[tuple[str, int], int] = {}
        records = 0
        for r in read_reports(self.path):
            key = (r["topic"], r["partition"])
            covered[key] = covered.get(key, 0) + (r["end"] - r["start"])
            records += r["records"]
        done = sum(1 for k, n in self.sizes.items() if covered.get(k, 0) >= n)
        return BackupProgress(phase, done, len(self.sizes), records, self.plan.offsets)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            with contextlib.suppress(Exception):  # progress must never break the run
                self.fn(self.snapshot("reading"))

    def __enter__(self) -> _ProgressWatcher:
        if self.fn:
            self.fn(BackupProgress("reading", 0, len(self.sizes), 0, self.plan.offsets))
            self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._t.is_alive():
            self._t.join(5)


# Up to this many partitions per run, the statistics are computed while writing (one pass,
# Spark's observe()); above it, by reading the written files back.
OBSERVE_MAX_PARTITIONS = 64


def _observed(df, keys: list[tuple[str, int]]):
    """Attach per-partition record count and checksum metrics to the write (one pass); the
    readers report first/last offsets and timestamps themselves."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    h = ck.hash_column().cast("decimal(20,0)")
    exprs = []
    for i, (t, p) in enumerate(keys):
        cond = (F.col("topic") == F.lit(t)) & (F.col("partition") == F.lit(p))
        exprs += [F.count(F.when(cond, F.col("offset"))).alias(f"n{i}"),
                  F.sum(F.when(cond, h)).alias(f"s{i}")]
    obs = Observation("offsetkeeper_backup")
    return df.observe(obs, *exprs), obs


def _observed_stats(obs, keys: list[tuple[str, int]], reports: list[dict]) -> dict[tuple[str, int], dict]:
    m = obs.get
    by_tp: dict[tuple[str, int], list[dict]] = {}
    for r in reports:
        by_tp.setdefault((r["topic"], r["partition"]), []).append(r)
    out = {}
    for i, key in enumerate(keys):
        n = int(m.get(f"n{i}") or 0)
        if not n:
            continue
        rs = sorted((r for r in by_tp.get(key, []) if r["records"]), key=lambda r: r["start"])
        out[key] = {"n": n, "checksum": ck.to_hex(int(m.get(f"s{i}") or 0)),
                    "first_offset": rs[0]["first_offset"] if rs else None,
                    "last_offset": rs[-1]["last_offset"] if rs else None,
                    "first_ts": rs[0].get("first_timestamp") if rs else None,
                    "last_ts": rs[-1].get("last_timestamp") if rs else None}
    return out


def _summarise(spark, run_dir: str) -> dict[tuple[str, int], dict]:
    """Count, checksum, first/last offset and timestamp per partition, from the written files."""
    from pyspark.sql import functions as F

    from offsetkeeper.backup.manifest import RECORD_DDL

    df = spark.read.schema(RECORD_DDL).parquet(run_dir)
    h = ck.hash_column().cast("decimal(20,0)")
    rows = df.groupBy("topic", "partition").agg(
        F.count(F.lit(1)).alias("n"), F.sum(h).alias("s"),
        F.min("offset").alias("first_offset"), F.max("offset").alias("last_offset"),
        F.min_by("timestamp", "offset").alias("first_ts"),
        F.max_by("timestamp", "offset").alias("last_ts"),
    ).collect()
    return {(r["topic"], r["partition"]): {
        "n": int(r["n"]), "checksum": ck.to_hex(int(r["s"] or 0)),
        "first_offset": r["first_offset"], "last_offset": r["last_offset"],
        "first_ts": r["first_ts"], "last_ts": r["last_ts"]} for r in rows}


def _list_files(base: str, run: int) -> tuple[dict[tuple[str, int], list[str]], int]:
    """Data files of run N per (topic, partition), relative to the backup dir; total bytes."""
    import fsspec

    fs, root = fsspec.core.url_to_fs(base)
    run_root = posixpath.join(root, "data", f"run={run}")
    out: dict[tuple[str, int], list[str]] = {}
    total = 0
    if not fs.exists(run_root):
        return out, 0
    for path, info in fs.find(run_root, detail=True).items():
        if not path.endswith(".parquet"):
            continue
        rel = posixpath.relpath(path, root)
        parts = rel.split("/")  # data/run=N/topic=T/partition=P/file
        if len(parts) != 5:
            continue
        topic = _unescape(parts[2].split("=", 1)[1])
        partition = int(parts[3].split("=", 1)[1])
        out.setdefault((topic, partition), []).append(rel)
        total += int(info.get("size") or 0)
    return {k: sorted(v) for k, v in out.items()}, total


def _unescape(s: str) -> str:
    from urllib.parse import unquote

    return unquote(s)


def _clear(url: str) -> None:
    import fsspec

    fs, root = fsspec.core.url_to_fs(url)
    if fs.exists(root):
        fs.rm(root, recursive=True)


def run_backup(config: BackupConfig, *, spark=None, progress: ProgressFn | None = None) -> BackupResult:
    """Run one backup (first or incremental) and return what it did; the manifest is written last."""
    t0 = time.monotonic()
    notify = progress or (lambda _p: None)
    notify(BackupProgress("planning", 0, 0, 0, 0))
    base = backup_dir(config.destination, config.backup_id)
    previous = load_manifest(config.destination, config.backup_id) if manifest_exists(
        config.destination, config.backup_id) else None
    started = now_iso()
    run_no = (previous.last_run if previous else 0) + 1
    with KafkaAdmin(config.connection) as admin:
        facts = _gather(admin, config, run_no)
    timings = {"plan": time.monotonic() - t0}
    plan = plan_run(previous, facts.partitions, log_start=facts.log_start, log_end=facts.log_end)

    run_dir = join(base, "data", f"run={plan.run}")
    work_dir = join(base, "_work", f"run={plan.run}")
    report_path = join(work_dir, "reports")
    _clear(run_dir)
    _clear(work_dir)

    spark_seconds = 0.0
    stats: dict[tuple[str, int], dict] = {}
    reports: list[dict] = []
    if plan.to_read:
        if spark is None:
            from offsetkeeper.spark.session import get_spark

            ts = time.monotonic()
            spark = get_spark(config.master, config.spark_conf, app_name=f"offsetkeeper backup {config.backup_id}")
            spark_seconds = time.monotonic() - ts
        from offsetkeeper.spark.kafka_source import SOURCE_NAME, read_reports, register

        register(spark)
        tj = time.monotonic()
        opts = _source_options(config, plan, report_path)
        with _ProgressWatcher(progress, plan, report_path):
            df = spark.read.format(SOURCE_NAME).options(**opts).load()
            keys = [(p.topic, p.partition) for p in plan.to_read]
            observation = None
            if len(keys) <= OBSERVE_MAX_PARTITIONS:
                df, observation = _observed(df, keys)
            (df.sortWithinPartitions("topic", "partition", "offset")
             .write.mode("overwrite").option("compression", "zstd")
             .partitionBy("topic", "partition").parquet(run_dir))
        timings["spark_job"] = time.monotonic() - tj
        reports = read_reports(report_path)
        notify(BackupProgress("summarising", len(plan.to_read), len(plan.to_read),
                              sum(r["records"] for r in reports), plan.offsets))
        if observation is not None:
            stats = _observed_stats(observation, keys, reports)
        else:
            files_exist = _list_files(base, plan.run)[0]
            stats = _summarise(spark, run_dir) if files_exist else {}
    tf = time.monotonic()
    files, nbytes = _list_files(base, plan.run)

    gaps_by_tp: dict[tuple[str, int], list[Gap]] = {}
    reported: dict[tuple[str, int], int] = {}
    for r in reports:
        key = (r["topic"], r["partition"])
        reported[key] = reported.get(key, 0) + r["records"]
        for s, e in r["gaps"]:
            gaps_by_tp.setdefault(key, []).append(Gap(start=s, end=e))
    for key, n in reported.items():
        got = stats.get(key, {}).get("n", 0)
        if got != n:
            raise StoreError(f"{key[0]}:{key[1]}: the readers delivered {n} records but {got} "
                             f"were written; the run is not recorded", topic=key[0], partition=key[1])

    manifest = _updated_manifest(previous, config, facts, plan, stats, files, gaps_by_tp, started)
    save_manifest(config.destination, manifest)
    timings["finish"] = time.monotonic() - tf
    _clear(work_dir)
    records = sum(s["n"] for s in stats.values())
    notify(BackupProgress("done", len(plan.to_read), len(plan.to_read), records, plan.offsets))
    return BackupResult(
        backup_id=config.backup_id, location=base, run=plan.run, records=records,
        partitions=len(plan.to_read), bytes_written=nbytes,
        gaps=[(t, p, g) for (t, p), gs in sorted(gaps_by_tp.items()) for g in gs],
        manifest=manifest, seconds_total=time.monotonic() - t0, seconds_spark_start=spark_seconds,
        timings=timings,
        topics=sorted(facts.partitions),
    )


def _updated_manifest(previous: Manifest | None, config: BackupConfig, facts: _Facts, plan: RunPlan,
                      stats: dict, files: dict, gaps: dict, started: str) -> Manifest:
    now = now_iso()
    m = previous.model_copy(deep=True) if previous else Manifest(
        backup_id=config.backup_id, created_at=started, updated_at=now,
        source=SourceInfo(bootstrap_servers=config.connection.bootstrap_servers,
                          cluster_id=facts.cluster_id),
        include=list(config.include), exclude=list(config.exclude))
    m.updated_at = now
    m.include, m.exclude = list(config.include), list(config.exclude)
    for pp in plan.partitions:
        topic = m.topic(pp.topic)
        if topic is None:
            topic = TopicEntry(name=pp.topic, partition_count=len(facts.partitions[pp.topic]))
            m.topics.append(topic)
        topic.partition_count = len(facts.partitions[pp.topic])
        topic.configs = facts.configs.get(pp.topic, {})
        entry = topic.partition(pp.partition)
        if entry is None:
            entry = PartitionEntry(partition=pp.partition, start_offset=pp.start, end_offset=pp.start)
            topic.partitions.append(entry)
        if pp.size > 0:
            st = stats.get((pp.topic, pp.partition), {})
            entry.segments.append(Segment(
                run=plan.run, start_offset=pp.start, end_offset=pp.end,
                record_count=st.get("n", 0), checksum=st.get("checksum", ck.ZERO),
                first_offset=st.get("first_offset"), last_offset=st.get("last_offset"),
                first_timestamp=st.get("first_ts"), last_timestamp=st.get("last_ts"),
                gaps=gaps.get((pp.topic, pp.partition), []),
                files=files.get((pp.topic, pp.partition), []),
            ))
            entry.recompute_totals()
        topic.partitions.sort(key=lambda e: e.partition)
    m.topics.sort(key=lambda t: t.name)
    m.groups = facts.groups
    m.runs.append(RunInfo(run=plan.run, started_at=started, finished_at=now,
                          record_count=sum(s["n"] for s in stats.values()),
                          partitions=len(plan.to_read)))
    return m
