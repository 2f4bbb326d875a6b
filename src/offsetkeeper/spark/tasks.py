"""Running offsetkeeper's own Spark tasks (backup, restore, validation) on classic Spark and on
Spark Connect.

Each task takes one spec (a small JSON string) and returns picklable rows (summaries, or a
`TaskFailure`); `run_tasks` runs one Spark task per spec and returns every row. Two ways:

- ``dataframe``: ``spark.range(n, numPartitions=n).mapInArrow(...)`` — one row, so one spec, per
  partition; the rows come back pickled in a binary column. Works on classic sessions and on
  Spark Connect (which has no RDDs).
- ``rdd``: ``sparkContext.parallelize(specs, n).mapPartitions(...)`` — classic sessions only.

A classic session uses `CLASSIC_WAY` (the faster of the two on the same backup and restore,
measured by bench/spark_connect.py); a Connect session always uses ``dataframe``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

# bench/spark_connect.py (classic local[2], 2 x 4 MB, one run): the Spark job of a backup took
# 0.91x as long through mapInArrow as through RDDs (equal within the noise), a restore 1.83x: see bench/README.md
CLASSIC_WAY = "rdd"
_ROWS = "rows"


def is_connect(spark) -> bool:
    """Whether `spark` is a Spark Connect session (no SparkContext, no RDDs)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def run_tasks(spark, fn: Callable[[Iterator[str]], Iterator[Any]], specs: Sequence[str], *,
              way: str | None = None) -> list[Any]:
    """Run ``fn(iter([spec]))`` for every spec, one Spark task each; the rows of all tasks.

    `fn` must be picklable (a module-level function or a ``functools.partial`` of one) and its
    rows too. `way` (``rdd`` or ``dataframe``) is for benchmarks; the default picks as above.
    """
    specs = list(specs)
    if not specs:
        return []
    way = way or ("dataframe" if is_connect(spark) else CLASSIC_WAY)
    if way == "rdd":
        return spark.sparkContext.parallelize(specs, len(specs)).mapPartitions(fn).collect()
    if way != "dataframe":
        raise ValueError(f"way must be rdd or dataframe, not {way!r}")
    import pickle

    frame = spark.range(0, len(specs), 1, len(specs)).mapInArrow(
        _ArrowTask(fn, specs), f"{_ROWS} binary")
    return [row for r in frame.collect() for row in pickle.loads(r[_ROWS])]


class _ArrowTask:
    """The function mapInArrow runs: the spec numbers of its partition in, pickled rows out."""

    def __init__(self, fn: Callable[[Iterator[str]], Iterator[Any]], specs: list[str]) -> None:
        self.fn = fn
        self.specs = specs

    def __call__(self, batches):
        import pickle

        import pyarrow as pa

        for batch in batches:
            for i in batch.column(0).to_pylist():
                rows = list(self.fn(iter([self.specs[i]])))
                yield pa.RecordBatch.from_arrays(
                    [pa.array([pickle.dumps(rows)], pa.binary())], names=[_ROWS])


def task_slots(spark) -> int:
    """How many tasks the session runs at once: ``defaultParallelism`` of a classic session; on
    Spark Connect ``spark.default.parallelism`` when set, else the cores of a local master, else
    the partitions Spark gives a range by default (its default parallelism)."""
    if not is_connect(spark):
        return max(1, spark.sparkContext.defaultParallelism)
    from offsetkeeper.spark.session import connect_conf, local_cores

    settings = connect_conf(spark)
    conf = settings.get("spark.default.parallelism")
    if conf and str(conf).isdigit():
        return max(1, int(conf))
    master = settings.get("spark.master") or ""
    cores = local_cores(master) if master else None
    if cores is not None:
        return cores
    from pyspark.sql import functions as F

    # a range gets sparkContext.defaultParallelism partitions; count them (a tiny job)
    row = spark.range(0, 1 << 16).select(F.spark_partition_id().alias("p")).agg(
        F.countDistinct("p").alias("n")).collect()[0]
    return max(1, int(row["n"]))
