"""The `offsetkeeper` command: a thin layer that parses options, calls the library, renders."""

from __future__ import annotations

import sys

import typer
from rich.markup import escape

from offsetkeeper.cli.output import stderr_console
from offsetkeeper.errors import OffsetkeeperError

app = typer.Typer(
    name="offsetkeeper",
    help="See, move, back up and restore Kafka consumer offsets — safely.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
)


def _register() -> None:
    # Imported here so `offsetkeeper --help` stays fast and each module owns its commands.
    from offsetkeeper.cli import backup, devbroker, groups, offsets, restore, snapshots

    app.add_typer(groups.app, name="groups")
    app.add_typer(offsets.app, name="offsets")
    app.add_typer(snapshots.app, name="snapshots")
    app.add_typer(backup.backup_app, name="backup")
    app.add_typer(backup.backups_app, name="backups")
    app.add_typer(restore.restore_app, name="restore")
    app.add_typer(restore.mapping_app, name="mapping")
    app.add_typer(devbroker.app, name="dev-broker")
    devbroker.register_demo(app)
    from offsetkeeper.cli import commits, zk

    app.add_typer(commits.app, name="commits")
    app.add_typer(zk.app, name="zk")


_register()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turn library errors into one line on stderr and an exit code."""
    try:
        app(args=argv, prog_name="offsetkeeper")
    except OffsetkeeperError as exc:
        stderr_console().print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        stderr_console().print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
