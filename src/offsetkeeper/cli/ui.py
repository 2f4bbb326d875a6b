"""`offsetkeeper ui`: the web dashboard."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from offsetkeeper.cli.common import BootstrapOpt, ConfigOpt
from offsetkeeper.errors import require_extra


def run(
    listen: Annotated[str, typer.Option("--listen", metavar="HOST:PORT", help="Address to listen "
                                        "on; anything but loopback needs a token (ui.token in "
                                        "the config or $OFFSETKEEPER_UI_TOKEN).")] = "127.0.0.1:8080",
    read_only: Annotated[bool, typer.Option("--read-only", help="Hide and refuse every change "
                                            "(resets, rollbacks).")] = False,
    history_store: Annotated[str | None, typer.Option(
        "--history-store", metavar="URL", show_default=False,
        help="Offset history store (lag charts, status, --to-history) [default: "
             "$OFFSETKEEPER_HISTORY_STORE, else ui.history_store, else "
             "~/.local/share/offsetkeeper/history.db: the store `history record` writes].")] = None,
    backup_dest: Annotated[list[str] | None, typer.Option("--backup-dest", metavar="PATH|URL",
                                                          help="Backup destination to list "
                                                          "(repeatable).")] = None,
    checkpoint: Annotated[list[str] | None, typer.Option(
        "--checkpoint", metavar="[NAME=]PATH|URL", help="Spark streaming checkpoint to show "
        "with its lag (repeatable; adds to ui.checkpoints in the config).")] = None,
    connect_url: Annotated[list[str] | None, typer.Option(
        "--connect-url", metavar="[NAME=]URL", help="Kafka Connect worker whose connectors "
        "the Connectors page shows, http[s]://[user:password@]host:port (repeatable; adds to "
        "ui.connect in the config).")] = None,
    mm2: Annotated[list[str] | None, typer.Option(
        "--mm2", metavar="ALIAS[,target=CLUSTER][,source=CLUSTER]", help="MirrorMaker 2 flow "
        "from the cluster of this alias the MM2 page reports on (repeatable; adds to ui.mm2 in "
        "the config).")] = None,
    snapshot_store: Annotated[str | None, typer.Option("--snapshot-store", help="Snapshot store "
                                                       "path or fsspec URL.")] = None,
    tls_cert: Annotated[Path | None, typer.Option("--tls-cert", help="Serve HTTPS with this "
                                                  "certificate (PEM).")] = None,
    tls_key: Annotated[Path | None, typer.Option("--tls-key", help="Private key of --tls-cert.")] = None,
    bootstrap: BootstrapOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Serve the dashboard: groups, lag over time, the reset wizard, snapshots, backups,
    streaming checkpoints, Kafka Connect connectors and MirrorMaker 2 reports.

    Example: offsetkeeper ui --listen 127.0.0.1:8080 --read-only
    """
    require_extra("ui", "ui")
    # The one import of web/ from cli/ (tests/unit/test_layers.py LAUNCH), inside the function:
    # the other commands never load the web stack.
    from offsetkeeper.web.server import ServeOptions, serve

    serve(ServeOptions(
        listen=listen, read_only=read_only, history_store=history_store,
        backup_destinations=tuple(backup_dest or ()), checkpoints=tuple(checkpoint or ()),
        connect_urls=tuple(connect_url or ()), mm2=tuple(mm2 or ()),
        snapshot_store=snapshot_store, config_path=config, bootstrap=bootstrap,
        tls_cert=tls_cert, tls_key=tls_key))
