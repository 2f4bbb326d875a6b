"""The `commits` group speaks one option language (issue 31 item 11a: `commits show/at/
generations/rewinds` refused `-b/--bootstrap-server` while `commits scan` needs it)."""

from __future__ import annotations

import pytest
import typer

from offsetkeeper.cli.main import app
from tests.cli import run_cli

# what every command of the group reads from: a cluster (connection options), Spark, output
SHARED = {"--bootstrap-server", "-b", "--command-config", "--cluster", "--config", "--master",
          "--remote", "--conf", "--topic", "-t", "--group", "-g", "--output", "-o"}
QUERIES = ["show", "at", "generations", "rate", "rewinds", "topics", "expired", "rebalances"]


def _commands():
    return typer.main.get_command(app).commands["commits"].commands


def test_every_commits_command_takes_the_same_options_with_the_same_help():
    """Invariant: every `commits` command accepts the cluster options (-b/--bootstrap-server,
    --command-config, --cluster, --config), the Spark options (--master, --remote, --conf),
    -t/--topic, -g/--group and -o; every query also -H/--history; an option of one name has one
    help text across the group (except --group: the subject of show/at/generations, a filter
    of scan and the reports)."""
    helps: dict[str, set[str]] = {}
    for name, cmd in _commands().items():
        opts = {o for p in cmd.params for o in getattr(p, "opts", [])}
        assert opts >= SHARED, (name, sorted(SHARED - opts))
        if name != "scan":
            assert {"--history", "-H"} <= opts, name
        for p in cmd.params:
            if getattr(p, "help", None) and p.opts[0] != "--group":
                helps.setdefault(p.opts[0], set()).add(p.help)
    assert {o: h for o, h in helps.items() if len(h) > 1} == {}


@pytest.mark.parametrize(("args", "code", "message"), [
    (["show", "g"], 2, "give --history DIR"),
    (["rewinds"], 2, "give --history DIR"),
    (["show", "g", "-H", "/nonexistent", "-b", "127.0.0.1:1"], 2, "not both"),
    (["generations", "g", "-H", "/nonexistent", "--bootstrap-server", "127.0.0.1:1"], 2, "not both"),
    (["rate", "-H", "/nonexistent", "-t", "offsets"], 2, "--topic names the topic"),
    (["at", "g", "-g", "h", "-H", "/nonexistent", "-T", "2026-11-20T09:00:00Z"], 2,
     "two groups given ('g' and --group 'h')"),
    (["show", "-H", "/nonexistent"], 2, "missing the group"),
    (["at", "--group", "g", "-H", "/nonexistent"], 2, "missing option --time"),
    # -g works as the group itself: the history is read (and found missing: exit 1)
    (["show", "-g", "g", "-H", "/nonexistent"], 1, "no finished commit history in /nonexistent"),
])
def test_commits_usage_errors_exit_2_before_reading_anything(capsys, monkeypatch, tmp_path, args,
                                                             code, message):
    """Invariant: a query is given a history or a cluster (exactly one, the command line over
    the environment) and one group; anything else is one line naming the problem, exit 2,
    before anything is read (no cluster is reached: 127.0.0.1:1 would refuse)."""
    monkeypatch.delenv("OFFSETKEEPER_BOOTSTRAP_SERVER", raising=False)
    monkeypatch.delenv("OFFSETKEEPER_COMMIT_HISTORY", raising=False)
    monkeypatch.delenv("OFFSETKEEPER_CONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no config file with a default cluster
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    r = run_cli(capsys, "commits", *args)
    assert r.code == code and message in r.err and "Traceback" not in r.err, (r.code, r.err)
    assert len(r.err.strip().splitlines()) == 1, r.err
