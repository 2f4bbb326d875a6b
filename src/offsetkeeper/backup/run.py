"""`run_backup`: one run of a backup (first or incremental) on Spark.

Steps: select topics; fix the end offset of every partition (the snapshot); capture the
committed offsets of every group with offsets on those topics and the topics' configs; read
the planned ranges in Spark tasks of our own (`offsetkeeper.backup.task`: confluent-kafka in,
pyarrow zstd Parquet out, to ``data/run=N/topic=T/partition=P``; run by `offsetkeeper.spark.tasks`
on classic Spark or Spark Connect), each task returning its
record count, first/last offset and timestamp, checksum, gaps and files; write the manifest
last, atomically. A run that fails before the manifest is written leaves the previous backup
intact (its files are ignored and overwritten next time).
"""

from __future__ import annotations

import json
import posixpath
import time
from dataclasses import dataclass, field
from functools import partial

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
from offsetkeeper.backup.plan import RunPlan, cap_plan, plan_run
from offsetkeeper.backup.task import BackupTaskConfig, backup_task, spec_context
from offsetkeeper.backup.topics import select_topics
from offsetkeeper.errors import OffsetkeeperError, StoreError, UnknownGroupError, UsageError
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.kafka.ports import AdminPort, KafkaPort
from offsetkeeper.models import TopicPartition
from offsetkeeper.progress import ProgressEvent, ProgressFn, ProgressPoller, no_progress
from offsetkeeper.records.ranges import OffsetRange, split_ranges
from offsetkeeper.records.read import ReadOptions
from offsetkeeper.spark.task_failure import guarded, raise_failures
from offsetkeeper.spark.tasks import run_tasks, task_slots


def _event(backup_id: str, phase: str, done: int, total: int | None, records: int) -> ProgressEvent:
    """A backup's progress: partitions done of total; the phase and records read as message."""
    return ProgressEvent(f"backup {backup_id}", done, total or None, "partitions",
                         f"{phase}, {records:,} records")


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
    # False: nothing new since the previous run, so nothing was written (`skip_unchanged`)
    recorded: bool = True
    bytes_by_partition: dict[tuple[str, int], int] = field(default_factory=dict)
    offsets_by_partition: dict[tuple[str, int], int] = field(default_factory=dict)  # range sizes

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
            "recorded": self.recorded,
        }


@dataclass
class _Facts:
    partitions: dict[str, list[int]]
    log_start: dict[tuple[str, int], int]
    log_end: dict[tuple[str, int], int]
    configs: dict[str, dict[str, str]]
    groups: list[GroupOffsets]
    cluster_id: str


def _gather(admin: KafkaPort, config: BackupConfig, run: int) -> _Facts:
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


def _group_offsets(admin: AdminPort, topics: set[str], captured: str, run: int) -> list[GroupOffsets]:
    out = []
    listing = [g.group_id for g in admin.list_groups()]
    fetched = {}
    for gid, res in admin.committed_offsets_each(listing).items():
        if isinstance(res, UnknownGroupError):  # deleted since it was listed: no offsets to keep
            continue
        if isinstance(res, Exception):
            raise res
        fetched[gid] = res
    for gid, offs in sorted(fetched.items()):
        mine = sorted((tp, o) for tp, o in offs.items() if tp.topic in topics)
        if mine:
            out.append(GroupOffsets(group=gid, captured_at=captured, run=run, offsets=[
                GroupOffset(topic=tp.topic, partition=tp.partition, offset=o.offset,
                            metadata=o.metadata or "") for tp, o in mine]))
    return out


def _task_ranges(config: BackupConfig, plan: RunPlan) -> list[OffsetRange]:
    """The planned ranges, split into tasks (``--max-records-per-task``, ``min_partitions``)."""
    ranges = [OffsetRange(p.topic, p.partition, p.start, p.end) for p in plan.to_read]
    return split_ranges(ranges, min_partitions=config.min_partitions,
                        max_records=config.max_records_per_task)


def _balanced_specs(ranges: list[OffsetRange], slots: int) -> list[str]:
    """One task per Spark slot (at most one per range), ranges balanced by size, largest first;
    each task gets a JSON list of range specs and works on several ranges at once."""
    bins: list[tuple[int, list[list]]] = [(0, []) for _ in range(max(1, min(slots, len(ranges))))]
    for r in sorted(ranges, key=lambda r: -r.size):
        i = min(range(len(bins)), key=lambda j: bins[j][0])
        bins[i] = (bins[i][0] + r.size, [*bins[i][1], [r.topic, r.partition, r.start, r.end]])
    return [json.dumps(specs) for _, specs in bins if specs]


