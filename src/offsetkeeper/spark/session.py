"""Creating Spark sessions the way offsetkeeper needs them (local[*] by default).

A local session is set up for offsetkeeper's jobs, which do their work in Python tasks (plain RDD
tasks and Python data sources) and leave little to the JVM: one shuffle partition per core, the
driver on the loopback address, no UI, and a JVM that starts with the quick (C1) JIT compiler
only (`QUICK_START_JAVA_OPTIONS`: half the CPU of a session start, measured in bench/README.md)
and maps Spark's classes from a class-data-sharing archive (`offsetkeeper.spark.cds`: half
again). Then Spark's Python workers are started — one per task slot, each having imported the task
modules — so the first job does not pay for them; `get_spark(..., timings=d)` says how long each
part took (reported as session start, apart from the job).

A master ``sc://HOST:PORT`` (``--remote``, ``SPARK_REMOTE``, ``spark.remote``) is a Spark
Connect server instead: `get_spark` returns a Connect session (``pyspark-client`` is enough),
checked with one round trip, and sets nothing on the server (its jobs run in its own JVM and
Python workers, which must be able to import offsetkeeper).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Mapping

from offsetkeeper.spark import connector

DEFAULT_MASTER = "local[*]"

# The driver JVM of a local session is also its executor; offsetkeeper's tasks run in Python, so
# the JVM's hot code is short-lived (scheduling, results) and the optimising C2 compiler costs
# more CPU at start than it ever pays back. Options the user gives in
# spark.driver.extraJavaOptions come after these and win (-XX:TieredStopAtLevel=4 = the default).
QUICK_START_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"

# What the backup and restore tasks import: a started worker has done it once. A module with a
# ``warm_up()`` function has it called too (to run its code once, for lazy imports and set-up).
WORKER_IMPORTS = (
    "pyarrow", "pyarrow.parquet", "numpy", "confluent_kafka", "fsspec",
    "offsetkeeper.spark.task_failure", "offsetkeeper.backup.task",
)

REMOTE_PREFIX = "sc://"


def is_remote(master: str | None) -> bool:
    """Whether `master` names a Spark Connect server (``sc://HOST:PORT``)."""
    return bool(master) and master.strip().startswith(REMOTE_PREFIX)


def spark_location(master: str | None = None, remote: str | None = None) -> str | None:
    """The one place a job runs, from ``--master`` and ``--remote`` (either, not both); a bad
    Connect URL is a UsageError. None: `get_spark`'s default (SPARK_REMOTE, else local[*])."""
    from offsetkeeper.errors import UsageError

    if remote is not None:
        remote = remote.strip()
        if not remote.startswith(REMOTE_PREFIX) or len(remote) <= len(REMOTE_PREFIX):
            raise UsageError(f"--remote '{remote}' is not a Spark Connect URL; expected "
                             "sc://HOST:PORT, e.g. sc://localhost:15002")
        if master is not None and master != remote:
            raise UsageError(f"--master '{master}' and --remote '{hide_token(remote)}' both name "
                             "where Spark runs; give one")
    return remote or master


def get_spark(master: str | None = None, conf: Mapping[str, str] | None = None, *,
              app_name: str = "offsetkeeper", start_workers: bool | None = None,
              timings: dict[str, float] | None = None, kafka_connector: bool | None = None,
              warm: bool = False):
    """Return a SparkSession for `master` with `conf` applied (imports pyspark lazily).

    Executors run the interpreter running this code, so they can import offsetkeeper.
    `start_workers` (default: for local masters) starts Spark's Python workers, one per task
    slot, before returning (`start_python_workers`); an existing session is returned as is.
    `timings`, when given, gets the seconds of a session this call started: ``jvm`` (the session)
    and ``python_workers`` (when they were started); nothing when it reused a session.
    `kafka_connector` (default: ``OFFSETKEEPER_SPARK_KAFKA_CONNECTOR``) adds Spark's own Kafka
    connector to ``spark.jars`` (`offsetkeeper.spark.connector`; ConfigError when not installed).

    `master` ``sc://HOST:PORT`` — or, when no master is given, the ``SPARK_REMOTE`` environment
    variable — returns a Spark Connect session instead (`connect_session`).

    `warm` (what the data commands pass): when no master is given by any of those, nor by
    spark-submit, and this process has no Spark session yet, a Connect session on the user's
    warm local server, started on first use (`offsetkeeper.spark.warm`; timings ``server``
    when this call started it, ``connect``); when that server cannot be used, one line on
    stderr and a session in this process.
    """
    if master is None and not os.environ.get("PYSPARK_GATEWAY_PORT") and is_remote(
            os.environ.get("SPARK_REMOTE")):
        master = os.environ["SPARK_REMOTE"]
    if is_remote(master):
        return connect_session(master, conf, timings=timings)
    if master is None and warm and not os.environ.get("PYSPARK_GATEWAY_PORT"):
        spark = _warm_session(conf, kafka_connector, timings)
        if spark is not None:
            return spark
    # an explicit master wins over SPARK_REMOTE (pyspark refuses to be given both)
    if master is not None:
        os.environ.pop("SPARK_REMOTE", None)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    t0 = time.monotonic()
    existing = SparkContext._active_spark_context is not None
    builder = SparkSession.builder.appName(app_name)
    # Under spark-submit (the JVM started this interpreter) the master comes from spark-submit.
    local = None
    if master is not None or not os.environ.get("PYSPARK_GATEWAY_PORT"):
        builder = builder.master(master or DEFAULT_MASTER)
        local = local_cores(master or DEFAULT_MASTER)
    defaults = {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.driver.memory": "2g",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.parquet.compression.codec": "zstd",
        # one Python worker per core serves every task of a job and the next jobs
        "spark.python.worker.reuse": "true",
    }
    settings = {**defaults, **dict(conf or {})}
    if local is not None:
        settings = {**defaults, **small_local_conf(local), **dict(conf or {})}
        settings["spark.driver.extraJavaOptions"] = java_options(
            (conf or {}).get("spark.driver.extraJavaOptions"))
        # without it Spark resolves the host name and scans the interfaces at every start
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if kafka_connector if kafka_connector is not None else connector.wanted():
        settings.update(connector.jars_conf(settings.get("spark.jars")))
    for k, v in settings.items():
        builder = builder.config(k, str(v))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    t1 = time.monotonic()
    if existing:
        return spark
    started = {"jvm": t1 - t0}
    if start_workers if start_workers is not None else local is not None:
        started["python_workers"] = start_python_workers(spark)
    if timings is not None:
        timings.update(started)
    return spark


def _warm_session(conf: Mapping[str, str] | None, kafka_connector: bool | None,
                  timings: dict[str, float] | None):
    """A session on the warm server (see `get_spark`), or None: run in this process."""
    from offsetkeeper.errors import OffsetkeeperError
    from offsetkeeper.spark import warm

    if not warm.enabled():
        return None
    pyspark = sys.modules.get("pyspark")
    if pyspark is not None and pyspark.SparkContext._active_spark_context is not None:
        return None  # this process already has its Spark (a notebook, a test, a library caller)
    reason = warm.why_not(conf, kafka_connector if kafka_connector is not None
                          else connector.wanted())
    if reason is None:
        t0 = time.monotonic()
        parts: dict[str, float] = {}
        try:
            url, token = warm.warm_server(parts)
            spark = connect_session(url, timings=parts, token=token)
            # the client's imports, the server check and the session: all but the server start
            parts["connect"] = time.monotonic() - t0 - parts.get("server", 0.0)
        except (warm.WarmUnavailable, OffsetkeeperError) as exc:
            reason = str(exc)
            # a failed Connect attempt leaves pyspark in Connect mode: the local session needs
            # the classic builder
            os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
        else:
            if timings is not None:
                timings.update(parts)
            return spark
    warm.note_fallback(reason)
    return None


def connect_session(url: str, conf: Mapping[str, str] | None = None, *,
                    timings: dict[str, float] | None = None, token: str | None = None):
    """A Spark Connect session on the server at `url` (``sc://HOST:PORT``), checked with one
    round trip: an unreachable server is one sentence (OffsetkeeperError), not a gRPC trace;
    missing client libraries a UsageError naming the extra to install.
    `conf` is applied as session settings (runtime SQL settings only, as Connect allows).
    `token`: the server's token (sent as pyspark sends it: with TLS, or to ``localhost``),
    never shown — nor a ``token=`` of `url` itself."""
    from offsetkeeper.errors import OffsetkeeperError, UsageError
    from offsetkeeper.spark.background import client_url

    t0 = time.monotonic()
    shown = hide_token(url, token)
    _check_listening(url, shown)
    try:
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.remote(client_url(url.strip(), token))
        for k, v in (conf or {}).items():
            builder = builder.config(k, str(v))
        spark = builder.getOrCreate()
        connect_conf(spark)  # the round trip that proves the server answers
    except ImportError as exc:
        raise UsageError(f"Spark Connect needs its client libraries ({exc}); install them with "
                         "pip install 'offsetkeeper[spark-connect]'") from None
    except Exception as exc:
        from offsetkeeper.spark.task_failure import one_line

        raise OffsetkeeperError(f"cannot use the Spark Connect server {shown}: "
                                f"{hide_token(one_line(exc), token)}") from None
    if timings is not None:
        timings["connect"] = time.monotonic() - t0
    return spark


def hide_token(text: str, token: str | None = None) -> str:
    """`text` (a Connect URL, an error) with `token` and any ``token=`` parameter masked."""
    import re

    if token:
        text = text.replace(token, "***")
    return re.sub(r"(?i)(;\s*token\s*=)[^;]*", r"\1***", text)


def connect_conf(spark) -> dict[str, str]:
    """The settings of a Connect session (``spark.master``, ...), asked once (one round trip)
    and kept on the session: each ``spark.conf.get`` is a round trip of its own."""
    cached = getattr(spark, "_offsetkeeper_conf", None)
    if cached is not None:
        return cached
    try:
        got = dict(spark.conf.getAll)
    except AttributeError:  # a client without getAll
        got = {k: v for k in ("spark.master", "spark.default.parallelism")
               if (v := spark.conf.get(k, None)) is not None}
    with contextlib.suppress(AttributeError):
        spark._offsetkeeper_conf = got
    return got


def _check_listening(url: str, shown: str, timeout: float = 10.0) -> None:
    """Refuse at once a Connect URL where nothing listens (the gRPC client would retry for
    minutes before it says so); `shown` is the URL as errors name it."""
    import socket
    from urllib.parse import urlsplit

    from offsetkeeper.errors import OffsetkeeperError

    try:
        parts = urlsplit(url.strip().split(";", 1)[0].replace("sc://", "http://", 1))
        host, port = parts.hostname or "localhost", parts.port or 15002
    except ValueError as exc:
        raise OffsetkeeperError(f"cannot use the Spark Connect server {shown}: {exc}") from None
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        raise OffsetkeeperError(f"cannot use the Spark Connect server {shown}: nothing answers on "
                                f"{host}:{port} ({exc.strerror or exc})") from None


def java_options(user: str | None, *, class_data_sharing: bool = True) -> str:
    """The driver JVM options of a local session: the quick-start ones, the class-data-sharing
    archive's (`offsetkeeper.spark.cds`), then the user's."""
    user = (user or "").strip()
    cds = ""
    if class_data_sharing:
        from offsetkeeper.spark.cds import java_options as cds_options

        cds = cds_options(QUICK_START_JAVA_OPTIONS, user)
    return " ".join(x for x in (QUICK_START_JAVA_OPTIONS, cds, user) if x)


def _warm_worker(_it):
    """A task of `start_python_workers`: import what the real tasks import (and warm up)."""
    import contextlib
    import importlib

    for name in WORKER_IMPORTS:
        # a head start only: the job that needs a module reports its failure, in context
        with contextlib.suppress(Exception):
            warm = getattr(importlib.import_module(name), "warm_up", None)
            if warm is not None:
                warm()
    time.sleep(0.05)  # hold the slot, so that every task gets a worker of its own
    yield os.getpid()


def start_python_workers(spark) -> float:
    """Start Spark's Python workers (one per task slot, kept for the next jobs by
    ``spark.python.worker.reuse``) by running a job of one tiny task per slot; returns seconds.

    The first Python job of a session otherwise pays for the workers' start and their imports
    of pyarrow, numpy, confluent-kafka and the task modules (1–2 s here, more under load).
    """
    t = time.monotonic()
    sc = spark.sparkContext
    n = max(1, sc.defaultParallelism)
    try:
        sc.parallelize(range(n), n).mapPartitions(_warm_worker).collect()
    except Exception as exc:  # a head start only: the real job reports failures, in context
        logging.getLogger("offsetkeeper.spark").debug("starting the Python workers failed: %s", exc)
    return time.monotonic() - t


def local_cores(master: str) -> int | None:
    """The cores of a ``local``, ``local[N]`` or ``local[*]`` master; None for a cluster."""
    import re

    m = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", master.strip())
    if m is None:
        return None
    n = m.group(1)
    if n is None:
        return 1
    return os.cpu_count() or 1 if n == "*" else max(1, int(n))


def small_local_conf(cores: int) -> dict[str, str]:
    """Settings for offsetkeeper's local jobs: few, small shuffles (one partition per core,
    not Spark's 200 or a cluster's 8), the driver on the loopback address, no extra
    scheduling delay for data locality (every task reads Kafka or files, never HDFS blocks)."""
    return {
        "spark.sql.shuffle.partitions": str(max(1, min(cores, 8))),
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.locality.wait": "0s",
    }


def parse_conf_pairs(pairs: list[str] | None) -> dict[str, str]:
    """Parse repeated `--conf k=v` values."""
    from offsetkeeper.errors import UsageError

    out: dict[str, str] = {}
    for p in pairs or []:
        if "=" not in p or not p.split("=", 1)[0].strip():
            raise UsageError(f"--conf '{p}' is not key=value")
        k, v = p.split("=", 1)
        out[k.strip()] = v
    return out
