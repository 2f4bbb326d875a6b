"""Benchmark: one history sampling cycle over G groups x P partitions, batched vs group by group;
and (--soak) the sampler's RSS over time at a 1 s interval.

Creates the groups on a broker (a fresh local noida-db unless --bootstrap-server is given): T
topics of P partitions, G groups each committed in the middle of one topic. Then, in the same
run and with the same client (KafkaAdmin), times
  (a) offsetkeeper's cycle (CycleSampler.sample): metadata, list + describe all groups in one
      request, every group's committed offsets in flight at once, then all log starts/ends in
      two batched requests — without the next-record fetch, so both sides do the same reads;
  (b) the naive loop: per group describe, committed offsets, then its partitions' watermarks;
  (c) the cycle with exact time lag: cold (one fetch per lagging partition) and warm (cached).
Prints one JSON document with the medians and the ratio (b)/(a).

    .venv/bin/python bench/history_cycle.py --groups 1000 --partitions 8
    .venv/bin/python bench/history_cycle.py --soak 600 --groups 200   # RSS every 10 s
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import ConsumerGroupTopicPartitions, Producer
from confluent_kafka import TopicPartition as CkTP
from confluent_kafka.admin import AdminClient, NewTopic

from offsetkeeper import devbroker
from offsetkeeper.config import Connection
from offsetkeeper.history.sample import CycleSampler, SampleScope
from offsetkeeper.kafka.admin import KafkaAdmin


def setup(bootstrap: str, groups: int, partitions: int, per_topic: int, records: int):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    ntopics = max(1, groups // per_topic)
    topics = [f"bench-{i:04d}" for i in range(ntopics)]
    for f in admin.create_topics([NewTopic(t, partitions, 1) for t in topics]).values():
        f.result(60)
    time.sleep(1)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for t in topics:
        for part in range(partitions):
            for _ in range(records):
                p.produce(t, value=b"x" * 16, partition=part)
    p.flush(120)
    names = [f"bench-group-{i:05d}" for i in range(groups)]
    futures = []
    for i, g in enumerate(names):
        tps = [CkTP(topics[i % ntopics], part, records // 2) for part in range(partitions)]
        futures.append(admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, tps)])[g])
        if len(futures) >= 200:
            for f in futures:
                f.result(120)
            futures = []
    for f in futures:
        f.result(120)
    return names, topics


def naive_cycle(admin: KafkaAdmin, groups: list[str]) -> int:
    """What a simple script does: one group after another, the same reads."""
    admin.topic_partitions(None)
    admin.list_groups()
    n = 0
    for g in groups:
        admin.describe_groups([g])
        committed = admin.committed_offsets(g)
        admin.watermarks(list(committed))
        n += len(committed)
    return n


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.monotonic()
        fn()
        out.append(time.monotonic() - t)
    return out


def bench_cycle(bootstrap: str, args) -> dict:
    names, _ = setup(bootstrap, args.groups, args.partitions, args.groups_per_topic, args.records)
    with KafkaAdmin(Connection(bootstrap), timeout=60) as admin:
        batched = CycleSampler(admin, SampleScope(all_groups=True), time_lag=False)
        first = batched.sample()
        assert first.groups == args.groups, (first.groups, first.errors)
        assert len(first.samples) == args.groups * args.partitions
        t_batched = timed(batched.sample, args.repeat)
        t_naive = timed(lambda: naive_cycle(admin, names), args.repeat)
        with_lag = CycleSampler(admin, SampleScope(all_groups=True), time_lag=True)
        t0 = time.monotonic()
        cold = with_lag.sample()
        t_cold = time.monotonic() - t0
        t_warm = timed(with_lag.sample, args.repeat)
        fetched = with_lag.next_times.fetched
        with_lag.close()
        assert all(s.next_ts is not None for s in cold.samples)
    b, n = statistics.median(t_batched), statistics.median(t_naive)
    return {
        "benchmark": "history_cycle", "groups": args.groups, "partitions_per_group": args.partitions,
        "partitions_sampled": len(first.samples), "repeat": args.repeat,
        "batched_cycle_s": round(b, 3), "batched_cycle_runs_s": [round(x, 3) for x in t_batched],
        "naive_loop_s": round(n, 3), "naive_loop_runs_s": [round(x, 3) for x in t_naive],
        "ratio_naive_over_batched": round(n / b, 2),
        # Requests per cycle (idle groups: no describe needed in the batched cycle). The
        # committed-offset reads are one request per group on both sides: librdkafka's
        # ListConsumerGroupOffsets takes one group per call.
        "requests_batched": 1 + 1 + args.groups + 2,
        "requests_naive": 1 + 1 + args.groups * 4,
        "cycle_with_time_lag_cold_s": round(t_cold, 3),
        "cycle_with_time_lag_warm_s": round(statistics.median(t_warm), 3),
        "next_record_fetches": fetched,
        "targets": {"ratio_at_least": 5, "batched_cycle_below_s": 2},
    }


def soak(bootstrap: str, args) -> dict:
    """Sample every second for --soak seconds while offsets and log ends move; RSS every 10 s."""
    import psutil

    from offsetkeeper.history.sampler import Sampler, SamplerConfig
    from offsetkeeper.history.store import open_store

    names, topics = setup(bootstrap, args.groups, args.partitions, args.groups_per_topic, args.records)
    stop = threading.Event()

    def churn():
        """Producers and consumers keep moving: 1 record/s per partition, groups commit +1/s."""
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
        admin = AdminClient({"bootstrap.servers": bootstrap})
        step = 0
        while not stop.wait(1.0):
            step += 1
            for t in topics[:10]:
                for part in range(args.partitions):
                    p.produce(t, value=b"y" * 16, partition=part)
            p.poll(0)
            fs = []
            for i, g in enumerate(names[:50]):
                t = topics[i % len(topics)]
                tps = [CkTP(t, part, args.records // 2 + step % args.records)
                       for part in range(args.partitions)]
                fs.append(admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, tps)])[g])
            for f in fs:
                with contextlib.suppress(Exception):
                    f.result(30)
        p.flush(10)

    proc = psutil.Process()
    rss: list[tuple[float, int]] = []
    cycles: list[float] = []
    store_dir = tempfile.mkdtemp(prefix="okh-soak-")
    store = open_store(str(Path(store_dir) / "history.db"))
    churner = threading.Thread(target=churn, daemon=True)
    churner.start()
    start = time.monotonic()
    with KafkaAdmin(Connection(bootstrap), timeout=30) as admin:
        sampler = Sampler(admin, store, SamplerConfig(scope=SampleScope(all_groups=True),
                                                      interval_ms=1000))
        run_stop = threading.Event()

        def on_cycle(o):
            cycles.append(o.duration_ms / 1000)
            el = time.monotonic() - start
            if not rss or el - rss[-1][0] >= 10:
                rss.append((round(el, 1), proc.memory_info().rss))
                if args.progress:
                    print(json.dumps({"t": round(el), "rss_mb": round(rss[-1][1] / 2**20, 1),
                                      "cycle_s": cycles[-1]}), flush=True)
            if el >= args.soak:
                run_stop.set()

        sampler.run(run_stop, on_cycle=on_cycle)
    stop.set()
    after_1min = next((r for t, r in rss if t >= 60), rss[0][1])
    end = rss[-1][1]
    return {
        "benchmark": "history_sampler_rss", "groups": args.groups,
        "partitions": args.groups * args.partitions, "interval_s": 1, "seconds": args.soak,
        "cycles": len(cycles), "cycle_p50_s": round(statistics.median(cycles), 3),
        "cycle_max_s": round(max(cycles), 3),
        "rss_mb_after_1min": round(after_1min / 2**20, 1), "rss_mb_end": round(end / 2**20, 1),
        "rss_end_over_1min": round(end / after_1min, 3),
        "rss_series_mb": [(t, round(r / 2**20, 1)) for t, r in rss],
        "target": "rss_end_over_1min <= 1.10 after 1 hour",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap-server")
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--groups-per-topic", type=int, default=8)
    ap.add_argument("--records", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--soak", type=int, default=0, help="seconds of sampling at 1 s (RSS mode)")
    ap.add_argument("--progress", action="store_true", help="print RSS lines while soaking")
    args = ap.parse_args()
    run = soak if args.soak else bench_cycle
    if args.bootstrap_server:
        print(json.dumps(run(args.bootstrap_server, args), indent=2))
        return
    with tempfile.TemporaryDirectory(prefix="okh-bench-") as d:
        st = devbroker.start(devbroker.free_port(), d)
        try:
            print(json.dumps(run(st.bootstrap or "", args), indent=2))
        finally:
            devbroker.stop(d)


if __name__ == "__main__":
    main()
