"""The driver side of a restore: plan the routes, prepare the target, run the Spark job.

    run_restore(options) -> RestoreResult

1. read the manifest, route each selected source partition to a target partition;
2. create missing target topics (backed-up partition count and configs);
3. record the restore state (target log ends before anything is written) — or, for a rerun of
   the same restore id, check that the options did not change;
4. Spark: one task per route (largest first); each reads its partition's backup files in
   offset order (time window and resume point applied) and produces them
   (`writer.restore_task`), writing the mapping as it goes — no shuffle;
5. record the target log ends after the restore and mark it completed.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from offsetkeeper.errors import KafkaOperationError, OffsetkeeperError, UsageError
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.models import TopicPartition
from offsetkeeper.restore.backup_view import BackupView, load_backup_view
from offsetkeeper.restore.config import RestoreOptions, validate_options
from offsetkeeper.restore.mapping import mapping_root_for, read_mapping
from offsetkeeper.restore.plan import (
    Route,
    TopicToCreate,
    check_existing_targets,
    route_partitions,
    topics_to_create,
)
from offsetkeeper.restore.state import RestoreState, RouteState, load_state, save_state
from offsetkeeper.restore.writer import WriterConfig, restore_task


@dataclass
class RestoreResult:
    restore_id: str
    backup_id: str
    destination: str
    dry_run: bool
    partitions: list[dict[str, Any]] = field(default_factory=list)
    created_topics: list[dict[str, Any]] = field(default_factory=list)
    records: int = 0
    bytes: int = 0
    seconds: float = 0.0
    resumed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def task_error(exc: Exception, restore_id: str) -> OffsetkeeperError:
    """One sentence for a failed Spark job: the writer's own message when there is one."""
    text = str(exc)
    m = re.search(r"RestoreWriteError: ([^\n]+)", text)
    if m:
        detail = m.group(1).strip()
    else:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        detail = next((ln for ln in lines if "Error" in ln or "Exception" in ln), lines[0] if lines else type(exc).__name__)
    return KafkaOperationError(f"restore {restore_id} stopped: {detail}; fix the cause and rerun with "
                               f"--restore-id {restore_id} to continue")


def new_restore_id() -> str:
    return "restore-" + datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")[:-4]


def _selected_records(spark, o: RestoreOptions, view: BackupView, routes: list[Route],
                      resume_after: dict[TopicPartition, int]):
    """The backup rows to write, with target_topic/target_partition columns."""
    from pyspark.sql import functions as F

    from offsetkeeper.backup.manifest import read_backup_records

    rows = [(r.source.topic, r.source.partition, r.target.topic, r.target.partition,
             resume_after.get(r.source, -1)) for r in routes]
    routes_df = spark.createDataFrame(
        rows, "topic string, partition int, target_topic string, target_partition int, resume_after long")
    df = read_backup_records(spark, o.destination, o.backup_id, manifest=view.manifest)
    df = df.join(F.broadcast(routes_df), ["topic", "partition"])
    df = df.where(F.col("offset") > F.col("resume_after"))
    if o.from_time_ms is not None:
        df = df.where(F.col("timestamp") >= F.lit(o.from_time_ms))
    if o.to_time_ms is not None:
        df = df.where(F.col("timestamp") < F.lit(o.to_time_ms))
    return df


def _task_specs(view: BackupView, routes: list[Route], resume_after: dict[TopicPartition, int],
                n_tasks: int) -> list[tuple[str]]:
    """`n_tasks` task specs (JSON): each a list of routes with their backup files (absolute) and
    resume point, balanced by record count (largest first). One producer serves a task's routes."""
    import json

    from offsetkeeper.backup.manifest import backup_dir, join

    base = backup_dir(view.destination, view.backup_id)
    sized = []
    for r in routes:
        entry = view.manifest.topic(r.source.topic).partition(r.source.partition) if view.manifest else None
        files = [join(base, f) for seg in (entry.segments if entry else []) for f in seg.files]
        sized.append((entry.record_count if entry else 0, {
            "source_topic": r.source.topic, "source_partition": r.source.partition,
            "target_topic": r.target.topic, "target_partition": r.target.partition,
            "files": files, "resume_after": resume_after.get(r.source, -1)}))
    bins: list[tuple[int, list[dict]]] = [(0, []) for _ in range(n_tasks)]
    for size, spec in sorted(sized, key=lambda x: -x[0]):
        i = min(range(n_tasks), key=lambda j: bins[j][0])
        bins[i] = (bins[i][0] + size, [*bins[i][1], spec])
    return [(json.dumps(routes),) for _, routes in bins if routes]


