"""What a backup run needs, from flags or a YAML file.

YAML (``offsetkeeper backup run --file backup.yaml``)::

    source:                       # or give --bootstrap-server / --cluster on the command line
      cluster: prod               # a named cluster of the main config file, or:
      bootstrap_servers: kafka-1:9092
      command_config: /etc/kafka/client.properties
      properties: {security.protocol: SASL_SSL}
    topics:
      include: [orders, "payments-*", "~audit-[0-9]+"]
      exclude: ["*-tmp"]
    destination: /backups          # a path or a URL
    backup_id: nightly
    spark:
      master: local[*]            # or remote: sc://HOST:PORT (a Spark Connect server)
      conf: {spark.driver.memory: 2g}

Flags given on the command line win over the file. ``${ENV}`` is expanded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from offsetkeeper.backup.manifest import validate_backup_id
from offsetkeeper.config import (
    ClusterRef,
    ConfigFile,
    Connection,
    connect_url,
    load_yaml_model,
    prop_str,
)
from offsetkeeper.errors import UsageError
from offsetkeeper.kafka.connect import connect_ref
from offsetkeeper.models import compile_pattern
from offsetkeeper.storage import absolute


@dataclass(frozen=True)
class BackupConfig:
    """One backup: where from, which topics, where to, under which id, on which Spark."""

    connection: Connection
    include: tuple[str, ...]
    destination: str
    backup_id: str
    exclude: tuple[str, ...] = ()
    master: str | None = None  # None: local[*], or the master spark-submit was given
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    min_partitions: int | None = None
    max_records_per_task: int | None = 500_000
    spark_warm: bool = True  # False: no warm Spark server (spark.warm in the config file)

    def __post_init__(self) -> None:
        if not self.backup_id:
            raise UsageError("no backup id given: use --id ID (or backup_id in the backup file)")
        validate_backup_id(self.backup_id)
        if not self.destination:
            raise UsageError("no destination given: use --dest PATH|URL")
        if not self.include:
            raise UsageError("no topics given: use --topic NAME|GLOB|~REGEX (repeatable)")
        for p in (*self.include, *self.exclude):
            compile_pattern(p)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Topics(_Strict):
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)


class _Spark(_Strict):
    master: str | None = None
    remote: str | None = None  # a Spark Connect server, sc://HOST:PORT (wins over master)

    @field_validator("remote")
    @classmethod
    def _connect_url(cls, v: str | None) -> str | None:
        return connect_url(v)
    conf: dict[str, str | int | bool] = Field(default_factory=dict)


class BackupFile(_Strict):
    """The YAML file of `backup run --file`."""

    source: ClusterRef = Field(default_factory=ClusterRef)
    topics: _Topics = Field(default_factory=_Topics)
    destination: str | None = None
    backup_id: str | None = None
    spark: _Spark = Field(default_factory=_Spark)
    min_partitions: int | None = None
    max_records_per_task: int | None = None


def load_backup_file(path: str | Path) -> BackupFile:
    return load_yaml_model(path, BackupFile, kind="backup file")


def build_backup_config(
    *,
    file: str | Path | None = None,
    config: ConfigFile | None = None,
    bootstrap_server: str | None = None,
    command_config: str | Path | None = None,
    cluster: str | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    destination: str | None = None,
    backup_id: str | None = None,
    master: str | None = None,
    spark_conf: Mapping[str, str] | None = None,
    max_records_per_task: int | None = None,
) -> BackupConfig:
    """Combine the YAML file (if any), the main config file and flags (flags win)."""
    f = load_backup_file(file) if file else BackupFile()
    config = config or ConfigFile()
    conn = connect_ref(f.source, bootstrap_server=bootstrap_server, command_config=command_config,
                       cluster=cluster, config=config)
    conf = {**{k: prop_str(v) for k, v in config.spark.conf.items()},
            **{k: prop_str(v) for k, v in f.spark.conf.items()}, **dict(spark_conf or {})}
    return BackupConfig(
        connection=conn,
        include=tuple(include or f.topics.include),
        exclude=tuple(exclude or f.topics.exclude),
        destination=absolute(destination or f.destination or ""),
        backup_id=backup_id or f.backup_id or "",
        # the main config's master only when it names one (its default local[*] would hide
        # the warm server and SPARK_REMOTE)
        master=master or f.spark.remote or f.spark.master or (
            config.spark.location if {"master", "remote"} & config.spark.model_fields_set
            else None),
        spark_conf=conf,
        min_partitions=f.min_partitions,
        max_records_per_task=max_records_per_task or f.max_records_per_task or 500_000,
        spark_warm=config.spark.warm,
    )
