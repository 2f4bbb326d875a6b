"""A command line that names one command imports that command's modules only (issue 32,
goal 7: `groups list` and `lag status` paid ~1 s importing every command's dependencies)."""

from __future__ import annotations

import json
import subprocess
import sys

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
