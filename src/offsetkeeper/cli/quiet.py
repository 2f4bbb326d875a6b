"""Keep the JVM's and librdkafka's own log lines off the user's terminal.

Spark's JVM and librdkafka write straight to file descriptor 2, around Python: log4j banners,
`WARN Utils ...`, task tracebacks, broker connection errors. They break the progress bar and
bury the one-line error a command prints. While a command that may start Spark runs,
`native_output_to_log()` points descriptor 2 at a log file (inherited by the JVM started
inside) and keeps Python's `sys.stderr` — errors, warnings, the progress bar — on the terminal.
`OFFSETKEEPER_VERBOSE=1` leaves everything on the terminal.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

VERBOSE_ENV = "OFFSETKEEPER_VERBOSE"


def log_path() -> str:
    """Where the native output goes: `<user log dir>/offsetkeeper/native.log`."""
    from platformdirs import user_log_dir

    return os.path.join(user_log_dir("offsetkeeper"), "native.log")


@contextlib.contextmanager
def native_output_to_log() -> Iterator[str | None]:
    """Redirect descriptor 2 to `log_path()` for the duration (yields the path, or None when
    nothing was redirected: verbose, or stderr is not the process's own, as under a test)."""
    if os.environ.get(VERBOSE_ENV, "").strip() not in ("", "0") or sys.stderr is not sys.__stderr__:
        yield None
        return
    try:
        sys.__stderr__.flush()
        path = log_path()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        log_fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except (OSError, ValueError, AttributeError):
        yield None
        return
    saved = os.dup(2)
    old = sys.stderr
    os.dup2(log_fd, 2)
    os.close(log_fd)
    sys.stderr = os.fdopen(os.dup(saved), "w", buffering=1, encoding=getattr(old, "encoding", None) or "utf-8",
                           errors="backslashreplace")
    try:
        yield path
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
            sys.stderr.close()
        sys.stderr = old
        os.dup2(saved, 2)
        os.close(saved)
