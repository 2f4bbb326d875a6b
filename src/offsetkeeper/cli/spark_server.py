"""`offsetkeeper spark-server start|status|stop`: a warm local Spark Connect server."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from offsetkeeper.cli.common import OutputOpt, duration_option
from offsetkeeper.cli.output import OutputFormat, render_json, render_rows, say

app = typer.Typer(help="The warm local Spark Connect server: backup run, restore run and commits "
                  "scan start it on first use and attach to it (skipping the Spark session "
                  "start; OFFSETKEEPER_SPARK_WARM=0 turns that off); status, stop, or start it "
                  "ahead. It takes only sessions that bring its token, new at every start and "
                  "kept in the token file of its state directory (readable by you only).",
                  no_args_is_help=True)

StateDirOpt = Annotated[
    Path | None,
    typer.Option("--state-dir", help="Where the server's state, token and log are kept "
                 "[default: $OFFSETKEEPER_SPARK_SERVER_DIR, else "
                 "~/.local/share/offsetkeeper/spark-server].", show_default=False),
]


def _show(st, output: OutputFormat) -> None:
    if output is OutputFormat.json:
        render_json(st.to_dict())
    else:
        render_rows([st.to_dict()], ["running", "url", "pid", "master", "idle_timeout",
                                     "token_file", "log"], output)


def attach_hint(st) -> str:
    """How to attach a Spark Connect client by hand: the URL and where the token is (the
    token itself is never shown)."""
    import shlex

    return (f"attach with: export SPARK_REMOTE={st.url} "
            f"SPARK_CONNECT_AUTHENTICATE_TOKEN=\"$(cat {shlex.quote(st.token_file)})\"")


@app.command("start")
def start(
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port on 127.0.0.1.")] = 15002,
    master: Annotated[str, typer.Option("--master", metavar="URL",
                                        help="The server's Spark master.")] = "local[*]",
    idle_timeout: Annotated[float, duration_option(
        "--idle-timeout", help="Stop after this long without a Spark job (0: never).",
        seconds=True, allow_zero=True)] = 1800.0,
    conf: Annotated[list[str] | None, typer.Option(
        "--conf", metavar="KEY=VALUE", help="Spark configuration (repeatable).",
        show_default=False)] = None,
    state_dir: StateDirOpt = None,
    output: OutputOpt = OutputFormat.table,
) -> None:
    """Start a local Spark Connect server in the background (or show the running one) and wait
    until it accepts sessions. With the default state directory it is the warm server the data
    commands attach to by default; elsewhere point commands at it with SPARK_REMOTE or --remote
    and the token from its token_file in SPARK_CONNECT_AUTHENTICATE_TOKEN. A running server
    that takes no token (started by an older offsetkeeper) is replaced.

    Example: offsetkeeper spark-server start --idle-timeout 3600
    """
    from offsetkeeper.ops.spark import start_spark_server

    st = start_spark_server(port, master=master, idle_timeout=idle_timeout, conf=conf or (),
                            state_dir=state_dir)
    _show(st, output)
    if output is OutputFormat.table:
        say(attach_hint(st))


@app.command("status")
def status(state_dir: StateDirOpt = None, output: OutputOpt = OutputFormat.table) -> None:
    """Show whether the server runs, its URL and its token file; exit 1 when it does not.

    Example: offsetkeeper spark-server status -o json
    """
    from offsetkeeper.ops.spark import server_status

    st = server_status(state_dir)
    _show(st, output)
    if not st.running:
        raise typer.Exit(1)


@app.command("stop")
def stop(state_dir: StateDirOpt = None, output: OutputOpt = OutputFormat.table) -> None:
    """Stop the server (SIGTERM; SIGKILL after 30 s).

    Example: offsetkeeper spark-server stop
    """
    from offsetkeeper.ops.spark import stop_background

    _show(stop_background(state_dir), output)