def _dry_run_rows(df) -> list[dict[str, Any]]:
    from pyspark.sql import functions as F

    size = F.coalesce(F.length("key"), F.lit(0)) + F.coalesce(F.length("value"), F.lit(0))
    agg = (df.groupBy("topic", "partition", "target_topic", "target_partition")
           .agg(F.count(F.lit(1)).alias("records"), F.sum(size).alias("bytes"),
                F.min("offset").alias("first_source"), F.max("offset").alias("last_source"),
                F.min("timestamp").alias("first_timestamp"), F.max("timestamp").alias("last_timestamp"))
           .collect())
    return [{"source_topic": r["topic"], "source_partition": r["partition"],
             "target_topic": r["target_topic"], "target_partition": r["target_partition"],
             "records": r["records"], "bytes": int(r["bytes"] or 0),
             "first_source": r["first_source"], "last_source": r["last_source"],
             "first_timestamp": r["first_timestamp"], "last_timestamp": r["last_timestamp"]}
            for r in agg]


def _prepare_state(o: RestoreOptions, restore_id: str, routes: list[Route],
                   admin: KafkaAdmin) -> tuple[RestoreState, bool]:
    state = load_state(o.destination, o.backup_id, restore_id)
    if state is not None:
        _check_same(state, o, routes, restore_id)
        return state, True
    ends = admin.watermarks([r.target for r in routes])
    state = RestoreState(
        restore_id=restore_id, backup_id=o.backup_id, target_cluster=o.target.bootstrap_servers,
        fingerprint=o.fingerprint(),
        routes=[RouteState(r.source.topic, r.source.partition, r.target.topic, r.target.partition,
                           ends[r.target].high) for r in routes])
    return state, False


def _check_same(state: RestoreState, o: RestoreOptions, routes: list[Route], restore_id: str) -> None:
    """A rerun must select the same records and routes as the restore it continues."""
    if state.fingerprint != o.fingerprint():
        raise UsageError(f"restore '{restore_id}' was started with different options "
                         f"({_diff(state.fingerprint, o.fingerprint())}); rerun it with the same "
                         "options or use a new --restore-id")
    if sorted(state.route_map().items()) != sorted((r.source, r.target) for r in routes):
        raise UsageError(f"restore '{restore_id}' was started with other topics or partitions; "
                         "rerun it with the same options or use a new --restore-id")


def _diff(a: dict, b: dict) -> str:
    keys = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return ", ".join(f"{k}: {a.get(k)!r} then, {b.get(k)!r} now" for k in keys[:2])


def _create_topics(admin: KafkaAdmin, creates: list[TopicToCreate], rf: int) -> list[dict[str, Any]]:
    out = []
    for t in creates:
        admin.create_topic(t.name, t.partitions, replication_factor=rf, configs=t.configs)
        out.append({"topic": t.name, "partitions": t.partitions, "configs": t.configs,
                    "from": t.source_topic})
    return out


