"""A streaming query in its own driver process (for tests that kill the driver).

    python streaming_driver.py BOOTSTRAP TOPIC CHECKPOINT OUT TRIGGER [OPTIONS_JSON]

TRIGGER: `available-now` (stops when caught up) or `continuous` (1 s micro-batches until
killed). Reads TOPIC with the offsetkeeper-kafka source into a Parquet file sink at OUT.
Prints one JSON line per finished batch (flushed), so the test can follow progress.
"""

from __future__ import annotations

import json
import os
import sys
import time

from offsetkeeper.spark.kafka import register
from offsetkeeper.spark.session import get_spark


def main() -> None:
    bootstrap, topic, checkpoint, out, trigger = sys.argv[1:6]
    extra = json.loads(sys.argv[6]) if len(sys.argv) > 6 else {}
    # STREAMING_DRIVER_MASTER: another master, or sc://HOST:PORT for a Spark Connect server
    spark = get_spark(os.environ.get("STREAMING_DRIVER_MASTER", "local[2]"),
                      {"spark.sql.shuffle.partitions": "2"})
    register(spark)
    reader = (spark.readStream.format("offsetkeeper-kafka")
              .option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic))
    for k, v in extra.items():
        reader = reader.option(k, v)
    df = reader.load().select("partition", "offset", "timestamp", "value")
    w = df.writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint)
    w = w.trigger(availableNow=True) if trigger == "available-now" else w.trigger(processingTime="1 second")
    q = w.start()
    print(json.dumps({"event": "started"}), flush=True)
    seen = -1
    while q.isActive:
        time.sleep(0.5)
        for p in q.recentProgress:
            if p["batchId"] > seen:
                seen = p["batchId"]
                print(json.dumps({"event": "batch", "batch": seen, "rows": p["numInputRows"],
                                  "end": p["sources"][0]["endOffset"]}), flush=True)
    q.awaitTermination()
    for p in q.recentProgress:
        if p["batchId"] > seen:
            seen = p["batchId"]
            print(json.dumps({"event": "batch", "batch": seen, "rows": p["numInputRows"],
                              "end": p["sources"][0]["endOffset"]}), flush=True)
    print(json.dumps({"event": "stopped"}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
