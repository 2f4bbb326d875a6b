"""Benchmark: decoding `__consumer_offsets` commit records on Spark vs a per-record Python loop.

    .venv/bin/python bench/offsetlog_decode.py [--records 2000000] [--files 16] [--master local[*]]
                                               [--repeat 2] [--no-spark-per-record]

The records are generated directly into Parquet (key, value, partition, offset, timestamp —
the columns the Kafka data source gives) with the offsetlog encoder, not produced through the
broker: 2M records through the development broker would measure the broker. Mix: key v1;
values 40% v3, 40% v4 (flexible), 20% v1 (with expire timestamp); metadata empty or short;
3,000 groups x 20 topics x 12 partitions.

Measured, on the same files in the same run:
- python_loop: `decode_record(key, value)` for every record, one after another (the yardstick;
  reading the files into Python bytes is not counted against it);
- arrow_in_process: the vectorised batch decoder alone on the same files, one thread, no Spark;
- spark_decode: read the Parquet, decode in `mapInArrow` (vectorised Arrow batches), into
  Spark's `noop` sink — decoding only; best of --repeat after one warm-up run;
- spark_scan: the same plus writing the commit-history tables (`write_history`), as
  `commits scan` does;
- spark_per_record: like spark_decode but every record through `decode_record` inside the Arrow
  function, to show what the vectorised path buys.
Prints JSON with records/s and ratios to python_loop. Target: spark_decode >= 3x python_loop.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from offsetkeeper.offsetlog.encode import encode_key, encode_value
from offsetkeeper.offsetlog.records import OffsetCommitKey, OffsetCommitValue


def generate(path: str, records: int, files: int) -> None:
    rng = np.random.default_rng(7)
    per = records // files
    t0 = 1_795_165_200_000
    for f in range(files):
        keys, values = [], []
        for i in range(per):
            n = f * per + i
            g, t, p = rng.integers(3000), rng.integers(20), rng.integers(12)
            keys.append(encode_key(OffsetCommitKey(f"consumer-group-{g}", f"topic-{t}", int(p), 1)))
            r = n % 5
            version = 3 if r < 2 else 4 if r < 4 else 1
            meta = "" if n % 3 else f"m{n % 97}"
            values.append(encode_value(OffsetCommitValue(
                n, meta, t0 + n, 7 if version >= 3 else -1,
                t0 + n + 86_400_000 if version == 1 else -1, version)))
        table = pa.table({
            "key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary()),
            "partition": pa.array(np.full(per, f % 50, np.int32)),
            "offset": pa.array(np.arange(f * per, (f + 1) * per, dtype=np.int64)),
            "timestamp": pa.array(np.arange(per, dtype=np.int64) + t0)})
        pq.write_table(table, f"{path}/part-{f:03d}.parquet", compression="zstd")


def read_pairs(path: str) -> list[tuple[bytes, bytes]]:
    pairs: list[tuple[bytes, bytes]] = []
    for f in sorted(os.listdir(path)):
        t = pq.read_table(f"{path}/{f}", columns=["key", "value"])
        pairs.extend(zip(t.column("key").to_pylist(), t.column("value").to_pylist(), strict=True))
    return pairs


def python_loop(pairs) -> tuple[float, int]:
    from offsetkeeper.offsetlog.decode import decode_record

    started = time.perf_counter()
    commits = 0
    for k, v in pairs:
        if decode_record(k, v).kind == "offset_commit":
            commits += 1
    return time.perf_counter() - started, commits


def arrow_in_process(path: str) -> float:
    """The vectorised batch decoder alone, one thread, no Spark (batches of 10,000 as Spark's)."""
    from offsetkeeper.offsetlog.batch import decode_batch

    names = ["key", "value", "source_partition", "source_offset", "record_timestamp"]
    tables = [pq.read_table(f"{path}/{f}").rename_columns(names) for f in sorted(os.listdir(path))]
    started = time.perf_counter()
    for t in tables:
        for b in t.to_batches(10_000):
            for _ in decode_batch(b):
                pass
    return time.perf_counter() - started


def _per_record(batches):
    from offsetkeeper.offsetlog.batch import decode_batch

    for b in batches:
        yield from decode_batch(b, vectorised=False)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-spark-per-record", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    from offsetkeeper.offsetlog.arrow_map import map_in_arrow
    from offsetkeeper.offsetlog.batch import decoded_schema
    from offsetkeeper.offsetlog.scan import decode_frame, write_history
    from offsetkeeper.spark.session import get_spark

    with tempfile.TemporaryDirectory(prefix="offsetlog-bench-") as work:
        data = f"{work}/records"
        os.makedirs(data)
        t = time.perf_counter()
        generate(data, args.records, args.files)
        gen_s = time.perf_counter() - t
        records = (args.records // args.files) * args.files

        t = time.perf_counter()
        pairs = read_pairs(data)
        read_s = time.perf_counter() - t

        spark = get_spark(args.master, app_name="offsetlog-bench")
        df = spark.read.parquet(data)

        def timed(fn) -> tuple[float, float]:
            t = time.perf_counter()
            fn()
            first = time.perf_counter() - t
            best = float("inf")
            for _ in range(args.repeat):
                t = time.perf_counter()
                fn()
                best = min(best, time.perf_counter() - t)
            return first, best

        def decode_only():
            decode_frame(df).write.format("noop").mode("overwrite").save()

        n = decode_frame(df).where("kind = 'offset_commit'").count()
        dec_first, dec_best = timed(decode_only)
        # The yardstick and the in-process decoder interleaved with Spark runs, best of each:
        # other load on the machine then hits both alike.
        py_s, arrow_s = float("inf"), float("inf")
        for _ in range(args.repeat):
            s, py_commits = python_loop(pairs)
            py_s = min(py_s, s)
            arrow_s = min(arrow_s, arrow_in_process(data))
            t = time.perf_counter()
            decode_only()
            dec_best = min(dec_best, time.perf_counter() - t)
        assert n == py_commits == records, (n, py_commits, records)
        scan_first, scan_best = timed(lambda: write_history(decode_frame(df), f"{work}/history"))
        result = {
            "records": records, "generate_s": round(gen_s, 1), "master": args.master,
            "python_loop": {"s": round(py_s, 2), "records_per_s": round(records / py_s),
                            "reading_the_files_not_counted_s": round(read_s, 2)},
            "arrow_in_process": {"s": round(arrow_s, 2), "records_per_s": round(records / arrow_s)},
            "spark_decode": {"first_s": round(dec_first, 2), "best_s": round(dec_best, 2),
                             "records_per_s": round(records / dec_best)},
            "spark_scan": {"first_s": round(scan_first, 2), "best_s": round(scan_best, 2),
                           "records_per_s": round(records / scan_best)},
        }
        if not args.no_spark_per_record:
            cols = df.select("key", "value", df["partition"].alias("source_partition"),
                             df["offset"].alias("source_offset"), df["timestamp"].alias("record_timestamp"))
            t = time.perf_counter()
            map_in_arrow(cols, _per_record, decoded_schema()).write.format("noop").mode("overwrite").save()
            s = time.perf_counter() - t
            result["spark_per_record"] = {"s": round(s, 2), "records_per_s": round(records / s)}
        result["ratio_spark_decode_vs_python"] = round(py_s / dec_best, 2)
        result["ratio_arrow_in_process_vs_python"] = round(py_s / arrow_s, 2)
        result["load_average_1m"] = os.getloadavg()[0]
        result["ratio_spark_scan_vs_python"] = round(py_s / scan_best, 2)
        if "spark_per_record" in result:
            result["ratio_spark_per_record_vs_python"] = round(py_s / result["spark_per_record"]["s"], 2)
        result["target"] = "spark_decode >= 3x python_loop"
        print(json.dumps(result, indent=2))
        spark.stop()


if __name__ == "__main__":
    main()