def _task_config(config: BackupConfig, run_dir: str, report_path: str) -> BackupTaskConfig:
    kafka = dict(config.connection.client_config())
    kafka["isolation.level"] = "read_committed"
    # librdkafka prefetches up to 64 MB per consumer by default; a task reads several ranges
    kafka.setdefault("queued.max.messages.kbytes", "16384")
    return BackupTaskConfig(read=ReadOptions(kafka=kafka), run_dir=run_dir, report_path=report_path)


def _read_progress(backup_id: str, plan: RunPlan, report_path: str) -> ProgressEvent:
    """How far the read is, from the task reports: partitions fully read, records read."""
    from offsetkeeper.records.reports import read_reports

    sizes = {(p.topic, p.partition): p.size for p in plan.to_read}
    covered: dict[tuple[str, int], int] = {}
    records = 0
    for r in read_reports(report_path):
        key = (r["topic"], r["partition"])
        covered[key] = covered.get(key, 0) + (r["end"] - r["start"])
        records += r["records"]
    done = sum(1 for k, n in sizes.items() if covered.get(k, 0) >= n)
    return _event(backup_id, "reading", done, len(sizes), records)


def _task_stats(rows: list[dict]) -> dict[tuple[str, int], dict]:
    """First/last offset and timestamp and record count per partition, from the task summaries."""
    by_tp: dict[tuple[str, int], list[dict]] = {}
    for r in rows:
        by_tp.setdefault((r["topic"], r["partition"]), []).append(r)
    out = {}
    for key, rs in by_tp.items():
        rs = sorted((r for r in rs if r["records"]), key=lambda r: r["start"])
        if not rs:
            continue
        out[key] = {"n": sum(r["records"] for r in rs),
                    "checksum": ck.add(*(r["checksum"] for r in rs)),
                    "first_offset": rs[0]["first_offset"], "last_offset": rs[-1]["last_offset"],
                    "first_ts": rs[0]["first_timestamp"], "last_ts": rs[-1]["last_timestamp"]}
    return out


def _check_files(files: dict[tuple[str, int], list[str]], reports: list[dict]) -> None:
    """The data files of the run are exactly the ones the tasks reported."""
    reported: dict[tuple[str, int], set[str]] = {}
    for r in reports:
        reported.setdefault((r["topic"], r["partition"]), set()).update(r["files"])
    for key in sorted(set(files) | set(reported)):
        found = {posixpath.basename(f) for f in files.get(key, [])}
        want = reported.get(key, set())
        if found != want:
            odd = sorted(found ^ want)[0]
            raise StoreError(f"{key[0]}:{key[1]}: data file {odd} was "
                             f"{'not reported by a task' if odd in found else 'reported but is missing'}"
                             f"; the run is not recorded", topic=key[0], partition=key[1])


def _job_error(exc: Exception, backup_id: str) -> OffsetkeeperError:
    """One sentence for a Spark job that failed outside the tasks (their failures come back as
    typed TaskFailure rows): the first line of Spark's message."""
    from offsetkeeper.spark.task_failure import one_line

    return StoreError(f"backup {backup_id}: the Spark job failed ({one_line(exc)}); the run is not "
                      f"recorded (rerun it)")


def _list_files(base: str, run: int) -> tuple[dict[tuple[str, int], list[str]],
                                              dict[tuple[str, int], int]]:
    """Data files of run N per (topic, partition), relative to the backup dir; their bytes."""
    import fsspec

    fs, root = fsspec.core.url_to_fs(base)
    run_root = posixpath.join(root, "data", f"run={run}")
    out: dict[tuple[str, int], list[str]] = {}
    sizes: dict[tuple[str, int], int] = {}
    if not fs.exists(run_root):
        return out, sizes
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
        sizes[(topic, partition)] = sizes.get((topic, partition), 0) + int(info.get("size") or 0)
    return {k: sorted(v) for k, v in out.items()}, sizes


def _unescape(s: str) -> str:
    from urllib.parse import unquote

    return unquote(s)


def _clear(url: str) -> None:
    import fsspec

    fs, root = fsspec.core.url_to_fs(url)
    if fs.exists(root):
        fs.rm(root, recursive=True)


def _unchanged(previous: Manifest | None, facts: _Facts, plan: RunPlan) -> bool:
    """Nothing to record: no new offsets, no new partition, the same captured group offsets."""
    if previous is None or plan.to_read:
        return False
    known = {(t.name, p.partition) for t in previous.topics for p in t.partitions}
    counts = {t.name: t.partition_count for t in previous.topics}
    if any((p.topic, p.partition) not in known for p in plan.partitions) or any(
            counts.get(t) != len(ps) for t, ps in facts.partitions.items()):
        return False

    def offsets(groups: list[GroupOffsets]) -> dict:
        return {g.group: [(o.topic, o.partition, o.offset, o.metadata) for o in g.offsets]
                for g in groups}
    return offsets(previous.groups) == offsets(facts.groups)


