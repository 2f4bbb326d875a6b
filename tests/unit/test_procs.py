"""offsetkeeper.procs.pid_alive: the liveness check behind dev-broker, spark-server and a backup
follower's lock (their pids come back from state files another process wrote)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from offsetkeeper.procs import pid_alive


def test_a_running_process_is_alive_and_a_reaped_one_is_not():
    """Invariant: a running child is alive; once it exited and was waited for, it is not."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert pid_alive(child.pid) and pid_alive(os.getpid())
    finally:
        child.kill()
        child.wait()
    assert not pid_alive(child.pid)


def test_a_zombie_child_is_not_alive():
    """Invariant: a child that exited but was not waited for (a zombie still "exists" for
    kill -0) counts as gone, so a dead server is never reported running."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 60
    while pid_alive(child.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(child.pid)
    child.wait()


def test_pids_that_name_process_groups_are_never_alive():
    """Invariant: 0 and negative numbers (process groups for kill) read from a hostile state
    file are not a live process."""
    assert not pid_alive(0) and not pid_alive(-1) and not pid_alive(-os.getpid())
