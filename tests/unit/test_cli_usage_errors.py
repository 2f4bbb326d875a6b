"""Every command of the tree reports Click's usage errors the one way (cli/usage.py): hooked
centrally, not command by command."""

from __future__ import annotations

import pytest

from offsetkeeper.cli import main as cli_main
from offsetkeeper.cli.usage import _clause, _either
from tests.cli import run_cli


def _paths(cmd, path=()):
    yield path, cmd
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        yield from _paths(sub, (*path, name))


def _one_line(r, path: tuple[str, ...]) -> str:
    assert r.code == 2 and r.out == "", (path, r.code, r.out, r.err)
    assert r.err.count("\n") == 1 and "Usage:" not in r.err and "Traceback" not in r.err, r.err
    prog = " ".join(("offsetkeeper", *path))
    assert r.err.startswith(f"error: {prog}: ") and r.err.endswith(f"; see '{prog} --help'\n"), r.err
    return r.err


def test_every_command_reports_an_unknown_option_in_one_line(capsys, monkeypatch, tmp_path):
    """Invariant: for every command and group of the tree, an unknown option is one line
    naming the command path and the option, exit 2 (no command renders usage errors itself)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    paths = list(_paths(cli_main.command()))
    assert len(paths) > 100
    for path, cmd in paths:
        if cmd.context_settings.get("ignore_unknown_options"):  # kafka-tool: for Kafka's tool
            continue
        err = _one_line(run_cli(capsys, *path, "--no-such-opt"), path)
        assert "no such option '--no-such-opt'" in err, err


def test_every_one_value_option_given_twice_with_two_values_is_refused(capsys, monkeypatch,
                                                                        tmp_path):
    """Invariant: an option that takes one value, given twice with two different values, is bad
    input everywhere (Click would keep the last silently). Checked on the first such option of
    every command."""
    monkeypatch.setenv("HOME", str(tmp_path))
    checked = 0
    for path, cmd in _paths(cli_main.command()):
        if getattr(cmd, "commands", None) is not None:
            continue
        single = [p for p in cmd.params if p.param_type_name == "option" and not p.multiple
                  and not p.is_flag and not p.count and p.nargs == 1 and not p.is_eager]
        if not single:
            continue
        name = max(single[0].opts, key=len)
        err = _one_line(run_cli(capsys, *path, name, "one", name, "two"), path)
        assert f"option {name!r} given twice, 'one' and then 'two'" in err, err
        checked += 1
    assert checked > 70


@pytest.mark.parametrize(("names", "text"), [
    (["a"], "'a'"), (["a", "b"], "'a' or 'b'"), (["a", "b", "c"], "'a', 'b' or 'c'")])
def test_suggestions_read_as_a_sentence(names, text):
    assert _either(names) == text


@pytest.mark.parametrize(("message", "clause"), [
    ("Value error, 'x' is not one of 'a', 'b'.", "'x' is not one of 'a', 'b'"),
    ("Input should be greater than or equal to 1", "input should be greater than or equal to 1"),
    ("ISO-8601 expected.", "ISO-8601 expected"),
    ("two\nlines", "two lines"),
])
def test_clicks_and_pydantics_sentences_become_one_clause(message, clause):
    """Invariant: a message from Click or pydantic is one clause of the line: no newline, no
    pydantic prefix, no final period, an acronym's case kept."""
    assert _clause(message) == clause


@pytest.mark.parametrize("args", [
    ["groups", "list", "-b", "app:hunter2x@h:9092", "-b", "h:9092"],
    ["groups", "list", "-b", "a:1,app:hunter2x@h:9092", "--bootstrap-server", "h:9092"],
    ["groups", "list", "-o", "app:hunter2x@h"],
    ["history", "show", "g", "--store", "postgresql://app:hunter2x@db/h", "--store", "x.db"],
    ["connect", "list", "--connect-password", "hunter2x", "--connect-password", "other"],
])
def test_a_rejected_value_shows_no_password(capsys, monkeypatch, tmp_path, args):
    """Invariant: the values a usage error quotes never show a password — in userinfo with or
    without a scheme (`user:pw@host:9092`), nor the value of a secret option at all."""
    monkeypatch.setenv("HOME", str(tmp_path))
    r = run_cli(capsys, *args)
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert "hunter2x" not in r.err and "other" not in r.err, r.err
    assert "******" in r.err or "--connect-password' given twice with two values" in r.err, r.err
