"""One progress-event protocol for long work (reset executor, backup, restore, sampling).

Library code reports `ProgressEvent`s to a callback it is given; it never draws anything. The
command line renders them with Rich (cli/progress.py), quiet under `--output json`; the web
dashboard can forward them as server-sent events.
"""

from __future__ import annotations

import contextlib
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


class ProgressPoller:
    """While work runs elsewhere (Spark tasks writing progress reports), ask `poll` every
    `interval_s` for the current event and pass it to `fn`; `first` is reported on entry.

    The one progress watcher of backup and restore. Progress must never break the work: a
    failing `poll` or `fn` is skipped, and with `no_progress` nothing runs at all.
    """

    def __init__(self, fn: ProgressFn, poll: Callable[[], ProgressEvent], *,
                 first: ProgressEvent | None = None, interval_s: float = 0.5) -> None:
        import threading

        self.fn, self.poll, self.first, self.interval_s = fn, poll, first, interval_s
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            with contextlib.suppress(Exception):
                self.fn(self.poll())

    def __enter__(self) -> ProgressPoller:
        if self.fn is not no_progress:
            if self.first is not None:
                self.fn(self.first)
            self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._t.is_alive():
            self._t.join(5)
