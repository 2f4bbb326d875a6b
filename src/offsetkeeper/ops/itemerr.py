"""One bad item must not fail a whole page: the item's row carries its error instead.

A page lists many independent things (groups with their history, checkpoints, backup
destinations, snapshots). A corrupt file, a missing filesystem package, a store that is down
or a malformed record concerns one of them: `guarded` runs the read of one item, logs what went
wrong (with the traceback when it was not an error we expected) and returns a one-line message
for the row. Secrets in URLs quoted by the message are masked.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from offsetkeeper.errors import OffsetkeeperError
from offsetkeeper.redact import mask_url

# the dashboard's log: the pages show these rows
log = logging.getLogger("offsetkeeper.web")
T = TypeVar("T")
MAX_CHARS = 300


def message(exc: BaseException, *, known: str | None = None) -> str:
    """A one-line message for a row: ours as is, others prefixed by their type."""
    if isinstance(exc, OffsetkeeperError):
        msg = exc.message
    elif isinstance(exc, RecursionError):
        msg = "nested too deeply to be read (a corrupt or hostile file)"
    elif isinstance(exc, ImportError):
        msg = f"a package is missing: {exc}"
    else:
        msg = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    line = (msg.strip().splitlines() or [""])[0]
    if len(line) > MAX_CHARS:
        line = line[:MAX_CHARS] + "…"
    return mask_url(line, known=known)


def guarded(fn: Callable[[], T], default: T, *, what: str,
            known: str | None = None) -> tuple[T, str | None]:
    """(fn(), None), or (default, the error's message) when reading this one item failed."""
    try:
        return fn(), None
    except Exception as exc:  # the row shows it; the log keeps the detail
        text = message(exc, known=known)
        expected = isinstance(exc, OffsetkeeperError | OSError)
        log.log(logging.WARNING, "%s: %s", mask_url(what, known=known), text,
                exc_info=not expected)
        return default, text
