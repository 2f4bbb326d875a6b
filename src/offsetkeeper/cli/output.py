"""Rendering of results: tables for people, JSON and CSV for programs. Data goes to stdout."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from rich.console import Console
from rich.table import Table


class OutputFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


def stdout_console() -> Console:
    console = Console(soft_wrap=True)
    if not console.is_terminal:
        # Piped output: never fold columns to an imagined 80-character screen.
        console = Console(soft_wrap=True, width=10_000)
    return console


def stderr_console() -> Console:
    return Console(stderr=True, soft_wrap=True)


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v) or "-"
    return str(v)


def render_rows(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[str],
    fmt: OutputFormat,
    *,
    title: str | None = None,
    json_payload: Any = None,
) -> None:
    """Print rows as a table, a JSON array (or `json_payload`), or header-led CSV."""
    if fmt is OutputFormat.json:
        payload = json_payload if json_payload is not None else [
            {c: r.get(c) for c in columns} for r in rows]
        sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")
    elif fmt is OutputFormat.csv:
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow(["" if r.get(c) is None else _cell(r.get(c)) for c in columns])
    else:
        table = Table(title=title, header_style="bold", box=None, pad_edge=False)
        for c in columns:
            table.add_column(c.upper().replace("_", "-"), overflow="fold")
        for r in rows:
            table.add_row(*(_cell(r.get(c)) for c in columns))
        stdout_console().print(table)


def render_json(payload: Any) -> None:
    sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")
