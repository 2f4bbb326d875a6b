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
    if master is not None or not os.environ.get("PYSPARK_GATEWAY_PORT"):
        builder = builder.master(master or DEFAULT_MASTER)
    defaults = {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.driver.memory": "2g",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.parquet.compression.codec": "zstd",
    }
    for k, v in {**defaults, **dict(conf or {})}.items():
        builder = builder.config(k, str(v))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


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
