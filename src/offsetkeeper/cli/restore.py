"""`offsetkeeper restore ...` and `offsetkeeper mapping ...`: restore with an exact offset mapping.

Each command parses its options into a request, calls one function of offsetkeeper.ops.restore,
and renders what it returns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from offsetkeeper.cli.common import (
    BootstrapOpt,
    ClusterOpt,
    CommandConfigOpt,
    ConfigOpt,
    OutputOpt,
    RemoteOpt,
    spark_location,
)
from offsetkeeper.cli.output import OutputFormat, plural, render_json, render_rows, say
from offsetkeeper.cli.progress import progress_bar
from offsetkeeper.cli.quiet import native_output_to_log
from offsetkeeper.errors import require_extra

restore_app = typer.Typer(help="Restore a backup to a cluster with an exact offset mapping (Spark).",
                          no_args_is_help=True)
mapping_app = typer.Typer(help="Show and look up source -> target offset mappings.", no_args_is_help=True)

BackupArg = Annotated[str, typer.Argument(help="The backup: DEST/BACKUP_ID (a path or URL).",
                                          metavar="DEST/BACKUP_ID", show_default=False)]
OptBackupArg = Annotated[str | None, typer.Argument(help="The backup: DEST/BACKUP_ID (a path or URL); "
                                                    "or give it in --file.", metavar="[DEST/BACKUP_ID]",
                                                    show_default=False)]
FileOpt = Annotated[Path | None, typer.Option("--file", "-f", metavar="FILE",
                                              help="Restore YAML file (flags win over it).", show_default=False)]
RestoreIdOpt = Annotated[str | None, typer.Option("--restore-id", "--restore", metavar="ID", help="Restore id "
                                                  "(a rerun with the same id continues where it stopped) "
                                                  "[default: a new id from the time].", show_default=False)]
ExistingRestoreOpt = Annotated[str | None, typer.Option("--restore", "--restore-id", metavar="ID",
                                                        help="Which restore of the backup [default: its "
                                                        "latest completed restore].", show_default=False)]
TopicOpt = Annotated[list[str] | None, typer.Option("--topic", "-t", metavar="PATTERN", help="Backed-up topic "
                                                    "to restore: NAME, GLOB or ~REGEX (repeatable; default: all).",
                                                    show_default=False)]
ExcludeOpt = Annotated[list[str] | None, typer.Option("--exclude-topic", metavar="PATTERN", help="Topic to "
                                                      "leave out: NAME, GLOB or ~REGEX (repeatable).",
                                                      show_default=False)]
RenameOpt = Annotated[list[str] | None, typer.Option("--rename", metavar="SRC=DST", help="Topic rename "
                                                     "(repeatable).", show_default=False)]
PartitionMapOpt = Annotated[list[str] | None, typer.Option("--partition-map", metavar="[TOPIC:]SRC=DST",
                                                           help="Partition map (repeatable).", show_default=False)]
SourcePartsOpt = Annotated[list[str] | None, typer.Option("--source-partitions", metavar="[TOPIC:]P[,P...]",
                                                          help="Only these source partitions (repeatable).",
                                                          show_default=False)]
FromTimeOpt = Annotated[str | None, typer.Option("--from-time", metavar="TIME", help="Only records with "
                                                 "timestamp >= this (ISO-8601, UTC when no zone, or epoch ms).",
                                                 show_default=False)]
ToTimeOpt = Annotated[str | None, typer.Option("--to-time", metavar="TIME", help="Only records with "
                                               "timestamp < this.", show_default=False)]
CreateOpt = Annotated[bool | None, typer.Option("--create-topics/--no-create-topics", help="Create missing target "
                                                "topics with the backed-up partition count and configs "
                                                "[default: create].", show_default=False)]
RfOpt = Annotated[int | None, typer.Option("--replication-factor", metavar="N", help="Replication factor of "
                                           "created topics [default: the broker's].", show_default=False)]
HeadersOpt = Annotated[bool | None, typer.Option("--offset-headers/--no-offset-headers", help="Add x-kafka-backup-* "
                                                 "original-position headers [default: add]; without them records "
                                                 "are byte-identical.", show_default=False)]
RateOpt = Annotated[str | None, typer.Option("--max-records-per-sec", metavar="RATE", help="Rate limit in "
                                             "records/s (e.g. 20000, 20k).", show_default=False)]
ByteRateOpt = Annotated[str | None, typer.Option("--max-bytes-per-sec", metavar="RATE", help="Rate limit in "
                                                 "bytes/s (e.g. 10MB).", show_default=False)]
ChunkOpt = Annotated[int | None, typer.Option("--chunk-records", metavar="N", help="Records per mapping chunk "
                                              "(the unit of resume) [default: 50000].", show_default=False)]
ProducerPropOpt = Annotated[list[str] | None, typer.Option("--producer-property", metavar="KEY=VALUE",
                                                           help="librdkafka producer property (repeatable).",
                                                           show_default=False)]
CompressionOpt = Annotated[str | None, typer.Option(
    "--compression", metavar="none|gzip|snappy|lz4|zstd", help="Batch compression of the "
    "restored records [default: the source topics' compression.type from the backup, else "
    "zstd].", show_default=False)]
AllowNonEmptyOpt = Annotated[bool, typer.Option("--allow-non-empty-target", help="Let a new restore write "
                                                "after records already in the target partitions (refused "
                                                "by default: it would append a second copy).")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Print what would be written per partition; "
                                         "write nothing (no Spark).")]
MasterOpt = Annotated[str | None, typer.Option("--master", metavar="URL", help="Spark master [default: config "
                                               "spark.master or local[*]].", show_default=False)]
ConfOpt = Annotated[list[str] | None, typer.Option("--conf", metavar="KEY=VALUE", help="Spark conf "
                                                   "(repeatable).", show_default=False)]
SourceBootstrapOpt = Annotated[str | None, typer.Option("--source-bootstrap-server", metavar="HOST:PORT",
                                                        help="The source cluster (for --run-backup or "
                                                        "--group-offsets live).", show_default=False)]
SourceClusterOpt = Annotated[str | None, typer.Option("--source-cluster", metavar="NAME",
                                                      help="Named source cluster from the config file.",
                                                      show_default=False)]
GroupOffsetsOpt = Annotated[str | None, typer.Option("--group-offsets", metavar="SOURCE", help="Where the "
                                                     "source group offsets come from: backup, live (the "
                                                     "source cluster now) or snapshot:ID (an offset snapshot "
                                                     "of the source) [default: backup].", show_default=False)]
SnapshotStoreOpt = Annotated[str | None, typer.Option("--snapshot-store", metavar="PATH|URL", help="Snapshot "
                                                      "store [default: $OFFSETKEEPER_SNAPSHOT_STORE, the "
                                                      "config's snapshots.store, or the user data dir].",
                                                      show_default=False)]

# CLI parameter name -> RestoreRequest field, for the options run and three-phase share.
_REQUEST_FIELDS = {
    "backup": "backup", "file": "file", "config": "config", "bootstrap": "bootstrap_server",
    "command_config": "command_config", "cluster": "cluster", "restore_id": "restore_id",
    "topic": "topics", "exclude_topic": "exclude_topics", "rename": "rename",
    "partition_map": "partition_map", "source_partitions": "source_partitions",
    "from_time": "from_time", "to_time": "to_time", "create_topics": "create_topics",
    "replication_factor": "replication_factor", "offset_headers": "offset_headers",
    "max_records_per_sec": "max_records_per_sec", "max_bytes_per_sec": "max_bytes_per_sec",
    "chunk_records": "chunk_records", "producer_property": "producer_properties",
    "compression": "compression",
    "dry_run": "dry_run", "allow_non_empty_target": "allow_non_empty_target", "master": "master",
    "conf": "spark_conf",
}


def _request(params: dict[str, Any]):
    """The RestoreRequest for a command's parameters (lists become tuples)."""
    from offsetkeeper.ops.restore import RestoreRequest

    kw = {}
    for name, fld in _REQUEST_FIELDS.items():
        if name in params:
            v = params[name]
            kw[fld] = tuple(v) if isinstance(v, list) else (() if v is None and fld in _TUPLES else v)
    return RestoreRequest(**kw)


