"""A local Spark Connect server, warm: the Spark session and its Python workers are started once
and every command that attaches to it (``--remote sc://127.0.0.1:PORT``) skips the session start.

Run as ``python -m offsetkeeper.spark.server --port P [--master local[*]] [--idle-timeout S]
[--conf K=V ...]``, or in the background with ``offsetkeeper spark-server start|status|stop``
(`start_background`, `server_status`, `stop_background`: a state file and the server's log in
a state directory). It is a local classic session set up by `get_spark` (quick-start JVM,
class-data sharing, Python workers started) with Spark's Connect plugin listening on
127.0.0.1:P (the ``spark-connect`` jar ships in pyspark). Before it reports ready it runs one
tiny job of offsetkeeper's task path through a Connect session of its own (`warm_up`): the
Python workers Connect sessions use (not the classic session's), their imports, Arrow and the
planner are then warm, and the first command's job is as fast as the later ones (measured in
bench/README.md). It prints one JSON line, ``{"ready": true, "url": ..., "pid": ...,
"seconds": ..., "warm_up_seconds": ...}``, when it accepts sessions, and stops after
`idle_timeout` seconds without a Spark job (0: never) or on SIGTERM/SIGINT.

A state directory belongs to one server at a time: `start_background` holds its lock
(``start.lock``) from the check to the state file, so commands starting it at the same moment
start one server (the others wait and attach), and a server of another offsetkeeper, pyspark or
Python (`identity`) is stopped and replaced rather than used.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from offsetkeeper.procs import pid_alive

PLUGIN = "org.apache.spark.sql.connect.SparkConnectPlugin"
HOST = "127.0.0.1"


def server_conf(port: int, conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings that turn a local session into a Connect server on HOST:`port`."""
    return {**dict(conf or {}), "spark.plugins": PLUGIN,
            "spark.connect.grpc.binding.address": HOST,
            "spark.connect.grpc.binding.port": str(port)}


def serve(port: int, *, master: str = "local[*]", conf: Mapping[str, str] | None = None,
          idle_timeout: float = 0.0, out=sys.stdout) -> None:
    """Start the server and keep it until idle for `idle_timeout` seconds or signalled."""
    from offsetkeeper.spark.session import get_spark

    stop = {"now": False}

    def _stop(*_):
        stop["now"] = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    t0 = time.monotonic()
    # the classic session's own Python workers serve no Connect job: warm_up starts theirs
    spark = get_spark(master, server_conf(port, conf), app_name="offsetkeeper spark-server",
                      start_workers=False)
    t1 = time.monotonic()
    warm_up(f"sc://{HOST}:{port}", spark.sparkContext.defaultParallelism)
    out.write(json.dumps({"ready": True, "url": f"sc://{HOST}:{port}", "pid": os.getpid(),
                          "seconds": round(time.monotonic() - t0, 2),
                          "warm_up_seconds": round(time.monotonic() - t1, 2)}) + "\n")
    out.flush()
    tracker = spark.sparkContext.statusTracker()
    last_job, last_active = -1, time.monotonic()
    while not stop["now"]:
        time.sleep(1.0)
        # a job seen since the last look (running now, or started and finished in between)
        jobs = tracker.getJobIdsForGroup(None) or []
        newest = max(jobs) if jobs else -1
        if tracker.getActiveJobsIds() or newest != last_job:
            last_job, last_active = newest, time.monotonic()
        if idle_timeout and time.monotonic() - last_active > idle_timeout:
            break
    spark.stop()


# What Connect sessions' tasks import (backup, restore and commits-scan tasks): the warm-up job
# imports them once in every Python worker it starts.
WARM_UP_IMPORTS = ("pandas", "offsetkeeper.restore.produce", "offsetkeeper.offsetlog.batch")


def _warm_up_task(it):
    """A task of `warm_up`: what a started worker of a local session does, plus the modules
    only Connect jobs use."""
    import contextlib
    import importlib

    from offsetkeeper.spark.session import _warm_worker

    for name in WARM_UP_IMPORTS:
        with contextlib.suppress(Exception):  # a head start only, as in _warm_worker
            importlib.import_module(name)
    yield from _warm_worker(it)


