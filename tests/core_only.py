"""Run the offsetkeeper command as if only the core were installed: `python -m tests.core_only
[--allow MOD,...] ARGS...` blocks the imports of every extra's modules (a sys.meta_path finder
that raises ModuleNotFoundError, as a missing package does), then runs `offsetkeeper ARGS`.

Used by tests/unit/test_core_imports.py and tests/integration/test_core_only.py: the real CLI,
the real broker, only the packages taken away.
"""

from __future__ import annotations

import sys

#: Top-level modules of the extras (pyproject.toml [project.optional-dependencies]).
HEAVY = ("pyspark", "pyarrow", "pandas", "numpy", "matplotlib", "starlette", "jinja2",
         "multipart", "python_multipart", "uvicorn", "psycopg", "redis", "kazoo", "httpx")


class Blocker:
    """A meta path finder that makes `names` look uninstalled."""

    def __init__(self, names) -> None:
        self.names = frozenset(names)

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def block(names=HEAVY) -> None:
    """Make `names` unimportable in this process from now on."""
    sys.meta_path.insert(0, Blocker(names))


if __name__ == "__main__":
    args = sys.argv[1:]
    allowed: set[str] = set()
    if args[:1] == ["--allow"]:
        allowed = set(args[1].split(","))
        args = args[2:]
    block(n for n in HEAVY if n not in allowed)
    from offsetkeeper.cli.main import main

    main(args)