_TUPLES = {"topics", "exclude_topics", "rename", "partition_map", "source_partitions",
           "producer_properties", "spark_conf"}

RUN_COLUMNS = ["source_topic", "source_partition", "target_topic", "target_partition", "records",
               "recovered", "skipped", "bytes", "first_source", "last_source", "first_target",
               "last_target", "target_log_end"]
DRY_COLUMNS = ["source_topic", "source_partition", "target_topic", "target_partition", "records",
               "bytes", "first_source", "last_source", "first_timestamp", "last_timestamp"]


def _render_restore(res, output: OutputFormat) -> None:
    if output is OutputFormat.json:
        render_json(res.to_dict(), time_keys=["first_timestamp", "last_timestamp"])
        return
    rows = res.partitions
    cols = DRY_COLUMNS if res.dry_run else RUN_COLUMNS
    title = (f"dry run: restore {res.restore_id} of {res.backup_id} would write {plural(res.records, 'record')}"
             if res.dry_run else f"restore {res.restore_id} of {res.backup_id}: {plural(res.records, 'record')} "
             f"written in {res.seconds:.1f} s" + (" (resumed)" if res.resumed else ""))
    render_rows(rows, cols, output, title=title if output is OutputFormat.table else None)
    if output is OutputFormat.table:
        for t in res.created_topics:
            verb = "would create" if res.dry_run else "created"
            say(f"{verb} topic {t['topic']} ({plural(t['partitions'], 'partition')}, "
                f"{plural(len(t['configs']), 'config')})")


