"""`offsetkeeper ui`: serve the web dashboard.

The one operation that starts an application of the top layer: the command line asks for the
dashboard here instead of importing web/ itself, so cli/ and web/ never import each other. The
dashboard's server is imported inside the function (the one upward import the layer test
allows, tests/unit/test_layers.py UPWARD), and this module is not re-exported by `ops` so that
importing the operations layer never loads the web stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class DashboardRequest:
    """Where and how to serve (None / empty = from the config file or the environment)."""

    listen: str = "127.0.0.1:8080"
    read_only: bool = False
    history_store: str | None = None
    backup_destinations: tuple[str, ...] = ()
    checkpoints: tuple[str, ...] = ()        # [NAME=]PATH|URL, after ui.checkpoints
    snapshot_store: str | None = None
    config_path: Path | None = None
    bootstrap: str | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None


def serve_dashboard(req: DashboardRequest) -> None:
    """Check the settings (UsageError for unsafe or malformed ones, before anything is bound)
    and serve the dashboard until interrupted."""
    from offsetkeeper.web.server import ServeOptions, serve

    serve(ServeOptions(listen=req.listen, read_only=req.read_only,
                       history_store=req.history_store,
                       backup_destinations=req.backup_destinations, checkpoints=req.checkpoints,
                       snapshot_store=req.snapshot_store, config_path=req.config_path,
                       bootstrap=req.bootstrap, tls_cert=req.tls_cert, tls_key=req.tls_key))
