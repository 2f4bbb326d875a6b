"""One progress-event protocol for long work (reset executor, backup, restore, sampling).

Library code reports `ProgressEvent`s to a callback it is given; it never draws anything. The
command line renders them with Rich (cli/progress.py), quiet under `--output json`; the web
dashboard can forward them as server-sent events.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ProgressEvent:
    """`done` of `total` units of `task` are finished (`total` None when unknown yet)."""

    task: str
    done: float
    total: float | None = None
    unit: str = ""
    message: str = ""


ProgressFn = Callable[[ProgressEvent], None]


def no_progress(_event: ProgressEvent) -> None:
    """The default callback: report nothing."""