def warm_up(url: str, slots: int) -> float:
    """Run one task per slot of offsetkeeper's task path (`run_tasks`, mapInArrow) through a
    Connect session on the server at `url`; returns seconds. A failure is logged, not raised:
    the first real job then pays the warm-up and reports any error in context."""
    import logging

    t = time.monotonic()
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        from offsetkeeper.spark.tasks import run_tasks

        session = ConnectSession.builder.remote(url).getOrCreate()
        try:
            run_tasks(session, _warm_up_task, [str(i) for i in range(max(1, slots))])
        finally:
            session.stop()
    except Exception as exc:
        logging.getLogger("offsetkeeper.spark").warning("warm-up job failed: %s", exc)
    return time.monotonic() - t


DEFAULT_PORT = 15002
DEFAULT_IDLE_TIMEOUT = 1800.0
STALL_SECONDS = 180.0


@dataclass(frozen=True)
class ServerStatus:
    """A background server as its state directory describes it."""

    running: bool
    url: str | None = None
    pid: int | None = None
    master: str | None = None
    idle_timeout: float | None = None
    state_dir: str = ""
    log: str = ""
    identity: dict = field(default_factory=dict)  # `identity()` of the process that started it
    started: bool = False  # `start_background` started it (rather than found it running)

    def to_dict(self) -> dict:
        return asdict(self)


STATE_DIR_ENV = "OFFSETKEEPER_SPARK_SERVER_DIR"


def default_state_dir() -> Path:
    """$OFFSETKEEPER_SPARK_SERVER_DIR, else ~/.local/share/offsetkeeper/spark-server (the
    platform's user data directory)."""
    if os.environ.get(STATE_DIR_ENV):
        return Path(os.environ[STATE_DIR_ENV])
    import platformdirs

    return Path(platformdirs.user_data_dir("offsetkeeper")) / "spark-server"


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex((HOST, port)) == 0


def identity() -> dict[str, str]:
    """What a server must share with a command that attaches to it by default: the same
    offsetkeeper (its tasks run there, in Python workers that imported its modules once — so
    the same files, not only the same version: an editable install changes under a running
    server), pyspark (client and server) and Python."""
    import hashlib

    import offsetkeeper

    try:
        from importlib.metadata import version

        pyspark = version("pyspark")
    except Exception:  # no pyspark distribution (a source tree): the server cannot start anyway
        pyspark = ""
    files = hashlib.sha256()
    for f in sorted(Path(offsetkeeper.__file__).parent.rglob("*.py")):
        with contextlib.suppress(OSError):
            st = f.stat()
            files.update(f"{f}:{st.st_mtime_ns}:{st.st_size};".encode())
    return {"offsetkeeper": offsetkeeper.__version__, "code": files.hexdigest()[:16],
            "pyspark": pyspark, "python": sys.executable}


def server_status(state_dir: str | Path | None = None) -> ServerStatus:
    """Whether the background server of `state_dir` runs (its process is alive and its port
    answers), with its URL."""
    d = Path(state_dir) if state_dir else default_state_dir()
    log = str(d / "server.log")
    try:
        st = json.loads((d / "state.json").read_text())
        pid, port = int(st["pid"]), int(st["port"])
    except (OSError, ValueError, KeyError, TypeError):
        return ServerStatus(False, state_dir=str(d), log=log)
    running = pid_alive(pid) and _listening(port)
    return ServerStatus(running, st.get("url"), pid, st.get("master"),
                        st.get("idle_timeout"), str(d), log, st.get("identity") or {})


@contextlib.contextmanager
def state_lock(state_dir: Path) -> Iterator[None]:
    """Hold the state directory's lock (``start.lock``, flock: released when the holder dies):
    one process at a time checks, starts or stops its server."""
    import fcntl

    state_dir.mkdir(parents=True, exist_ok=True)
    with (state_dir / "start.lock").open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def free_port_near(port: int) -> int:
    """`port` when nothing listens there, else a free port the system picks."""
    import socket

    if not _listening(port):
        return port
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def start_background(port: int | None = DEFAULT_PORT, *, master: str = "local[*]",
                     idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
                     conf: Mapping[str, str] | None = None,
                     state_dir: str | Path | None = None,
                     replace_other: bool = False) -> ServerStatus:
    """Start a server in the background (or return the running one) and wait until it accepts
    sessions — as long as its log grows; OffsetkeeperError when it exits or stalls, with the
    last line of its log. `port` None: DEFAULT_PORT, or any free port when that is taken.
    `replace_other`: a running server of another `identity` is stopped and replaced.
    Concurrent calls on one state directory start one server (`state_lock`)."""
    d = Path(state_dir) if state_dir else default_state_dir()
    with state_lock(d):
        current = server_status(d)
        if current.running and not (replace_other and current.identity != identity()):
            return current
        # another version's server, or one whose process lives but does not answer
        _stop(d, current)
        return _start(d, port, master, idle_timeout, conf)


