"""`offsetkeeper restore ...` and `offsetkeeper mapping ...` (issue 5: not built yet)."""

import typer

restore_app = typer.Typer(help="Restore a backup to a cluster with an exact offset mapping (Spark).",
                          no_args_is_help=True)
mapping_app = typer.Typer(help="Show and look up source -> target offset mappings.", no_args_is_help=True)
