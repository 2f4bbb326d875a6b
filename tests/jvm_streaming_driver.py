"""A query on Spark's JVM Kafka source with the commitToGroup listener, in its own driver process
(for tests that kill the driver).

    python jvm_streaming_driver.py BOOTSTRAP TOPIC CHECKPOINT OUT GROUP

Reads TOPIC with format("kafka") (1 s micro-batches, at most 300 offsets each) into a Parquet
file sink at OUT, committing each completed batch to GROUP (`commit_to_group`). Prints one JSON
line per finished batch (flushed), until killed.
"""

from __future__ import annotations

import json
import sys
import time

from offsetkeeper.spark.kafka.listener import commit_to_group
from offsetkeeper.spark.session import get_spark


def main() -> None:
    bootstrap, topic, checkpoint, out, group = sys.argv[1:6]
    spark = get_spark("local[2]", {"spark.sql.shuffle.partitions": "2"}, kafka_connector=True)
    df = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", topic).option("startingOffsets", "earliest")
          .option("maxOffsetsPerTrigger", "300").load()
          .select("partition", "offset", "timestamp", "value"))
    q = (df.writeStream.format("parquet").option("path", out)
         .option("checkpointLocation", checkpoint).trigger(processingTime="1 second").start())
    committer = commit_to_group(q, group, bootstrap=bootstrap)
    print(json.dumps({"event": "started"}), flush=True)
    seen = -1
    while q.isActive:
        time.sleep(0.5)
        for p in q.recentProgress:
            if p["batchId"] > seen:
                seen = p["batchId"]
                print(json.dumps({"event": "batch", "batch": seen, "rows": p["numInputRows"],
                                  "committed_batch": committer.committed_batch}), flush=True)
    committer.check()


if __name__ == "__main__":
    main()
