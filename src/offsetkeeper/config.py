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
      checkpoints:                                       # Spark streaming checkpoints to show
        - {name: orders-job, path: /chk/orders, cluster: prod}

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
from offsetkeeper.redact import redact_properties, redact_text

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


class UiCheckpointModel(_Strict):
    """A Spark Structured Streaming checkpoint the dashboard shows (its lag on `cluster`)."""

    path: str                       # local path or fsspec URL of the checkpoint directory
    name: str | None = None         # default: the last part of the path
    cluster: str | None = None      # default: the dashboard's default cluster
    source: int | None = None       # the query's Kafka source, when it has several


class UiModel(_Strict):
    """The web dashboard: its access token, history store, backup destinations and streaming
    checkpoints to list."""

    token: str | None = Field(default=None, repr=False)
    history_store: str | None = None
    backup_destinations: list[str] = Field(default_factory=list)
    checkpoints: list[UiCheckpointModel] = Field(default_factory=list)


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


M = TypeVar("M", bound=BaseModel)


# Bounds of every YAML and properties file, checked before and while parsing: a config with
# nested anchors (a "billion laughs" YAML bomb) once grew to 4.8 GB when its aliases were expanded.
MAX_CONFIG_BYTES = 4 * 1024 * 1024   # the file
MAX_YAML_ALIASES = 1_000             # `*name` references in one document
MAX_YAML_NODES = 1_000_000           # scalars, lists and mappings, aliases expanded


class InputTooLarge(ValueError):
    """A YAML document beyond the bounds above (the message says which)."""


class _Loader(yaml.SafeLoader):
    """YAML without implicit timestamps: `2026-02-30` or `09:40` stay the strings the user
    wrote (parsed and checked where they are used) instead of failing inside the YAML parser.

    Bounded: at most MAX_YAML_ALIASES aliases, and at most MAX_YAML_NODES nodes once every
    alias is expanded (counted on the composed graph, before anything is built), so nested
    anchors cannot expand into gigabytes; a recursive alias is refused."""

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self._aliases = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                raise InputTooLarge(f"more than {MAX_YAML_ALIASES:,} YAML aliases (the limit)")
        return super().compose_node(parent, index)

    def construct_document(self, node):
        expanded_size(node, MAX_YAML_NODES)
        return super().construct_document(node)


