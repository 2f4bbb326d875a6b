"""What a restore does: one frozen options object, built from CLI flags or a YAML file."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from offsetkeeper.config import ClusterRef, Connection, load_yaml_model, prop_str
from offsetkeeper.errors import UsageError

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
    dry_run: bool = False
    master: str | None = None
    spark_conf: Mapping[str, str] = field(default_factory=dict)

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
    """Epoch milliseconds, or ISO-8601 (UTC when no zone): the one time parser of
    `offsetkeeper.reset.parse.parse_time`, shared with --to-datetime and --at."""
    if text is None or text == "":
        return None
    from offsetkeeper.reset.parse import parse_time

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


def parse_partition_map(pairs: list[str] | None) -> dict[str | None, dict[int, int]]:
    """`[TOPIC:]SRC=DST` pairs (no topic = every topic)."""
    out: dict[str | None, dict[int, int]] = {}
    for p in pairs or []:
        m = re.fullmatch(r"(?:(.+):)?([0-9]+)=([0-9]+)", p.strip())
        if not m:
            raise UsageError(f"--partition-map '{p}' is not [TOPIC:]SOURCE_PARTITION=TARGET_PARTITION")
        out.setdefault(m.group(1), {})[int(m.group(2))] = int(m.group(3))
    return out


def parse_source_partitions(values: list[str] | None) -> dict[str | None, tuple[int, ...]]:
    """`[TOPIC:]0,1,2` values (no topic = every topic)."""
    out: dict[str | None, tuple[int, ...]] = {}
    for v in values or []:
        m = re.fullmatch(r"(?:(.+):)?([0-9]+(?:,[0-9]+)*)", v.strip())
        if not m:
            raise UsageError(f"--source-partitions '{v}' is not [TOPIC:]P[,P...]")
        key = m.group(1)
        out[key] = tuple(sorted(set(out.get(key, ())) | {int(x) for x in m.group(2).split(",")}))
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


class SparkModel(_Strict):
    master: str | None = None
    conf: dict[str, str | int | bool] = Field(default_factory=dict)


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
        master=f.spark.master,
        spark_conf={k: prop_str(v) for k, v in f.spark.conf.items()},
    )
    return opts.with_(**{k: v for k, v in overrides.items() if v is not None})


def validate_options(o: RestoreOptions) -> None:
    """Reject contradictory options before anything is read or written."""
    if o.from_time_ms is not None and o.to_time_ms is not None and o.to_time_ms <= o.from_time_ms:
        raise UsageError(f"--to-time ({o.to_time_ms}) must be after --from-time ({o.from_time_ms})")
    if o.chunk_records < 1:
        raise UsageError(f"chunk size {o.chunk_records} must be at least 1")
    if o.restore_id is not None and not re.fullmatch(r"[A-Za-z0-9._-]+", o.restore_id):
        raise UsageError(f"restore id '{o.restore_id}' may only hold letters, digits, '.', '_' and '-'")
    if o.replication_factor == 0 or o.replication_factor < -1:
        raise UsageError(f"--replication-factor {o.replication_factor} must be positive (or -1 for the broker default)")
