"""`offsetkeeper restore ...` and `offsetkeeper mapping ...`: restore with an exact offset mapping."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from offsetkeeper.cli.common import (
    BootstrapOpt,
    ClusterOpt,
    CommandConfigOpt,
    ConfigOpt,
    OutputOpt,
    connection,
    connection_or_ref,
)
from offsetkeeper.cli.output import OutputFormat, render_json, render_rows, stderr_console
from offsetkeeper.config import load_config_file, prop_str
from offsetkeeper.errors import UsageError

restore_app = typer.Typer(help="Restore a backup to a cluster with an exact offset mapping (Spark).",
                          no_args_is_help=True)
mapping_app = typer.Typer(help="Show and look up source -> target offset mappings.", no_args_is_help=True)

BackupArg = Annotated[str, typer.Argument(help="The backup: DEST/BACKUP_ID (a path or URL).",
                                          show_default=False)]
OptBackupArg = Annotated[str | None, typer.Argument(help="The backup: DEST/BACKUP_ID (a path or URL); "
                                                    "or give it in --file.", show_default=False)]
FileOpt = Annotated[Path | None, typer.Option("--file", "-f", help="Restore YAML file (flags win over it).",
                                              show_default=False)]
RestoreIdOpt = Annotated[str | None, typer.Option("--restore-id", "--restore", help="Restore id (a rerun with "
                                                  "the same id continues where it stopped).", show_default=False)]
TopicOpt = Annotated[list[str] | None, typer.Option("--topic", "-t", help="Backed-up topic or glob to restore "
                                                    "(repeatable; default: all).", show_default=False)]
ExcludeOpt = Annotated[list[str] | None, typer.Option("--exclude-topic", help="Topic or glob to leave out "
                                                      "(repeatable).", show_default=False)]
RenameOpt = Annotated[list[str] | None, typer.Option("--rename", help="SOURCE=TARGET topic rename (repeatable).",
                                                     show_default=False)]
PartitionMapOpt = Annotated[list[str] | None, typer.Option("--partition-map", help="[TOPIC:]SRC=DST partition "
                                                           "map (repeatable).", show_default=False)]
SourcePartsOpt = Annotated[list[str] | None, typer.Option("--source-partitions", help="[TOPIC:]P[,P...]: only "
                                                          "these source partitions (repeatable).", show_default=False)]
FromTimeOpt = Annotated[str | None, typer.Option("--from-time", help="Only records with timestamp >= this "
                                                 "(ISO-8601, UTC when no zone, or epoch ms).", show_default=False)]
ToTimeOpt = Annotated[str | None, typer.Option("--to-time", help="Only records with timestamp < this.",
                                               show_default=False)]
CreateOpt = Annotated[bool | None, typer.Option("--create-topics/--no-create-topics", help="Create missing target "
                                                "topics with the backed-up partition count and configs "
                                                "[default: create].", show_default=False)]
RfOpt = Annotated[int | None, typer.Option("--replication-factor", help="Replication factor of created topics "
                                           "[default: the broker's].", show_default=False)]
HeadersOpt = Annotated[bool | None, typer.Option("--offset-headers/--no-offset-headers", help="Add x-kafka-backup-* "
                                                 "original-position headers [default: add]; without them records "
                                                 "are byte-identical.", show_default=False)]
RateOpt = Annotated[str | None, typer.Option("--max-records-per-sec", help="Rate limit in records/s "
                                             "(e.g. 20000, 20k).", show_default=False)]
ByteRateOpt = Annotated[str | None, typer.Option("--max-bytes-per-sec", help="Rate limit in bytes/s "
                                                 "(e.g. 10MB).", show_default=False)]
ChunkOpt = Annotated[int | None, typer.Option("--chunk-records", help="Records per mapping chunk "
                                              "(the unit of resume) [default: 50000].", show_default=False)]
ProducerPropOpt = Annotated[list[str] | None, typer.Option("--producer-property", help="librdkafka producer "
                                                           "property k=v (repeatable).", show_default=False)]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Print what would be written per partition; "
                                         "write nothing.")]
MasterOpt = Annotated[str | None, typer.Option("--master", help="Spark master [default: config spark.master "
                                               "or local[*]].", show_default=False)]
ConfOpt = Annotated[list[str] | None, typer.Option("--conf", help="Spark conf k=v (repeatable).",
                                                   show_default=False)]
GroupOpt = Annotated[list[str] | None, typer.Option("--group", "-g", help="Consumer group (repeatable; "
                                                    "default: every group in the backup).", show_default=False)]


def split_backup_ref(ref: str) -> tuple[str, str]:
    """`DEST/BACKUP_ID` -> (DEST, BACKUP_ID)."""
    dest, _, bid = ref.rstrip("/").rpartition("/")
    if not dest or not bid:
        raise UsageError(f"backup '{ref}' must be DEST/BACKUP_ID, e.g. /backups/nightly-1")
    return dest, bid


@contextlib.contextmanager
def _status(message: str, output: OutputFormat):
    if output is OutputFormat.table and sys.stderr.isatty():
        with stderr_console().status(message):
            yield
    else:
        yield


def _restore_options(*, backup, file, bootstrap, command_config, cluster, config, restore_id, topic,
                     exclude_topic, rename, partition_map, source_partitions, from_time, to_time,
                     create_topics, replication_factor, offset_headers, max_records_per_sec,
                     max_bytes_per_sec, chunk_records, producer_property, dry_run, master, conf):
    from offsetkeeper.restore import config as rc
    from offsetkeeper.spark.session import parse_conf_pairs

    cfg = load_config_file(config)
    f = rc.load_restore_file(file) if file else None
    target = connection_or_ref(f.target if f else None, bootstrap, command_config, cluster, config)
    if backup:
        dest, bid = split_backup_ref(backup)
    elif f is not None:
        dest, bid = f.backup.destination, f.backup.id
    else:
        raise UsageError("no backup given: pass DEST/BACKUP_ID or --file with a backup section")
    base = rc.options_from_file(f, target) if f is not None else rc.RestoreOptions(dest, bid, target)
    spark_conf = {**{k: prop_str(v) for k, v in cfg.spark.conf.items()}, **dict(base.spark_conf),
                  **parse_conf_pairs(conf)}
    changes: dict[str, Any] = {
        "destination": dest, "backup_id": bid, "restore_id": restore_id,
        "topics": tuple(topic) if topic else None,
        "exclude_topics": tuple(exclude_topic) if exclude_topic else None,
        "rename": {**base.rename, **rc.parse_rename(rename)} if rename else None,
        "partition_map": rc.parse_partition_map(partition_map) if partition_map else None,
        "source_partitions": rc.parse_source_partitions(source_partitions) if source_partitions else None,
        "from_time_ms": rc.parse_time_ms(from_time, flag="--from-time"),
        "to_time_ms": rc.parse_time_ms(to_time, flag="--to-time"),
        "create_topics": create_topics, "replication_factor": replication_factor,
        "offset_headers": offset_headers,
        "records_per_second": rc.parse_rate(max_records_per_sec, flag="--max-records-per-sec"),
        "bytes_per_second": rc.parse_rate(max_bytes_per_sec, flag="--max-bytes-per-sec"),
        "chunk_records": chunk_records,
        "producer_properties": {**base.producer_properties, **parse_conf_pairs(producer_property)}
        if producer_property else None,
        "dry_run": dry_run or None,
        "master": master or base.master or cfg.spark.master,
        "spark_conf": spark_conf,
    }
    opts = base.with_(**{k: v for k, v in changes.items() if v is not None})
    rc.validate_options(opts)
    return opts


RUN_COLUMNS = ["source_topic", "source_partition", "target_topic", "target_partition", "records",
               "recovered", "skipped", "bytes", "first_source", "last_source", "first_target",
               "last_target", "target_log_end"]
DRY_COLUMNS = ["source_topic", "source_partition", "target_topic", "target_partition", "records",
               "bytes", "first_source", "last_source", "first_timestamp", "last_timestamp"]


def _render_restore(res, output: OutputFormat) -> None:
    if output is OutputFormat.json:
        render_json(res.to_dict())
        return
    cols = DRY_COLUMNS if res.dry_run else RUN_COLUMNS
    title = (f"dry run: restore {res.restore_id} of {res.backup_id} would write {res.records} records"
             if res.dry_run else f"restore {res.restore_id} of {res.backup_id}: {res.records} records "
             f"written in {res.seconds:.1f} s" + (" (resumed)" if res.resumed else ""))
    render_rows(res.partitions, cols, output, title=title if output is OutputFormat.table else None)
    if output is OutputFormat.table:
        for t in res.created_topics:
            verb = "would create" if res.dry_run else "created"
            stderr_console().print(f"{verb} topic {t['topic']} ({t['partitions']} partitions, "
                                   f"{len(t['configs'])} configs)", highlight=False)


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
    dry_run: DryRunOpt = False,
    master: MasterOpt = None,
    conf: ConfOpt = None,
    output: OutputOpt = OutputFormat.table,
) -> None:
    """Restore a backup to the target cluster (-b) on Spark, recording the offset mapping.

    Example: offsetkeeper restore run /backups/nightly -b dr-kafka:9092 --topic orders --restore-id r1
    """
    opts = _restore_options(**{k: v for k, v in locals().items() if k != "output"})
    from offsetkeeper.restore.run import run_restore

    with _status(f"restoring backup {opts.backup_id}", output):
        res = run_restore(opts)
    _render_restore(res, output)


@restore_app.command("list")
def list_cmd(backup: BackupArg, output: OutputOpt = OutputFormat.table) -> None:
    """List the restores of a backup with their status.

    Example: offsetkeeper restore list /backups/nightly
    """
    from offsetkeeper.restore.state import list_states

    dest, bid = split_backup_ref(backup)
    rows = [{"restore_id": s.restore_id, "status": s.status, "target": s.target_cluster,
             "partitions": len(s.routes), "runs": s.runs, "started_at_ms": s.started_at_ms,
             "finished_at_ms": s.finished_at_ms} for s in list_states(dest, bid)]
    render_rows(rows, ["restore_id", "status", "target", "partitions", "runs", "started_at_ms",
                       "finished_at_ms"], output)


VALIDATE_COLUMNS = ["topic", "partition", "target_topic", "target_partition", "backup_records",
                    "target_records", "mapped_records", "backup_checksum", "target_checksum", "ok"]
GROUP_COLUMNS = ["group", "topic", "partition", "committed", "target_topic", "target_partition",
                 "target_offset", "committed_on_target", "record", "ok"]


def _render_validation(v: dict, output: OutputFormat) -> None:
    if output is OutputFormat.json:
        render_json(v)
        return
    render_rows(v["partitions"], VALIDATE_COLUMNS, output,
                title=f"validate restore {v['restore_id']} of {v['backup_id']}")
    if v["groups"]:
        render_rows(v["groups"], GROUP_COLUMNS, output, title="group offsets")


@restore_app.command("validate")
def validate_cmd(
    backup: BackupArg,
    restore_id: RestoreIdOpt = None,
    bootstrap: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None,
    config: ConfigOpt = None,
    group: GroupOpt = None,
    all_groups: Annotated[bool, typer.Option("--all-groups", help="Also check every group of the "
                                             "backup on the target.")] = False,
    master: MasterOpt = None,
    conf: ConfOpt = None,
    output: OutputOpt = OutputFormat.table,
) -> None:
    """Compare target and backup: per-partition counts and checksums, and (with --group /
    --all-groups) that each translated group offset points at the right record. Exit 1 on any
    mismatch.

    Example: offsetkeeper restore validate /backups/nightly --restore r1 -b dr-kafka:9092 --all-groups
    """
    from offsetkeeper.restore.validate import validate_restore
    from offsetkeeper.spark.session import parse_conf_pairs

    dest, bid = split_backup_ref(backup)
    target = connection(bootstrap, command_config, cluster, config)
    cfg = load_config_file(config)
    with _status("validating", output):
        v = validate_restore(dest, bid, restore_id, target, groups=group or None,
                             check_group_offsets=all_groups or bool(group),
                             master=master or cfg.spark.master,
                             spark_conf={**{k: str(x) for k, x in cfg.spark.conf.items()},
                                         **parse_conf_pairs(conf)})
    _render_validation(v.to_dict(), output)
    if not v.ok:
        stderr_console().print(f"[bold red]error:[/] {v.mismatches} mismatch(es) between the target "
                               "and the backup", highlight=False)
        raise typer.Exit(1)


@restore_app.command("three-phase")
def three_phase_cmd(
    backup: OptBackupArg = None,
    file: FileOpt = None,
    bootstrap: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None,
    config: ConfigOpt = None,
    source_bootstrap: Annotated[str | None, typer.Option("--source-bootstrap-server", help="The source "
                                                         "cluster (for --run-backup or --group-offsets live).",
                                                         show_default=False)] = None,
    source_cluster: Annotated[str | None, typer.Option("--source-cluster", help="Named source cluster.",
                                                       show_default=False)] = None,
    run_backup: Annotated[bool, typer.Option("--run-backup", help="Phase 1: back the --topic topics up "
                                             "from the source first (else use the existing backup).")] = False,
    strategy: Annotated[str, typer.Option("--strategy", help="Group strategy: translate, header-based, "
                                          "skip.")] = "translate",
    group: GroupOpt = None,
    group_offsets: Annotated[str, typer.Option("--group-offsets", help="Where the source group offsets "
                                               "come from: backup, live, or snapshot:ID (an offset "
                                               "snapshot of the source, from --snapshot-store).")] = "backup",
    no_snapshot: Annotated[bool, typer.Option("--no-snapshot", help="Do not snapshot the target groups "
                                              "before committing.")] = False,
    snapshot_store: Annotated[str | None, typer.Option("--snapshot-store", help="Snapshot store path/URL.",
                                                       show_default=False)] = None,
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
    master: MasterOpt = None,
    conf: ConfOpt = None,
    output: OutputOpt = OutputFormat.table,
) -> None:
    """Backup (optional), restore, translate and commit the groups, validate: one report, exit 1
    on any mismatch.

    Example: offsetkeeper restore three-phase /backups/nightly -b dr-kafka:9092 --restore-id dr-1
    """
    from offsetkeeper.restore.config import load_restore_file
    from offsetkeeper.restore.three_phase import ThreePhaseOptions, run_three_phase

    ropts = _restore_options(
        backup=backup, file=file, bootstrap=bootstrap, command_config=command_config, cluster=cluster,
        config=config, restore_id=restore_id, topic=topic, exclude_topic=exclude_topic, rename=rename,
        partition_map=partition_map, source_partitions=source_partitions, from_time=from_time,
        to_time=to_time, create_topics=create_topics, replication_factor=replication_factor,
        offset_headers=offset_headers, max_records_per_sec=max_records_per_sec,
        max_bytes_per_sec=max_bytes_per_sec, chunk_records=chunk_records,
        producer_property=producer_property, dry_run=False, master=master, conf=conf)
    f = load_restore_file(file) if file else None
    fg = (f.groups or {}) if f else {}
    source = None
    if source_bootstrap or source_cluster or (f is not None and f.source is not None):
        source = connection_or_ref(f.source if f else None, source_bootstrap, None, source_cluster, config)
    backup_cfg = None
    if run_backup or (f is not None and f.run_backup is not None):
        if source is None:
            raise UsageError("--run-backup needs the source cluster (--source-bootstrap-server)")
        from offsetkeeper.backup.config import BackupConfig

        include = tuple(topic or (f.run_backup or {}).get("topics", []) if f else topic or ())
        backup_cfg = BackupConfig(connection=source, include=include or ("*",),
                                  destination=ropts.destination, backup_id=ropts.backup_id,
                                  master=ropts.master or "local[*]", spark_conf=dict(ropts.spark_conf))
    opts = ThreePhaseOptions(
        restore=ropts, backup_config=backup_cfg,
        strategy=fg.get("strategy", strategy) if strategy == "translate" else strategy,
        groups=tuple(group or fg.get("groups", []) or ()),
        offsets_source=fg.get("offsets", group_offsets) if group_offsets == "backup" else group_offsets,
        source=source, snapshot=not no_snapshot, snapshot_store=snapshot_store,
        offsets_snapshot_store=snapshot_store,
        validate=not no_validate and (f.validate_after if f else True))
    with _status("three-phase restore", output):
        rep = run_three_phase(opts)
    d = rep.to_dict()
    if output is OutputFormat.json:
        render_json(d)
    else:
        render_rows(d["phases"], ["phase", "status", "detail"], output, title="three-phase restore")
        if output is OutputFormat.table:
            if d["translation"]:
                render_rows(d["translation"], ["group", "topic", "partition", "committed", "target_topic",
                                               "target_partition", "target_offset"], output,
                            title="translated group offsets")
            if d["validation"]:
                _render_validation(d["validation"], output)
    if not rep.ok:
        stderr_console().print("[bold red]error:[/] three-phase restore found problems (see the report)",
                               highlight=False)
        raise typer.Exit(1)


# -- mapping ----------------------------------------------------------------------------------

MAPPING_COLUMNS = ["topic", "partition", "target_topic", "target_partition", "records",
                   "source_first", "source_last", "target_first", "target_last", "target_log_end"]


@mapping_app.command("show")
def mapping_show(backup: BackupArg, restore_id: RestoreIdOpt = None,
                 output: OutputOpt = OutputFormat.table) -> None:
    """Per partition: source and target first/last offsets and record counts of a restore.

    Example: offsetkeeper mapping show /backups/nightly --restore r1 --output csv
    """
    from offsetkeeper.restore.mapping import summary_rows
    from offsetkeeper.restore.translate import load_restore_mappings

    dest, bid = split_backup_ref(backup)
    state, maps = load_restore_mappings(dest, bid, restore_id)
    rows = summary_rows(maps)
    render_rows(rows, MAPPING_COLUMNS, output,
                title=f"offset mapping of restore {state.restore_id} ({state.status}) of {bid}",
                json_payload={"backup_id": bid, "restore_id": state.restore_id, "status": state.status,
                              "partitions": rows} if output is OutputFormat.json else None)


@mapping_app.command("lookup")
def mapping_lookup(
    backup: BackupArg,
    topic: Annotated[str, typer.Option("--topic", help="Source topic.", show_default=False)],
    partition: Annotated[int, typer.Option("--partition", help="Source partition.", show_default=False)],
    offset: Annotated[int, typer.Option("--offset", help="Source offset.", show_default=False)],
    restore_id: RestoreIdOpt = None,
    output: OutputOpt = OutputFormat.table,
) -> None:
    """The target offset of one source offset (or, when that record was not restored, where a
    consumer committed at it resumes on the target).

    Example: offsetkeeper mapping lookup /backups/nightly --restore r1 --topic orders --partition 0 --offset 1234
    """
    from offsetkeeper.restore.mapping import lookup_row
    from offsetkeeper.restore.translate import load_restore_mappings

    dest, bid = split_backup_ref(backup)
    _, maps = load_restore_mappings(dest, bid, restore_id)
    row = lookup_row(maps, topic, partition, offset)
    render_rows([row], ["topic", "partition", "offset", "restored", "target_topic", "target_partition",
                        "target_offset", "note"], output,
                json_payload=row if output is OutputFormat.json else None)