@restore_app.command("run")
def run_cmd(
    backup: OptBackupArg = None,
    file: FileOpt = None,
    bootstrap: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None,
    config: ConfigOpt = None,
    restore_id: RestoreIdOpt = None,
    topic: TopicOpt = None,
    exclude_topic: ExcludeOpt = None,
    rename: RenameOpt = None,
    partition_map: PartitionMapOpt = None,
    source_partitions: SourcePartsOpt = None,
    from_time: FromTimeOpt = None,
    to_time: ToTimeOpt = None,
    create_topics: CreateOpt = None,
    replication_factor: RfOpt = None,
    offset_headers: HeadersOpt = None,
    max_records_per_sec: RateOpt = None,
    max_bytes_per_sec: ByteRateOpt = None,
    chunk_records: ChunkOpt = None,
    producer_property: ProducerPropOpt = None,
    compression: CompressionOpt = None,
    allow_non_empty_target: AllowNonEmptyOpt = False,
    dry_run: DryRunOpt = False,
    master: MasterOpt = None,
    remote: RemoteOpt = None,
    conf: ConfOpt = None,
    output: OutputOpt = OutputFormat.table,
) -> None:
    """Restore a backup to the target cluster (-b) on Spark, recording the offset mapping.

    A new restore id refuses target partitions that already hold records (exit 2) unless
    --allow-non-empty-target. Backup files are checked against the manifest before and while
    they are restored.

    Example: offsetkeeper restore run /backups/nightly -b dr-kafka:9092 --topic orders --restore-id r1
    """
    require_extra("spark", "restore run")
    from offsetkeeper.ops.restore import restore

    master = spark_location(master, remote)
    req = _request(locals())
    with native_output_to_log(), progress_bar(output) as on_progress:
        res = restore(req, progress=on_progress)
    _render_restore(res, output)


@restore_app.command("list")
def list_cmd(backup: BackupArg, output: OutputOpt = OutputFormat.table) -> None:
    """List the restores of a backup with their status (times in UTC). No Spark.

    Example: offsetkeeper restore list /backups/nightly
    """
    from offsetkeeper.ops.restore import list_restores

    rows = [{"restore_id": s.restore_id, "status": str(s.status), "target": s.target_cluster,
             "partitions": len(s.routes), "runs": s.runs,
             "started_at": s.started_at_ms, "finished_at": s.finished_at_ms, "error": s.error}
            for s in list_restores(backup)]
    render_rows(rows, ["restore_id", "status", "target", "partitions", "runs", "started_at",
                       "finished_at", "error"], output)


VALIDATE_COLUMNS = ["topic", "partition", "target_topic", "target_partition", "backup_records",
                    "target_records", "mapped_records", "backup_checksum", "target_checksum", "ok"]
GROUP_COLUMNS = ["group", "topic", "partition", "committed", "target_topic", "target_partition",
                 "target_offset", "committed_on_target", "record", "ok"]


def _render_validation(v: dict, output: OutputFormat) -> None:
    if output is OutputFormat.json:
        render_json(v)
        return
    render_rows(v["partitions"], VALIDATE_COLUMNS, output,
                title=f"validate restore {v['restore_id']} of {v['backup_id']} against the manifest")
    for p in v["partitions"]:
        if p.get("problem") and output is OutputFormat.table:
            say(f"{p['topic']}:{p['partition']}: {p['problem']}")
    if v["groups"]:
        render_rows(v["groups"], GROUP_COLUMNS, output,
                    title=f"group offsets ({v.get('offsets_source', 'backup')} offsets translated)")