def run_backup(config: BackupConfig, *, spark=None, progress: ProgressFn | None = None,
               max_offsets: int | None = None, skip_unchanged: bool = False) -> BackupResult:
    """Run one backup (first or incremental) and return what it did; the manifest is written last.

    `max_offsets` caps the offsets this run reads in all (`plan.cap_plan`: the rest is left to
    the next run); with `skip_unchanged` a run that would add nothing (no new offsets or
    partitions, the same group offsets) writes nothing and returns ``recorded=False`` — how
    `backup run --follow` keeps idle intervals out of the manifest."""
    t0 = time.monotonic()
    notify = progress or no_progress
    notify(_event(config.backup_id, "planning", 0, None, 0))
    base = backup_dir(config.destination, config.backup_id)
    previous = load_manifest(config.destination, config.backup_id) if manifest_exists(
        config.destination, config.backup_id) else None
    started = now_iso()
    run_no = (previous.last_run if previous else 0) + 1
    with KafkaAdmin(config.connection) as admin:
        facts = _gather(admin, config, run_no)
    timings = {"plan": time.monotonic() - t0}
    plan = cap_plan(plan_run(previous, facts.partitions, log_start=facts.log_start,
                             log_end=facts.log_end), max_offsets)
    if skip_unchanged and previous is not None and _unchanged(previous, facts, plan):
        return BackupResult(
            backup_id=config.backup_id, location=base, run=previous.last_run, records=0,
            partitions=0, bytes_written=0, gaps=[], manifest=previous,
            seconds_total=time.monotonic() - t0, seconds_spark_start=0.0, timings=timings,
            topics=sorted(facts.partitions), recorded=False)

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
            session_parts: dict[str, float] = {}
            spark = get_spark(config.master, config.spark_conf, warm=config.spark_warm,
                              app_name=f"offsetkeeper backup {config.backup_id}",
                              timings=session_parts)
            spark_seconds = time.monotonic() - ts
            # session start = the JVM session + Spark's Python workers (started before the job)
            timings.update({f"spark_start_{k}": v for k, v in session_parts.items()})
        tj = time.monotonic()
        ranges = _task_ranges(config, plan)
        cfg = _task_config(config, run_dir, report_path)
        specs = _balanced_specs(ranges, task_slots(spark))
        with ProgressPoller(notify, lambda: _read_progress(config.backup_id, plan, report_path),
                            first=_event(config.backup_id, "reading", 0, len(plan.to_read), 0)):
            try:
                rows = run_tasks(spark, partial(guarded, backup_task, cfg, context=spec_context),
                                 specs)
            except Exception as exc:
                if type(exc).__module__.startswith(("pyspark", "py4j")):
                    raise _job_error(exc, config.backup_id) from None
                raise
        reports = raise_failures(rows, StoreError, suffix="; the run is not recorded (rerun it)")
        timings["spark_job"] = time.monotonic() - tj
        notify(_event(config.backup_id, "summarising", len(plan.to_read), len(plan.to_read),
                      sum(r["records"] for r in reports)))
        stats = _task_stats(reports)
    tf = time.monotonic()
    files, sizes = _list_files(base, plan.run)
    _check_files(files, reports)

    gaps_by_tp: dict[tuple[str, int], list[Gap]] = {}
    for r in reports:
        key = (r["topic"], r["partition"])
        for g_start, g_end in r["gaps"]:
            gaps_by_tp.setdefault(key, []).append(Gap(start=g_start, end=g_end))

    manifest = _updated_manifest(previous, config, facts, plan, stats, files, gaps_by_tp, started)
    save_manifest(config.destination, manifest)
    timings["finish"] = time.monotonic() - tf
    _clear(work_dir)
    records = sum(s["n"] for s in stats.values())
    notify(_event(config.backup_id, "done", len(plan.to_read), len(plan.to_read), records))
    return BackupResult(
        backup_id=config.backup_id, location=base, run=plan.run, records=records,
        partitions=len(plan.to_read), bytes_written=sum(sizes.values()),
        gaps=[(t, p, g) for (t, p), gs in sorted(gaps_by_tp.items()) for g in gs],
        manifest=manifest, seconds_total=time.monotonic() - t0, seconds_spark_start=spark_seconds,
        timings=timings,
        topics=sorted(facts.partitions), bytes_by_partition=sizes,
        offsets_by_partition={(p.topic, p.partition): p.size for p in plan.to_read},
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
