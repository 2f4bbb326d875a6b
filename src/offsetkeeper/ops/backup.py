"""Backup operations: one function per user operation, each taking a typed request.

    run_backup(BackupRequest, progress=) -> BackupResult      backup run
    follow_backup(BackupRequest, interval_s=, ...) -> ...     backup run --follow
    list_backups(destination) -> list[BackupEntry]            backups list      (no Spark)
    describe_backup(destination, backup_id) -> Manifest       backups describe  (no Spark)
    validate_backup(destination, backup_id, deep=...) -> ...  backups validate  (Spark with deep)

Merging the YAML backup file with flags and the config file happens in
backup/config.build_backup_config.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from offsetkeeper.errors import UsageError
from offsetkeeper.progress import ProgressFn

__all__ = ["BackupRequest", "describe_backup", "follow_backup", "follow_state", "list_backups",
           "run_backup", "validate_backup"]


@dataclass(frozen=True)
class BackupRequest:
    """A backup run as a user asks for it (None / empty = not given: the file's value)."""

    file: str | Path | None = None
    config: str | Path | None = None
    bootstrap_server: str | None = None
    command_config: str | Path | None = None
    cluster: str | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    destination: str | None = None
    backup_id: str | None = None
    master: str | None = None
    spark_conf: tuple[str, ...] = ()          # KEY=VALUE
    max_records_per_task: int | None = None


def _backup_config(req: BackupRequest):
    from offsetkeeper.backup.config import build_backup_config
    from offsetkeeper.config import load_config_file
    from offsetkeeper.spark.session import parse_conf_pairs

    return build_backup_config(
        file=req.file, config=load_config_file(req.config), bootstrap_server=req.bootstrap_server,
        command_config=req.command_config, cluster=req.cluster, include=req.include,
        exclude=req.exclude, destination=req.destination, backup_id=req.backup_id, master=req.master,
        spark_conf=parse_conf_pairs(list(req.spark_conf)),
        max_records_per_task=req.max_records_per_task)


def run_backup(req: BackupRequest, *, progress: ProgressFn | None = None, spark=None):
    """Run one backup (first or incremental) of the requested topics."""
    from offsetkeeper.backup.run import run_backup as _run

    return _run(_backup_config(req), progress=progress, spark=spark)


def follow_backup(req: BackupRequest, *, interval_s: float = 60.0, max_offsets: int | None = None,
                  metrics_listen: str | None = None, max_failures: int = 5, stop=None,
                  spark=None, on_increment=None, on_listen=None):
    """Keep the requested backup current with an increment every `interval_s` until SIGTERM/
    SIGINT or `stop` (a threading.Event) is set (`backup run --follow`), serving its lag as
    Prometheus metrics on `metrics_listen` (HOST:PORT). Returns a `backup.follow.FollowSummary`;
    `on_increment` gets each recorded or failed `Increment`, `on_listen` the metrics URL."""
    import threading

    from offsetkeeper.backup.follow import FollowOptions
    from offsetkeeper.backup.follow import follow_backup as _follow
    from offsetkeeper.history.exporter import MetricsServer
    from offsetkeeper.history.sampler import stop_on_signals

    opts = FollowOptions(interval_s=interval_s, max_offsets=max_offsets,
                         metrics_listen=metrics_listen, max_failures=max_failures)
    return _follow(_backup_config(req), opts, stop=stop or threading.Event(), spark=spark,
                   on_increment=on_increment, on_listen=on_listen, signals=stop_on_signals,
                   serve_metrics=MetricsServer)


def _need_dest(destination: str | None) -> str:
    if not destination:
        raise UsageError("no destination given: use --dest PATH|URL (or $OFFSETKEEPER_BACKUP_DEST)")
    return destination


def list_backups(destination: str | None) -> list:
    """Every backup under `destination`, by id: `backup.manifest.BackupEntry`s, each with its
    manifest or, when the manifest cannot be read, the error."""
    from offsetkeeper.backup.manifest import list_backups as _list

    return _list(_need_dest(destination))


def follow_state(destination: str | None, backup_id: str) -> str | None:
    """How a backup is followed (`backup run --follow`): following, stopped or failed, from
    its follow.json; None when it never was (or the file is unreadable: it is advisory)."""
    from offsetkeeper.backup.follow import read_follow_status

    doc = read_follow_status(_need_dest(destination), backup_id)
    state = doc.get("state") if doc else None
    return state if state in ("following", "stopped", "failed") else None


def mapping_reference(destination: str, backup_id: str, restore_id: str | None = None) -> str:
    """`DEST/BACKUP_ID[:RESTORE_ID]`, the reference `--from-mapping` takes, for a backup in a
    destination the caller chose; the id is checked first (no path of the user's making)."""
    from offsetkeeper.backup.manifest import validate_backup_id

    validate_backup_id(backup_id)
    return f"{destination.rstrip('/')}/{backup_id}" + (f":{restore_id}" if restore_id else "")


def describe_backup(destination: str | None, backup_id: str):
    """The manifest of one backup (validated on load)."""
    from offsetkeeper.backup.manifest import load_manifest

    return load_manifest(_need_dest(destination), backup_id)


def validate_backup(destination: str | None, backup_id: str, *, deep: bool = False,
                    master: str | None = None, spark_conf: tuple[str, ...] = ()):
    """Check a backup (quick: manifest and files; deep: re-read every record on Spark)."""
    from offsetkeeper.backup.validate import validate_backup as _validate
    from offsetkeeper.spark.session import parse_conf_pairs

    return _validate(_need_dest(destination), backup_id, deep=deep, master=master,
                     spark_conf=parse_conf_pairs(list(spark_conf)))