@restore_app.command("validate")
def validate_cmd(
    backup: BackupArg,
    restore_id: ExistingRestoreOpt = None,
    bootstrap: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None,
    config: ConfigOpt = None,
    group: Annotated[list[str] | None, typer.Option("--group", "-g", metavar="GROUP", help="Also check this "
                                                    "group's translated offsets on the target (repeatable; "
                                                    "default: no group — see --all-groups).",
                                                    show_default=False)] = None,
    all_groups: Annotated[bool, typer.Option("--all-groups", help="Also check every group whose source "
                                             "offsets are known (from --group-offsets).")] = False,
    group_offsets: GroupOffsetsOpt = None,
    source_bootstrap: Annotated[str | None, typer.Option(
        "--source-bootstrap-server", metavar="HOST:PORT", help="The source cluster (for "
        "--group-offsets live).", show_default=False)] = None,
    source_cluster: SourceClusterOpt = None,
    snapshot_store: SnapshotStoreOpt = None,
    master: MasterOpt = None,
    conf: ConfOpt = None,
    output: OutputOpt = OutputFormat.table,
) -> None:
    """Compare the target (-b, the restore's target cluster) with the backup's manifest: per
    partition record counts and checksums; with --group / --all-groups also that each committed
    group offset is the translation of the source offsets (--group-offsets) and points at the
    right record. Exit 1 on any mismatch.

    Example: offsetkeeper restore validate /backups/nightly --restore r1 -b dr-kafka:9092 --all-groups
    """
    require_extra("spark", "restore validate")
    from offsetkeeper.ops.restore import ValidateRequest, validate

    req = ValidateRequest(backup=backup, restore_id=restore_id, bootstrap_server=bootstrap,
                          command_config=command_config, cluster=cluster, config=config,
                          groups=tuple(group or ()), all_groups=all_groups,
                          group_offsets=group_offsets or "backup",
                          source_bootstrap_server=source_bootstrap, source_cluster=source_cluster,
                          snapshot_store=snapshot_store, master=master, spark_conf=tuple(conf or ()))
    with native_output_to_log():
        v = validate(req)
    _render_validation(v.to_dict(), output)
    if not v.ok:
        say(f"{plural(v.mismatches, 'mismatch', 'mismatches')} between the target and the backup",
            style="bold red", prefix="error:")
        raise typer.Exit(1)


@restore_app.command("three-phase")
def three_phase_cmd(
    backup: OptBackupArg = None,
    file: FileOpt = None,
    bootstrap: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None,
    config: ConfigOpt = None,
    source_bootstrap: SourceBootstrapOpt = None,
    source_cluster: SourceClusterOpt = None,
    run_backup: Annotated[bool, typer.Option("--run-backup", help="Phase 1: back the --topic topics up "
                                             "from the source first (else use the existing backup).")] = False,
    strategy: Annotated[str | None, typer.Option("--strategy", metavar="STRATEGY", help="Group strategy: "
                                                 "translate, header-based, skip [default: translate].",
                                                 show_default=False)] = None,
    group: Annotated[list[str] | None, typer.Option("--group", "-g", metavar="GROUP", help="Consumer group "
                                                    "to translate (repeatable; default: every group of the "
                                                    "offsets source).", show_default=False)] = None,
    group_offsets: GroupOffsetsOpt = None,
    no_snapshot: Annotated[bool, typer.Option("--no-snapshot", help="Do not snapshot the target groups "
                                              "before committing.")] = False,
    snapshot_store: SnapshotStoreOpt = None,
    no_validate: Annotated[bool, typer.Option("--no-validate", help="Skip the validation phase.")] = False,
    restore_id: RestoreIdOpt = None,
    topic: TopicOpt = None,
    exclude_topic: ExcludeOpt = None,
    rename: RenameOpt = None,
    partition_map: PartitionMapOpt = None,
    source_partitions: SourcePartsOpt = None,
    from_time: FromTimeOpt = None,
    to_time: ToTimeOpt = None,
    create_topics: CreateOpt = None,
    replication_factor: RfOpt = None,
    offset_headers: HeadersOpt = None,
    max_records_per_sec: RateOpt = None,
    max_bytes_per_sec: ByteRateOpt = None,
    chunk_records: ChunkOpt = None,
    producer_property: ProducerPropOpt = None,
    compression: CompressionOpt = None,
    allow_non_empty_target: AllowNonEmptyOpt = False,
    master: MasterOpt = None,
    conf: ConfOpt = None,
    output: OutputOpt = OutputFormat.table,
) -> None:
    """Backup (optional), restore, translate and commit the groups, validate: one report, exit 1
    on any mismatch. The source offsets are read once: what is reported is what is committed
    and what is validated.

    Example: offsetkeeper restore three-phase /backups/nightly -b dr-kafka:9092 --restore-id dr-1
    """
    require_extra("spark", "restore three-phase")
    from offsetkeeper.ops import ExecuteOptions
    from offsetkeeper.ops.restore import ThreePhaseRequest, three_phase

    req = ThreePhaseRequest(
        restore=_request(locals()), source_bootstrap_server=source_bootstrap,
        source_cluster=source_cluster, run_backup=run_backup, strategy=strategy,
        groups=tuple(group or ()), group_offsets=group_offsets,
        options=ExecuteOptions(snapshot=not no_snapshot, snapshot_store=snapshot_store),
        validate=not no_validate)
    with native_output_to_log(), progress_bar(output) as on_progress:
        rep = three_phase(req, progress=on_progress)
    _render_three_phase(rep.to_dict(), output)
    if not rep.ok:
        say("three-phase restore found problems (see the report)", style="bold red", prefix="error:")
        raise typer.Exit(1)


