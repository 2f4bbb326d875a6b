"""Demo parts on one cluster's offsets: inspect, rewind in time, verify and roll back from the
automatic snapshot; and on a three-node Apache Kafka cluster, Kafka's own kafka-consumer-groups
agreeing with the plan and a reset with a node down."""

from __future__ import annotations

import time

from offsetkeeper import devbroker
from offsetkeeper.demo.context import TOPIC, DemoContext, seed


def part(ctx: DemoContext) -> None:
    run, b = ctx.run, ["-b", ctx.prod]
    run("Consumer groups", ["groups", "list", *b])
    run("Where are they?", ["groups", "describe", "payments", "analytics", *b])
    run("Plan: rewind payments by 90 minutes (dry run)",
        ["offsets", "reset", "-g", "payments", "-t", TOPIC, "--by-duration", "PT90M", *b])
    run("Apply it (a snapshot is taken first)",
        ["offsets", "reset", "-g", "payments", "-t", TOPIC, "--by-duration", "PT90M", "--execute", *b])
    run("Did anything change since the snapshot? (yes: exit 1)",
        ["snapshots", "verify", "latest", *b], expect=1)
    run("Undo: roll back to the snapshot", ["snapshots", "rollback", "latest", "--execute", *b])
    run("Back where it was", ["groups", "describe", "payments", *b])


def _csv_plan(text: str) -> set[tuple[str, str, str]]:
    """(topic, partition, offset) of a plan: offsetkeeper's CSV (with a header row naming its
    columns) or kafka-consumer-groups' --export (topic,partition,offset, no header)."""
    import csv

    rows = [r for r in csv.reader(text.splitlines()) if r]
    if rows and rows[0][:3] == ["group", "topic", "partition"]:
        cols = rows[0]
        return {(r[cols.index("topic")], r[cols.index("partition")], r[cols.index("target")])
                for r in rows[1:]}
    return {(r[0], r[1], r[2]) for r in rows if len(r) == 3}


def apache_kafka_part(ctx: DemoContext) -> None:
    """Three real Kafka nodes; Kafka's own kafka-consumer-groups agrees with the plan; a reset
    goes through while a node is down."""
    run = ctx.run
    k3 = ctx.work / "k3"
    run("Start a three-node Apache Kafka cluster (replication 3, min.insync.replicas 2)",
        ["dev-broker", "start", "--brokers", "3", "--port", str(devbroker.free_port()),
         "--data-dir", str(k3)])
    if not ctx.keep:
        ctx.stack.callback(devbroker.stop, k3)
    st = devbroker.status(k3)
    if not st.running:
        ctx.run.fail("the three-node cluster did not start: the rest of this part is skipped")
        return
    b3 = st.bootstrap or ""
    seed(b3)
    run("Kafka's own kafka-consumer-groups describes payments ...",
        ["dev-broker", "kafka-tool", "kafka-consumer-groups", "--bootstrap-server", b3,
         "--describe", "--group", "payments"])
    run("... and offsetkeeper shows the same numbers", ["groups", "describe", "payments", "-b", b3])
    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 45 * 60))
    ours = ctx.run.capture("offsetkeeper's plan: payments to 45 minutes ago, as CSV",
                           ["offsets", "reset", "-g", "payments", "-t", TOPIC, "--to-datetime",
                            when, "-o", "csv", "-b", b3])
    theirs = ctx.run.capture("kafka-consumer-groups' plan for the same reset (--dry-run --export)",
                             ["dev-broker", "kafka-tool", "kafka-consumer-groups",
                              "--bootstrap-server", b3, "--reset-offsets", "--group", "payments",
                              "--topic", TOPIC, "--to-datetime", when + ".000", "--dry-run",
                              "--export"])
    if _csv_plan(ours) and _csv_plan(ours) == _csv_plan(theirs):
        ctx.console.print(f"[bold green]the two plans agree on all {len(_csv_plan(ours))} partitions")
    else:
        ctx.run.fail("offsetkeeper's plan and kafka-consumer-groups' plan differ")
    ctx.console.rule("[bold]SIGKILL node 3 (a crash), then reset while it is down")
    devbroker.kill_node(k3, 3)
    run("Apply the reset with a node down (the executor re-checks and reads back)",
        ["offsets", "reset", "-g", "payments", "-t", TOPIC, "--to-datetime", when, "--execute",
         "-b", b3])
    devbroker.restart_node(k3, 3)
    run("Node 3 is back; payments is where the plan said",
        ["groups", "describe", "payments", "-b", b3])
    run("Stop the cluster (a controlled shutdown of every node)",
        ["dev-broker", "stop", "--data-dir", str(k3)])
