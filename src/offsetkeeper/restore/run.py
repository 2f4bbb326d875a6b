"""The driver side of a restore: plan the routes, check everything, prepare the target, run
the Spark job.

    run_restore(options, *, progress=None) -> RestoreResult

1. read the manifest, route each selected source partition to a target partition, and check
   every backup file of those partitions against the manifest (footers: counts, ranges);
2. check the producer/consumer properties by building the clients here, before anything exists;
3. a new restore id refuses target partitions that already hold records (a second copy would
   follow the first) unless `allow_non_empty_target`;
4. create missing target topics (backed-up partition count and configs);
5. record the restore state (target log ends before anything is written) — or, for a rerun of
   the same restore id, check that the options did not change;
6. Spark: one task per group of routes (largest first); each reads its partitions' backup files
   in offset order, checked against the manifest as they are read (`backup/read.py`), and
   produces them (`produce.restore_task`), writing the mapping as it goes — no shuffle. A failed
   task returns a typed TaskFailure; the state is marked failed with its one-sentence reason;
7. record the target log ends after the restore and mark it completed.

A dry run (`dry_run`) does steps 1–3 and counts what would be written with pyarrow: no Spark.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from offsetkeeper.backup.manifest import Manifest
from offsetkeeper.backup.read import Selection, check_segments, partition_segments, selection_stats
from offsetkeeper.errors import OffsetkeeperError, RestoreWriteError, UsageError
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.kafka.ports import AdminPort, LogOffsetsPort, TopicsPort
from offsetkeeper.models import TopicPartition
from offsetkeeper.progress import ProgressEvent, ProgressFn, ProgressPoller, no_progress
from offsetkeeper.restore.backup_view import BackupView, load_backup_view
from offsetkeeper.restore.config import RestoreOptions, restore_compression, validate_options
from offsetkeeper.restore.mapping import check_route_rows, mapping_root_for, read_mapping
from offsetkeeper.restore.paths import backup_root
from offsetkeeper.restore.plan import (
    Route,
    TopicToCreate,
    check_existing_targets,
    route_partitions,
    topics_to_create,
)
from offsetkeeper.restore.produce import restore_task
from offsetkeeper.restore.resume import (
    WriterConfig,
    consumer_config,
    producer_config,
    read_progress,
)
from offsetkeeper.restore.state import (
    RestoreState,
    RestoreStatus,
    RouteState,
    load_state,
    save_state,
)
from offsetkeeper.spark.task_failure import guarded, raise_failures
from offsetkeeper.spark.tasks import run_tasks, task_slots
from offsetkeeper.storage import join
from offsetkeeper.times import id_stamp


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


def new_restore_id() -> str:
    """`restore-20261121T194501.123Z`: ids sort by time (see `offsetkeeper.times.id_stamp`)."""
    return "restore-" + id_stamp()


def _segments(view: BackupView, source: TopicPartition):
    if view.manifest is None:
        return []
    return partition_segments(backup_root(view.destination, view.backup_id), view.manifest,
                              source.topic, source.partition)


def _task_specs(view: BackupView, routes: list[Route], resume_after: dict[TopicPartition, int],
                n_tasks: int) -> list[tuple[str]]:
    """`n_tasks` task specs (JSON): each a list of routes with their backup segments (files,
    absolute, with what the manifest says about them) and resume point, balanced by record count
    (largest first). One producer serves a task's routes."""
    import json

    sized = []
    for r in routes:
        entry = view.manifest.topic(r.source.topic).partition(r.source.partition) if view.manifest else None
        # a full Manifest sends the segments (checked reads); a stand-in only the files
        segs = _segments(view, r.source) if isinstance(view.manifest, Manifest) else []
        base = backup_root(view.destination, view.backup_id)
        files = [join(base, f) for seg in (entry.segments if entry else []) for f in seg.files]
        spec = {"source_topic": r.source.topic, "source_partition": r.source.partition,
                "target_topic": r.target.topic, "target_partition": r.target.partition,
                "files": files, "resume_after": resume_after.get(r.source, -1)}
        if segs:
            spec["segments"] = [sg.to_dict() for sg in segs]
        sized.append((entry.record_count if entry else 0, spec))
    bins: list[tuple[int, list[dict]]] = [(0, []) for _ in range(n_tasks)]
    for size, spec in sorted(sized, key=lambda x: -x[0]):
        i = min(range(n_tasks), key=lambda j: bins[j][0])
        bins[i] = (bins[i][0] + size, [*bins[i][1], spec])
    return [(json.dumps(routes),) for _, routes in bins if routes]


