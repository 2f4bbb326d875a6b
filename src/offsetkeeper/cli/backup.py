"""`offsetkeeper backup ...` and `offsetkeeper backups ...` (issue 4: not built yet)."""

import typer

backup_app = typer.Typer(help="Back topics up to Parquet with a manifest (Spark).", no_args_is_help=True)
backups_app = typer.Typer(help="List, describe and validate backups.", no_args_is_help=True)
