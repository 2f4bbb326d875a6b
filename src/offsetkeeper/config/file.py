"""The configuration file: named clusters, the snapshot store, Spark and the dashboard.

The YAML file (``--config``, else ``$OFFSETKEEPER_CONFIG``, else
``~/.config/offsetkeeper/config.yaml``) looks like::

    default_cluster: prod
    clusters:
      prod:
        bootstrap_servers: kafka-1:9092,kafka-2:9092
        command_config: /etc/kafka/client.properties   # optional
        properties:                                      # librdkafka, passed through
          security.protocol: SASL_SSL
          sasl.mechanism: SCRAM-SHA-512
          sasl.username: ops
          sasl.password: ${KAFKA_PASSWORD}
    snapshots:
      store: /var/lib/offsetkeeper/snapshots
    spark:
      master: local[*]            # or remote: sc://HOST:PORT, a Spark Connect server (wins)
      conf: {spark.driver.memory: 2g}
      warm: false                 # no warm Spark server (offsetkeeper.spark.warm; default true)
    ui:                                                  # `offsetkeeper ui` (docs/dashboard.md)
      token: ${OFFSETKEEPER_UI_TOKEN}
      history_store: /var/lib/offsetkeeper/history.db
      backup_destinations: [/backups]
      checkpoints:                                       # Spark streaming checkpoints to show
        - {name: orders-job, path: /chk/orders, cluster: prod}
      connect:                                           # Kafka Connect workers (Connectors page)
        - {name: main, url: https://connect:8083, username: ops, password: ${CONNECT_PASSWORD},
           ca_file: /etc/ssl/ca.pem, cluster: prod}
      mm2:                                               # MirrorMaker 2 flows (MM2 page)
        - {name: prod-to-dr, source_alias: A, target: dr, source: prod}

``${VAR}`` (and ``${VAR:-default}``) is expanded from the environment; unknown keys are errors.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from offsetkeeper.config.loading import load_yaml_model
from offsetkeeper.config.paths import CONFIG_ENV, DEFAULT_CONFIG_PATH
from offsetkeeper.errors import ConfigError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClusterModel(_Strict):
    bootstrap_servers: str
    command_config: str | None = None
    properties: dict[str, str | int | bool] = Field(default_factory=dict)


class ClusterRef(_Strict):
    """A cluster named inside another YAML file (a backup's source, a restore's target)."""

    cluster: str | None = None
    bootstrap_servers: str | None = None
    command_config: str | None = None
    properties: dict[str, str | int | bool] = Field(default_factory=dict)


class SnapshotsModel(_Strict):
    store: str | None = None


class SparkModel(_Strict):
    master: str = "local[*]"
    remote: str | None = None       # a Spark Connect server, sc://HOST:PORT (wins over master)
    conf: dict[str, str | int | bool] = Field(default_factory=dict)
    # data commands attach to the warm local Spark server by default (offsetkeeper.spark.warm)
    warm: bool = True

    @field_validator("remote")
    @classmethod
    def _connect_url(cls, v: str | None) -> str | None:
        return connect_url(v)

    @property
    def location(self) -> str:
        """Where Spark jobs run: the Connect server `remote` when set, else `master`."""
        return self.remote or self.master


def connect_url(v: str | None) -> str | None:
    if v is not None and not (v.strip().startswith("sc://") and len(v.strip()) > 5):
        raise ValueError(f"'{v}' is not a Spark Connect URL; expected sc://HOST:PORT")
    return v.strip() if v is not None else None


class UiCheckpointModel(_Strict):
    """A Spark Structured Streaming checkpoint the dashboard shows (its lag on `cluster`)."""

    path: str                       # local path or fsspec URL of the checkpoint directory
    name: str | None = None         # default: the last part of the path
    cluster: str | None = None      # default: the dashboard's default cluster
    source: int | None = None       # the query's Kafka source, when it has several


class UiConnectModel(_Strict):
    """A Kafka Connect worker the dashboard shows connectors of (read-only)."""

    url: str                        # http[s]://host:port (a password in it is masked)
    name: str | None = None         # default: host:port
    username: str | None = None
    password: str | None = Field(default=None, repr=False)
    ca_file: str | None = None
    verify: bool = True
    cluster: str | None = None      # the Kafka cluster of its sink connectors' groups


class UiMm2Model(_Strict):
    """A MirrorMaker 2 flow the dashboard reports on (as `mm2 status`)."""

    source_alias: str               # the source cluster's alias in MM2's configuration
    target: str | None = None       # the target cluster (default: the dashboard's default)
    source: str | None = None       # the source cluster: adds what a failover would re-read
    name: str | None = None         # default: ALIAS->TARGET


class UiModel(_Strict):
    """The web dashboard: its access token, history store, backup destinations, streaming
    checkpoints, Kafka Connect workers and MirrorMaker 2 flows to show."""

    token: str | None = Field(default=None, repr=False)
    history_store: str | None = None
    backup_destinations: list[str] = Field(default_factory=list)
    checkpoints: list[UiCheckpointModel] = Field(default_factory=list)
    connect: list[UiConnectModel] = Field(default_factory=list)
    mm2: list[UiMm2Model] = Field(default_factory=list)


class ConfigFile(_Strict):
    default_cluster: str | None = None
    clusters: dict[str, ClusterModel] = Field(default_factory=dict)
    snapshots: SnapshotsModel = Field(default_factory=SnapshotsModel)
    spark: SparkModel = Field(default_factory=SparkModel)
    ui: UiModel = Field(default_factory=UiModel)



def load_config_file(path: str | Path | None = None) -> ConfigFile:
    """Load the YAML config; a missing default file is an empty config, a missing named one an error.

    ``${VAR}`` inside ``clusters`` is expanded only when a command uses that cluster
    (`resolve_connection`), so an unset variable of one cluster never breaks the others.
    """
    explicit = path is not None or CONFIG_ENV in os.environ
    p = Path(path or os.environ.get(CONFIG_ENV) or DEFAULT_CONFIG_PATH).expanduser()
    if not p.exists():
        if explicit:
            raise ConfigError(f"config file {p} does not exist")
        return ConfigFile()
    return load_yaml_model(p, ConfigFile, kind="config file", lazy=("clusters",))
