"""Text shown to people: names made printable, and Rich tables printed whole — the helpers the
command line, the dashboard and the demo parts share.

A foundation module (it knows Rich, nothing of offsetkeeper), so that cli/ and web/ need not
import each other to render a name or a table the same way.
"""

from __future__ import annotations

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table


def printable(text: object) -> str:
    """`text` with every non-printable character (newline, ESC, NUL, U+2028 ...) escaped."""
    s = str(text)
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in s)


def print_table(table: Table, console: Console | None = None) -> None:
    """Print a table at its natural width, so no cell ever wraps (one line per row)."""
    console = console or Console(soft_wrap=True, highlight=False)
    natural = Measurement.get(console, console.options.update(max_width=1_000_000), table).maximum
    # A console exactly as wide as the table: Rich then neither folds nor drops a column.
    wide = Console(file=console.file, width=max(natural, 1), height=25, highlight=False, soft_wrap=True,
                   force_terminal=console.is_terminal, color_system=console.color_system and "auto",
                   no_color=console.no_color)
    wide.print(table, crop=False)
