"""`backup run --follow`: keep a backup current with incremental runs, until stopped.

Every increment is an ordinary incremental run of the same backup id (`run.run_backup`): the
ranges from the previous run's end to the log end fixed when the increment starts, read on the
follower's one Spark session, written to ``data/run=N/`` under temporary names, and recorded by
replacing the manifest atomically (temp file + rename). So the manifest is a sequence of
generations and a backup is only ever what its manifest lists: an increment killed at any point
(kill -9, a lost machine) leaves files of run N that no manifest names, and the next increment
plans run N again from the previous end, clears them and writes it anew. No record is lost and
none is recorded twice; restore, validate and describe read a followed backup like any other.

Increments that would add nothing (no new offsets, no new partition, the same group offsets)
write nothing, so an idle topic does not grow the manifest. ``max_offsets`` bounds one increment
(`plan.cap_plan`, shared fairly between partitions); while a capped increment leaves the backup
behind, the next one starts at once instead of after the interval.

Stopping: `stop` (SIGTERM/SIGINT in the CLI) ends the wait between increments at once; an
increment under way finishes and is recorded (or, if its Spark job dies with the signal, is
abandoned like a killed one). A status file ``follow.json`` beside the manifest tells `backups
list` that the backup is followed, and keeps a second follower of the same backup away.

Metrics: `follow_metrics` (the backup's lag per partition, the last successful increment).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager as ContextManager
from dataclasses import dataclass
from typing import Any

from offsetkeeper.backup.config import BackupConfig
from offsetkeeper.backup.follow_metrics import BackupMetrics, measure_lag
from offsetkeeper.backup.manifest import backup_dir, join
from offsetkeeper.errors import OffsetkeeperError, StoreError, UsageError
from offsetkeeper.kafka.ports import AdminPort
from offsetkeeper.procs import pid_alive
from offsetkeeper.times import iso_now

log = logging.getLogger("offsetkeeper.backup.follow")

STATUS_NAME = "follow.json"


@dataclass(frozen=True)
class FollowOptions:
    """How to follow: the time between increment starts, a cap per increment, metrics."""

    interval_s: float = 60.0
    max_offsets: int | None = None  # per increment; None: everything up to the log end
    metrics_listen: str | None = None  # HOST:PORT for /metrics (port 0: any free port)
    max_failures: int = 5  # consecutive failed increments before giving up (exit 1)
    lag_refresh_s: float = 10.0  # lag measurement between increments

    def __post_init__(self) -> None:
        if not self.interval_s > 0:
            raise UsageError(f"--interval {self.interval_s}s is not positive")
        if self.max_offsets is not None and self.max_offsets < 1:
            raise UsageError(f"--max-records-per-increment {self.max_offsets} is below 1")
        if self.max_failures < 1:
            raise UsageError(f"--max-failures {self.max_failures} is below 1")
        if self.metrics_listen is not None:
            from offsetkeeper.netaddr import parse_listen

            parse_listen(self.metrics_listen, option="--metrics-listen", example="127.0.0.1:9309")


@dataclass(frozen=True)
class Increment:
    """What one increment did (`recorded` False: nothing new; `error`: it failed)."""

    run: int
    recorded: bool
    records: int
    partitions: int
    bytes_written: int
    seconds: float
    behind: int | None  # offsets behind the log ends right after it (None: not measured)
    finished_at: str
    error: str | None = None

    def as_dict(self) -> dict:
        return {"event": "failed" if self.error else "increment", "run": self.run,
                "recorded": self.recorded, "records": self.records,
                "partitions": self.partitions, "bytes_written": self.bytes_written,
                "seconds": round(self.seconds, 2), "behind": self.behind,
                "finished_at": self.finished_at, "error": self.error}


@dataclass
class FollowSummary:
    """The whole follow: increments by outcome, records written, why it stopped."""

    backup_id: str
    recorded: int = 0
    unchanged: int = 0
    failed: int = 0
    records: int = 0
    last_run: int = 0
    stopped_by: str = "stop"  # stop (signal) | failures
    last_error: str | None = None

    @property
    def exit_code(self) -> int:
        return 1 if self.stopped_by == "failures" else 0

    def as_dict(self) -> dict:
        return {"event": "stopped", "backup_id": self.backup_id, "increments_recorded": self.recorded,
                "increments_unchanged": self.unchanged, "increments_failed": self.failed,
                "records": self.records, "last_run": self.last_run, "stopped_by": self.stopped_by,
                "last_error": self.last_error}


# -- the status file ---------------------------------------------------------------------------
def other_follower(status: Mapping | None, *, host: str, pid: int, now_ms: int,
                   pid_alive: Callable[[int], bool]) -> str | None:
    """Why a new follower must not start, from the status file of the backup (pure), or None.

    A follower on this host is there while its process lives (a killed one is not, so a restart
    right after kill -9 resumes at once); one on another host while its heartbeat is younger
    than three intervals plus a minute."""
    if not status or status.get("state") != "following":
        return None
    other_host, other_pid = str(status.get("host", "")), status.get("pid")
    if not isinstance(other_pid, int):
        return None
    if other_host == host:
        if other_pid == pid or not pid_alive(other_pid):
            return None
    else:
        beat = status.get("heartbeat_ms")
        interval_ms = float(status.get("interval_s") or 0) * 1000
        if not isinstance(beat, int) or now_ms - beat > 3 * interval_ms + 60_000:
            return None
    return (f"is followed by process {other_pid} on {other_host} (see {STATUS_NAME}); stop it "
            f"first, or delete {STATUS_NAME} if that process is gone")



def read_follow_status(destination: str, backup_id: str) -> dict | None:
    """The follower status of a backup (``follow.json``), None when it was never followed or
    the file is unreadable (it is advisory: the manifest is the backup)."""
    import fsspec

    try:
        fs, path = fsspec.core.url_to_fs(join(backup_dir(destination, backup_id), STATUS_NAME))
        if not fs.exists(path):
            return None
        with fs.open(path, "rb") as f:
            doc = json.loads(f.read(65536))
    except (OSError, ValueError, UsageError):
        return None
    return doc if isinstance(doc, dict) else None


class _Status:
    """The follower's own status file: claimed at start, a heartbeat per increment, stopped."""

    def __init__(self, config: BackupConfig, opts: FollowOptions) -> None:
        self.config, self.opts = config, opts
        self.doc = {"state": "following", "host": socket.gethostname(), "pid": os.getpid(),
                    "started_at": iso_now(), "interval_s": opts.interval_s,
                    "max_offsets": opts.max_offsets, "heartbeat_ms": _now_ms(),
                    "last_increment_at": None, "last_error": None}

    def claim(self) -> None:
        why = other_follower(read_follow_status(self.config.destination, self.config.backup_id),
                             host=self.doc["host"], pid=self.doc["pid"], now_ms=_now_ms(),
                             pid_alive=pid_alive)
        if why:
            raise StoreError(f"backup {self.config.backup_id} {why}")
        self.write()

    def write(self, **changes) -> None:
        from offsetkeeper.storage import write_bytes_atomic

        self.doc.update(changes, heartbeat_ms=_now_ms())
        write_bytes_atomic(join(backup_dir(self.config.destination, self.config.backup_id),
                                STATUS_NAME), json.dumps(self.doc, indent=2).encode(),
                           what="follow status")


