"""The clusters the dashboard may talk to: their connections from the config file (or
--bootstrap-server), and one shared admin facade each, opened on first use."""

from __future__ import annotations

import threading

from offsetkeeper.config import ConfigFile, Connection
from offsetkeeper.errors import UsageError
from offsetkeeper.kafka.connect import resolve_connection


class Clusters:
    """The clusters the dashboard may talk to (names from the config file), one admin each."""

    def __init__(self, config: ConfigFile, *, bootstrap: str | None = None) -> None:
        self._conns: dict[str, Connection] = {}
        for name in config.clusters:
            self._conns[name] = resolve_connection(cluster=name, config=config)
        if bootstrap:
            self._conns.setdefault("default", resolve_connection(bootstrap_server=bootstrap))
        if not self._conns:
            raise UsageError("no cluster configured: add clusters to the config file or give "
                             "--bootstrap-server")
        first = "default" if bootstrap else None
        self.default = first or config.default_cluster or next(iter(self._conns))
        if self.default not in self._conns:
            self.default = next(iter(self._conns))
        self._admins: dict[str, object] = {}
        self._lock = threading.Lock()

    @property
    def names(self) -> list[str]:
        return list(self._conns)

    def admin(self, name: str):
        """The shared KafkaAdmin of a configured cluster (UnknownGroup-like 404 otherwise)."""
        from offsetkeeper.kafka.admin import KafkaAdmin

        if name not in self._conns:
            raise UsageError(f"cluster '{name}' is not configured")
        with self._lock:
            if name not in self._admins:
                # the dashboard runs for weeks: see KafkaAdmin.committed_offsets_each
                self._admins[name] = KafkaAdmin(self._conns[name], daemon=True)
            return self._admins[name]

    def close(self) -> None:
        for a in self._admins.values():
            a.close()
