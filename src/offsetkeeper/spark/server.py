"""A local Spark Connect server, warm: the Spark session and its Python workers are started once
and every command that attaches to it (``--remote sc://localhost:PORT`` with its token) skips
the session start.

Run as ``SPARK_CONNECT_AUTHENTICATE_TOKEN=T python -m offsetkeeper.spark.server --port P
[--master local[*]] [--idle-timeout S] [--conf K=V ...]`` — it refuses to start without a token,
since it runs any job a session sends as the user who started it — or in the background with
``offsetkeeper spark-server start|status|stop`` (`offsetkeeper.spark.background`: a state file,
the token file and the server's log in a state directory), or by the data commands on first use
(`offsetkeeper.spark.warm`). It is a local classic session set up by `get_spark` (quick-start
JVM, class-data sharing) with Spark's Connect plugin listening on 127.0.0.1:P (the
``spark-connect`` jar ships in pyspark); Spark Connect's pre-shared key authentication, which
reads the token from the environment, refuses sessions without it. Before it reports ready it
runs one tiny job of offsetkeeper's task path through a Connect session of its own (`warm_up`):
the Python workers Connect sessions use (not the classic session's), their imports, Arrow and
the planner are then warm, and the first command's job is as fast as the later ones (measured
in bench/README.md). It prints one JSON line, ``{"ready": true, "url": ..., "pid": ...,
"seconds": ..., "warm_up_seconds": ...}``, when it accepts sessions, and stops after
`idle_timeout` seconds without a Spark job (0: never) or on SIGTERM/SIGINT.

A state directory belongs to one server at a time: `start_background` holds its lock
(``start.lock``) from the check to the state file, so commands starting it at the same moment
start one server (the others wait and attach), and the warm path replaces a server of another
offsetkeeper, pyspark or Python (`identity`) rather than use it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Mapping

# the state directory's side (start, status, stop), re-exported: the CLI and ops import it here
from offsetkeeper.spark.background import (  # noqa: F401
    CLIENT_HOST,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_PORT,
    HOST,
    STATE_DIR_ENV,
    TOKEN_ENV,
    ServerStatus,
    default_state_dir,
    identity,
    server_status,
    start_background,
    state_lock,
    stop_background,
)

PLUGIN = "org.apache.spark.sql.connect.SparkConnectPlugin"


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
    # `localhost`: the client sends the token (from TOKEN_ENV, as the server reads it) there only
    url = f"sc://{CLIENT_HOST}:{port}"
    warm_up(url, spark.sparkContext.defaultParallelism)
    out.write(json.dumps({"ready": True, "url": url, "pid": os.getpid(),
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


def main(argv: list[str] | None = None) -> None:
    """Command line of the server process (see the module docstring)."""
    from offsetkeeper.spark.session import parse_conf_pairs

    p = argparse.ArgumentParser(prog="python -m offsetkeeper.spark.server")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--master", default="local[*]")
    p.add_argument("--idle-timeout", type=float, default=0.0)
    p.add_argument("--conf", action="append", default=[])
    a = p.parse_args(argv)
    if not os.environ.get(TOKEN_ENV, "").strip():
        p.error(f"{TOKEN_ENV} is not set: the server takes no session without a token")
    serve(a.port, master=a.master, conf=parse_conf_pairs(a.conf), idle_timeout=a.idle_timeout)


if __name__ == "__main__":
    main()
