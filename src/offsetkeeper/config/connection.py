"""The connection to one cluster: bootstrap servers and librdkafka properties (which cluster a
command talks to is resolved by `offsetkeeper.kafka.connect.resolve_connection`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from offsetkeeper.redact import redact_properties


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
