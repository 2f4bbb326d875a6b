"""Creating Spark sessions the way offsetkeeper needs them (local[*] by default)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

DEFAULT_MASTER = "local[*]"


def get_spark(master: str | None = None, conf: Mapping[str, str] | None = None, *, app_name: str = "offsetkeeper"):
    """Return a SparkSession for `master` with `conf` applied (imports pyspark lazily).

    Executors run the interpreter running this code, so they can import offsetkeeper.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

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
    if local is not None:
        defaults.update(small_local_conf(local))
        # without it Spark resolves the host name and scans the interfaces at every start
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    for k, v in {**defaults, **dict(conf or {})}.items():
        builder = builder.config(k, str(v))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


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
