"""Rendering `ProgressEvent`s with Rich on stderr (a terminal only; quiet for json/csv/pipes)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from offsetkeeper.cli.output import OutputFormat, safe, stderr_console
from offsetkeeper.progress import ProgressEvent, ProgressFn, no_progress
from offsetkeeper.tables import rich_would_style


@contextmanager
def progress_bar(output: OutputFormat = OutputFormat.table) -> Iterator[ProgressFn]:
    """A callback drawing one bar per task on a terminal; a no-op otherwise."""
    # Rich (its progress module: ~50 ms to import) only when a bar is drawn
    if output is not OutputFormat.table or not rich_would_style(sys.stderr) \
            or not (console := stderr_console()).is_terminal:
        yield no_progress
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[unit]}"), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        tasks: dict[str, int] = {}

        def on_event(ev: ProgressEvent) -> None:
            if ev.task not in tasks:
                tasks[ev.task] = progress.add_task(safe(ev.task), total=ev.total, unit=ev.unit)
            desc = safe(f"{ev.task}: {ev.message}" if ev.message else ev.task)
            progress.update(tasks[ev.task], completed=ev.done, total=ev.total, description=desc,
                            unit=ev.unit)

        yield on_event
