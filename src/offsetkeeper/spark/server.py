"""A local Spark Connect server, warm: the Spark session and its Python workers are started once
and every command that attaches to it (``--remote sc://127.0.0.1:PORT``) skips the session start.

Run as ``python -m offsetkeeper.spark.server --port P [--master local[*]] [--idle-timeout S]
[--conf K=V ...]``, or in the background with ``offsetkeeper spark-server start|status|stop``
(`start_background`, `server_status`, `stop_background`: a state file and the server's log in
a state directory). It is a local classic session set up by `get_spark` (quick-start JVM,
class-data sharing, Python workers started) with Spark's Connect plugin listening on
127.0.0.1:P (the ``spark-connect`` jar ships in pyspark). It prints one JSON line,
``{"ready": true, "url": ..., "pid": ..., "seconds": ...}``, when it accepts sessions, and stops
after `idle_timeout` seconds without a Spark job (0: never) or on SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
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
    spark = get_spark(master, server_conf(port, conf), app_name="offsetkeeper spark-server")
    out.write(json.dumps({"ready": True, "url": f"sc://{HOST}:{port}", "pid": os.getpid(),
                          "seconds": round(time.monotonic() - t0, 2)}) + "\n")
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

    def to_dict(self) -> dict:
        return asdict(self)


def default_state_dir() -> Path:
    """~/.local/share/offsetkeeper/spark-server (the platform's user data directory)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("offsetkeeper")) / "spark-server"



def _listening(port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex((HOST, port)) == 0


def server_status(state_dir: str | Path | None = None) -> ServerStatus:
    """Whether the background server of `state_dir` runs (its process is alive and its port
    answers), with its URL."""
    d = Path(state_dir) if state_dir else default_state_dir()
    log = str(d / "server.log")
    try:
        st = json.loads((d / "state.json").read_text())
    except (OSError, ValueError):
        return ServerStatus(False, state_dir=str(d), log=log)
    running = pid_alive(int(st["pid"])) and _listening(int(st["port"]))
    return ServerStatus(running, st["url"], int(st["pid"]), st.get("master"),
                        st.get("idle_timeout"), str(d), log)


def start_background(port: int = DEFAULT_PORT, *, master: str = "local[*]",
                     idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
                     conf: Mapping[str, str] | None = None,
                     state_dir: str | Path | None = None) -> ServerStatus:
    """Start a server in the background (or return the running one) and wait until it accepts
    sessions — as long as its log grows; OffsetkeeperError when it exits or stalls, with the
    last line of its log."""
    import subprocess

    from offsetkeeper.errors import OffsetkeeperError, UsageError

    d = Path(state_dir) if state_dir else default_state_dir()
    current = server_status(d)
    if current.running:
        return current
    if _listening(port):
        raise UsageError(f"port {port} on {HOST} is taken by another process; choose --port")
    d.mkdir(parents=True, exist_ok=True)
    out_path, log_path = d / "server.out", d / "server.log"
    cmd = [sys.executable, "-m", "offsetkeeper.spark.server", "--port", str(port),
           "--master", master, "--idle-timeout", str(idle_timeout)]
    for k, v in (conf or {}).items():
        cmd += ["--conf", f"{k}={v}"]
    with out_path.open("w") as out, log_path.open("w") as log:
        proc = subprocess.Popen(cmd, stdout=out, stderr=log, stdin=subprocess.DEVNULL,
                                start_new_session=True)
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
    (d / "state.json").write_text(json.dumps({"pid": proc.pid, "port": port, "url": url,
                                              "master": master, "idle_timeout": idle_timeout}))
    return ServerStatus(True, url, proc.pid, master, idle_timeout, str(d), str(log_path))


def stop_background(state_dir: str | Path | None = None) -> ServerStatus:
    """Stop the background server (SIGTERM, SIGKILL after 30 s) and forget it."""
    d = Path(state_dir) if state_dir else default_state_dir()
    st = server_status(d)
    if st.pid is not None and pid_alive(st.pid):
        os.kill(st.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while pid_alive(st.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if pid_alive(st.pid):
            os.kill(st.pid, signal.SIGKILL)
    (d / "state.json").unlink(missing_ok=True)
    return ServerStatus(False, st.url, st.pid, st.master, st.idle_timeout, str(d), st.log)


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
