"""Histories too large for one process: export the samples as Parquet partitioned by day, and
compute the daily report on Spark.

Export layout (Hive-style, readable by Spark, pyarrow, DuckDB ...):

    DIR/day=YYYY-MM-DD/samples.parquet      (zstd; one file per day, replaced atomically)

Columns: ts (ms), time (timestamp UTC), group, topic, partition, committed, log_start, log_end,
lag, time_lag_s (exact, else interpolated, 0 when caught up), time_lag_ms, time_lag_interp_ms,
state, members, lag_raw (log end - committed), lso, open_txn_since (ms; transactions: lag is what
a read_committed consumer still has to read, see docs/history.md).

Report, per group and day: p50/p99/max of the group's lag (summed over its partitions at each
sample time) and of its time lag (the max over partitions at each sample time), the commit rate
(records/s the committed offsets advanced, summed over partitions) and REWIND events (a
partition's committed offset went back between two samples).
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from offsetkeeper.errors import OffsetkeeperError, UsageError
from offsetkeeper.history.model import Sample
from offsetkeeper.storage import join, write_bytes_atomic

REPORT_COLUMNS = ["group", "day", "samples", "lag_p50", "lag_p99", "lag_max", "time_lag_p50_s",
                  "time_lag_p99_s", "time_lag_max_s", "commit_rate", "rewinds"]


@dataclass(frozen=True)
class ExportResult:
    days: tuple[str, ...]
    rows: int
    files: tuple[str, ...]


def _day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


def _table(samples: Sequence[Sample]):
    import pyarrow as pa

    cols = {
        "ts": pa.array([s.ts for s in samples], pa.int64()),
        "time": pa.array([s.ts for s in samples], pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
        "group": pa.array([s.group for s in samples], pa.string()),
        "topic": pa.array([s.topic for s in samples], pa.string()),
        "partition": pa.array([s.partition for s in samples], pa.int32()),
        "committed": pa.array([s.committed for s in samples], pa.int64()),
        "log_start": pa.array([s.log_start for s in samples], pa.int64()),
        "log_end": pa.array([s.log_end for s in samples], pa.int64()),
        "lag": pa.array([s.lag for s in samples], pa.int64()),
        "time_lag_s": pa.array([s.time_lag_s for s in samples], pa.float64()),
        "time_lag_ms": pa.array([s.time_lag_ms for s in samples], pa.int64()),
        "time_lag_interp_ms": pa.array([s.time_lag_interp_ms for s in samples], pa.int64()),
        "state": pa.array([s.state for s in samples], pa.string()),
        "members": pa.array([s.members for s in samples], pa.int32()),
        "lag_raw": pa.array([s.lag_raw for s in samples], pa.int64()),
        "lso": pa.array([s.lso for s in samples], pa.int64()),
        "open_txn_since": pa.array([s.open_txn_since for s in samples], pa.int64()),
    }
    return pa.table(cols)


def export_parquet(store, dest: str, *, since: int | None = None, until: int | None = None,
                   groups: Sequence[str] = ()) -> ExportResult:
    """Write the samples in [since, until] as Parquet, one file per day (atomically)."""
    import pyarrow.parquet as pq

    names = list(groups) or [g.group for g in store.groups()]
    by_day: dict[str, list[Sample]] = defaultdict(list)
    for g in names:
        for s in store.series(g, since=since, until=until):
            by_day[_day(s.ts)].append(s)
    if not by_day:
        raise UsageError(f"history store {store.display_url} has no samples to export in that range")
    files = []
    for day in sorted(by_day):
        buf = io.BytesIO()
        pq.write_table(_table(by_day[day]), buf, compression="zstd")
        files.append(write_bytes_atomic(join(dest, f"day={day}", "samples.parquet"), buf.getvalue(),
                                        what="history export"))
    return ExportResult(tuple(sorted(by_day)), sum(len(v) for v in by_day.values()), tuple(files))


def daily_report(spark, src: str) -> list[dict]:
    """Per group and day: lag and time-lag percentiles, commit rate, REWIND events (on Spark).

    A UsageError (exit 2) when Spark's analysis rejects `src` (no such path, no Parquet there,
    not the columns `export_parquet` writes); an OffsetkeeperError (exit 1) naming the error
    when the job itself fails (executors lost, out of memory, storage unreadable ...)."""
    try:
        return _daily_report(spark, src)
    except Exception as exc:
        raise report_failure(exc, src) from exc


def report_failure(exc: Exception, src: str) -> OffsetkeeperError:
    """The error the report raises for a Spark failure: bad input or a failed operation."""
    from pyspark.errors import AnalysisException

    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    if isinstance(exc, AnalysisException):
        return UsageError(f"history report: {src} holds no exported history ({first or 'analysis failed'})")
    return OffsetkeeperError(f"history report: the Spark job failed: {type(exc).__name__}"
                             + (f": {first}" if first else ""))


def _daily_report(spark, src: str) -> list[dict]:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = spark.read.parquet(src)
    df = df.withColumn("day", F.col("day").cast("string"))
    per_ts = (df.groupBy("group", "day", "ts")
              .agg(F.sum("lag").alias("lag"), F.max("time_lag_s").alias("time_lag_s")))
    lags = (per_ts.groupBy("group", "day").agg(
        F.count("*").alias("samples"),
        F.percentile_approx("lag", 0.5).alias("lag_p50"),
        F.percentile_approx("lag", 0.99).alias("lag_p99"),
        F.max("lag").alias("lag_max"),
        F.percentile_approx("time_lag_s", 0.5).alias("time_lag_p50_s"),
        F.percentile_approx("time_lag_s", 0.99).alias("time_lag_p99_s"),
        F.max("time_lag_s").alias("time_lag_max_s"),
        ((F.max("ts") - F.min("ts")) / 1000.0).alias("span_s")))
    w = Window.partitionBy("group", "topic", "partition").orderBy("ts")
    deltas = (df.withColumn("delta", F.col("committed") - F.lag("committed").over(w))
              .groupBy("group", "day").agg(
                  F.sum(F.when(F.col("delta") > 0, F.col("delta")).otherwise(0)).alias("advanced"),
                  F.sum(F.when(F.col("delta") < 0, 1).otherwise(0)).alias("rewinds")))
    out = (lags.join(deltas, ["group", "day"], "left")
           .withColumn("commit_rate", F.when(F.col("span_s") > 0, F.col("advanced") / F.col("span_s"))
                       .otherwise(F.lit(0.0)))
           .orderBy("group", "day"))
    rows = []
    for r in out.collect():
        d = r.asDict()
        rows.append({k: (round(d[k], 3) if isinstance(d[k], float) else d[k]) for k in REPORT_COLUMNS}
                    | {"rewinds": int(d["rewinds"] or 0)})
    return rows
