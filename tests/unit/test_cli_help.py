"""Regression tests for issue 8: help reads as words (item 24), rendering shows names literally
and never wraps a table cell (items 11, 17), times as ISO-8601 (item 18)."""

from __future__ import annotations

import json
import re

import pytest
from rich.console import Console

from offsetkeeper.cli import output
from offsetkeeper.cli.main import command
from offsetkeeper.cli.output import OutputFormat, iso_ms, printable, render_rows


def _walk(cmd, path=()):
    subs = getattr(cmd, "commands", None)
    if subs:
        for name, sub in subs.items():
            yield from _walk(sub, (*path, name))
    else:
        yield " ".join(path), cmd


def _help(root, path: str) -> str:
    ctx = root.make_context("offsetkeeper", [], resilient_parsing=True)
    cmd = root
    for name in path.split():
        cmd = cmd.commands[name]
        ctx = cmd.make_context(name, [], parent=ctx, resilient_parsing=True)
    return cmd.get_help(ctx)


def test_every_command_help_has_an_example_and_word_metavars():
    """Invariant: every registered command's --help carries an Example and shows option values
    as words (GROUP, N, PATH), never type names such as <list[str]> or <int range>."""
    root = command()
    problems = []
    for path, _ in _walk(root):
        text = _help(root, path)
        if "Example:" not in text:
            problems.append(f"{path}: no Example")
        bad = re.findall(r"<[a-z][^>]*>", text)
        if bad:
            problems.append(f"{path}: {sorted(set(bad))}")
    assert not problems, problems


def test_ascii_integers_in_every_int_option(capsys):
    """Invariant: integer options accept ASCII digits only (`1_000` is refused, exit 2)."""
    from tests.cli import run_cli

    r = run_cli(capsys, "offsets", "reset", "-g", "g", "-t", "t", "--to-earliest",
                "--max-concurrent", "1_000")
    assert r.code == 2 and "ASCII digits only" in r.err


@pytest.fixture
def table(capsys, monkeypatch):
    """Render a table as on a terminal `width` columns wide; returns the text written."""

    def render(rows, columns, width, **kw) -> str:
        import sys

        monkeypatch.setattr(output, "stdout_console", lambda: Console(
            file=sys.stdout, width=width, force_terminal=True, color_system=None))
        capsys.readouterr()
        render_rows(rows, columns, OutputFormat.table, **kw)
        return capsys.readouterr().out

    return render


@pytest.mark.parametrize("name", ["[/]", "[bold red]x[/bold red]", "a\nb", "evil\x1b[31m", "x\u2028y"])
def test_names_render_literally(table, name):
    """Invariant: markup in a name is shown as written and control characters escaped, in
    cells and titles alike — rendering never crashes and never emits them raw."""
    text = table([{"group": name, "lag": 1}], ["group", "lag"], 120, title=f"plan for {name}")
    assert printable(name) in text
    assert "\x1b" not in text and "\u2028" not in text
    assert text.count("\n") == 3  # title, header, one row


def test_table_rows_never_wrap(table):
    """Invariant: a table wider than the terminal keeps one line per row (no folded cells)."""
    long = "analytics-" * 12
    text = table([{"group": long, "consumer_id": "rdkafka-" + "f" * 40}], ["group", "consumer_id"], 40)
    lines = text.splitlines()
    assert len(lines) == 2 and long in lines[1] and "rdkafka-" + "f" * 40 in lines[1]


def test_time_columns_iso_in_tables_and_both_in_json(table, capsys):
    """Invariant: epoch-ms time columns read as ISO-8601 UTC in tables; JSON keeps the number
    and adds `<column>_iso`."""
    rows = [{"id": "a", "created_ms": 1795167600250}]
    text = table(rows, ["id", "created_ms"], 80, time_columns=["created_ms"])
    assert "2026-11-20T09:40:00.250Z" in text and "1795167600250" not in text
    capsys.readouterr()
    render_rows(rows, ["id", "created_ms"], OutputFormat.json, time_columns=["created_ms"])
    assert json.loads(capsys.readouterr().out) == [
        {"id": "a", "created_ms": 1795167600250, "created_ms_iso": "2026-11-20T09:40:00.250Z"}]
    assert iso_ms(None) is None


def test_undo_snapshot_id_is_printed_before_anything_that_can_fail(capsys, monkeypatch):
    """Invariant: after an --execute the undo snapshot id reaches the user first, even if
    rendering the plan or report then fails."""
    from offsetkeeper.cli import reset_render
    from offsetkeeper.reset.apply import ApplyReport
    from offsetkeeper.reset.plan import ResetPlan

    def broken(*a, **k):
        raise RuntimeError("rendering failed")

    monkeypatch.setattr(reset_render, "render_rows", broken)
    report = ApplyReport(results=(), elapsed_s=0.0, snapshot_id="snap-20261122T000000.000Z-abcd")
    with pytest.raises(RuntimeError):
        reset_render.show_outcome(ResetPlan(target="x", groups=()), report, OutputFormat.table)
    err = capsys.readouterr().err
    assert "undo: offsetkeeper snapshots rollback snap-20261122T000000.000Z-abcd --execute" in err