def _render_three_phase(d: dict, output: OutputFormat) -> None:
    if output is OutputFormat.json:
        render_json(d)
        return
    render_rows(d["phases"], ["phase", "status", "detail"], output, title="three-phase restore")
    if output is OutputFormat.table:
        if d["translation"]:
            render_rows(d["translation"], ["group", "topic", "partition", "committed", "target_topic",
                                           "target_partition", "target_offset"], output,
                        title=f"translated group offsets ({d['offsets_source']} offsets)")
        if d["validation"]:
            _render_validation(d["validation"], output)


# -- mapping ----------------------------------------------------------------------------------

MAPPING_COLUMNS = ["topic", "partition", "target_topic", "target_partition", "records",
                   "source_first", "source_last", "target_first", "target_last", "target_log_end"]


@mapping_app.command("show")
def mapping_show(backup: BackupArg, restore_id: ExistingRestoreOpt = None,
                 output: OutputOpt = OutputFormat.table) -> None:
    """Per partition: source and target first/last offsets and record counts of a restore. No Spark.

    Example: offsetkeeper mapping show /backups/nightly --restore r1 --output csv
    """
    require_extra("spark", "mapping show")
    from offsetkeeper.ops.restore import mapping_summary

    s = mapping_summary(backup, restore_id)
    render_rows(s.partitions, MAPPING_COLUMNS, output,
                title=f"offset mapping of restore {s.restore_id} ({s.status}) of {s.backup_id}",
                json_payload={"backup_id": s.backup_id, "restore_id": s.restore_id, "status": s.status,
                              "partitions": s.partitions} if output is OutputFormat.json else None)


@mapping_app.command("lookup")
def mapping_lookup(
    backup: BackupArg,
    topic: Annotated[str, typer.Option("--topic", metavar="TOPIC", help="Source topic.", show_default=False)],
    partition: Annotated[int, typer.Option("--partition", metavar="N", help="Source partition.",
                                           show_default=False)],
    offset: Annotated[int, typer.Option("--offset", metavar="OFFSET", help="Source offset (0 or more).",
                                        show_default=False)],
    restore_id: ExistingRestoreOpt = None,
    output: OutputOpt = OutputFormat.table,
) -> None:
    """The target offset of one source offset (or, when that record was not restored, where a
    consumer committed at it resumes on the target). No Spark.

    Example: offsetkeeper mapping lookup /backups/nightly --restore r1 --topic orders --partition 0 --offset 1234
    """
    require_extra("spark", "mapping lookup")
    from offsetkeeper.ops.restore import mapping_lookup as lookup

    row = lookup(backup, restore_id, topic, partition, offset)
    render_rows([row], ["topic", "partition", "offset", "restored", "target_topic", "target_partition",
                        "target_offset", "note"], output,
                json_payload=row if output is OutputFormat.json else None)
