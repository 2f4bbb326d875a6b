"""Text shown to people: names made printable, and Rich tables printed whole — the helpers the
command line, the dashboard and the demo parts share.

A foundation module (it knows Rich, nothing of offsetkeeper), so that cli/ and web/ need not
import each other to render a name or a table the same way. Rich is imported only where a
table is printed through it: output that is no terminal's is written directly (`plain_lines`,
`rich_would_style`), so `groups list | ...` and scripts do not pay Rich's import at every start.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def printable(text: object) -> str:
    """`text` with every non-printable character (newline, ESC, NUL, U+2028 ...) escaped."""
    s = str(text)
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in s)


def rich_would_style(stream: Any) -> bool:
    """True when a Rich Console writing to `stream` would treat it as a terminal (colours,
    styles, Jupyter): Rich's own rules (TTY_COMPATIBLE, FORCE_COLOR, isatty), so text written
    directly to any other stream is exactly what Rich would write there."""
    if "ipykernel" in sys.modules:
        return True
    tty_compatible = os.environ.get("TTY_COMPATIBLE", "")
    if tty_compatible in ("0", "1"):
        return tty_compatible == "1"
    if os.environ.get("FORCE_COLOR") is not None:
        return os.environ["FORCE_COLOR"] != ""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def cell_len(text: str) -> int:
    """Terminal cells `text` takes (Rich's measure; ASCII without importing Rich)."""
    if text.isascii() and text.isprintable():
        return len(text)
    from rich.cells import cell_len as rich_cell_len

    return rich_cell_len(text)


def plain_lines(title: str | None, headers: list[str], cells: list[list[str]]) -> list[str]:
    """A table as Rich prints it when it has no box, no styles and no wrapping, to a stream
    that is no terminal: the title, the header, then one line per row, columns padded to
    their widest cell and two spaces apart. `cells` holds the body column by column."""
    widths = [max([cell_len(h), *(cell_len(x) for x in col)]) for h, col in zip(headers, cells, strict=True)]

    def line(values: list[str]) -> str:
        return "  ".join(v + " " * (w - cell_len(v)) for v, w in zip(values, widths, strict=True))

    n = len(cells[0]) if cells else 0
    return [*([] if title is None else [title]), line(headers),
            *(line([col[i] for col in cells]) for i in range(n))]


def print_table(table: Table, console: Console | None = None) -> None:
    """Print a table at its natural width, so no cell ever wraps (one line per row)."""
    from rich.console import Console

    console = console or Console(soft_wrap=True, highlight=False)
    plain = _plain_cells(table)
    if plain is not None:
        _print_plain(table, plain, console)
        return
    _print_rich(table, console)


def _print_rich(table: Table, console: Console) -> None:
    from rich.console import Console
    from rich.measure import Measurement

    natural = Measurement.get(console, console.options.update(max_width=1_000_000), table).maximum
    # A console exactly as wide as the table: Rich then neither folds nor drops a column.
    wide = Console(file=console.file, width=max(natural, 1), height=25, highlight=False, soft_wrap=True,
                   force_terminal=console.is_terminal, color_system=console.color_system and "auto",
                   no_color=console.no_color)
    wide.print(table, crop=False)


def _unstyled(cell: object) -> bool:
    from rich.text import Text

    return isinstance(cell, Text) and not cell.spans and not cell.style and "\n" not in cell.plain


def _plain_header(header: object) -> str | None:
    # a str header is Rich markup (and emoji codes): plain only without "[" and ":"
    if isinstance(header, str):
        return None if any(c in header for c in "[:\n") else header
    return header.plain if _unstyled(header) else None


def _plain_cells(table: Table) -> list[list[str]] | None:
    """The body's cells as plain strings, when the table is one Rich would lay out as padded
    left-aligned columns two spaces apart (the command line's tables: no box, no styles in the
    body, no wrapping); else None. Rich measures and renders every cell several times, which
    took seconds for a plan of a few thousand rows; such a table needs none of it."""
    if (table.box is not None or table.pad_edge or tuple(table.padding) != (0, 1, 0, 1)
            or not table.show_header or table.show_footer or table.show_lines or table.caption
            or table.row_styles or table.expand or table.width is not None or table.leading
            or table.min_width is not None or table.collapse_padding or table.title_style
            or not (table.title is None or _unstyled(table.title))
            or any(r.style or r.end_section for r in table.rows)):
        return None
    cols = table.columns
    if not cols or any(
            c.justify != "left" or c.vertical != "top" or c.style or not c.no_wrap
            or c.width is not None or c.min_width is not None or c.max_width is not None
            or c.ratio is not None or c.highlight or _plain_header(c.header) is None for c in cols):
        return None
    cells = [c._cells for c in cols]  # where Rich keeps a column's cells
    if any(not all(_unstyled(x) for x in col) for col in cells):
        return None
    return [[x.plain for x in col] for col in cells]


def _print_plain(table: Table, cells: list[list[str]], console: Console) -> None:
    """What Rich prints for such a table, written directly. On a terminal the title and the
    header (styled) still come from Rich, laid out at the same column widths."""
    from rich.table import Table

    headers = [_plain_header(c.header) or "" for c in table.columns]
    if console.is_terminal and not console.no_color and console.color_system is not None:
        widths = [max([cell_len(h), *(cell_len(x) for x in col)]) for h, col in zip(headers, cells, strict=True)]
        body = plain_lines(None, headers, cells)[1:]
        head = Table(title=table.title, header_style=table.header_style, box=None,
                     pad_edge=False, title_justify=table.title_justify)
        for c, w in zip(table.columns, widths, strict=True):
            head.add_column(c.header, no_wrap=True, overflow=c.overflow, min_width=w)
        _print_rich(head, console)
    else:
        body = plain_lines(None if table.title is None else table.title.plain, headers, cells)
    console.file.write("".join(x + "\n" for x in body))
    console.file.flush()
