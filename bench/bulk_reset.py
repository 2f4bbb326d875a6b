"""Benchmark: bulk offset reset of G groups x P partitions, offsetkeeper vs a naive baseline.

Creates the groups on a broker (a fresh local Apache Kafka (dev-broker) unless --bootstrap-server is given), then
in the same run times
  (a) offsetkeeper: plan + concurrent execute of a reset of all groups (read-back verified),
  (b) the naive baseline: the same groups reset one after another with the same client library
      (confluent-kafka AdminClient.alter_consumer_group_offsets, waiting for each), and
  (c) the same, but doing the work offsetkeeper does per group (state check, commit, read back).
Prints one JSON document with both throughputs, the ratio and latency percentiles.

    .venv/bin/python bench/bulk_reset.py --groups 1000 --partitions 8
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import uuid

from confluent_kafka import ConsumerGroupTopicPartitions, Producer
from confluent_kafka import TopicPartition as CkTP
from confluent_kafka.admin import AdminClient, NewTopic

from offsetkeeper import devbroker
from offsetkeeper.config import Connection
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.reset.apply import ApplyOptions, apply_plan
from offsetkeeper.reset.facts import build_plan
from offsetkeeper.reset.plan import ResetScope, TopicSpec
from offsetkeeper.reset.targets import ToLatest


def setup(bootstrap: str, topic: str, groups: list[str], partitions: int, records: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)
    time.sleep(0.5)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for part in range(partitions):
        for i in range(records):
            p.produce(topic, value=b"x" * 16, key=str(i).encode(), partition=part)
    p.flush(60)
    # Groups start in the middle of the log, committed concurrently (setup, not measured).
    futures = []
    for g in groups:
        tps = [CkTP(topic, part, records // 2) for part in range(partitions)]
        futures.append(admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, tps)])[g])
    for f in futures:
        f.result(60)


def naive(bootstrap: str, topic: str, groups: list[str], partitions: int) -> dict:
    """One group after another: what a shell loop or simple script does."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    start = time.monotonic()
    for g in groups:
        tps = [CkTP(topic, part, 0) for part in range(partitions)]
        admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, tps)])[g].result(60)
    elapsed = time.monotonic() - start
    n = len(groups) * partitions
    return {"elapsed_s": round(elapsed, 3), "offsets": n, "offsets_per_s": round(n / elapsed, 1)}


def naive_checked(bootstrap: str, topic: str, groups: list[str], partitions: int) -> dict:
    """One group after another doing the same work as offsetkeeper: state check, commit, read back."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    start = time.monotonic()
    for g in groups:
        state = admin.describe_consumer_groups([g])[g].result(60)
        if state.members:
            continue
        tps = [CkTP(topic, part, 1) for part in range(partitions)]
        admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, tps)])[g].result(60)
        admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)])[g].result(60)
    elapsed = time.monotonic() - start
    n = len(groups) * partitions
    return {"elapsed_s": round(elapsed, 3), "offsets": n, "offsets_per_s": round(n / elapsed, 1)}


def offsetkeeper_bulk(bootstrap: str, topic: str, groups: list[str], max_concurrent: int) -> dict:
    with KafkaAdmin(Connection(bootstrap)) as admin:
        t0 = time.monotonic()
        plan = build_plan(admin, ResetScope(groups=tuple(groups), topics=(TopicSpec(topic),)), ToLatest())
        t1 = time.monotonic()
        report = apply_plan(admin, plan, ApplyOptions(max_concurrent=max_concurrent))
        t2 = time.monotonic()
    s = report.summary()
    return {
        "status": s["status"],
        "plan_s": round(t1 - t0, 3),
        "execute_s": round(t2 - t1, 3),
        "elapsed_s": round(t2 - t0, 3),
        "offsets": s["partitions_changed"],
        "offsets_per_s": round(s["partitions_changed"] / (t2 - t0), 1),
        "execute_offsets_per_s": s["offsets_per_s"],
        "latency_p50_ms": s["latency_p50_ms"],
        "latency_p99_ms": s["latency_p99_ms"],
        "latency_max_ms": s["latency_max_ms"],
        "groups_failed": s["groups_failed"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--records", type=int, default=20, help="records per partition")
    ap.add_argument("--max-concurrent", type=int, default=100)
    ap.add_argument("--bootstrap-server", default=None)
    args = ap.parse_args()

    run = uuid.uuid4().hex[:8]
    topic = f"bench-bulk-{run}"
    groups = [f"bench-{run}-{i:05d}" for i in range(args.groups)]
    with tempfile.TemporaryDirectory() as d:
        if args.bootstrap_server:
            bootstrap, ctx = args.bootstrap_server, None
        else:
            ctx = devbroker.running_broker(data_dir=d)
            bootstrap = ctx.__enter__()
        try:
            setup(bootstrap, topic, groups, args.partitions, args.records)
            ok = offsetkeeper_bulk(bootstrap, topic, groups, args.max_concurrent)
            checked = naive_checked(bootstrap, topic, groups, args.partitions)
            base = naive(bootstrap, topic, groups, args.partitions)
            # check: the baseline really changed every group (independent read)
            with KafkaAdmin(Connection(bootstrap)) as admin:
                sample = admin.committed_offsets(groups[-1])
            assert all(c.offset == 0 for c in sample.values()) and len(sample) == args.partitions
        finally:
            if ctx is not None:
                ctx.__exit__(None, None, None)
    print(json.dumps({
        "benchmark": "bulk_reset",
        "groups": args.groups,
        "partitions_per_group": args.partitions,
        "max_concurrent": args.max_concurrent,
        "offsetkeeper": ok,
        "naive_sequential": base,
        "naive_sequential_same_checks": checked,
        "ratio_offsetkeeper_vs_naive": round(ok["offsets_per_s"] / base["offsets_per_s"], 2),
        "ratio_execute_only_vs_naive": round(ok["execute_offsets_per_s"] / base["offsets_per_s"], 2),
        "ratio_execute_only_vs_naive_same_checks":
            round(ok["execute_offsets_per_s"] / checked["offsets_per_s"], 2),
    }, indent=2))


if __name__ == "__main__":
    main()
