"""Rendering of results: tables for people, JSON and CSV for programs. Data goes to stdout.

Names are data: group and topic names may hold Rich markup (`[/]`, `[bold red]x[/bold red]`),
quotes, newlines or terminal escape sequences. Every value rendered here is shown literally:
table cells and titles are Rich `Text` (never parsed as markup), and control characters are
shown escaped (`\\n`, `\\x1b`) instead of being sent raw to the terminal. JSON escapes them by
itself; CSV keeps values exact (RFC 4180 quoting) when piped and escapes them on a terminal.

Tables never wrap inside a cell: one line per row, as kafka-consumer-groups.sh prints them.
A row wider than the terminal is printed whole and the terminal folds the line.

The output contract (one rule each, tested over every command in tests/unit/test_output_contract.py):
times are epoch milliseconds in JSON and CSV with `<column>_iso` beside them, ISO-8601 UTC in
tables; lengths of time read as `5.2h` in tables and stay exact numbers in JSON; yes/no, not
True/False; rates with their unit; empty columns left out of tables; long reasons shortened in
tables, whole in JSON; names printed literally, exactly once escaped (here, nowhere else).
"""

from __future__ import annotations

import csv
import functools
import json
import re
import sys
from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from offsetkeeper.tables import plain_lines, print_table, printable, rich_would_style
from offsetkeeper.times import human_duration_ms, iso_ms

if TYPE_CHECKING:  # Rich is imported where it draws (a terminal): ~20 ms of every start
    from rich.console import Console


class OutputFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


def stdout_console() -> Console:
    from rich.console import Console

    return Console(soft_wrap=True, highlight=False)


def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True, highlight=False)


def safe(text: object) -> str:
    """`text` ready to embed in a Rich markup string: control characters escaped, markup escaped."""
    from rich.markup import escape

    return escape(printable(text))


def say(message: str, *, style: str | None = None, prefix: str = "") -> None:
    """One line for people on stderr; `message` is shown literally (no markup parsed)."""
    if not rich_would_style(sys.stderr):  # what Rich writes there, without importing it
        sys.stderr.write(f"{prefix + ' ' if prefix else ''}{printable(message)}\n")
        sys.stderr.flush()
        return
    from rich.text import Text

    line = Text()
    if prefix:
        line.append(prefix, style=style)
        line.append(" ")
    line.append(printable(message))
    stderr_console().print(line, soft_wrap=True)


# -- the output contract -----------------------------------------------------------------------
# Times are epoch milliseconds in the data. A column is a time column when the caller says so
# (`time_columns`) or when its name says so (TIME_NAME): tables show ISO-8601 UTC, JSON and CSV
# keep the number and add `<column>_iso`. Columns of seconds or milliseconds (`*_s`, `*_ms`)
# read as rounded lengths in tables (`5.2h`), exact numbers in JSON and CSV. Rates carry their
# unit in tables. Yes/no instead of True/False. A column empty in every row is left out of a
# table, and long free text (reasons, notes, errors) is shortened there (JSON keeps it whole).

TIME_NAME = re.compile(r"^(time|hour|joined|left|last_commit|first_commit|last_record|"
                       r"last_sample|last_change|sample_time|.*_at|.*_since|.*_timestamp)$")
_SECONDS = re.compile(r".*_s$")
_MILLIS = re.compile(r".*_ms$")
LONG_TEXT = {"reason", "note", "notes", "detail", "problem", "error", "message", "refused"}
LONG_TEXT_WIDTH = 60


def time_columns_of(columns: Sequence[str], given: Sequence[str] | None = None) -> list[str]:
    """The time columns among `columns`: those given, and those named like times."""
    return [c for c in columns if (given is not None and c in given) or TIME_NAME.match(c)]


def with_iso(payload: Any, keys: Sequence[str]) -> Any:
    """`payload` (dicts and lists, any depth) with `<key>_iso` beside every epoch-ms `key`."""
    if isinstance(payload, list):
        return [with_iso(v, keys) for v in payload]
    if not isinstance(payload, dict):
        return payload
    out: dict[str, Any] = {}
    for k, v in payload.items():
        out[k] = with_iso(v, keys)
        if k in keys and not k.endswith("_iso") and (v is None or isinstance(v, int | float)) \
                and not isinstance(v, bool) and f"{k}_iso" not in payload:
            out[f"{k}_iso"] = iso_ms(v)
    return out


