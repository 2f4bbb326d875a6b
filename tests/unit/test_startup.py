"""`offsetkeeper --version` and `--help` start fast: the root imports no command module (nor
pydantic, confluent_kafka, ...) until a command is resolved, and what it shows is what the
whole command tree shows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from offsetkeeper.cli.main import _COMMANDS, command, lazy_command

ROOT = Path(__file__).resolve().parents[2]


def _walk(cmd, path=()):
    yield path
    for name in getattr(cmd, "list_commands", lambda ctx: [])(None):
        yield from _walk(cmd.get_command(None, name), (*path, name))


def _help(root, path) -> str:
    ctx = root.make_context("offsetkeeper", [], resilient_parsing=True)
    cmd = root
    for name in path:
        cmd = cmd.get_command(ctx, name)
        ctx = cmd.make_context(name, [], parent=ctx, resilient_parsing=True)
    return cmd.get_help(ctx)


def test_lazy_root_shows_what_the_whole_tree_shows():
    """Invariant: every command's --help (the root's list of commands included) reads the
    same whether the command tree is built at once or command by command."""
    eager, lazy = command(), lazy_command()
    paths = list(_walk(eager))
    assert len(paths) > 60 and [e[0] for e in _COMMANDS] == list(eager.commands)
    different = [" ".join(p) for p in paths if _help(eager, p) != _help(lazy, p)]
    assert different == []


_PROBE = """
import json, sys
from offsetkeeper.cli.main import main
try:
    main({args!r})
except SystemExit:
    pass
sys.stdout.flush()
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("offsetkeeper.cli.", "pydantic",
      "confluent_kafka", "yaml", "rich")))), file=sys.stderr)
"""


@pytest.mark.parametrize(("args", "allowed"), [
    (["--version"], {"offsetkeeper.cli.main"}),
    (["--help"], {"offsetkeeper.cli.main"}),
])
def test_version_and_help_import_no_command(args, allowed):
    """`--version` builds no command tree; `--help` imports no command module (nor Rich: the
    help of a Typer app without rich_markup_mode is Click's plain text)."""
    out = subprocess.run([sys.executable, "-c", _PROBE.format(args=args)], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    imported = json.loads(out.stderr.strip().splitlines()[-1])
    assert {m.split(".")[0] if not m.startswith("offsetkeeper") else m
            for m in imported} <= allowed, imported
    assert out.stdout.startswith("offsetkeeper " if args == ["--version"] else "Usage:")
