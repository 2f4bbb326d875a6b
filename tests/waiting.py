"""Waiting for a condition in integration tests (Connect workers, MM2, Streams apps)."""

from __future__ import annotations

import time


def wait_for(what: str, check, timeout: float = 180.0, every: float = 0.3):
    """Call `check` until it returns something truthy and return that; fail naming `what`
    after `timeout` seconds (a bound on a stuck component, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what} (last: {got!r})")
        time.sleep(every)
