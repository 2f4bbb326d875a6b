"""Starting the dashboard: settings from flags, the config file and the environment; uvicorn."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from offsetkeeper.config import load_config_file
from offsetkeeper.errors import UsageError
from offsetkeeper.ops.history import history_store_url
from offsetkeeper.web import security as sec

TOKEN_ENV = "OFFSETKEEPER_UI_TOKEN"


@dataclass(frozen=True)
class ServeOptions:
    """`offsetkeeper ui` options (None / empty = from the config file or the environment)."""

    listen: str = "127.0.0.1:8080"
    read_only: bool = False
    history_store: str | None = None
    backup_destinations: tuple[str, ...] = ()
    checkpoints: tuple[str, ...] = ()        # --checkpoint [NAME=]PATH, after ui.checkpoints
    connect_urls: tuple[str, ...] = ()       # --connect-url [NAME=]URL, after ui.connect
    mm2: tuple[str, ...] = ()                # --mm2 ALIAS[,target=C][,source=C], after ui.mm2
    snapshot_store: str | None = None
    config_path: Path | None = None
    bootstrap: str | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None


def build(opts: ServeOptions):
    """The app plus the host and port to bind; UsageError for unsafe or malformed settings."""
    from offsetkeeper.ops import ExecuteOptions
    from offsetkeeper.ops.history_view import open_history
    from offsetkeeper.web.app import UiSettings, create_app
    from offsetkeeper.web.checkpoints import entries
    from offsetkeeper.web.clusters import Clusters
    from offsetkeeper.web.connectors import mm2_entries, worker_entries

    host, port = sec.parse_listen(opts.listen)
    cfg = load_config_file(opts.config_path)
    token = os.environ.get(TOKEN_ENV) or cfg.ui.token or None
    sec.check_listen(host, token)
    if bool(opts.tls_cert) != bool(opts.tls_key):
        raise UsageError("--tls-cert and --tls-key go together: give both or neither")
    # The same store `history record` writes by default (flag, $OFFSETKEEPER_HISTORY_STORE,
    # ui.history_store, ~/.local/share/offsetkeeper/history.db): before, `ui` without a flag had
    # no history and `--history-store` with another path silently opened a new, empty store.
    history_url = history_store_url(opts.history_store, configured=cfg.ui.history_store)
    allowed = ("127.0.0.1", "localhost", "[::1]", "::1") if sec.is_loopback(host) else ("*",)
    clusters = Clusters(cfg, bootstrap=opts.bootstrap)
    checkpoints = entries(cfg.ui.checkpoints, tuple(opts.checkpoints), clusters.names)
    workers = worker_entries(cfg.ui.connect, tuple(opts.connect_urls), clusters.names)
    flows = mm2_entries(cfg.ui.mm2, tuple(opts.mm2), clusters.names, clusters.default)
    settings = UiSettings(
        read_only=opts.read_only, token=token, history_store=history_url,
        backup_destinations=tuple(opts.backup_destinations) or tuple(cfg.ui.backup_destinations),
        checkpoints=checkpoints, connect_workers=workers, mm2_flows=flows,
        execute=ExecuteOptions(snapshot_store=opts.snapshot_store, config_path=opts.config_path),
        allowed_hosts=allowed, tls=opts.tls_cert is not None)
    history = open_history(history_url)
    if history is not None:
        history.start_warming()
    return create_app(settings, clusters, history), host, port


def serve(opts: ServeOptions) -> None:
    """Serve the dashboard until interrupted."""
    import uvicorn

    app, host, port = build(opts)
    ssl = {"ssl_certfile": str(opts.tls_cert), "ssl_keyfile": str(opts.tls_key)} \
        if opts.tls_cert else {}
    scheme = "https" if ssl else "http"
    print(f"offsetkeeper dashboard on {scheme}://{host}:{port}/"
          + (" (read-only)" if opts.read_only else ""), flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning", server_header=False, **ssl)