def expanded_size(root: yaml.Node, limit: int) -> int:
    """Nodes of a composed YAML graph with every alias expanded (shared nodes counted once per
    reference): linear in the graph, InputTooLarge beyond `limit` or for a recursive alias."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:   # iterative post-order: deep nesting cannot exhaust Python's stack
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            total = 1 + sum(sizes[id(c)] for c in _children(node))
            if total > limit:
                raise InputTooLarge(f"more than {limit:,} YAML nodes once its aliases are "
                                    "expanded (the limit; nested anchors?)")
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise InputTooLarge("a YAML alias refers to a node that contains it (recursive)")
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_path:
                raise InputTooLarge("a YAML alias refers to a node that contains it (recursive)")
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [x for kv in node.value for x in kv]
    return []


_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def read_text_strict(path: Path, *, kind: str, limit: int = MAX_CONFIG_BYTES) -> str:
    """A file's text, decoded as UTF-8 strictly; ConfigError naming the file and line. Files
    larger than `limit` bytes are refused before they are read further."""
    try:
        with path.open("rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise ConfigError(f"{kind} {path} cannot be read: {exc.strerror or exc}") from exc
    if len(data) > limit:
        raise ConfigError(f"{kind} {path} is larger than {limit // (1024 * 1024)} MiB (the limit "
                          "of a configuration file)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{kind} {path} line {line}: not UTF-8 text "
                          f"(byte 0x{data[exc.start]:02x})") from None


def load_yaml_model(path: str | Path, model: type[M], *, kind: str, lazy: tuple[str, ...] = ()) -> M:
    """Read a YAML file into `model`: ${ENV} expanded (except under the top-level keys in
    `lazy`), one-line ConfigError on any problem (`kind` names the file, e.g. "backup file")."""
    p = Path(path).expanduser()
    text = read_text_strict(p, kind=kind)
    try:
        raw = yaml.load(text, Loader=_Loader) or {}
    except InputTooLarge as exc:
        raise ConfigError(f"{kind} {p} is refused: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{kind} {p} is nested too deeply to read") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{kind} {p} is not valid YAML: {_first_line(exc)}") from exc
    except ValueError as exc:
        raise ConfigError(f"{kind} {p} holds a value YAML cannot read: {_first_line(exc)}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{kind} {p} must hold a mapping at the top level")
    expanded = {k: (v if k in lazy else expand_env(v, where=str(p))) for k, v in raw.items()}
    try:
        return model.model_validate(expanded)
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


# Java client properties librdkafka does not know, and what to use instead.
JAVA_ONLY = {
    "ssl.truststore.location": "ssl.ca.location (a PEM file of the CA certificates; convert a "
                               "JKS truststore with keytool -exportcert -rfc)",
    "ssl.truststore.password": "nothing (a PEM CA file in ssl.ca.location needs no password)",
    "ssl.truststore.type": "ssl.ca.location with a PEM file",
    "ssl.truststore.certificates": "ssl.ca.pem",
    "ssl.keystore.type": "ssl.keystore.location with a PKCS#12 file, or ssl.certificate.location "
                         "and ssl.key.location with PEM files",
    "ssl.keystore.key": "ssl.key.pem",
    "ssl.keystore.certificate.chain": "ssl.certificate.pem",
    "sasl.login.callback.handler.class": "sasl.oauthbearer.* properties",
    "sasl.client.callback.handler.class": "sasl.oauthbearer.* properties",
    "default.api.timeout.ms": "nothing (offsetkeeper sets its own timeouts)",
}


def _java_jaas_to_librdkafka(props: dict[str, str]) -> dict[str, str]:
    """Java clients put SASL credentials in sasl.jaas.config; librdkafka wants sasl.username/password."""
    jaas = props.pop("sasl.jaas.config", None)
    if jaas is None:
        return props
    user = re.search(r'\busername\s*=\s*"([^"]*)"', jaas)
    pw = re.search(r'\bpassword\s*=\s*"([^"]*)"', jaas)
    if not (user and pw):
        raise ConfigError("sasl.jaas.config: only PLAIN/SCRAM login modules with username and password are supported")
    props.setdefault("sasl.username", user.group(1))
    props.setdefault("sasl.password", pw.group(1))
    return props


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, logical line) as java.util.Properties.load joins them: a line ending
    in an odd number of backslashes continues on the next, whose leading whitespace is dropped;
    comment lines (# or ! first) and blank lines are skipped and never continue."""
    out: list[tuple[int, str]] = []
    natural = re.split(r"\r\n|\r|\n", text)
    i = 0
    while i < len(natural):
        start, line = i + 1, natural[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        parts = []
        while True:
            trailing = len(line) - len(line.rstrip("\\"))
            if trailing % 2 == 1:
                parts.append(line[:-1])
                if i == len(natural):
                    break
                line = natural[i].lstrip(" \t\f")
                i += 1
                continue
            parts.append(line)
            break
        out.append((start, "".join(parts)))
    return out


def _unescape(text: str, *, where: str) -> str:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 >= len(text):
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2:i + 6]
            if not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                raise ConfigError(f"{where}: malformed \\uxxxx escape")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def parse_properties(text: str, *, source: str = "properties") -> dict[str, str]:
    """Parse a Java properties file as java.util.Properties.load does: `key=value`, `key: value`
    and `key value`, continuation lines, `\\` escapes (`\\u00e9`, `\\=`, `\\:`), `#`/`!`
    comments; multi-line JAAS configs included. Values are never quoted in errors (they may be
    secrets): errors name the file, the line and the key."""
    props: dict[str, str] = {}
    for lineno, line in _logical_lines(text):
        i, n = 0, len(line)
        while i < n and line[i] not in "=: \t\f":
            i += 2 if line[i] == "\\" else 1
        raw_key = line[:min(i, n)]
        rest = line[min(i, n):].lstrip(" \t\f")
        has_sep = i < n
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        where = f"{source} line {lineno}"
        key = _unescape(raw_key, where=where)
        if not has_sep or not key:
            # Java would read a lone word as a key with an empty value; for client properties
            # that is always a mistake (often the second half of a broken secret), so refuse
            # it — and never echo the text.
            raise ConfigError(f"{where}: expected key=value (the line has no key and value; "
                              "its text is not shown in case it is a secret)")
        props[key] = _unescape(rest, where=f"{where} (value of {key})")
    return _java_jaas_to_librdkafka(props)


