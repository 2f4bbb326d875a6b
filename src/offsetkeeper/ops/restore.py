"""Restore operations: one function per user operation, each taking a typed request.

The command line (cli/restore.py) and the web dashboard call these and render what they return;
merging YAML files with flags, checking input and running the work happen here and below.

    restore(RestoreRequest, progress=) -> RestoreResult          restore run [--dry-run]
    three_phase(ThreePhaseRequest, progress=) -> ThreePhaseReport restore three-phase
    validate(ValidateRequest) -> ValidationReport                 restore validate
    list_restores(backup) -> list[RestoreState]                   restore list
    mapping_summary(backup, restore_id) -> MappingSummary         mapping show
    mapping_lookup(backup, restore_id, topic, partition, offset)  mapping lookup

`backup` is `DEST/BACKUP_ID` (a path or URL). Only `restore`, `three_phase` and `validate` start
Spark (and a dry run does not).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offsetkeeper.errors import UsageError
from offsetkeeper.progress import ProgressFn
from offsetkeeper.restore.config import RestoreRequest, split_backup_ref
from offsetkeeper.restore.three_phase import ThreePhaseRequest

__all__ = ["MappingSummary", "RestoreRequest", "ThreePhaseRequest", "ValidateRequest", "list_restores",
           "mapping_lookup", "mapping_summary", "restore", "three_phase", "validate"]


def restore(req: RestoreRequest, *, progress: ProgressFn | None = None, spark=None):
    """Restore a backup to the target cluster (or, with `dry_run`, say what would be written)."""
    from offsetkeeper.restore.config import build_restore_options
    from offsetkeeper.restore.run import run_restore

    return run_restore(build_restore_options(req), progress=progress, spark=spark)


def three_phase(req: ThreePhaseRequest, *, progress: ProgressFn | None = None, spark=None):
    """Backup (optional), restore, translate and commit the groups, validate: one report."""
    from offsetkeeper.restore.three_phase import build_three_phase_options, run_three_phase

    return run_three_phase(build_three_phase_options(req), progress=progress, spark=spark)


@dataclass(frozen=True)
class ValidateRequest:
    """`restore validate`: which restore, against which cluster, which groups and from which
    source offsets (`backup`, `live` with the source cluster, or `snapshot:ID`)."""

    backup: str
    restore_id: str | None = None              # None: the latest completed restore
    bootstrap_server: str | None = None
    command_config: str | Path | None = None
    cluster: str | None = None
    config: str | Path | None = None
    groups: tuple[str, ...] = ()
    all_groups: bool = False
    group_offsets: str = "backup"
    source_bootstrap_server: str | None = None
    source_cluster: str | None = None
    snapshot_store: str | None = None
    master: str | None = None
    spark_conf: tuple[str, ...] = field(default_factory=tuple)


def validate(req: ValidateRequest, *, spark=None):
    """Compare the restore's target with the backup manifest and (with groups) the committed
    group offsets with the translation of the chosen source offsets."""
    from offsetkeeper.config import load_config_file, prop_str
    from offsetkeeper.kafka.connect import resolve_connection
    from offsetkeeper.ops.reset import snapshot_store_url
    from offsetkeeper.restore.config import parse_properties
    from offsetkeeper.restore.validate import validate_restore

    dest, bid = split_backup_ref(req.backup)
    if req.groups and req.all_groups:
        raise UsageError("--group and --all-groups are mutually exclusive")
    cfg = load_config_file(req.config)
    target = resolve_connection(bootstrap_server=req.bootstrap_server, command_config=req.command_config,
                                cluster=req.cluster, config=cfg)
    source = None
    if req.source_bootstrap_server or req.source_cluster:
        source = resolve_connection(bootstrap_server=req.source_bootstrap_server,
                                    cluster=req.source_cluster, config=cfg)
    store = snapshot_store_url(req.snapshot_store, req.config) if req.group_offsets.startswith("snapshot:") else None
    return validate_restore(
        dest, bid, req.restore_id, target, groups=list(req.groups) or None,
        check_group_offsets=req.all_groups or bool(req.groups), offsets_source=req.group_offsets,
        source_connection=source, snapshot_store=store, spark=spark,
        master=req.master or cfg.spark.location,
        spark_conf={**{k: prop_str(x) for k, x in cfg.spark.conf.items()},
                    **parse_properties(req.spark_conf, flag="--conf")})


def list_restores(backup: str) -> list:
    """The restores of a backup (restore.state.RestoreState), oldest first. No Spark."""
    from offsetkeeper.backup.manifest import load_manifest
    from offsetkeeper.restore.state import list_states

    dest, bid = split_backup_ref(backup)
    load_manifest(dest, bid)  # a backup that does not exist is an error, not an empty list
    return list_states(dest, bid)


@dataclass(frozen=True)
class MappingSummary:
    backup_id: str
    restore_id: str
    status: str
    partitions: list[dict[str, Any]]


def mapping_summary(backup: str, restore_id: str | None = None) -> MappingSummary:
    """Per source partition: source/target first/last offsets and counts. No Spark."""
    from offsetkeeper.restore.mapping import summary_rows
    from offsetkeeper.restore.translate import load_restore_mappings

    dest, bid = split_backup_ref(backup)
    state, maps = load_restore_mappings(dest, bid, restore_id)
    return MappingSummary(bid, state.restore_id, str(state.status), summary_rows(maps))


def mapping_lookup(backup: str, restore_id: str | None, topic: str, partition: int,
                   offset: int) -> dict[str, Any]:
    """Where source offset `offset` of `topic:partition` is on the target. No Spark."""
    from offsetkeeper.restore.mapping import lookup_row
    from offsetkeeper.restore.translate import load_restore_mappings

    if partition < 0:
        raise UsageError(f"--partition {partition} is negative; partitions start at 0")
    if offset < 0:
        raise UsageError(f"--offset {offset} is negative; give a source offset (0 or more)")
    dest, bid = split_backup_ref(backup)
    _, maps = load_restore_mappings(dest, bid, restore_id)
    return lookup_row(maps, topic, partition, offset)
