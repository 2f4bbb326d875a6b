"""What a restore does: one frozen options object, built from CLI flags and/or a YAML file.

`RestoreRequest` holds what a user gave (flag values as text, the YAML file's path);
`build_restore_options` merges it with the YAML file and the main config file (flags win over
the file, the file over the config) into `RestoreOptions`, the one input of `run_restore`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from offsetkeeper.config import ClusterRef, Connection, connect_url, load_yaml_model, prop_str
from offsetkeeper.errors import UsageError
from offsetkeeper.storage import absolute

DEFAULT_CHUNK_RECORDS = 50_000


@dataclass(frozen=True)
class RestoreOptions:
    """Everything `run_restore` needs. Pure data; picklable."""

    destination: str
    backup_id: str
    target: Connection
    restore_id: str | None = None
    topics: tuple[str, ...] = ()            # include patterns (fnmatch); empty = every topic
    exclude_topics: tuple[str, ...] = ()
    rename: Mapping[str, str] = field(default_factory=dict)
    # topic (None = every topic) -> source partition -> target partition
    partition_map: Mapping[str | None, Mapping[int, int]] = field(default_factory=dict)
    source_partitions: Mapping[str | None, tuple[int, ...]] = field(default_factory=dict)
    from_time_ms: int | None = None         # inclusive
    to_time_ms: int | None = None           # exclusive
    create_topics: bool = True
    replication_factor: int = -1            # -1 = the broker default
    offset_headers: bool = True
    records_per_second: float | None = None
    bytes_per_second: float | None = None
    chunk_records: int = DEFAULT_CHUNK_RECORDS
    producer_properties: Mapping[str, str] = field(default_factory=dict)
    # batch compression of the restored records: none, gzip, snappy, lz4, zstd; None: the
    # source topics' compression.type when the backup's topic configs name one, else zstd
    compression: str | None = None
    dry_run: bool = False
    master: str | None = None
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    spark_warm: bool = True  # False: no warm Spark server (spark.warm in the config file)
    # a new restore id refuses target partitions that already hold records unless this is set
    allow_non_empty_target: bool = False

    def with_(self, **changes: Any) -> RestoreOptions:
        return replace(self, **changes)

    def fingerprint(self) -> dict[str, Any]:
        """The options that decide which records go where (a rerun must not change them)."""
        return {
            "topics": list(self.topics),
            "exclude_topics": list(self.exclude_topics),
            "rename": dict(sorted(self.rename.items())),
            "partition_map": {str(k): {str(a): b for a, b in sorted(v.items())}
                              for k, v in sorted(self.partition_map.items(), key=lambda x: str(x[0]))},
            "source_partitions": {str(k): list(v) for k, v in
                                  sorted(self.source_partitions.items(), key=lambda x: str(x[0]))},
            "from_time_ms": self.from_time_ms,
            "to_time_ms": self.to_time_ms,
            "offset_headers": self.offset_headers,
        }


# -- parsing of flag values ------------------------------------------------------------------

def parse_time_ms(text: str | int | datetime | None, *, flag: str) -> int | None:
    """`offsetkeeper.times.parse_time` (shared with --to-datetime and --at); None when unset."""
    if text is None or text == "":
        return None
    from offsetkeeper.times import parse_time

    return parse_time(text, what=flag)


def parse_rename(pairs: list[str] | None) -> dict[str, str]:
    """`SRC=DST` pairs."""
    out: dict[str, str] = {}
    for p in pairs or []:
        src, sep, dst = p.partition("=")
        if not sep or not src.strip() or not dst.strip():
            raise UsageError(f"--rename '{p}' is not SOURCE_TOPIC=TARGET_TOPIC")
        out[src.strip()] = dst.strip()
    return out


MAX_PARTITION = 2**31 - 1  # Kafka partition numbers are int32


def _partition(text: str, flag: str, value: str) -> int:
    n = int(text)
    if n > MAX_PARTITION:
        raise UsageError(f"{flag} '{value}': partition {text} is out of range (0 to {MAX_PARTITION})")
    return n


def parse_partition_map(pairs: list[str] | None) -> dict[str | None, dict[int, int]]:
    """`[TOPIC:]SRC=DST` pairs (no topic = every topic); ASCII digits only."""
    out: dict[str | None, dict[int, int]] = {}
    for p in pairs or []:
        m = re.fullmatch(r"(?:(.+):)?([0-9]+)=([0-9]+)", p.strip(), flags=re.ASCII)
        if not m:
            raise UsageError(f"--partition-map '{p}' is not [TOPIC:]SOURCE_PARTITION=TARGET_PARTITION")
        src = _partition(m.group(2), "--partition-map", p)
        out.setdefault(m.group(1), {})[src] = _partition(m.group(3), "--partition-map", p)
    return out


def parse_source_partitions(values: list[str] | None) -> dict[str | None, tuple[int, ...]]:
    """`[TOPIC:]0,1,2` values (no topic = every topic); ASCII digits only."""
    out: dict[str | None, tuple[int, ...]] = {}
    for v in values or []:
        m = re.fullmatch(r"(?:(.+):)?([0-9]+(?:,[0-9]+)*)", v.strip(), flags=re.ASCII)
        if not m:
            raise UsageError(f"--source-partitions '{v}' is not [TOPIC:]P[,P...]")
        key = m.group(1)
        parts = {_partition(x, "--source-partitions", v) for x in m.group(2).split(",")}
        out[key] = tuple(sorted(set(out.get(key, ())) | parts))
    return out


def parse_properties(pairs: list[str] | tuple[str, ...] | None, *, flag: str) -> dict[str, str]:
    """Repeated `KEY=VALUE` flag values (the value may hold '=')."""
    out: dict[str, str] = {}
    for p in pairs or []:
        k, sep, v = p.partition("=")
        if not sep or not k.strip():
            raise UsageError(f"{flag} '{k.strip() or p}' is not KEY=VALUE")
        out[k.strip()] = v
    return out


def parse_rate(text: str | None, *, flag: str) -> float | None:
    """A positive number with an optional k/M/G suffix (1000-based for records, bytes)."""
    if text is None or text == "":
        return None
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kKmMgG]?)(?:i?[bB])?", str(text).strip())
    if not m or float(m.group(1)) <= 0:
        raise UsageError(f"{flag} '{text}' is not a positive rate (e.g. 5000, 20k, 10MB)")
    mult = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2).lower()]
    return float(m.group(1)) * mult


# -- YAML ------------------------------------------------------------------------------------

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BackupRef(_Strict):
    destination: str = Field(alias="path")
    id: str

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class RestoreModel(_Strict):
    restore_id: str | None = None
    topics: list[str] = Field(default_factory=list)
    exclude_topics: list[str] = Field(default_factory=list)
    rename: dict[str, str] = Field(default_factory=dict)
    partition_map: list[str] = Field(default_factory=list)
    source_partitions: list[str] = Field(default_factory=list)
    from_time: datetime | str | int | None = None
    to_time: datetime | str | int | None = None
    create_topics: bool = True
    replication_factor: int = -1
    offset_headers: bool = True
    records_per_second: str | float | None = None
    bytes_per_second: str | float | None = None
    chunk_records: int = DEFAULT_CHUNK_RECORDS
    producer_properties: dict[str, str | int | bool] = Field(default_factory=dict)
    compression: str | None = None
    allow_non_empty_target: bool = False


class SparkModel(_Strict):
    master: str | None = None
    remote: str | None = None  # a Spark Connect server, sc://HOST:PORT (wins over master)
    conf: dict[str, str | int | bool] = Field(default_factory=dict)

    @field_validator("remote")
    @classmethod
    def _connect_url(cls, v: str | None) -> str | None:
        return connect_url(v)

    @property
    def location(self) -> str | None:
        """Where Spark jobs run: the Connect server `remote` when set, else `master`."""
        return self.remote or self.master


class RestoreFile(_Strict):
    backup: BackupRef
    target: ClusterRef = Field(default_factory=ClusterRef)
    restore: RestoreModel = Field(default_factory=RestoreModel)
    spark: SparkModel = Field(default_factory=SparkModel)
    # three-phase only
    source: ClusterRef | None = None
    run_backup: dict[str, Any] | None = None
    groups: dict[str, Any] | None = None
    validate_after: bool = Field(default=True, alias="validate")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def load_restore_file(path: str | Path) -> RestoreFile:
    return load_yaml_model(path, RestoreFile, kind="restore file")


def options_from_file(f: RestoreFile, target: Connection, **overrides: Any) -> RestoreOptions:
    r = f.restore
    opts = RestoreOptions(
        destination=f.backup.destination,
        backup_id=f.backup.id,
        target=target,
        restore_id=r.restore_id,
        topics=tuple(r.topics),
        exclude_topics=tuple(r.exclude_topics),
        rename=dict(r.rename),
        partition_map=parse_partition_map(r.partition_map),
        source_partitions=parse_source_partitions(r.source_partitions),
        from_time_ms=parse_time_ms(r.from_time, flag="from_time"),
        to_time_ms=parse_time_ms(r.to_time, flag="to_time"),
        create_topics=r.create_topics,
        replication_factor=r.replication_factor,
        offset_headers=r.offset_headers,
        records_per_second=parse_rate(None if r.records_per_second is None else str(r.records_per_second),
                                      flag="records_per_second"),
        bytes_per_second=parse_rate(None if r.bytes_per_second is None else str(r.bytes_per_second),
                                    flag="bytes_per_second"),
        chunk_records=r.chunk_records,
        producer_properties={k: prop_str(v) for k, v in r.producer_properties.items()},
        compression=parse_compression(r.compression, flag="compression"),
        allow_non_empty_target=r.allow_non_empty_target,
        master=f.spark.location,
        spark_conf={k: prop_str(v) for k, v in f.spark.conf.items()},
    )
    return opts.with_(**{k: v for k, v in overrides.items() if v is not None})


COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")
DEFAULT_COMPRESSION = "zstd"


def parse_compression(text: str | None, *, flag: str) -> str | None:
    """A batch compression name (lower-cased), or None when not given."""
    if text is None:
        return None
    name = str(text).strip().lower()
    if name not in COMPRESSIONS:
        raise UsageError(f"{flag} '{text}' is not a compression (expected {', '.join(COMPRESSIONS)})")
    return name


def restore_compression(o: RestoreOptions, topic_configs: Mapping[str, Mapping[str, str]]) -> str:
    """The compression restored batches are written with: `o.compression` when given; else the
    source topics' `compression.type` from the backup's topic configs when they all name the
    same codec; else zstd (the source's producers' choice is not recorded when the topic left
    it to them: `producer`, the default). One producer writes every route of a task, so one
    codec serves the restore; a `compression.type` in --producer-property still wins."""
    if o.compression is not None:
        return o.compression
    named = {str(c.get("compression.type", "")).lower() for c in topic_configs.values()}
    named = {"none" if n == "uncompressed" else n for n in named}
    if len(named) == 1 and (only := next(iter(named))) in COMPRESSIONS:
        return only
    return DEFAULT_COMPRESSION


def validate_options(o: RestoreOptions) -> None:
    """Reject contradictory options before anything is read or written."""
    if o.from_time_ms is not None and o.to_time_ms is not None and o.to_time_ms <= o.from_time_ms:
        raise UsageError(f"--to-time ({o.to_time_ms}) must be after --from-time ({o.from_time_ms})")
    if o.chunk_records < 1:
        raise UsageError(f"chunk size {o.chunk_records} must be at least 1")
    if o.restore_id is not None:
        from offsetkeeper.restore.paths import validate_restore_id

        validate_restore_id(o.restore_id)
    if o.chunk_records > 10_000_000:
        raise UsageError(f"chunk size {o.chunk_records} is above 10000000 records")
    if o.replication_factor == 0 or o.replication_factor < -1:
        raise UsageError(f"--replication-factor {o.replication_factor} must be positive (or -1 for the broker default)")


# -- merging a request (flags + YAML file + config file) -------------------------------------

@dataclass(frozen=True)
class RestoreRequest:
    """A restore as a user asks for it: flag values as given (None = not given), the YAML file
    and the main config file. `build_restore_options` turns it into RestoreOptions."""

    backup: str | None = None                      # DEST/BACKUP_ID (or from the file)
    file: str | Path | None = None                 # restore YAML file
    config: str | Path | None = None               # main config file (None: the default)
    bootstrap_server: str | None = None
    command_config: str | Path | None = None
    cluster: str | None = None
    restore_id: str | None = None
    topics: tuple[str, ...] = ()
    exclude_topics: tuple[str, ...] = ()
    rename: tuple[str, ...] = ()                   # SRC=DST
    partition_map: tuple[str, ...] = ()            # [TOPIC:]SRC=DST
    source_partitions: tuple[str, ...] = ()        # [TOPIC:]P[,P...]
    from_time: str | None = None
    to_time: str | None = None
    create_topics: bool | None = None
    replication_factor: int | None = None
    offset_headers: bool | None = None
    max_records_per_sec: str | None = None
    max_bytes_per_sec: str | None = None
    chunk_records: int | None = None
    producer_properties: tuple[str, ...] = ()      # KEY=VALUE
    compression: str | None = None                 # none|gzip|snappy|lz4|zstd
    dry_run: bool = False
    allow_non_empty_target: bool = False
    master: str | None = None
    spark_conf: tuple[str, ...] = ()               # KEY=VALUE


def split_backup_ref(ref: str) -> tuple[str, str]:
    """`DEST/BACKUP_ID` -> (DEST, BACKUP_ID); the id is checked (no `..`)."""
    from offsetkeeper.backup.manifest import validate_backup_id

    dest, _, bid = ref.rstrip("/").rpartition("/")
    if not dest or not bid:
        raise UsageError(f"backup '{ref}' must be DEST/BACKUP_ID, e.g. /backups/nightly-1")
    validate_backup_id(bid)
    return dest, bid


def build_restore_options(req: RestoreRequest, *, file: RestoreFile | None = None) -> RestoreOptions:
    """Merge the YAML file (loaded once; or given as `file`), the main config file and the flags
    of `req` (flags win) into checked RestoreOptions."""
    from offsetkeeper.config import load_config_file
    from offsetkeeper.kafka.connect import connect_ref

    cfg = load_config_file(req.config)
    f = file if file is not None else (load_restore_file(req.file) if req.file else None)
    target = connect_ref(f.target if f else None, bootstrap_server=req.bootstrap_server,
                         command_config=req.command_config, cluster=req.cluster, config=cfg)
    if req.backup:
        dest, bid = split_backup_ref(req.backup)
    elif f is not None:
        dest, bid = f.backup.destination, f.backup.id
    else:
        raise UsageError("no backup given: pass DEST/BACKUP_ID or --file with a backup section")
    base = options_from_file(f, target) if f is not None else RestoreOptions(dest, bid, target)
    spark_conf = {**{k: prop_str(v) for k, v in cfg.spark.conf.items()}, **dict(base.spark_conf),
                  **parse_properties(req.spark_conf, flag="--conf")}
    changes: dict[str, Any] = {
        "destination": absolute(dest), "backup_id": bid, "restore_id": req.restore_id,
        "topics": tuple(req.topics) or None,
        "exclude_topics": tuple(req.exclude_topics) or None,
        "rename": {**base.rename, **parse_rename(list(req.rename))} if req.rename else None,
        "partition_map": parse_partition_map(list(req.partition_map)) if req.partition_map else None,
        "source_partitions": parse_source_partitions(list(req.source_partitions))
        if req.source_partitions else None,
        "from_time_ms": parse_time_ms(req.from_time, flag="--from-time"),
        "to_time_ms": parse_time_ms(req.to_time, flag="--to-time"),
        "create_topics": req.create_topics, "replication_factor": req.replication_factor,
        "offset_headers": req.offset_headers,
        "records_per_second": parse_rate(req.max_records_per_sec, flag="--max-records-per-sec"),
        "bytes_per_second": parse_rate(req.max_bytes_per_sec, flag="--max-bytes-per-sec"),
        "chunk_records": req.chunk_records,
        "producer_properties": {**base.producer_properties,
                                **parse_properties(req.producer_properties, flag="--producer-property")}
        if req.producer_properties else None,
        "compression": parse_compression(req.compression, flag="--compression"),
        "dry_run": req.dry_run or None,
        "allow_non_empty_target": req.allow_non_empty_target or None,
        # the main config's master only when it names one (its default local[*] would hide
        # the warm server and SPARK_REMOTE)
        "master": req.master or base.master or (
            cfg.spark.location if {"master", "remote"} & cfg.spark.model_fields_set else None),
        "spark_conf": spark_conf,
        "spark_warm": cfg.spark.warm,
    }
    opts = base.with_(**{k: v for k, v in changes.items() if v is not None})
    validate_options(opts)
    return opts
