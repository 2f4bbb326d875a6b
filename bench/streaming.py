"""Benchmark: the streaming source (Trigger.AvailableNow) vs the batch source on the same topic.

    .venv/bin/python bench/streaming.py [--mb-per-partition 10] [--partitions 4]
                                        [--value-bytes 500] [--batches 8] [--repeat 2]
                                        [--bootstrap HOST:PORT] [--master local[2]]

Fills one topic, then in ONE Spark session (after a warm-up job) measures, best of --repeat,
alternating so that load changes on the machine hit both alike:
- batch: ``spark.read.format("offsetkeeper-kafka")`` of the whole topic into the ``noop`` sink
  (the yardstick);
- stream_one_batch: ``readStream`` with ``Trigger.AvailableNow`` into ``noop`` (one batch);
- stream_n_batches: the same with ``maxOffsetsPerTrigger`` = backlog / --batches.
Prints JSON: records/s of each, the streaming/batch ratio end to end (goal >= 0.8), the ratio
of the micro-batch alone (Spark's triggerExecution) to the batch job, the query's fixed
overhead outside batches (start of Spark's Python source runner, initial offsets, stop), and
the per-batch overhead ((n-batch time - one-batch time) / (n - 1)). The fixed overhead does not
depend on the backlog: pass a larger --mb-per-partition to see the end-to-end ratio approach
the in-batch one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid

from fill import fill_topic, workspace  # bench/ is on sys.path when run as a script


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb-per-partition", type=float, default=10)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--value-bytes", type=int, default=500)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--bootstrap", default=os.environ.get("OFFSETKEEPER_TEST_BOOTSTRAP"))
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()

    from offsetkeeper.spark.kafka import SOURCE_NAME, register
    from offsetkeeper.spark.session import get_spark

    with workspace("ok-bench-streaming-", args.bootstrap) as (tmp, bootstrap):
        topic = f"bench-stream-{uuid.uuid4().hex[:8]}"
        records, nbytes = fill_topic(bootstrap, topic, args.partitions, args.mb_per_partition,
                                     args.value_bytes)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        spark = get_spark(args.master)
        register(spark)

        def batch() -> float:
            t = time.perf_counter()
            (spark.read.format(SOURCE_NAME).option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic).load().write.format("noop").mode("overwrite").save())
            return time.perf_counter() - t

        def stream(max_offsets: int | None) -> tuple[float, int, dict]:
            r = (spark.readStream.format(SOURCE_NAME).option("kafka.bootstrap.servers", bootstrap)
                 .option("subscribe", topic).option("startingOffsets", "earliest"))
            if max_offsets:
                r = r.option("maxOffsetsPerTrigger", str(max_offsets))
            ck = tmp / f"ck-{uuid.uuid4().hex[:8]}"
            t = time.perf_counter()
            q = (r.load().writeStream.format("noop").option("checkpointLocation", str(ck))
                 .trigger(availableNow=True).start())
            q.awaitTermination()
            elapsed = time.perf_counter() - t
            rows = sum(p["numInputRows"] for p in q.recentProgress)
            assert rows == records, f"streaming read {rows} of {records} records"
            batches = [p for p in q.recentProgress if p["numInputRows"] > 0]
            in_batches = sum(p["durationMs"]["triggerExecution"] for p in batches) / 1000
            return elapsed, len(batches), {"in_batches_s": in_batches,
                                           "outside_batches_s": elapsed - in_batches}

        batch()  # warm-up: the first Python data source job pays 4-8 s once
        stream(None)
        per_batch = -(-records // args.batches)
        b, s1, sn, nb, split = [], [], [], 0, []
        for _ in range(args.repeat):
            b.append(batch())
            t, _, parts = stream(None)
            s1.append(t)
            split.append(parts)
            t, nb, _ = stream(per_batch)
            sn.append(t)
        best_b, best_s1, best_sn = min(b), min(s1), min(sn)
        in_batch = min(x["in_batches_s"] for x in split)
        fixed = min(x["outside_batches_s"] for x in split)
        out = {
            "records": records, "mb": round(nbytes / 1e6, 1), "partitions": args.partitions,
            "master": args.master, "repeat": args.repeat,
            "batch_s": round(best_b, 2), "batch_records_per_s": round(records / best_b),
            "stream_one_batch_s": round(best_s1, 2),
            "stream_records_per_s": round(records / best_s1),
            "ratio_stream_to_batch": round(best_b / best_s1, 3),
            # the micro-batch itself (Spark's triggerExecution) vs the batch source's job
            "stream_in_batch_records_per_s": round(records / in_batch),
            "ratio_in_batch_to_batch": round(best_b / in_batch, 3),
            # query start (Spark's Python source runner process, initial offsets) and stop
            "query_fixed_overhead_s": round(fixed, 2),
            "stream_n_batches": nb, "stream_n_batches_s": round(best_sn, 2),
            "stream_n_batches_records_per_s": round(records / best_sn),
            "per_batch_overhead_s": round((best_sn - best_s1) / max(1, nb - 1), 3),
            "all_runs_s": {"batch": [round(x, 2) for x in b], "stream_one": [round(x, 2) for x in s1],
                           "stream_n": [round(x, 2) for x in sn]},
            "goal": "ratio_stream_to_batch >= 0.8",
        }
        print(json.dumps(out, indent=2))
        spark.stop()


if __name__ == "__main__":
    main()