def _dry_run_rows(o: RestoreOptions, view: BackupView, routes: list[Route],
                  resume_after: dict[TopicPartition, int]) -> list[dict[str, Any]]:
    """What each route would write, counted with pyarrow (files checked against the manifest)."""
    rows = []
    for r in routes:
        st = selection_stats(_segments(view, r.source),
                             Selection(resume_after.get(r.source, -1), o.from_time_ms, o.to_time_ms))
        if not st.records:
            continue
        rows.append({"source_topic": r.source.topic, "source_partition": r.source.partition,
                     "target_topic": r.target.topic, "target_partition": r.target.partition,
                     "records": st.records, "bytes": st.bytes,
                     "first_source": st.first_offset, "last_source": st.last_offset,
                     "first_timestamp": st.first_timestamp, "last_timestamp": st.last_timestamp})
    return rows


def check_client_config(o: RestoreOptions) -> None:
    """Build the producer and consumer the tasks will build, here, so a bad property is a
    one-line ConfigError before any topic or state exists (secret values are never echoed)."""
    from offsetkeeper.kafka import clients

    client = o.target.client_config()
    clients.producer(producer_config({**client, **dict(o.producer_properties)}),
                     {"log_level": "0"}, where="the restore's producer properties are not valid")
    clients.consumer(consumer_config(client), {"log_level": "0"},
                     where="the restore's consumer properties are not valid").close()


def _refuse_non_empty(admin: LogOffsetsPort, routes: list[Route], existing: dict[str, list[int]],
                      restore_id: str) -> None:
    """A new restore must not append a second copy after records already on the target."""
    tps = [r.target for r in routes if r.target.topic in existing]
    if not tps:
        return
    wm = admin.watermarks(tps)
    full = [(tp, wm[tp]) for tp in sorted(tps) if wm[tp].high > wm[tp].low]
    if full:
        shown = ", ".join(f"{tp} (offsets {w.low}..{w.high - 1})" for tp, w in full[:5])
        more = f" and {len(full) - 5} more" if len(full) > 5 else ""
        raise UsageError(f"restore '{restore_id}' would write after records already on the target: "
                         f"{shown}{more}; restore into empty partitions (another --rename or cluster), "
                         "or pass --allow-non-empty-target to append on purpose")


