"""`commits scan`: read a `__consumer_offsets` log on Spark, decode it on the executors in Arrow
batches, and write the commit history and the group metadata history as Parquet.

Sources: a cluster's `__consumer_offsets` (or any topic holding such records) through the
offsetkeeper Kafka data source, or a backup of that topic made by `backup run`. With a group,
only the partition holding that group is read (`abs(javaStringHashCode(group)) % partitions`).

Output directory:

    OUT/commits/   Parquet: group, topic, partition, offset, leader_epoch, metadata,
                   commit_timestamp, expire_timestamp, tombstone, key_version, value_version,
                   source_partition, source_offset, record_timestamp
    OUT/groups/    Parquet: group, generation, protocol_type, protocol, leader,
                   current_state_timestamp, members (with decoded subscriptions/assignments),
                   tombstone, value_version, source_partition, source_offset, record_timestamp
    OUT/coordinator/  Parquet: the records of KIP-848 consumer, share and streams groups
                   (types 3-24): group, kind, record_type, member_id, record_key, value_version,
                   tombstone, fields (the value as JSON), source_partition, source_offset,
                   record_timestamp (offsetlog/coordinator.py, offsetlog/membership.py)
    OUT/scan.json  what was read and what was skipped. A scan writes into a hidden work
                   directory and replaces the old tables only when it succeeded (scan.json removed
                   first, written last), so a failed scan leaves the previous history readable.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from offsetkeeper.config import Connection
from offsetkeeper.errors import StoreError, UsageError
from offsetkeeper.offsetlog.decode import partition_for_group
from offsetkeeper.progress import ProgressEvent, ProgressFn, no_progress
from offsetkeeper.storage import absolute, join, open_fs, write_text_atomic
from offsetkeeper.times import iso_datetime

OFFSETS_TOPIC = "__consumer_offsets"
SCAN_FORMAT = 1
COMMIT_COLUMNS = ("group", "topic", "partition", "offset", "leader_epoch", "metadata",
                  "commit_timestamp", "expire_timestamp", "tombstone", "key_version",
                  "value_version", "source_partition", "source_offset", "record_timestamp")
GROUP_COLUMNS = ("group", "generation", "protocol_type", "protocol", "leader",
                 "current_state_timestamp", "members", "tombstone", "value_version",
                 "source_partition", "source_offset", "record_timestamp")
COORDINATOR_COLUMNS = ("group", "kind", "record_type", "member_id", "record_key", "value_version",
                       "tombstone", "fields", "source_partition", "source_offset",
                       "record_timestamp")
TABLES = ("commits", "groups", "coordinator")
_ERROR_SAMPLES = 5


@dataclass(frozen=True)
class KafkaSource:
    """A topic of a cluster (by default its `__consumer_offsets`)."""

    connection: Connection
    topic: str = OFFSETS_TOPIC

    def describe(self) -> str:
        return f"kafka {self.connection.bootstrap_servers} topic {self.topic}"


@dataclass(frozen=True)
class BackupSource:
    """A topic inside a backup made by `backup run`."""

    destination: str
    backup_id: str
    topic: str = OFFSETS_TOPIC

    def describe(self) -> str:
        return f"backup {join(self.destination, self.backup_id)} topic {self.topic}"


ScanSource = KafkaSource | BackupSource


def backup_source(ref: str, topic: str = OFFSETS_TOPIC) -> BackupSource:
    """`DEST/BACKUP_ID` (a backup directory) -> BackupSource."""
    dest, _, backup_id = ref.rstrip("/").rpartition("/")
    if not dest or not backup_id:
        raise UsageError(f"--backup '{ref}' must be a backup directory DEST/BACKUP_ID, e.g. /backups/nightly")
    return BackupSource(absolute(dest), backup_id, topic)


@dataclass(frozen=True)
class ScanConfig:
    """What `commits scan` reads and where it writes."""

    source: ScanSource
    out: str
    group: str | None = None
    master: str | None = None
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    spark_warm: bool = True  # False: no warm Spark server (spark.warm in the config file)


@dataclass(frozen=True)
class SkippedCount:
    """Records of one unknown record type/version, counted and skipped."""

    part: str  # "key": an unknown record type; "value": an unknown value version
    version: int
    count: int


@dataclass(frozen=True)
class ScanSummary:
    """What a scan read (the content of scan.json)."""

    source: str
    scanned_at: str
    scanned_at_ms: int
    group: str | None
    source_partitions: list[int] | None
    records: int
    offset_commits: int
    offset_tombstones: int
    group_metadata: int
    group_tombstones: int
    skipped: list[SkippedCount]
    errors: int
    error_samples: list[str]
    seconds: float = 0.0
    format: int = SCAN_FORMAT
    # records of consumer (KIP-848), share and streams groups by kind (tombstones included);
    # absent from scans made before offsetkeeper decoded them
    coordinator_records: dict[str, int] = field(default_factory=dict)
    topic_names: dict[str, str] = field(default_factory=dict)  # topic id -> name at scan time
    # Per source partition (as a string) whose last stable offset was below its log end at scan
    # time: that LSO. Records at or past it follow an open transaction's first record; they are
    # read (read_uncommitted) and shown as pending, never used as a reset target.
    stable_offsets: dict[str, int] = field(default_factory=dict)
    pending_records: int = 0

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str, *, where: str) -> ScanSummary:
        try:
            raw = json.loads(text)
            if raw.get("format") != SCAN_FORMAT:
                raise StoreError(f"{where} has format {raw.get('format')!r}; this offsetkeeper "
                                 f"reads format {SCAN_FORMAT}")
            raw["skipped"] = [SkippedCount(**s) for s in raw["skipped"]]
            return cls(**raw)
        except StoreError:
            raise
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise StoreError(f"{where} is not a commit-history summary: {exc}") from None


def scan_json_path(out: str) -> str:
    return join(out, "scan.json")


def load_summary(out: str) -> ScanSummary:
    """The summary of a finished scan in `out` (StoreError when there is none)."""
    fs, path = open_fs(scan_json_path(out))
    try:
        text = fs.cat_file(path).decode("utf-8")
    except FileNotFoundError:
        raise StoreError(f"no finished commit history in {out} (scan.json is missing; "
                         "run 'offsetkeeper commits scan --out DIR' first)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"cannot read {scan_json_path(out)}: {exc}") from None
    return ScanSummary.from_json(text, where=scan_json_path(out))


# -- reading the source --------------------------------------------------------------------------

def _register(spark) -> None:
    # The Kafka data source is being split into a package; this is the one import of it.
    from offsetkeeper.spark.kafka import register
    register(spark)


def source_partitions(source: ScanSource, group: str | None) -> tuple[list[int] | None, int | None]:
    """(partitions to read or None for all, the topic's partition count) for a group filter."""
    if group is None:
        return None, None
    if isinstance(source, KafkaSource):
        from offsetkeeper.kafka.admin import KafkaAdmin

        with KafkaAdmin(source.connection) as admin:
            count = len(admin.topic_partitions([source.topic])[source.topic])
    else:
        from offsetkeeper.backup.manifest import load_manifest

        entry = load_manifest(source.destination, source.backup_id).topic(source.topic)
        if entry is None:
            raise UsageError(f"backup {source.backup_id} holds no topic '{source.topic}'")
        count = entry.partition_count
    return [partition_for_group(group, count)], count


def stable_offsets(source: ScanSource, partitions: list[int] | None) -> dict[int, tuple[int, int]]:
    """Per partition of a Kafka source whose last stable offset (LSO) is below its log end (a
    transaction is open): (LSO, log end). Empty for a backup."""
    if not isinstance(source, KafkaSource):
        return {}
    from offsetkeeper.kafka.admin import KafkaAdmin
    from offsetkeeper.models import TopicPartition

    with KafkaAdmin(source.connection) as admin:
        if partitions is None:
            partitions = admin.topic_partitions([source.topic])[source.topic]
        tps = [TopicPartition(source.topic, p) for p in partitions]
        lso = admin.end_offsets(tps, read_committed=True)
        end = admin.end_offsets(tps, read_committed=False)
    return {tp.partition: (lso[tp], end[tp]) for tp in tps if lso[tp] < end[tp]}


def read_source(spark, source: ScanSource, partitions: list[int] | None,
                open_txn: Mapping[int, tuple[int, int]] | None = None):
    """A DataFrame of the source's records: key, value, partition, offset, timestamp.

    `open_txn` (from `stable_offsets`): partitions with an open transaction, whose records from
    the LSO to the log end are read too (read_uncommitted): a read_committed fetch stops at the
    LSO, so every later record of the partition was missing from the scan."""
    from pyspark.sql import functions as F

    if isinstance(source, KafkaSource):
        _register(spark)

        def reader(isolation: str):
            r = spark.read.format("offsetkeeper-kafka").option(
                "kafka.bootstrap.servers", source.connection.bootstrap_servers)
            for k, v in source.connection.properties.items():
                r = r.option(f"kafka.{k}", v)
            return r.option("kafka.isolation.level", isolation)

        # Transactional offset commits count only when a COMMIT marker follows them: only a
        # read_committed fetch leaves the aborted ones out (the records carry no marker of
        # their own), so client properties must not turn it into read_uncommitted.
        committed = reader("read_committed")
        if partitions is None:
            committed = committed.option("subscribe", source.topic)
        else:
            committed = committed.option("assign", json.dumps({source.topic: partitions}))
        df = committed.option("startingOffsets", "earliest").option("endingOffsets", "latest").load()
        if open_txn:
            # Past the LSO nothing tells committed, aborted and still-open records apart
            # (markers are not shown to clients): read them all, the history marks them pending.
            span = {str(p): se for p, se in sorted(open_txn.items())}
            rest = reader("read_uncommitted").option("assign", json.dumps(
                {source.topic: sorted(open_txn)})).option(
                "startingOffsets", json.dumps({source.topic: {p: s for p, (s, _) in span.items()}})
            ).option(
                "endingOffsets", json.dumps({source.topic: {p: e for p, (_, e) in span.items()}})
            ).load()
            # the committed read ends at the LSO it sees, which may have moved on since
            df = df.where(~F.col("partition").isin(list(open_txn))).unionByName(
                df.where(F.col("partition").isin(list(open_txn))).where(
                    _below_lso(F, open_txn))).unionByName(rest)
    else:
        from offsetkeeper.backup.manifest import load_manifest, read_backup_records

        m = load_manifest(source.destination, source.backup_id)
        if m.topic(source.topic) is None:
            raise UsageError(f"backup {source.backup_id} holds no topic '{source.topic}'")
        df = read_backup_records(spark, source.destination, source.backup_id, m)
        df = df.where(F.col("topic") == source.topic)
        if partitions is not None:
            df = df.where(F.col("partition").isin(partitions))
    return df


def _below_lso(F, open_txn: Mapping[int, tuple[int, int]]):
    cond = None
    for p, (lso, _) in open_txn.items():
        c = (F.col("partition") == p) & (F.col("offset") < lso)
        cond = c if cond is None else cond | c
    return cond


def decode_frame(records):
    """Decode a DataFrame of records (key, value, partition, offset, timestamp) on the executors,
    in Arrow batches, into the decoded schema (offsetlog.batch)."""
    from pyspark.sql import functions as F

    from offsetkeeper.offsetlog.arrow_map import map_in_arrow
    from offsetkeeper.offsetlog.batch import decode_batches, decoded_schema

    df = records.select(F.col("key"), F.col("value"),
                        F.col("partition").cast("int").alias("source_partition"),
                        F.col("offset").cast("long").alias("source_offset"),
                        F.col("timestamp").cast("long").alias("record_timestamp"))
    return map_in_arrow(df, decode_batches, decoded_schema())


# -- the scan --------------------------------------------------------------------------------------

def _coordinator_kinds() -> tuple[str, ...]:
    from offsetkeeper.offsetlog.coordinator import SCHEMAS

    return tuple(s.name for s in SCHEMAS.values())


_COORDINATOR_KINDS = _coordinator_kinds()


def topic_names(source: ScanSource) -> dict[str, str]:
    """Topic id -> name of the source cluster (coordinator records name topics by id); empty for
    a backup or when the cluster does not say."""
    if not isinstance(source, KafkaSource):
        return {}
    from offsetkeeper.kafka.admin import KafkaAdmin

    try:
        with KafkaAdmin(source.connection) as admin:
            return admin.topic_ids()
    except Exception:  # names are a convenience: ids are shown instead
        return {}


def write_history(decoded, out: str, *, group: str | None = None,
                  open_txn: Mapping[int, tuple[int, int]] | None = None) -> dict[str, object]:
    """Write the commit and group tables from a decoded DataFrame; returns the counts.

    Decoding runs once: every decoded record is written to `OUT/_staging`, and the tables and
    counts are then made from those files by the JVM alone. (Caching the
    decoded rows instead, and running one job per table, was 3-4x slower here.)
    """
    from pyspark.sql import functions as F

    from offsetkeeper.offsetlog.batch import decoded_schema

    if group is not None:
        # The partition holds other groups too; records of no group (errors) are kept for counting.
        decoded = decoded.where((F.col("group") == group) | F.col("group").isNull())
    staging = join(out, "_staging")
    # Not partitioned by kind: a dynamic-partition write sorts every task's rows first. The
    # filters below skip row groups by the kind column's statistics instead.
    decoded.write.mode("overwrite").parquet(staging)
    staged = decoded.sparkSession.read.schema(decoded_schema()).parquet(staging)
    error_text = F.concat(F.lit("partition "), F.col("source_partition").cast("string"),
                          F.lit(" offset "), F.col("source_offset").cast("string"), F.lit(": "),
                          F.col("error"))
    counts = (staged.groupBy("kind", "key_version", "value_version", "tombstone")
              .agg(F.count("*").alias("count"),
                   F.slice(F.collect_list(F.when(F.col("kind") == "error", error_text)), 1,
                           _ERROR_SAMPLES).alias("samples"))
              .collect())
    pending = staged.where(_past_lso(F, open_txn)).count() if open_txn else 0
    staged.where(F.col("kind") == "offset_commit").select(*COMMIT_COLUMNS) \
        .write.mode("overwrite").parquet(join(out, "commits"))
    staged.where(F.col("kind") == "group_metadata").select(*GROUP_COLUMNS) \
        .write.mode("overwrite").parquet(join(out, "groups"))
    staged.where(F.col("kind").isin(*_COORDINATOR_KINDS)) \
        .withColumn("record_type", F.col("key_version")).select(*COORDINATOR_COLUMNS) \
        .write.mode("overwrite").parquet(join(out, "coordinator"))
    fs, path = open_fs(staging)
    fs.rm(path, recursive=True)
    samples = [x for r in counts for x in (r["samples"] or [])][:_ERROR_SAMPLES]
    tally: dict[str, object] = {"records": 0, "offset_commits": 0, "offset_tombstones": 0,
                                "group_metadata": 0, "group_tombstones": 0, "errors": 0}
    skipped: dict[tuple[str, int], int] = {}
    for r in counts:
        tally["records"] += r["count"]  # type: ignore[operator]
        if r.kind == "offset_commit":
            tally["offset_tombstones" if r.tombstone else "offset_commits"] += r["count"]  # type: ignore[operator]
        elif r.kind == "group_metadata":
            tally["group_tombstones" if r.tombstone else "group_metadata"] += r["count"]  # type: ignore[operator]
        elif r.kind == "error":
            tally["errors"] += r["count"]  # type: ignore[operator]
        elif r.kind in _COORDINATOR_KINDS:
            kinds = tally.setdefault("coordinator_records", {})
            kinds[r.kind] = kinds.get(r.kind, 0) + r["count"]  # type: ignore[union-attr]
        else:
            part, version = ("key", r.key_version) if r.key_version is not None else ("value", r.value_version)
            skipped[(part, version)] = skipped.get((part, version), 0) + r["count"]
    tally["skipped"] = [SkippedCount(p, v, n) for (p, v), n in sorted(skipped.items())]
    tally["error_samples"] = samples
    tally["stable_offsets"] = {str(p): lso for p, (lso, _) in sorted((open_txn or {}).items())}
    tally["pending_records"] = pending
    return tally


def _past_lso(F, open_txn: Mapping[int, tuple[int, int]]):
    cond = None
    for p, (lso, _) in open_txn.items():
        c = (F.col("source_partition") == p) & (F.col("source_offset") >= lso)
        cond = c if cond is None else cond | c
    return cond


def _publish(work: str, out: str, summary: ScanSummary) -> None:
    """Replace the history in `out` by the finished scan in `work`; scan.json last."""
    fs, _ = open_fs(out)
    summary_path = scan_json_path(out)
    if fs.exists(open_fs(summary_path)[1]):
        fs.rm(open_fs(summary_path)[1])  # from here until the end, readers refuse the directory
    for table in TABLES:
        target = open_fs(join(out, table))[1]
        if fs.exists(target):
            fs.rm(target, recursive=True)
        fs.mv(open_fs(join(work, table))[1], target, recursive=True)
    write_text_atomic(summary_path, summary.to_json(), what="scan summary")


def run_scan(cfg: ScanConfig, *, spark=None, progress: ProgressFn = no_progress) -> ScanSummary:
    """Scan the source into `cfg.out` (see the module docstring); returns the summary.

    The tables are written into a hidden work directory inside `cfg.out` and replace the old
    history only when the scan succeeded, so a failed scan leaves the previous history intact.
    A scan that reads no record at all is an error: nothing was learned.
    """
    started = time.monotonic()
    now = datetime.now(UTC)
    partitions, _count = source_partitions(cfg.source, cfg.group)
    progress(ProgressEvent("scan", 0, 3, "steps", "starting Spark"))
    if spark is None:
        from offsetkeeper.spark.session import get_spark

        spark = get_spark(cfg.master, cfg.spark_conf, app_name="offsetkeeper-commits-scan",
                          warm=cfg.spark_warm)
    progress(ProgressEvent("scan", 1, 3, "steps", f"decoding {cfg.source.describe()}"))
    work = join(cfg.out, f".scan-{uuid.uuid4().hex[:12]}")
    fs, work_path = open_fs(work)
    try:
        open_txn = stable_offsets(cfg.source, partitions)
        decoded = decode_frame(read_source(spark, cfg.source, partitions, open_txn))
        tally = write_history(decoded, work, group=cfg.group, open_txn=open_txn)
        if not tally["records"]:
            what = f" for group '{cfg.group}'" if cfg.group else ""
            raise UsageError(f"{cfg.source.describe()} holds no records{what}; nothing to scan")
        tally.setdefault("coordinator_records", {})
        tally["topic_names"] = topic_names(cfg.source) if tally["coordinator_records"] else {}
        summary = ScanSummary(
            source=cfg.source.describe(), scanned_at=iso_datetime(now),
            scanned_at_ms=int(now.timestamp() * 1000), group=cfg.group, source_partitions=partitions,
            seconds=round(time.monotonic() - started, 2), **tally)  # type: ignore[arg-type]
        _publish(work, cfg.out, summary)
    finally:
        if fs.exists(work_path):
            fs.rm(work_path, recursive=True)
    progress(ProgressEvent("scan", 3, 3, "steps", "done"))
    return summary
