"""Which cluster a command talks to: explicit flags, a named cluster of the config file, a
cluster named inside a backup or restore file; the merged properties checked by librdkafka
before anything connects (a bad one is a one-line ConfigError, secrets masked:
`kafka.errors.client_config_error`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from offsetkeeper.config import Connection
from offsetkeeper.errors import ConfigError

if TYPE_CHECKING:  # the config file's models load pydantic: imported where they are used
    from offsetkeeper.config import ClusterRef, ConfigFile

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


def check_client_properties(props: dict[str, str], *, source: str = "client properties") -> None:
    """Refuse properties librdkafka would refuse (unknown names, invalid values, Java-only
    names) before anything talks to a cluster: a ConfigError naming the property (secret values
    masked), with the librdkafka equivalent of a Java-only property."""
    for key in props:
        if key in JAVA_ONLY:
            raise ConfigError(f"{source}: '{key}' is a Java client property that librdkafka does "
                              f"not support; use {JAVA_ONLY[key]}")
    if not props:  # nothing librdkafka could refuse: no client handle made and destroyed
        return
    import logging

    from confluent_kafka import KafkaException, Producer

    from offsetkeeper.kafka.errors import client_config_error

    quiet = logging.getLogger("offsetkeeper.librdkafka.check")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    try:
        Producer({**props, "logger": quiet})
    except (KafkaException, ValueError, TypeError) as exc:
        raise client_config_error(exc, props, where=source) from None


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
    from offsetkeeper.config import (
        expand_env,
        java_jaas_to_librdkafka,
        load_properties_file,
        prop_str,
    )

    if config is None and (cluster or not bootstrap_server):
        from offsetkeeper.config import ConfigFile

        config = ConfigFile()
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
    props = java_jaas_to_librdkafka(props)
    from_props = props.pop("bootstrap.servers", None)
    servers = servers or from_props or os.environ.get("OFFSETKEEPER_BOOTSTRAP_SERVER")
    if not servers:
        raise ConfigError(
            "no cluster given: use --bootstrap-server HOST:PORT, --cluster NAME, "
            "or set default_cluster in the config file"
        )
    _refuse_credentials(servers)
    if check:
        check_client_properties(props, source=where)
    return Connection(bootstrap_servers=servers, properties=props, name=name or servers)


def _refuse_credentials(servers: str) -> None:
    """Kafka addresses are [PROTOCOL://]HOST:PORT: one with `user:password@` in it would be
    echoed by every error about it, so it is refused, showing only what follows the '@'."""
    for entry in servers.split(","):
        if "@" in entry:
            raise ConfigError(
                f"bootstrap server '***@{entry.rsplit('@', 1)[1].strip()}' holds credentials: "
                "expected HOST:PORT; put sasl.username / sasl.password in --command-config")


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
    from offsetkeeper.config import java_jaas_to_librdkafka, prop_str

    props = java_jaas_to_librdkafka(
        {**conn.properties, **{k: prop_str(v) for k, v in ref.properties.items()}})
    check_client_properties(props, source="cluster properties in the file")
    return Connection(conn.bootstrap_servers, props, conn.name)
