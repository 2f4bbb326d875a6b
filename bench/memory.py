"""Peak memory of a process tree, sampled from /proc (shared by the benchmarks)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator


def proc_stats() -> Iterator[tuple[int, str, list[str]]]:
    """(pid, command name, the /proc/PID/stat fields after the name) of every process; the
    fields are numbered from 0 = state (so ppid is [1], utime [11], rss pages [21])."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                head, rest = f.read().rsplit(")", 1)
        except (OSError, ValueError):
            continue
        yield int(d), head.split("(", 1)[1], rest.split()


def _is_dev_broker(pid: int, comm: str) -> bool:
    """A Kafka node of `offsetkeeper dev-broker` (a JVM running kafka.Kafka), not Spark's JVM."""
    if comm != "java":
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"\0kafka.Kafka\0" in f.read()
    except OSError:
        return False


def _procs() -> tuple[dict[int, list[int]], dict[int, tuple[int, str]]]:
    children: dict[int, list[int]] = {}
    info: dict[int, tuple[int, str]] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for pid, comm, x in proc_stats():
        children.setdefault(int(x[1]), []).append(pid)
        info[pid] = (int(x[21]) * page, comm)
    return children, info


def _tree_rss(pid: int, *, python_only: bool = False) -> int:
    """RSS in bytes of a process and all its descendants (development brokers left out); with
    `python_only`, of the Python processes below it (Spark's Python workers), itself excluded."""
    children, info = _procs()
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        rss, comm = info.get(p, (0, ""))
        if _is_dev_broker(p, comm):  # a development broker this benchmark started
            continue
        if not python_only or (p != pid and comm.startswith("python")):
            total += rss
        todo.extend(children.get(p, []))
    return total


class PeakMemory:
    """Samples the RSS of a process tree every 0.2 s in a thread: `peak` (the whole tree) and
    `peak_python` (the Python processes below the root: Spark's Python workers)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self.peak_python = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _tree_rss(self.pid))
            self.peak_python = max(self.peak_python, _tree_rss(self.pid, python_only=True))
            self._stop.wait(0.2)

    def __enter__(self) -> PeakMemory:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()
