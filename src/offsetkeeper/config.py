"""Configuration: YAML file with named clusters, property files, and connection resolution.

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
      master: local[*]
      conf: {spark.driver.memory: 2g}
    ui:                                                  # `offsetkeeper ui` (docs/dashboard.md)
      token: ${OFFSETKEEPER_UI_TOKEN}
      history_store: /var/lib/offsetkeeper/history.db
      backup_destinations: [/backups]

``${VAR}`` (and ``${VAR:-default}``) is expanded from the environment; unknown keys are errors.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from offsetkeeper.errors import ConfigError
from offsetkeeper.redact import redact_properties

CONFIG_ENV = "OFFSETKEEPER_CONFIG"
DEFAULT_CONFIG_PATH = Path("~/.config/offsetkeeper/config.yaml")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


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
    conf: dict[str, str | int | bool] = Field(default_factory=dict)


class UiModel(_Strict):
    """The web dashboard: its access token, history store and backup destinations to list."""

    token: str | None = Field(default=None, repr=False)
    history_store: str | None = None
    backup_destinations: list[str] = Field(default_factory=list)


class ConfigFile(_Strict):
    default_cluster: str | None = None
    clusters: dict[str, ClusterModel] = Field(default_factory=dict)
    snapshots: SnapshotsModel = Field(default_factory=SnapshotsModel)
    spark: SparkModel = Field(default_factory=SparkModel)
    ui: UiModel = Field(default_factory=UiModel)


@dataclass(frozen=True)
class Connection:
    """Everything needed to talk to one cluster: librdkafka properties, passed through."""

    bootstrap_servers: str
    properties: dict[str, str] = field(default_factory=dict)
    name: str = ""

    def client_config(self, **extra: str) -> dict[str, str]:
        """librdkafka configuration for a client of this cluster."""
        conf = {**self.properties, "bootstrap.servers": self.bootstrap_servers}
        conf.update(extra)
        return conf

    def __repr__(self) -> str:  # never leak secrets through repr/logging
        return (
            f"Connection(name={self.name!r}, bootstrap_servers={self.bootstrap_servers!r}, "
            f"properties={redact_properties(self.properties)!r})"
        )


def expand_env(value: Any, *, where: str = "config") -> Any:
    """Expand ``${VAR}`` / ``${VAR:-default}`` in every string inside `value`."""
    if isinstance(value, str):

        def sub(m: re.Match[str]) -> str:
            name, default = m.group(1), m.group(2)
            if name in os.environ:
                return os.environ[name]
            if default is not None:
                return default
            raise ConfigError(f"{where}: environment variable {name} is not set (used as ${{{name}}})")

        return _ENV_REF.sub(sub, value)
    if isinstance(value, dict):
        return {k: expand_env(v, where=where) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v, where=where) for v in value]
    return value


def load_config_file(path: str | Path | None = None) -> ConfigFile:
    """Load the YAML config; a missing default file is an empty config, a missing named one an error."""
    explicit = path is not None or CONFIG_ENV in os.environ
    p = Path(path or os.environ.get(CONFIG_ENV) or DEFAULT_CONFIG_PATH).expanduser()
    if not p.exists():
        if explicit:
            raise ConfigError(f"config file {p} does not exist")
        return ConfigFile()
    return load_yaml_model(p, ConfigFile, kind="config file")


M = TypeVar("M", bound=BaseModel)


def load_yaml_model(path: str | Path, model: type[M], *, kind: str) -> M:
    """Read a YAML file into `model`: ${ENV} expanded, one-line ConfigError on any problem
    (`kind` names the file in messages, e.g. "backup file")."""
    p = Path(path).expanduser()
    try:
        raw = yaml.safe_load(p.read_text()) or {}
    except OSError as exc:
        raise ConfigError(f"{kind} {p} cannot be read: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{kind} {p} is not valid YAML: {_first_line(exc)}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{kind} {p} must hold a mapping at the top level")
    try:
        return model.model_validate(expand_env(raw, where=str(p)))
    except ValidationError as exc:
        errors = exc.errors()
        # An unknown key usually explains a "missing" one (a typo): report it first.
        err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        loc = ".".join(str(x) for x in err["loc"])
        if err["type"] == "extra_forbidden":
            raise ConfigError(f"{kind} {p}: unknown key '{loc}'") from None
        raise ConfigError(f"{kind} {p}: '{loc}' {err['msg'].lower()}") from None


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0]


def _java_jaas_to_librdkafka(props: dict[str, str]) -> dict[str, str]:
    """Java clients put SASL credentials in sasl.jaas.config; librdkafka wants sasl.username/password."""
    jaas = props.pop("sasl.jaas.config", None)
    if jaas is None:
        return props
    user = re.search(r'username\s*=\s*"([^"]*)"', jaas)
    pw = re.search(r'password\s*=\s*"([^"]*)"', jaas)
    if not (user and pw):
        raise ConfigError("sasl.jaas.config: only PLAIN/SCRAM login modules with username and password are supported")
    props.setdefault("sasl.username", user.group(1))
    props.setdefault("sasl.password", pw.group(1))
    return props


def parse_properties(text: str, *, source: str = "properties") -> dict[str, str]:
    """Parse Java-style ``key=value`` / ``key: value`` lines (``#``/``!`` comments)."""
    props: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if not s or s[0] in "#!":
            continue
        m = re.match(r"([^=:\s]+)\s*[=:]\s*(.*)$", s)
        if not m:
            raise ConfigError(f"{source} line {lineno}: expected key=value, got '{s.split()[0]}...'")
        props[m.group(1)] = m.group(2).strip()
    return _java_jaas_to_librdkafka(props)


def load_properties_file(path: str | Path) -> dict[str, str]:
    """Read a ``--command-config`` file (Kafka tool style) into librdkafka properties."""
    p = Path(path).expanduser()
    try:
        text = p.read_text()
    except OSError as exc:
        raise ConfigError(f"command config {p} cannot be read: {exc.strerror}") from exc
    return expand_env(parse_properties(text, source=str(p)), where=str(p))


def resolve_connection(
    *,
    bootstrap_server: str | None = None,
    command_config: str | Path | None = None,
    cluster: str | None = None,
    config: ConfigFile | None = None,
) -> Connection:
    """Pick the cluster to talk to: explicit flags win over the named or default cluster."""
    config = config or ConfigFile()
    name = cluster or (None if bootstrap_server else config.default_cluster)
    props: dict[str, str] = {}
    servers = bootstrap_server
    if name:
        if name not in config.clusters:
            known = ", ".join(sorted(config.clusters)) or "none configured"
            raise ConfigError(f"unknown cluster '{name}' (known: {known})")
        c = config.clusters[name]
        if c.command_config:
            props.update(load_properties_file(c.command_config))
        props.update({k: prop_str(v) for k, v in c.properties.items()})
        servers = bootstrap_server or c.bootstrap_servers
    if command_config:
        props.update(load_properties_file(command_config))
    from_props = props.pop("bootstrap.servers", None)
    servers = servers or from_props or os.environ.get("OFFSETKEEPER_BOOTSTRAP_SERVER")
    if not servers:
        raise ConfigError(
            "no cluster given: use --bootstrap-server HOST:PORT, --cluster NAME, "
            "or set default_cluster in the config file"
        )
    return Connection(bootstrap_servers=servers, properties=props, name=name or servers)


def prop_str(v: str | int | bool) -> str:
    """A YAML scalar as a librdkafka/Spark property string (booleans lower-case)."""
    return str(v).lower() if isinstance(v, bool) else str(v)


def connect_ref(
    ref: ClusterRef | None,
    *,
    bootstrap_server: str | None = None,
    command_config: str | Path | None = None,
    cluster: str | None = None,
    config: ConfigFile | None = None,
) -> Connection:
    """The connection for a file's cluster reference; explicit flags, when given, win over it."""
    if bootstrap_server or cluster or command_config or ref is None:
        return resolve_connection(bootstrap_server=bootstrap_server, command_config=command_config,
                                  cluster=cluster, config=config)
    conn = resolve_connection(bootstrap_server=ref.bootstrap_servers, command_config=ref.command_config,
                              cluster=ref.cluster, config=config)
    if not ref.properties:
        return conn
    props = {**conn.properties, **{k: prop_str(v) for k, v in ref.properties.items()}}
    return Connection(conn.bootstrap_servers, props, conn.name)