def _prepare_state(o: RestoreOptions, restore_id: str, routes: list[Route], admin: AdminPort,
                   prior: RestoreState | None) -> tuple[RestoreState, bool]:
    if prior is not None:
        _check_same(prior, o, routes, restore_id)
        return prior, True
    ends = admin.watermarks([r.target for r in routes])
    try:
        cluster_id = admin.cluster_id()
    except OffsetkeeperError:
        cluster_id = ""
    state = RestoreState(
        restore_id=restore_id, backup_id=o.backup_id, target_cluster=o.target.bootstrap_servers,
        fingerprint=o.fingerprint(), target_cluster_id=cluster_id or "",
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


def _create_topics(admin: TopicsPort, creates: list[TopicToCreate], rf: int) -> list[dict[str, Any]]:
    out = []
    for t in creates:
        admin.create_topic(t.name, t.partitions, replication_factor=rf, configs=t.configs)
        out.append({"topic": t.name, "partitions": t.partitions, "configs": t.configs,
                    "from": t.source_topic})
    return out


def _resume_points(o: RestoreOptions, root: str, routes: list[Route],
                   prior: RestoreState | None) -> dict[TopicPartition, int]:
    """Per route, the last source offset already mapped (the mapping is checked first)."""
    out: dict[TopicPartition, int] = {}
    if prior is None:
        return out
    starts = {s.source: s.start_log_end for s in prior.routes}
    for r in routes:
        t = read_mapping(root, r.source)
        check_route_rows(t, prior.restore_id, r.source, r.target, starts.get(r.source))
        if t.num_rows:
            out[r.source] = t.column("source_offset")[-1].as_py()
    return out


def _clear(url: str) -> None:
    from offsetkeeper.storage import open_fs

    fs, root = open_fs(url)
    with contextlib.suppress(OSError):
        if fs.exists(root):
            fs.rm(root, recursive=True)


def run_restore(o: RestoreOptions, *, spark=None, progress: ProgressFn | None = None) -> RestoreResult:
    """Restore (or, with `dry_run`, describe restoring) a backup to the target cluster.

    Bad input (options, a non-empty target, bad client properties) raises a UsageError before
    anything is written; a tampered backup file raises StoreError (before writing when the
    footers show it, else when it is read); a failed task marks the state failed and raises.
    """
    validate_options(o)
    notify = progress or no_progress
    t0 = time.monotonic()
    view = load_backup_view(o.destination, o.backup_id)
    routes = route_partitions(view, o)
    restore_id = o.restore_id or new_restore_id()
    task = f"restore {restore_id}"
    notify(ProgressEvent(task, 0, None, "records", "checking the backup files"))
    for r in routes:
        check_segments(_segments(view, r.source))
    result = RestoreResult(restore_id, o.backup_id, o.destination, o.dry_run)
    root = mapping_root_for(o.destination, o.backup_id, restore_id)
    check_client_config(o)

    with KafkaAdmin(o.target) as admin:
        existing = admin.topic_partitions()
        check_existing_targets(routes, existing)
        creates = topics_to_create(view, routes, existing)
        if creates and not o.create_topics:
            raise UsageError(f"target topic '{creates[0].name}' does not exist; create it or drop "
                             "--no-create-topics")
        prior = load_state(o.destination, o.backup_id, restore_id)
        if prior is None and not o.allow_non_empty_target:
            _refuse_non_empty(admin, routes, existing, restore_id)
        if prior is not None and prior.status is RestoreStatus.COMPLETED and not o.dry_run:
            # nothing left to do; do not touch the target (it may have moved on since)
            _check_same(prior, o, routes, restore_id)
            result.resumed = True
            result.partitions = [{"source_topic": s.source_topic, "source_partition": s.source_partition,
                                  "target_topic": s.target_topic, "target_partition": s.target_partition,
                                  "records": 0, "recovered": 0, "skipped": 0, "bytes": 0,
                                  "target_log_end": s.end_log_end} for s in prior.routes]
            result.seconds = round(time.monotonic() - t0, 3)
            return result
        if prior is not None:
            _check_same(prior, o, routes, restore_id)
        resume_after = _resume_points(o, root, routes, prior)

        if o.dry_run:
            result.created_topics = [{"topic": t.name, "partitions": t.partitions, "configs": t.configs,
                                      "from": t.source_topic, "would_create": True} for t in creates]
            result.partitions = sorted(_dry_run_rows(o, view, routes, resume_after),
                                       key=lambda r: (r["target_topic"], r["target_partition"]))
            result.records = sum(r["records"] for r in result.partitions)
            result.bytes = sum(r["bytes"] for r in result.partitions)
            result.resumed = prior is not None
            result.seconds = round(time.monotonic() - t0, 3)
            return result

        result.created_topics = _create_topics(admin, creates, o.replication_factor)
        state, result.resumed = _prepare_state(o, restore_id, routes, admin, prior)
        state.status, state.runs, state.finished_at_ms, state.error = RestoreStatus.RUNNING, state.runs + 1, None, None
        save_state(o.destination, o.backup_id, state)
        try:
            rows = _run_tasks(o, view, routes, resume_after, state, root, spark, notify, task)
        except OffsetkeeperError as exc:
            state.status, state.error = RestoreStatus.FAILED, exc.message
            save_state(o.destination, o.backup_id, state)
            raise
        except BaseException as exc:  # interrupted: a rerun continues; say why it stopped
            state.status, state.error = RestoreStatus.FAILED, f"interrupted ({type(exc).__name__})"
            with contextlib.suppress(Exception):
                save_state(o.destination, o.backup_id, state)
            raise

        ends = admin.watermarks([r.target for r in routes])
        for s in state.routes:
            s.end_log_end = ends[s.target].high
        state.status, state.finished_at_ms = RestoreStatus.COMPLETED, int(time.time() * 1000)
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
    notify(ProgressEvent(task, result.records, result.records, "records", "done"))
    return result


def _run_tasks(o: RestoreOptions, view: BackupView, routes: list[Route],
               resume_after: dict[TopicPartition, int], state: RestoreState, root: str, spark,
               notify: ProgressFn, task: str) -> list[dict[str, Any]]:
    """The Spark job: one summary per route; a task failure raises its typed error."""
    if spark is None:
        from offsetkeeper.spark.session import get_spark

        notify(ProgressEvent(task, 0, None, "records", "starting Spark"))
        spark = get_spark(o.master, o.spark_conf, app_name=f"offsetkeeper-restore-{state.restore_id}",
                          warm=o.spark_warm)
    n_slots = max(1, min(len(routes), task_slots(spark)))
    work = join(backup_root(o.destination, o.backup_id), "_work", "restores", state.restore_id)
    _clear(work)
    client = o.target.client_config()
    restored = {r.source.topic for r in routes}
    compression = restore_compression(o, {t: m.configs for t, m in view.topics.items()
                                          if t in restored})
    cfg = WriterConfig(
        restore_id=state.restore_id,
        mapping_root=root,
        # compressed batches (issue 32: uncompressed restores took 2.7x the broker's bytes);
        # a compression.type among the producer properties wins
        producer_conf={**client, "compression.type": compression, **dict(o.producer_properties)},
        consumer_conf=client,
        offset_headers=o.offset_headers,
        chunk_records=o.chunk_records,
        start_log_ends={f"{s.target_topic}:{s.target_partition}": s.start_log_end for s in state.routes},
        records_per_second=o.records_per_second / n_slots if o.records_per_second else None,
        bytes_per_second=o.bytes_per_second / n_slots if o.bytes_per_second else None,
        from_time_ms=o.from_time_ms,
        to_time_ms=o.to_time_ms,
        report_path=join(work, "progress"),
    )
    specs = _task_specs(view, routes, resume_after, n_slots)
    windowed = o.from_time_ms is not None or o.to_time_ms is not None
    total = None if windowed else sum(p.record_count for tp, p in view.partitions.items()
                                      if tp in {r.source for r in routes})
    suffix = (f"; fix the cause and rerun with --restore-id {state.restore_id} to continue")
    try:
        with ProgressPoller(notify, lambda: ProgressEvent(task, read_progress(cfg.report_path), total,
                                                          "records")):
            notify(ProgressEvent(task, 0, total, "records", "writing"))
            rows = run_tasks(spark, partial(guarded, restore_task, cfg), [s for (s,) in specs])
    except Exception as exc:
        if type(exc).__module__.startswith(("pyspark", "py4j")):
            from offsetkeeper.spark.task_failure import one_line

            raise RestoreWriteError(f"restore {state.restore_id} stopped: the Spark job failed "
                                    f"({one_line(exc)}){suffix}") from None
        raise
    finally:
        _clear(work)
    return raise_failures(rows, RestoreWriteError, suffix=suffix)
