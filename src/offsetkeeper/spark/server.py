"""A local Spark Connect server, warm: the Spark session and its Python workers are started once
and every command that attaches to it (``--remote sc://127.0.0.1:PORT``) skips the session start.

Run as ``python -m offsetkeeper.spark.server --port P [--master local[*]] [--idle-timeout S]
[--conf K=V ...]``. It is a local classic session set up by `get_spark` (quick-start JVM,
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
