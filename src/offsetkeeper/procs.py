"""Whether a process still runs, by its pid: the one check the dev servers, the Spark Connect
server and a backup follower's lock share (their pids are read back from state files)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """True while a process with this pid exists and is not a zombie (a child that exited but
    was not waited for still "exists"); one owned by another user counts as alive."""
    if pid <= 0:
        return False  # 0 and negative pids name process groups for os.kill, never one process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError, IndexError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.split(")")[-1].split()[0] == "Z":
            return False
    return True