def load_properties_file(path: str | Path) -> dict[str, str]:
    """Read a ``--command-config`` file (Kafka tool style) into librdkafka properties."""
    p = Path(path).expanduser()
    text = read_text_strict(p, kind="command config")
    return expand_env(parse_properties(text, source=str(p)), where=str(p))


def check_client_properties(props: dict[str, str], *, source: str = "client properties") -> None:
    """Refuse properties librdkafka would refuse (unknown names, invalid values, Java-only
    names) before anything talks to a cluster: a ConfigError naming the property (secret values
    masked), with the librdkafka equivalent of a Java-only property."""
    for key in props:
        if key in JAVA_ONLY:
            raise ConfigError(f"{source}: '{key}' is a Java client property that librdkafka does "
                              f"not support; use {JAVA_ONLY[key]}")
    import logging

    from confluent_kafka import KafkaException, Producer

    quiet = logging.getLogger("offsetkeeper.librdkafka.check")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    try:
        Producer({**props, "logger": quiet})
    except (KafkaException, ValueError, TypeError) as exc:
        err = exc.args[0] if exc.args else exc
        text = getattr(err, "str", lambda: str(err))()
        text = redact_text(text, props)
        raise ConfigError(f"{source}: {_first_line(Exception(text))}") from None


def resolve_connection(
    *,
    bootstrap_server: str | None = None,
    command_config: str | Path | None = None,
    cluster: str | None = None,
    config: ConfigFile | None = None,
    check: bool = True,
) -> Connection:
    """Pick the cluster to talk to: explicit flags win over the named or default cluster.

    Only the chosen cluster's ``${VAR}`` references are expanded. With `check`, the merged
    properties are validated by librdkafka up front (see `check_client_properties`).
    """
    config = config or ConfigFile()
    name = cluster or (None if bootstrap_server else config.default_cluster)
    props: dict[str, str] = {}
    servers = bootstrap_server
    where = "--command-config"
    if name:
        if name not in config.clusters:
            known = ", ".join(sorted(config.clusters)) or "none configured"
            raise ConfigError(f"unknown cluster '{name}' (known: {known})")
        c = config.clusters[name]
        here = f"config file, cluster '{name}'"
        where = here
        if c.command_config:
            props.update(load_properties_file(expand_env(c.command_config, where=here)))
        props.update({k: expand_env(prop_str(v), where=f"{here}, property {k}")
                      for k, v in c.properties.items()})
        servers = bootstrap_server or expand_env(c.bootstrap_servers, where=here)
    if command_config:
        props.update(load_properties_file(command_config))
        where = f"--command-config {command_config}"
    props = _java_jaas_to_librdkafka(props)
    from_props = props.pop("bootstrap.servers", None)
    servers = servers or from_props or os.environ.get("OFFSETKEEPER_BOOTSTRAP_SERVER")
    if not servers:
        raise ConfigError(
            "no cluster given: use --bootstrap-server HOST:PORT, --cluster NAME, "
            "or set default_cluster in the config file"
        )
    if check:
        check_client_properties(props, source=where)
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
                              cluster=ref.cluster, config=config, check=not ref.properties)
    if not ref.properties:
        return conn
    props = _java_jaas_to_librdkafka(
        {**conn.properties, **{k: prop_str(v) for k, v in ref.properties.items()}})
    check_client_properties(props, source="cluster properties in the file")
    return Connection(conn.bootstrap_servers, props, conn.name)
