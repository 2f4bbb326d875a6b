"""The streaming part of `offsetkeeper demo`: a Spark streaming query whose Kafka position is
visible as a consumer group, rewound in time through its checkpoint, and rolled back.

Run as a module it is the demo's query: ``python -m offsetkeeper.demo.streaming BOOTSTRAP TOPIC
CHECKPOINT OUT GROUP`` reads TOPIC with Trigger.AvailableNow into Parquet and prints its batches.
"""

from __future__ import annotations

import subprocess
import sys

GROUP = "orders-spark"


def _query(ctx, ck: str, out: str) -> None:
    ctx.console.print(f"[green]$ python -m offsetkeeper.demo.streaming  # readStream "
                      f"offsetkeeper-kafka -> Parquet, AvailableNow, commitToGroup={GROUP}",
                      highlight=False)
    code = subprocess.call([sys.executable, "-m", "offsetkeeper.demo.streaming", ctx.prod,
                            ctx.topic, ck, out, GROUP], env=ctx.env)
    if code != 0:
        ctx.run.failures.append(f"the demo streaming query exited {code}")


def part(ctx) -> None:
    """Query -> show/lag/group -> reset by time (plan, execute) -> rollback -> reset -> rerun."""
    run, b = ctx.run, ["-b", ctx.prod]
    ck, out = str(ctx.work / "streaming" / "checkpoint"), str(ctx.work / "streaming" / "orders")
    ctx.console.rule("A Spark streaming query reads the topic (100 offsets per batch)")
    _query(ctx, ck, out)
    run("Its checkpoint: last committed batch and offsets", ["streaming", "show", ck])
    run("Its lag against the log end", ["streaming", "lag", ck, *b])
    run("commitToGroup made it visible to every lag tool", ["groups", "describe", GROUP, *b])
    run("Plan: rewind the query by 30 minutes (dry run)",
        ["streaming", "reset", ck, "--by-duration", "PT30M", *b])
    run("Refused: the query stopped seconds ago and might still be running",
        ["streaming", "reset", ck, "--by-duration", "PT30M", *b, "--execute"], expect=1)
    run("We know it is stopped: rewrite the checkpoint (a copy of every file is kept)",
        ["streaming", "reset", ck, "--by-duration", "PT30M", *b, "--execute", "--alive-window", "0"])
    run("Undo it", ["streaming", "rollback", ck, "latest", "--execute", "--alive-window", "0"])
    run("Back at the end", ["streaming", "show", ck])
    run("Rewind again, for real",
        ["streaming", "reset", ck, "--by-duration", "PT30M", *b, "--execute", "--alive-window", "0"])
    ctx.console.rule("Restart the query: Spark resumes from the new offsets")
    _query(ctx, ck, out)


def main(argv: list[str]) -> None:
    bootstrap, topic, ck, out, group = argv
    from offsetkeeper.spark.kafka import register
    from offsetkeeper.spark.session import get_spark

    spark = get_spark("local[2]")
    register(spark)
    q = (spark.readStream.format("offsetkeeper-kafka").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", topic).option("startingOffsets", "earliest")
         .option("maxOffsetsPerTrigger", "100").option("commitToGroup", group).load()
         .select("partition", "offset", "timestamp", "key", "value")
         .writeStream.format("parquet").option("path", out).option("checkpointLocation", ck)
         .trigger(availableNow=True).start())
    q.awaitTermination()
    for p in q.recentProgress:
        if p["numInputRows"]:
            src = p["sources"][0]
            print(f"batch {p['batchId']}: {p['numInputRows']} records, "
                  f"{src['startOffset'] or 'start'} -> {src['endOffset']}")
    print(f"{spark.read.parquet(out).count()} records in {out}")
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