def run_restore(o: RestoreOptions, *, spark=None) -> RestoreResult:
    """Restore (or, with `dry_run`, describe restoring) a backup to the target cluster."""
    validate_options(o)
    t0 = time.monotonic()
    view = load_backup_view(o.destination, o.backup_id)
    routes = route_partitions(view, o)
    restore_id = o.restore_id or new_restore_id()
    result = RestoreResult(restore_id, o.backup_id, o.destination, o.dry_run)
    root = mapping_root_for(o.destination, o.backup_id, restore_id)

    with KafkaAdmin(o.target) as admin:
        existing = admin.topic_partitions()
        check_existing_targets(routes, existing)
        creates = topics_to_create(view, routes, existing)
        if creates and not o.create_topics:
            raise UsageError(f"target topic '{creates[0].name}' does not exist; create it or drop "
                             "--no-create-topics")
        prior = load_state(o.destination, o.backup_id, restore_id)
        if prior is not None and prior.status == "completed" and not o.dry_run:
            # nothing left to do; do not touch the target (it may have moved on since)
            _check_same(prior, o, routes, restore_id)
            result.resumed = True
            result.partitions = [{"source_topic": s.source_topic, "source_partition": s.source_partition,
                                  "target_topic": s.target_topic, "target_partition": s.target_partition,
                                  "records": 0, "recovered": 0, "skipped": 0, "bytes": 0,
                                  "target_log_end": s.end_log_end} for s in prior.routes]
            result.seconds = round(time.monotonic() - t0, 3)
            return result
        resume_after: dict[TopicPartition, int] = {}
        if prior is not None:
            for r in routes:
                so = read_mapping(root, r.source).column("source_offset").to_pylist()
                if so:
                    resume_after[r.source] = so[-1]
        if spark is None:
            from offsetkeeper.spark.session import get_spark

            spark = get_spark(o.master, o.spark_conf, app_name=f"offsetkeeper-restore-{restore_id}")

        if o.dry_run:
            df = _selected_records(spark, o, view, routes, resume_after)
            result.created_topics = [{"topic": t.name, "partitions": t.partitions, "configs": t.configs,
                                      "from": t.source_topic, "would_create": True} for t in creates]
            result.partitions = sorted(_dry_run_rows(df), key=lambda r: (r["target_topic"], r["target_partition"]))
            result.records = sum(r["records"] for r in result.partitions)
            result.bytes = sum(r["bytes"] for r in result.partitions)
            result.resumed = prior is not None
            result.seconds = round(time.monotonic() - t0, 3)
            return result

        result.created_topics = _create_topics(admin, creates, o.replication_factor)
        state, result.resumed = _prepare_state(o, restore_id, routes, admin)
        state.status, state.runs, state.finished_at_ms = "running", state.runs + 1, None
        save_state(o.destination, o.backup_id, state)

        n_slots = max(1, min(len(routes), spark.sparkContext.defaultParallelism))
        client = o.target.client_config()
        cfg = WriterConfig(
            restore_id=restore_id,
            mapping_root=root,
            producer_conf={**client, **dict(o.producer_properties)},
            consumer_conf=client,
            offset_headers=o.offset_headers,
            chunk_records=o.chunk_records,
            start_log_ends={f"{s.target_topic}:{s.target_partition}": s.start_log_end for s in state.routes},
            records_per_second=o.records_per_second / n_slots if o.records_per_second else None,
            bytes_per_second=o.bytes_per_second / n_slots if o.bytes_per_second else None,
            from_time_ms=o.from_time_ms,
            to_time_ms=o.to_time_ms,
        )
        specs = _task_specs(view, routes, resume_after, n_slots)
        try:
            rows = (spark.sparkContext.parallelize([s for (s,) in specs], len(specs))
                    .mapPartitions(partial(restore_task, cfg)).collect())
        except Exception as exc:
            if type(exc).__module__.startswith(("pyspark", "py4j")):
                raise task_error(exc, restore_id) from None
            raise

        ends = admin.watermarks([r.target for r in routes])
        for s in state.routes:
            s.end_log_end = ends[s.target].high
        state.status, state.finished_at_ms = "completed", int(time.time() * 1000)
        save_state(o.destination, o.backup_id, state)

    by_route = {(r["source_topic"], r["source_partition"]): r for r in rows}
    for s in state.routes:
        r = by_route.get((s.source_topic, s.source_partition)) or {
            "source_topic": s.source_topic, "source_partition": s.source_partition,
            "target_topic": s.target_topic, "target_partition": s.target_partition,
            "records": 0, "recovered": 0, "skipped": 0, "bytes": 0}
        r["target_log_end"] = s.end_log_end
        result.partitions.append(r)
    result.records = sum(r["records"] for r in result.partitions)
    result.bytes = sum(r["bytes"] for r in result.partitions)
    result.seconds = round(time.monotonic() - t0, 3)
    return result
