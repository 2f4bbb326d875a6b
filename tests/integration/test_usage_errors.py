"""The installed `offsetkeeper` program on command lines Click rejects (unknown command or
option, missing or repeated value, bad choice): one line on stderr naming the command, the bad
value and what was expected, exit 2, nothing on stdout, nothing written, no offset moved."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkatools import commit, committed, create_topic, produce_n

pytestmark = pytest.mark.integration

EXE = Path(sys.executable).with_name("offsetkeeper")  # the console script pip installed
BOX = set("─│╭╮╰╯┌┐└┘━┃")
DOWN = ["-b", "127.0.0.1:1"]  # refuses at once, should anything try to connect


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OFFSETKEEPER_")}
    home = cwd / "home"
    return subprocess.run([str(EXE), *args], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120,
                          env={**clean, "HOME": str(home), "XDG_CONFIG_HOME": str(home), **env})


def assert_one_line_usage_error(proc: subprocess.CompletedProcess, *fragments: str) -> None:
    err = proc.stderr
    assert proc.returncode == 2, (proc.returncode, err)
    assert proc.stdout == "", proc.stdout
    assert err.startswith("error: ") and err.endswith("\n") and err.count("\n") == 1, err
    for word in ("Usage:", "Try '", "Traceback", "Error:"):
        assert word not in err, err
    assert not BOX & set(err), err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


CASES = [
    ([], ["error: offsetkeeper: missing command (expected one of ", " groups, offsets, ",
          "; see 'offsetkeeper --help'"]),
    (["groups"], ["offsetkeeper groups: missing command (expected one of list, describe, delete)"]),
    (["nosuchcommand"], ["offsetkeeper: no such command 'nosuchcommand' (expected one of "]),
    (["grups", "list"], ["no such command 'grups' (did you mean 'groups'?)"]),
    (["--verbose", "groups", "lst"], ["no such command 'lst' (did you mean 'list'?)"]),
    (["offsets", "reset", "--to-earlist", *DOWN],
     ["offsetkeeper offsets reset: no such option '--to-earlist' (did you mean '--to-earliest'",
      "; see 'offsetkeeper offsets reset --help'"]),
    (["offsets", "reset", "-g", "g", "-t", "t", "--to-offset", "5", "--to-offset", "6", *DOWN],
     ["offsetkeeper offsets reset: option '--to-offset' given twice, '5' and then '6'"]),
    (["groups", "list", "-o", "json", "-o", "csv", *DOWN],
     ["option '--output' given twice, 'json' and then 'csv' (it takes one value)"]),
    (["groups", "list", "-o", "yaml", *DOWN],
     ["offsetkeeper groups list: invalid value for --output: 'yaml' is not one of 'table', "
      "'json', 'csv'"]),
    (["groups", "list", *DOWN, "-o"], ["option '-o' requires an argument (expected table|json|csv)"]),
    (["groups", "list", "-o", "json", "--bogus", *DOWN], ["no such option '--bogus'"]),
    (["--output", "json", "groups", "list", *DOWN],
     ["offsetkeeper: no such option '--output' (a command's options go after its name"]),
    (["offsets", "show", *DOWN, "-o", "json"],
     ["offsetkeeper offsets show: missing option --topic TOPIC[:P,...]"]),
    (["mapping", "lookup"], ["offsetkeeper mapping lookup: missing argument DEST/BACKUP_ID"]),
    (["groups", "list", *DOWN, "extra"],
     ["unexpected extra argument 'extra' (expected options only, no arguments)"]),
    (["offsets", "reset", "--max-concurrent", "0", *DOWN],
     ["invalid value for --max-concurrent: '0' (input should be greater than or equal to 1)"]),
    (["offsets", "reset", "--to-earliest=1", *DOWN],
     ["option '--to-earliest' does not take a value"]),
    (["snapshots", "create", *DOWN, "-g", "g", "--store"],
     ["option '--store' requires an argument (expected PATH|URL)"]),
]


@pytest.mark.parametrize(("args", "fragments"), CASES,
                         ids=[" ".join(a).replace(DOWN[1], "DOWN") or "no-command" for a, _ in CASES])
def test_a_rejected_command_line_is_one_line_and_exit_2(tmp_path, args, fragments):
    """Invariant: a command line Click rejects is one line on stderr (`error: COMMAND PATH:
    what was wrong (what was expected); see '... --help'`) naming the bad value, exit 2, with
    Click's suggestions kept, stdout empty and nothing written — never Click's three-line
    usage block, a Rich box or a traceback, also with `-o json`."""
    proc = run(args, tmp_path)
    assert_one_line_usage_error(proc, *fragments)
    assert sorted(p.name for p in tmp_path.iterdir()) == [], list(tmp_path.iterdir())


def test_help_is_unchanged(tmp_path):
    """Invariant: --help (and -h) still prints Click's help on stdout, exit 0."""
    for args in (["--help"], ["offsets", "reset", "--help"], ["groups", "-h"],
                 ["groups", "list", "-o", "json", "--help"]):
        proc = run(args, tmp_path)
        assert proc.returncode == 0 and proc.stderr == "", (args, proc.stderr)
        assert proc.stdout.startswith("Usage: offsetkeeper"), (args, proc.stdout[:200])


def test_a_rejected_reset_moves_no_offset(tmp_path, bootstrap, unique):
    """Invariant: a reset whose command line is rejected — a target given twice with two
    values (Click would silently take the last), a misspelt target — changes no committed
    offset and writes no snapshot, even with --execute; a value given twice is accepted."""
    topic, group = unique("usage"), unique("g")
    create_topic(bootstrap, topic, partitions=2)
    produce_n(bootstrap, topic, 2, 10)
    commit(bootstrap, group, {(topic, 0): 3, (topic, 1): 7})
    store = tmp_path / "snaps"
    base = ["offsets", "reset", "-b", bootstrap, "-g", group, "-t", topic, "--execute",
            "--snapshot-store", str(store)]
    for extra, fragment in ((["--to-offset", "1", "--to-offset", "9"],
                             "option '--to-offset' given twice, '1' and then '9'"),
                            (["--to-earlist"], "no such option '--to-earlist'"),
                            (["--to-earliest", "-o", "json", "-o", "csv"],
                             "option '--output' given twice")):
        assert_one_line_usage_error(run(base + extra, tmp_path), fragment)
    assert committed(bootstrap, group, topic, 2) == {0: 3, 1: 7}
    assert not store.exists()
    # the same command line, once right, does change the offsets (the check above can fail);
    # one value given twice is that value
    ok = run([*base, "--to-offset", "1", "--to-offset", "1", "--no-snapshot"], tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert committed(bootstrap, group, topic, 2) == {0: 1, 1: 1}
