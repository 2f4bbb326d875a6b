"""A command line that names one command imports that command's modules only (issue 32,
goal 7: `groups list` and `lag status` paid ~1 s importing every command's dependencies)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.cli import MODULES_PROBE

PROBE = """
import json, sys
from offsetkeeper.cli import main as m
try:
    m.main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(k for k in sys.modules if k.startswith("offsetkeeper."))))
"""


def imported(*argv: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_groups_and_lag_import_none_of_the_other_commands():
    """Invariant: `groups ...` and `lag ...` do not import backup, restore, reset planning,
    the dashboard or the history sampler's Kafka side."""
    elsewhere = {"offsetkeeper.cli.backup", "offsetkeeper.cli.restore", "offsetkeeper.cli.ui",
                 "offsetkeeper.cli.streaming", "offsetkeeper.ops.restore", "offsetkeeper.ops.backup",
                 "offsetkeeper.reset.apply", "offsetkeeper.spark"}
    groups = imported("groups", "--help")
    assert "offsetkeeper.cli.groups" in groups and not groups & elsewhere, groups & elsewhere
    lag = imported("lag", "status", "--help")
    assert "offsetkeeper.cli.lag" in lag
    assert not lag & (elsewhere | {"offsetkeeper.kafka.admin", "offsetkeeper.history.sampler"}), \
        lag & (elsewhere | {"offsetkeeper.kafka.admin", "offsetkeeper.history.sampler"})


def test_root_help_still_lists_every_command():
    from offsetkeeper.cli.main import _COMMANDS

    out = subprocess.run([sys.executable, "-m", "offsetkeeper.cli.main", "--help"],
                         capture_output=True, text=True, timeout=120).stdout
    for name, *_ in _COMMANDS:
        assert f"  {name} " in out, name


def test_no_config_file_no_config_models(tmp_path):
    """Invariant (issue 32): a command that reads no config file — `lag status` from a store,
    or a Kafka command given --bootstrap-server with no config file named or at the default
    path — never loads the config file's models (pydantic schemas and YAML, ~0.15 s of CPU);
    with a config file at the default path, it is read (and checked) as before."""
    import os

    probe = ("import json, sys\n"
             "from offsetkeeper.cli.common import connection\n"
             "connection('127.0.0.1:1', None, None, None)\n"
             "print(json.dumps('offsetkeeper.config.file' in sys.modules))\n")
    env = {k: v for k, v in os.environ.items() if k != "OFFSETKEEPER_CONFIG"}

    def loads_models(home) -> bool:
        proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL, env={**env, "HOME": str(home)})
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    assert loads_models(tmp_path) is False
    lag = imported("lag", "status", "--help")
    assert "offsetkeeper.config.file" not in lag
    cfg = tmp_path / "with-config" / ".config" / "offsetkeeper" / "config.yaml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("default_cluster: null\n")
    assert loads_models(tmp_path / "with-config") is True



# Heavy modules an everyday command must not import when it does not need them: Rich (tables
# and notes to a pipe are written directly), pydantic (Typer's coercion of plain values, the
# config file's models without a config file), YAML, fsspec (snapshot stores), Spark, Arrow.
HEAVY = {"rich", "pydantic", "pydantic_core", "yaml", "pyspark", "pyarrow", "pandas", "numpy"}


def _imported_top_level(*argv: str, home) -> tuple[int, set[str], str]:
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("OFFSETKEEPER_CONFIG", "FORCE_COLOR",
                                                            "TTY_COMPATIBLE")}
    proc = subprocess.run([sys.executable, "-c", MODULES_PROBE, *argv], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL,
                          env={**env, "HOME": str(home)})
    code, mods = json.loads(proc.stderr.strip().splitlines()[-1])
    return code, set(mods), proc.stderr


def test_everyday_commands_import_no_heavy_module(tmp_path):
    """Invariant (issue 32, goal 7): `groups list`, `groups describe`, `offsets reset` and
    `--version`, run with --bootstrap-server, no config file and output to a pipe, import none
    of Rich, pydantic, YAML, Spark or Arrow (each costs 20-100 ms of every start). Port 1
    refuses at once, so each command parses and coerces its options, resolves the connection
    and prints its one-line error."""
    down = ["-b", "127.0.0.1:1"]
    for argv in (["groups", "list", *down], ["groups", "list", *down, "-o", "json"],
                 ["groups", "describe", "g1", "g2", "--members", *down, "-o", "csv"],
                 ["offsets", "reset", "--group-pattern", "svc-*", "--topic", "t:0,1",
                  "--to-offset", "5", "--max-concurrent", "50", "--deadline", "30s", "--execute",
                  *down],
                 ["--version"]):
        code, mods, stderr = _imported_top_level(*argv, home=tmp_path)
        assert code == (0 if argv == ["--version"] else 1), stderr
        assert not mods & HEAVY, (argv, sorted(mods & HEAVY))
        if argv != ["--version"]:
            assert "error: cannot reach the cluster at 127.0.0.1:1" in stderr, stderr


def test_a_bad_value_still_gets_typers_own_error(tmp_path):
    """Values the command line does not convert itself go to Typer's coercion, whose message
    stays the one users saw before (here: a choice that does not exist, an integer out of
    range)."""
    code, _, stderr = _imported_top_level("groups", "list", "-o", "yaml", home=tmp_path)
    assert code == 2 and "'yaml' is not one of 'table', 'json', 'csv'" in stderr, stderr
    code, _, stderr = _imported_top_level("offsets", "reset", "--max-concurrent", "0", home=tmp_path)
    assert code == 2 and "--max-concurrent" in stderr and "greater than or equal to 1" in stderr, stderr
