"""Demo part: the `__consumer_offsets` log decoded on Spark, queried, and used as a reset target;
then (only where ZooKeeper is installed) ZooKeeper-era offsets exported and migrated."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from offsetkeeper.offsetlog.sample_log import MINUTE, produce_sample, sample_log
from offsetkeeper.times import iso_ms

LOG_TOPIC = "offsets-log"
GROUPS = ("billing", 'reporting "eu"', "legacy-etl")
ZK_JAR = Path("/usr/share/java/zookeeper.jar")


def _create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from confluent_kafka.admin import NewTopic

    from offsetkeeper.kafka import clients

    admin = clients.admin_client({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(name, partitions, 1, config={"retention.ms": "-1"})]).values():
        f.result(30)
    time.sleep(0.5)


def part(ctx) -> None:
    """Produce a commit log built with Kafka's schema, scan it, show/at, rewinds, reset target."""
    run, b = ctx.run, ["-b", ctx.prod]
    t0 = (int(time.time() * 1000) // MINUTE - 30) * MINUTE
    _create_topic(ctx.prod, LOG_TOPIC, 3)
    from offsetkeeper.config import Connection
    from offsetkeeper.kafka.admin import KafkaAdmin

    with KafkaAdmin(Connection(bootstrap_servers=ctx.prod)) as admin:
        ids = {name: tid for tid, name in admin.topic_ids().items()}
    produce_sample(ctx.prod, LOG_TOPIC, sample_log(groups=GROUPS, data_topic=ctx.topic, t0=t0,
                                                   topic_id=ids[ctx.topic]))
    ctx.console.print(f"produced a __consumer_offsets-format log (every key/value version, tombstones, "
                      f"group metadata, a KIP-848 group's member and assignment records) into "
                      f"'{LOG_TOPIC}': more versions than one Kafka release writes")
    hist = str(ctx.work / "commit-history")
    run("Decode the log on Spark into a commit history",
        ["commits", "scan", "-t", LOG_TOPIC, "--out", hist, *b])
    run("Every commit of billing, with the REWIND", ["commits", "show", "billing", "-H", hist])
    at = iso_ms(t0 + 4 * MINUTE + 30_000)
    run(f"Where billing stood at {at}, replayed exactly", ["commits", "at", "billing", "-H", hist, "--time", at])
    run("Members and assignments per generation", ["commits", "generations", "billing", "-H", hist])
    run("A KIP-848 consumer group's membership history (joined, epochs, assignments, left)",
        ["commits", "generations", f"{GROUPS[0]}-kip848", "-H", hist])
    run("REWIND events across all groups (Spark)", ["commits", "rewinds", "-H", hist])
    run("Plan: reset billing to what it had committed then (dry run)",
        ["offsets", "reset", "-g", "billing", "--to-commit-time", at, "--commit-history", hist, *b])
    if ZK_JAR.is_file():
        _zookeeper(ctx)
    else:
        ctx.console.print("ZooKeeper is not installed here: skipping the ZooKeeper-era offsets step")


def _zookeeper(ctx) -> None:
    from kazoo.client import KazooClient

    from offsetkeeper.zk.devserver import start_zookeeper, stop_zookeeper

    proc, hosts = start_zookeeper(ctx.work / "zookeeper")
    ctx.stack.callback(stop_zookeeper, proc)
    ctx.console.print(f"started a local ZooKeeper at {hosts}")
    logging.getLogger("kazoo.client").setLevel(logging.ERROR)  # retries while it warms up
    zk = KazooClient(hosts=hosts)
    zk.start(timeout=30)
    try:
        for p, offset in enumerate((40, 55, 500)):  # 500 is past the log end: clamped
            zk.create(f"/kafka/consumers/old-etl/offsets/{ctx.topic}/{p}", str(offset).encode(), makepath=True)
        zk.ensure_path("/kafka/consumers/old-etl/ids")
    finally:
        zk.stop()
        zk.close()
    run, b = ctx.run, ["-b", ctx.prod]
    run("ZooKeeper-era offsets, as a reset file", ["zk", "export", "--zookeeper", f"{hosts}/kafka", "-o", "csv"])
    run("Migrate them into Kafka (snapshot first, clamped where out of range)",
        ["offsets", "reset", "--from-zookeeper", f"{hosts}/kafka", "-g", "old-etl", "--execute", *b])
    run("The migrated group", ["groups", "describe", "old-etl", *b])
