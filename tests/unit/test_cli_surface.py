"""The command line keeps its manners: every command documented with an example, the CLI
layer never imports Kafka or Spark clients, and the public API is what __all__ says."""

from __future__ import annotations

import ast
from pathlib import Path

import typer
from typer.core import TyperGroup

import offsetkeeper
from offsetkeeper.cli.main import app

CLI_DIR = Path(offsetkeeper.__file__).parent / "cli"


def _commands(group: TyperGroup, prefix: str = ""):
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):
            yield from _commands(cmd, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}", cmd


def test_every_command_has_help_with_an_example():
    root = typer.main.get_command(app)
    missing = [name for name, cmd in _commands(root) if "Example:" not in (cmd.help or "")]
    assert not missing, f"commands without 'Example:' in their help: {missing}"


def test_every_listing_command_offers_output_formats():
    root = typer.main.get_command(app)
    for name, cmd in _commands(root):
        opts = {o for p in cmd.params for o in getattr(p, "opts", [])}
        if name.split()[-1] in {"list", "describe", "show", "diff"}:
            assert "--output" in opts, name


def test_cli_never_imports_kafka_or_spark_clients():
    for path in CLI_DIR.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for n in names:
                assert not n.startswith(("confluent_kafka", "pyspark")), f"{path.name} imports {n}"


def test_public_api_matches_all():
    """Every name in __all__ exists, and every public name (functions too, not only classes)
    is in __all__; submodules are not names of the API."""
    import types

    for name in offsetkeeper.__all__:
        assert hasattr(offsetkeeper, name), name
    public = {n for n in dir(offsetkeeper) if not n.startswith("_")
              and not isinstance(getattr(offsetkeeper, n), types.ModuleType)}
    assert public == set(offsetkeeper.__all__) - {"__version__"}, \
        public ^ (set(offsetkeeper.__all__) - {"__version__"})