def plural(n: int, word: str, many: str | None = None) -> str:
    """`1 run`, `2 runs`, `0 runs`."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def shorten(text: str, width: int = LONG_TEXT_WIDTH) -> str:
    """One line of at most `width` characters, ending in … when cut."""
    line = " ".join(str(text).split())
    return line if len(line) <= width else line[: width - 1].rstrip() + "…"


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (list, tuple)):
        return ",".join(_cell(x) for x in v) or "-"
    return str(v)


def table_cell(column: str, v: Any, time_columns: Sequence[str] = ()) -> str:
    """How one value reads in a table (see the output contract above)."""
    if v is None or v == "" or v == [] or v == ():
        return "-"
    if column in time_columns and isinstance(v, int | float) and not isinstance(v, bool):
        return iso_ms(v) or str(v)
    if isinstance(v, int | float) and not isinstance(v, bool):
        if rate := _rate_unit(column):
            return f"{v:g}{rate}"
        length = _length_unit(column)
        if length == "s":
            return human_duration_ms(v * 1000) or str(v)
        if length == "ms":
            return human_duration_ms(v) or str(v)
    if column in LONG_TEXT and isinstance(v, str):
        return shorten(v)
    return _cell(v)


# per column name, not per cell: a 1,600-row plan has 13,000 cells
@functools.cache
def _rate_unit(column: str) -> str | None:
    if column == "rate" or column.endswith("_per_s"):
        return "/s"
    return "/min" if column.endswith("_per_minute") else None


@functools.cache
def _length_unit(column: str) -> str | None:
    """"s" or "ms" for a column holding a length of time in that unit (by its name)."""
    return "s" if _SECONDS.fullmatch(column) else "ms" if _MILLIS.fullmatch(column) else None


def _header(column: str) -> str:
    if _rate_unit(column) is None and _length_unit(column) is not None:
        column = column.rsplit("_", 1)[0]
    return column.upper().replace("_", "-")


def _blank(v: Any) -> bool:
    return v is None or v == "" or v == [] or v == ()


def render_rows(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[str],
    fmt: OutputFormat,
    *,
    title: str | None = None,
    json_payload: Any = None,
    time_columns: Sequence[str] | None = None,
    always: Sequence[str] = (),
) -> None:
    """Print rows as a table, a JSON array (or `json_payload`), or header-led CSV.

    A table leaves out columns empty in every row, except those in `always` (a layout people
    know from another tool, such as kafka-consumer-groups.sh --describe).

    Time columns (`time_columns`, and columns named like times) hold epoch milliseconds:
    ISO-8601 UTC in tables, the number plus `<column>_iso` in JSON and CSV.
    """
    times = time_columns_of(columns, time_columns)
    if fmt is OutputFormat.json:
        if json_payload is not None:
            payload = with_iso(json_payload, times)
        else:
            payload = [with_iso({c: r.get(c) for c in columns}, times) for r in rows]
        render_json(payload)
    elif fmt is OutputFormat.csv:
        exact = not sys.stdout.isatty()
        w = csv.writer(sys.stdout, lineterminator="\n")
        header: list[str] = []
        for c in columns:
            header += [c, f"{c}_iso"] if c in times else [c]
        w.writerow(header)
        for r in rows:
            out = []
            for c in columns:
                v = r.get(c)
                text = "" if v is None else _cell(v) if not isinstance(v, bool) else str(v).lower()
                out.append(text if exact else printable(text))
                if c in times:
                    out.append((iso_ms(v) if not isinstance(v, str) else v) or "")
            w.writerow(out)
    else:
        shown = [c for c in columns
                 if c in always or not rows or not all(_blank(r.get(c)) for r in rows)]
        headers = [_header(c) for c in shown]
        # What print_table writes to a stream that is no terminal, without Rich (a header
        # holding `[`, `:` or a newline is Rich markup: Rich renders it)
        if shown and not rich_would_style(sys.stdout) and not any(
                ch in h for h in headers for ch in "[:\n"):
            lines = plain_lines(printable(title) if title else None, headers,
                                [[printable(table_cell(c, r.get(c), times)) for r in rows] for c in shown])
            sys.stdout.write("".join(x + "\n" for x in lines))
            sys.stdout.flush()
            return
        from rich.table import Table
        from rich.text import Text

        table = Table(title=Text(printable(title)) if title else None, header_style="bold",
                      box=None, pad_edge=False)
        for c in shown:
            table.add_column(_header(c), no_wrap=True, overflow="ignore")
        for r in rows:
            table.add_row(*(Text(printable(table_cell(c, r.get(c), times))) for c in shown))
        print_table(table, stdout_console())


def render_json(payload: Any, *, time_keys: Sequence[str] = ()) -> None:
    """JSON on stdout (non-ASCII and control characters escaped by json itself); epoch-ms
    `time_keys` get their `<key>_iso` companion at any depth."""
    if time_keys:
        payload = with_iso(payload, time_keys)
    sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")