def _start(d: Path, port: int | None, master: str, idle_timeout: float,
           conf: Mapping[str, str] | None) -> ServerStatus:
    import subprocess

    from offsetkeeper.errors import OffsetkeeperError, UsageError

    if port is None:
        port = free_port_near(DEFAULT_PORT)
    elif _listening(port):
        raise UsageError(f"port {port} on {HOST} is taken by another process; choose --port")
    (d / "state.json").unlink(missing_ok=True)
    out_path, log_path = d / "server.out", d / "server.log"
    cmd = [sys.executable, "-m", "offsetkeeper.spark.server", "--port", str(port),
           "--master", master, "--idle-timeout", str(idle_timeout)]
    for k, v in (conf or {}).items():
        cmd += ["--conf", f"{k}={v}"]
    # in its state directory: the server outlives the command's working directory
    with out_path.open("w") as out, log_path.open("w") as log:
        proc = subprocess.Popen(cmd, stdout=out, stderr=log, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=d)
    last, changed = -1, time.monotonic()
    while '"ready": true' not in out_path.read_text():
        if proc.poll() is not None:
            tail = [ln for ln in log_path.read_text().splitlines() if ln.strip()][-1:] or ["-"]
            raise OffsetkeeperError(f"the Spark Connect server exited with {proc.returncode} "
                                    f"before it was ready: {tail[0][:300]} (log: {log_path})")
        size = log_path.stat().st_size
        if size != last:
            last, changed = size, time.monotonic()
        elif time.monotonic() - changed > STALL_SECONDS:
            proc.terminate()
            raise OffsetkeeperError(f"the Spark Connect server made no progress for "
                                    f"{STALL_SECONDS:.0f} s; stopped it (log: {log_path})")
        time.sleep(0.3)
    url = f"sc://{HOST}:{port}"
    ident = identity()
    (d / "state.json").write_text(json.dumps({"pid": proc.pid, "port": port, "url": url,
                                              "master": master, "idle_timeout": idle_timeout,
                                              "identity": ident}))
    return ServerStatus(True, url, proc.pid, master, idle_timeout, str(d), str(log_path), ident,
                        started=True)


def stop_background(state_dir: str | Path | None = None) -> ServerStatus:
    """Stop the background server (SIGTERM, SIGKILL after 30 s) and forget it."""
    d = Path(state_dir) if state_dir else default_state_dir()
    with state_lock(d):
        st = server_status(d)
        _stop(d, st)
    return ServerStatus(False, st.url, st.pid, st.master, st.idle_timeout, str(d), st.log,
                        st.identity)


def _is_server(pid: int) -> bool:
    """Whether `pid` is still a server process (not another one that got its pid since)."""
    try:
        return b"offsetkeeper.spark.server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return pid_alive(pid)  # no /proc: trust the pid


def _stop(d: Path, st: ServerStatus) -> None:
    if st.pid is not None and pid_alive(st.pid) and _is_server(st.pid):
        os.kill(st.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while pid_alive(st.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if pid_alive(st.pid):
            os.kill(st.pid, signal.SIGKILL)
    (d / "state.json").unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> None:
    """Command line of the server process (see the module docstring)."""
    from offsetkeeper.spark.session import parse_conf_pairs

    p = argparse.ArgumentParser(prog="python -m offsetkeeper.spark.server")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--master", default="local[*]")
    p.add_argument("--idle-timeout", type=float, default=0.0)
    p.add_argument("--conf", action="append", default=[])
    a = p.parse_args(argv)
    serve(a.port, master=a.master, conf=parse_conf_pairs(a.conf), idle_timeout=a.idle_timeout)


if __name__ == "__main__":
    main()
