"""The plain-table fast path prints exactly what Rich prints, and leaves other tables to Rich."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table
from rich.text import Text

from offsetkeeper import tables
from offsetkeeper.tables import print_table

CASES = [
    ("Execution report", ["GROUP", "STATUS"], [["a", "bb"], ["ccc", "d"]]),
    ("A title wider than the table it is the title of", ["G", "S"], [["a", "bb"], ["ccc", "d"]]),
    (None, ["GROUP", "STATUS"], []),
    (None, ["G", "S"], [["日本語", "x"], ["ｆｕｌｌ", ""]]),
    ("t", ["G", "S", "LAST"], [["a", "", "1"], ["", "", ""]]),
    (None, ["ONE"], [["x" * 120]]),
    ("Reset plan (--to-offset 7) — dry run", ["GROUP", "TOPIC", "PARTITION", "CURRENT"],
     [[f"g-{i}", "orders", str(i % 8), str(i * 1000)] for i in range(40)]),
]


def _table(title, headers, rows, *, plain_cells: bool = True) -> Table:
    t = Table(title=Text(title) if title else None, header_style="bold", box=None, pad_edge=False)
    for h in headers:
        t.add_column(h, no_wrap=True, overflow="ignore")
    for r in rows:
        t.add_row(*(Text(x) if plain_cells else x for x in r))
    return t


def _printed(table: Table, *, terminal: bool, fast: bool, monkeypatch) -> str:
    buf = io.StringIO()
    console = Console(file=buf, soft_wrap=True, highlight=False, force_terminal=terminal,
                      color_system="standard" if terminal else None, width=80)
    if not fast:
        monkeypatch.setattr(tables, "_plain_cells", lambda t: None)
    print_table(table, console)
    monkeypatch.undo()
    return buf.getvalue()


@pytest.mark.parametrize("terminal", [False, True])
@pytest.mark.parametrize(("title", "headers", "rows"), CASES)
def test_plain_tables_print_as_rich_prints_them(title, headers, rows, terminal, monkeypatch):
    """The fast path for the command line's plain tables (issue 32: Rich took seconds for a
    1,600-row reset plan) prints byte for byte what Rich prints, on a pipe and on a terminal."""
    table = _table(title, headers, rows)
    assert tables._plain_cells(table) is not None
    fast = _printed(table, terminal=terminal, fast=True, monkeypatch=monkeypatch)
    rich = _printed(_table(title, headers, rows), terminal=terminal, fast=False,
                    monkeypatch=monkeypatch)
    assert fast == rich


@pytest.mark.parametrize("make", [
    lambda: _table(None, ["G"], [["[bold]x[/bold]"]], plain_cells=False),  # markup cells
    lambda: _styled_cell_table(),
    lambda: _right_aligned_table(),
    lambda: _table(None, ["[red]G"], [["x"]]),  # a markup header
])
def test_other_tables_are_left_to_rich(make):
    """Anything with styles, markup or another layout is printed by Rich, not the fast path."""
    assert tables._plain_cells(make()) is None


def _styled_cell_table() -> Table:
    t = _table(None, ["G"], [])
    t.add_row(Text("x", style="red"))
    return t


def _right_aligned_table() -> Table:
    t = Table(box=None, pad_edge=False)
    t.add_column("N", justify="right", no_wrap=True)
    t.add_row(Text("1"))
    return t


ROWS = [{"group": "[a/b]", "topic": "日本語", "partition": 0, "lag": None, "reason": "x" * 90,
         "last_commit": 1_700_000_000_000, "ok": True},
        {"group": "g\nnew\x1bline", "topic": "ｆｕｌｌ", "partition": 12, "lag": 5, "reason": "",
         "last_commit": None, "ok": False}]
COLUMNS = ["group", "topic", "partition", "lag", "reason", "last_commit", "ok", "empty"]


@pytest.mark.parametrize(("title", "rows"), [(None, ROWS), ("Title [x] — ünï\tcode", ROWS),
                                             ("", []), ("t", ROWS[:1])])
def test_rows_and_notes_to_a_pipe_are_what_rich_writes(title, rows, monkeypatch, capsys):
    """Invariant (issue 32): on a pipe or file, `render_rows` tables and `say` lines are written
    without importing Rich, byte for byte what Rich writes there."""
    from offsetkeeper.cli import output

    def both(call) -> tuple[str, str]:
        call()
        direct = capsys.readouterr()
        monkeypatch.setattr(output, "rich_would_style", lambda stream: True)  # Rich's own path
        call()
        monkeypatch.undo()
        via_rich = capsys.readouterr()
        assert direct == via_rich
        return direct

    out, _ = both(lambda: output.render_rows(rows, COLUMNS, output.OutputFormat.table, title=title))
    assert out.count("\n") == len(rows) + 1 + bool(title)
    _, err = both(lambda: output.say("group [b] has 3\nmembers\x1b[2J", style="bold red",
                                     prefix="error:"))
    assert err == "error: group [b] has 3\\nmembers\\x1b[2J\n"
    both(lambda: output.say("plain ünïcode note"))


def test_terminal_rules_are_rich_rules(monkeypatch):
    """`rich_would_style` agrees with Rich's Console.is_terminal for the environment switches."""
    from offsetkeeper.tables import rich_would_style

    for env in [{}, {"FORCE_COLOR": "1"}, {"FORCE_COLOR": ""}, {"TTY_COMPATIBLE": "1"},
                {"TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"}]:
        for k in ("FORCE_COLOR", "TTY_COMPATIBLE"):
            monkeypatch.delenv(k, raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        stream = io.StringIO()
        assert rich_would_style(stream) == Console(file=stream).is_terminal, env
