"""Rendering of results: tables for people, JSON and CSV for programs. Data goes to stdout.

Names are data: group and topic names may hold Rich markup (`[/]`, `[bold red]x[/bold red]`),
quotes, newlines or terminal escape sequences. Every value rendered here is shown literally:
table cells and titles are Rich `Text` (never parsed as markup), and control characters are
shown escaped (`\\n`, `\\x1b`) instead of being sent raw to the terminal. JSON escapes them by
itself; CSV keeps values exact (RFC 4180 quoting) when piped and escapes them on a terminal.

Tables never wrap inside a cell: one line per row, as kafka-consumer-groups.sh prints them.
A row wider than the terminal is printed whole and the terminal folds the line.

Times (epoch milliseconds) in listings are shown as ISO-8601 UTC in tables; JSON keeps the
number and adds `<column>_iso` beside it; CSV keeps the number and adds the ISO column.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from offsetkeeper.times import iso_ms


class OutputFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


def stdout_console() -> Console:
    return Console(soft_wrap=True, highlight=False)


def stderr_console() -> Console:
    return Console(stderr=True, soft_wrap=True, highlight=False)


def printable(text: object) -> str:
    """`text` with every non-printable character (newline, ESC, NUL, U+2028 ...) escaped."""
    s = str(text)
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in s)


def safe(text: object) -> str:
    """`text` ready to embed in a Rich markup string: control characters escaped, markup escaped."""
    return escape(printable(text))


def say(message: str, *, style: str | None = None, prefix: str = "") -> None:
    """One line for people on stderr; `message` is shown literally (no markup parsed)."""
    line = Text()
    if prefix:
        line.append(prefix, style=style)
        line.append(" ")
    line.append(printable(message))
    stderr_console().print(line, soft_wrap=True)


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v) or "-"
    return str(v)


def _header(column: str) -> str:
    return column.upper().replace("_", "-")


def print_table(table: Table, console: Console | None = None) -> None:
    """Print a table at its natural width, so no cell ever wraps (one line per row)."""
    console = console or stdout_console()
    natural = Measurement.get(console, console.options.update(max_width=1_000_000), table).maximum
    # A console exactly as wide as the table: Rich then neither folds nor drops a column.
    wide = Console(file=console.file, width=max(natural, 1), height=25, highlight=False, soft_wrap=True,
                   force_terminal=console.is_terminal, color_system=console.color_system and "auto",
                   no_color=console.no_color)
    wide.print(table, crop=False)


def render_rows(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[str],
    fmt: OutputFormat,
    *,
    title: str | None = None,
    json_payload: Any = None,
    time_columns: Sequence[str] = (),
) -> None:
    """Print rows as a table, a JSON array (or `json_payload`), or header-led CSV.

    `time_columns` hold epoch milliseconds: ISO-8601 UTC in tables, number plus
    `<column>_iso` in JSON and CSV.
    """
    if fmt is OutputFormat.json:
        if json_payload is not None:
            payload = json_payload
        else:
            payload = []
            for r in rows:
                item = {}
                for c in columns:
                    item[c] = r.get(c)
                    if c in time_columns:
                        item[f"{c}_iso"] = iso_ms(r.get(c))
                payload.append(item)
        render_json(payload)
    elif fmt is OutputFormat.csv:
        exact = not sys.stdout.isatty()
        w = csv.writer(sys.stdout, lineterminator="\n")
        header: list[str] = []
        for c in columns:
            header += [c, f"{c}_iso"] if c in time_columns else [c]
        w.writerow(header)
        for r in rows:
            out = []
            for c in columns:
                v = r.get(c)
                text = "" if v is None else _cell(v)
                out.append(text if exact else printable(text))
                if c in time_columns:
                    out.append(iso_ms(v) or "")
            w.writerow(out)
    else:
        table = Table(title=Text(printable(title)) if title else None, header_style="bold",
                      box=None, pad_edge=False)
        for c in columns:
            table.add_column(_header(c), no_wrap=True, overflow="ignore")
        for r in rows:
            table.add_row(*(Text(printable(iso_ms(r.get(c)) or "-" if c in time_columns
                                           else _cell(r.get(c)))) for c in columns))
        print_table(table)


def render_json(payload: Any) -> None:
    """JSON on stdout (non-ASCII and control characters escaped by json itself)."""
    sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")
