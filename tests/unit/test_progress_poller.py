"""The one progress watcher of backup and restore (offsetkeeper.progress.ProgressPoller)."""

from __future__ import annotations

import threading

from offsetkeeper.progress import ProgressEvent, ProgressPoller, no_progress


def test_reports_first_then_polls_and_never_breaks_the_work():
    """Invariant: the first event is reported on entry, polls follow until exit, and a failing
    poll is skipped (progress must never break a backup or a restore)."""
    seen: list[ProgressEvent] = []
    calls = {"n": 0}
    polled = threading.Event()

    def poll() -> ProgressEvent:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError("report file not there yet")
        polled.set()
        return ProgressEvent("t", calls["n"], 10, "records")

    with ProgressPoller(seen.append, poll, first=ProgressEvent("t", 0, 10), interval_s=0.01):
        assert polled.wait(5)
    n = len(seen)
    assert seen[0] == ProgressEvent("t", 0, 10) and seen[1].done >= 2
    assert len(seen) == n  # nothing after exit


def test_no_progress_starts_nothing():
    p = ProgressPoller(no_progress, lambda: ProgressEvent("t", 0))
    with p:
        pass
    assert not p._t.is_alive() and p._t.ident is None


def test_backup_and_restore_share_it():
    from offsetkeeper.backup import run as backup_run
    from offsetkeeper.restore import run as restore_run

    for mod in (backup_run, restore_run):
        assert mod.ProgressPoller is ProgressPoller and not hasattr(mod, "_ProgressWatcher")