def _now_ms() -> int:
    return int(time.time() * 1000)


# -- the loop ----------------------------------------------------------------------------------
def follow_backup(config: BackupConfig, opts: FollowOptions, *, stop: threading.Event,
                  spark=None, on_increment: Callable[[Increment], None] | None = None,
                  on_listen: Callable[[str], None] | None = None,
                  signals: Callable[[threading.Event], ContextManager] | None = None,
                  serve_metrics: Callable[[BackupMetrics, str], Any] | None = None,
                  ) -> FollowSummary:
    """Run increments every `opts.interval_s` until `stop` is set (or `max_failures` in a row
    failed); see the module docstring for what is written, metrics and stopping.

    Injected by the caller (`ops.backup.follow_backup`), as the layers want: `signals(stop)`, a
    context manager that sets `stop` on SIGTERM/SIGINT (entered after the Spark session started:
    PySpark sets its own SIGINT handler then); `serve_metrics(metrics, listen)`, a server with
    ``host``, ``port`` and ``stop()`` (needed when `opts.metrics_listen` is given)."""
    from offsetkeeper.backup.manifest import load_manifest, manifest_exists
    from offsetkeeper.backup.run import run_backup
    from offsetkeeper.kafka.admin import KafkaAdmin

    if opts.metrics_listen is not None and serve_metrics is None:
        raise UsageError("--metrics-listen needs a metrics server (use ops.follow_backup)")

    status = _Status(config, opts)
    status.claim()
    metrics = BackupMetrics(config.backup_id)
    server = None
    summary = FollowSummary(config.backup_id)
    ended = False  # False in `finally`: an error ends the follow (the status says failed)
    try:
        if opts.metrics_listen is not None and serve_metrics is not None:
            server = serve_metrics(metrics, opts.metrics_listen)
            if on_listen:
                host = f"[{server.host}]" if ":" in server.host else server.host
                on_listen(f"http://{host}:{server.port}/metrics")
        if spark is None:
            from offsetkeeper.spark.session import get_spark

            spark = get_spark(config.master, config.spark_conf,
                              app_name=f"offsetkeeper backup {config.backup_id} (follow)")
        manifest = load_manifest(config.destination, config.backup_id) if manifest_exists(
            config.destination, config.backup_id) else None
        failures = 0
        with KafkaAdmin(config.connection) as admin, (signals or _no_signals)(stop):
            while not stop.is_set():
                started = time.monotonic()
                inc, manifest, capped = _one_increment(config, opts, spark, manifest, metrics,
                                                       run_backup)
                summary.last_run = manifest.last_run if manifest else 0
                if inc.error:
                    failures += 1
                    summary.failed += 1
                    summary.last_error = inc.error
                else:
                    failures = 0
                    summary.recorded += inc.recorded
                    summary.unchanged += not inc.recorded
                    summary.records += inc.records
                behind = _refresh_lag(admin, config, manifest, metrics, ok=not inc.error)
                inc = _with_behind(inc, behind)
                status.write(last_increment_at=inc.finished_at, last_error=inc.error)
                if on_increment and (inc.recorded or inc.error):
                    on_increment(inc)
                if failures >= opts.max_failures:
                    summary.stopped_by = "failures"
                    break
                # a capped increment left offsets behind: the next one starts at once
                next_at = started + (0 if capped and not inc.error else opts.interval_s)
                while not stop.is_set() and (left := next_at - time.monotonic()) > 0:
                    if stop.wait(min(left, opts.lag_refresh_s)):
                        break
                    if next_at - time.monotonic() > 0:
                        _refresh_lag(admin, config, manifest, metrics, ok=failures == 0)
        ended = True
    finally:
        if server is not None:
            server.stop()
        try:
            status.write(state="stopped" if ended and summary.stopped_by == "stop" else "failed",
                         last_error=summary.last_error)
        except OffsetkeeperError as exc:
            log.warning(f"could not update the follow status: {exc}")
    return summary


