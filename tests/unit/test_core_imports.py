"""The core (`pip install offsetkeeper`) imports none of the extras' packages, and a command whose
extra is missing says which pip command installs it (one line, exit 2).

Each check runs in a fresh interpreter: this process has imported pyspark and friends long ago.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core_only import HEAVY

ROOT = Path(__file__).resolve().parents[2]

#: The library paths of the core's commands: inspection, every reset and its executor,
#: snapshots and rollback, bulk, live reset, the consumer library, lag status, history record
#: (SQLite) and the exporter; `dev-broker` and the JVM seam.
CORE_MODULES = [
    "offsetkeeper", "offsetkeeper.cli.main",
    "offsetkeeper.ops", "offsetkeeper.ops.groups",
    "offsetkeeper.ops.reset", "offsetkeeper.ops.targets", "offsetkeeper.ops.snapshots",
    "offsetkeeper.ops.share_reset", "offsetkeeper.ops.streams_reset", "offsetkeeper.ops.live",
    "offsetkeeper.ops.history", "offsetkeeper.devbroker", "offsetkeeper.ops.plans", "offsetkeeper.ops.streaming",
    "offsetkeeper.reset.plan", "offsetkeeper.reset.apply", "offsetkeeper.reset.facts",
    "offsetkeeper.reset.targets", "offsetkeeper.reset.render",
    "offsetkeeper.snapshots.capture", "offsetkeeper.snapshots.rollback",
    "offsetkeeper.snapshots.store", "offsetkeeper.snapshots.compare",
    "offsetkeeper.consumer", "offsetkeeper.consumer.live", "offsetkeeper.consumer.live_apply",
    "offsetkeeper.consumer.live_auth", "offsetkeeper.consumer.stores",
    "offsetkeeper.history.service", "offsetkeeper.history.sampler", "offsetkeeper.history.status",
    "offsetkeeper.history.exporter", "offsetkeeper.history.store",
    "offsetkeeper.history.store.sqlite", "offsetkeeper.kafka.admin", "offsetkeeper.kafka.jvm",
    "offsetkeeper.devbroker", "offsetkeeper.devbroker.cluster", "offsetkeeper.devbroker.dist",
    "offsetkeeper.groups.listing", "offsetkeeper.streaming.view", "offsetkeeper.streaming.reset",
    "offsetkeeper.backup.manifest", "offsetkeeper.restore.state",
]

_PROBE = """
import importlib, json, sys
for name in {modules!r}:
    importlib.import_module(name)
from offsetkeeper.cli.main import command
root = command()
def walk(cmd, ctx):
    # every command's help is built, as `offsetkeeper ... --help` does
    cmd.get_help(ctx)
    for name, sub in getattr(cmd, "commands", {{}}).items():
        walk(sub, sub.make_context(name, [], parent=ctx, resilient_parsing=True))
walk(root, root.make_context("offsetkeeper", [], resilient_parsing=True))
print(json.dumps(sorted(m for m in sys.modules if m.partition(".")[0] in {heavy!r})))
"""


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_core_imports_no_extra_package():
    """Invariant: importing the CLI, every core command's library path, and rendering every
    command's --help imports none of pyspark, pyarrow, pandas, numpy, matplotlib, starlette,
    jinja2, uvicorn, psycopg, redis, kazoo — the core install does not have them."""
    out = _python(_PROBE.format(modules=CORE_MODULES, heavy=HEAVY))
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_core_runs_with_the_extras_blocked():
    """The same paths under an import blocker (the extras look uninstalled): nothing fails."""
    out = subprocess.run(
        [sys.executable, "-c",
         "from tests.core_only import block; block()\n"
         + _PROBE.format(modules=CORE_MODULES, heavy=HEAVY)],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]


@pytest.mark.parametrize(("args", "extra"), [
    (["backup", "run", "-b", "127.0.0.1:1", "-t", "orders", "--dest", "/nonexistent"], "spark"),
    (["restore", "run", "/nonexistent/b", "-b", "127.0.0.1:1"], "spark"),
    (["commits", "scan", "-b", "127.0.0.1:1", "--out", "/nonexistent"], "spark"),
    (["mapping", "show", "/nonexistent/b"], "spark"),
    (["ui"], "ui"),
    (["demo", "--no-spark"], "all"),
    (["history", "plot", "payments", "--out", "/nonexistent/x.png"], "ui"),
    (["zk", "export", "--zookeeper", "127.0.0.1:1"], "zk"),
    (["offsets", "reset", "-b", "127.0.0.1:1", "-g", "g", "--all-topics", "--from-zookeeper",
      "127.0.0.1:1"], "zk"),
    (["history", "show", "payments", "--store", "postgresql://u@127.0.0.1:1/db"], "stores"),
    (["history", "show", "payments", "--store", "redis://127.0.0.1:1/0"], "stores"),
])
def test_missing_extra_is_one_line_with_the_pip_command(args, extra):
    """Invariant: a command whose extra is not installed prints exactly one line naming the pip
    command that installs it, exits 2, and never shows a traceback."""
    out = subprocess.run([sys.executable, "-m", "tests.core_only", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("error: offsetkeeper ")
    assert lines[0].endswith(f"needs the {extra} extra: pip install 'offsetkeeper[{extra}]'")
    assert "Traceback" not in out.stderr and out.stdout == ""


def test_backup_run_names_the_spark_extra_exactly():
    """The message a core-only user sees for `backup run`, word for word."""
    out = subprocess.run([sys.executable, "-m", "tests.core_only", "backup", "run", "-b",
                          "127.0.0.1:1", "-t", "orders", "--dest", "/nonexistent"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert (out.returncode, out.stderr) == (
        2, "error: offsetkeeper backup run needs the spark extra: "
           "pip install 'offsetkeeper[spark]'\n")


def test_an_installed_extra_passes():
    """With the extras installed (this venv), require_extra raises nothing."""
    from offsetkeeper.errors import EXTRA_MODULES, require_extra

    for extra in EXTRA_MODULES:
        require_extra(extra, "x")
