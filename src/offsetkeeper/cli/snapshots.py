"""`offsetkeeper snapshots ...` (issue 3: not built yet)."""

import typer

app = typer.Typer(help="Offset snapshots: create, list, show, diff, verify, rollback, delete.",
                  no_args_is_help=True)