@contextlib.contextmanager
def _no_signals(stop: threading.Event) -> Iterator[threading.Event]:
    yield stop


def _one_increment(config, opts, spark, manifest, metrics, run_backup):
    """Run one increment; (Increment, the manifest after it, whether the cap held it back)."""
    t0 = time.monotonic()
    try:
        res = run_backup(config, spark=spark, max_offsets=opts.max_offsets, skip_unchanged=True)
    except Exception as exc:
        # a failed increment is retried at the next interval; only our own errors, and Spark's
        # or the file system's, are expected here (anything else is a bug: let it surface)
        if not isinstance(exc, OffsetkeeperError | OSError) and not \
                type(exc).__module__.startswith(("pyspark", "py4j")):
            raise
        message = exc.message if isinstance(exc, OffsetkeeperError) else _one_line(exc)
        seconds = time.monotonic() - t0
        with metrics.lock:
            metrics.results["failed"] += 1
            metrics.increment_seconds = seconds
        run = (manifest.last_run if manifest else 0) + 1
        return (Increment(run, False, 0, 0, 0, seconds, None, iso_now(), error=message),
                manifest, False)
    seconds = time.monotonic() - t0
    metrics.learn_sizes(res.bytes_by_partition, res.offsets_by_partition)
    with metrics.lock:
        metrics.results["recorded" if res.recorded else "unchanged"] += 1
        metrics.increment_seconds = seconds
        metrics.last_success_s = time.time()
    capped = opts.max_offsets is not None and sum(res.offsets_by_partition.values()) >= opts.max_offsets
    inc = Increment(res.run, res.recorded, res.records, res.partitions, res.bytes_written, seconds,
                    None, iso_now())
    return inc, res.manifest, capped


def _refresh_lag(admin: AdminPort, config, manifest, metrics: BackupMetrics, *, ok: bool) -> int | None:
    """Measure the lag into the metrics; its total, or None when the cluster did not answer."""
    try:
        lag = measure_lag(admin, config, manifest)
    except OffsetkeeperError as exc:
        log.warning(f"could not measure the backup lag: {exc}")
        with metrics.lock:
            metrics.lag, metrics.up = None, False
        return None
    with metrics.lock:
        metrics.lag, metrics.up = lag, ok
    return sum(lag.records.values())


def _one_line(exc: Exception) -> str:
    from offsetkeeper.spark.task_failure import one_line

    return f"{type(exc).__name__}: {one_line(exc)}"


def _with_behind(inc: Increment, behind: int | None) -> Increment:
    from dataclasses import replace

    return replace(inc, behind=behind)
