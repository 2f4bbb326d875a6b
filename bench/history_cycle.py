"""Benchmark: one history sampling cycle over G groups x P partitions, batched vs group by group;
and (--soak) the sampler's RSS over time at a 1 s interval.

Creates the groups on a broker (a fresh local Apache Kafka (dev-broker) unless --bootstrap-server is given): T
topics of P partitions, G groups each committed in the middle of one topic. Then, in the same
run and with the same client (KafkaAdmin), times
  (a) offsetkeeper's cycle (CycleSampler.sample): metadata, list + describe all groups in one
      request, every group's committed offsets in flight at once, then all log starts/ends in
      two batched requests — without the next-record fetch, so both sides do the same reads;
  (b) the naive loop: per group describe, committed offsets, then its partitions' watermarks;
  (c) the cycle with exact time lag: cold (new consumer, empty cache: one fetch per lagging
      partition, batched), offsets moved (warm consumer, every partition fetched again) and
      warm (cached); and the same next-record fetches alone, batched vs one partition at a time
      in sequence (the same NextRecordTimes with one partition per assignment).
Prints one JSON document with the medians and the ratio (b)/(a).

    .venv/bin/python bench/history_cycle.py --groups 1000 --partitions 8
    .venv/bin/python bench/history_cycle.py --soak 600 --groups 200   # RSS every 10 s
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
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
from offsetkeeper.history.sample_cycle import CycleSampler, NextRecordTimes, SampleScope
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
        t_cold, t_moved, t_warm = [], [], []
        for _ in range(args.repeat):
            with_lag = CycleSampler(admin, SampleScope(all_groups=True), time_lag=True)
            t0 = time.monotonic()
            cold = with_lag.sample()          # new consumer, empty cache: every lagging partition
            t_cold.append(time.monotonic() - t0)
            assert all(s.next_ts is not None for s in cold.samples)
            t_warm += timed(with_lag.sample, 1)  # nothing moved: every timestamp from the cache
            with_lag.next_times._cache.clear()   # offsets moved: warm consumer, all fetched
            t_moved += timed(with_lag.sample, 1)
            fetched = with_lag.next_times.fetched
            batches = with_lag.next_times.batches
            with_lag.close()
        # Fetch-only yardstick on the same offsets: the same NextRecordTimes, batched vs one
        # partition per assignment in sequence (what one fetch per partition costs).
        wanted = {(s.topic, s.partition): s.committed for s in cold.samples
                  if s.committed < s.log_end}
        tails = {(s.topic, s.partition): s.log_end - s.committed for s in cold.samples}
        conf = admin.conn.client_config()
        fb = NextRecordTimes(conf)
        t0 = time.monotonic()
        got = fb.timestamps(wanted, tails)
        t_fetch_batched = time.monotonic() - t0
        fb.close()
        # One by one takes ~0.1-0.2 s a partition here: time the first --naive-fetches of them
        # and project to all (stated as a projection in the output).
        some = dict(list(wanted.items())[:args.naive_fetches])
        one = NextRecordTimes(conf)
        one.CHUNK = 1
        t0 = time.monotonic()
        got_one = one.timestamps(some, tails)
        t_fetch_some = time.monotonic() - t0
        one.close()
        t_fetch_one = t_fetch_some * len(wanted) / len(some)
        assert got_one == {k: got[k] for k in some} and None not in got.values()
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
        "cycle_with_time_lag_cold_s": round(statistics.median(t_cold), 3),
        "cycle_with_time_lag_cold_runs_s": [round(x, 3) for x in t_cold],
        "cycle_with_time_lag_offsets_moved_s": round(statistics.median(t_moved), 3),
        "cycle_with_time_lag_warm_s": round(statistics.median(t_warm), 3),
        "lagging_partitions": len(wanted),
        "next_record_fetches_per_sampler": fetched, "fetch_batches_per_sampler": batches,
        "fetch_only_batched_s": round(t_fetch_batched, 3),
        "fetch_one_by_one_partitions_timed": len(some),
        "fetch_one_by_one_timed_s": round(t_fetch_some, 3),
        "fetch_one_by_one_projected_all_s": round(t_fetch_one, 1),
        "ratio_fetch_one_by_one_projected_over_batched": round(t_fetch_one / t_fetch_batched, 1),
        "load_average_1m": os.getloadavg()[0],
        "targets": {"ratio_at_least": 5, "batched_cycle_below_s": 2,
                    "cycle_with_time_lag_cold_below_s": 2},
    }


class MemProbe:
    """Diagnostics for the soak, one JSON line every --log-every seconds: RSS, glibc malloc
    in-use vs mapped (native growth vs fragmentation), Python blocks/objects, gc counts, the
    sampler's per-partition state sizes, store file sizes, and (--tracemalloc) the top growth
    by line since the first snapshot after a minute."""

    def __init__(self, path: str, proc) -> None:
        import ctypes
        import gc
        import sys
        import tracemalloc

        self.f = open(path, "a", buffering=1)  # noqa: SIM115 - a log kept open for the soak
        self.proc, self.gc, self.sys, self.tm = proc, gc, sys, tracemalloc
        self.last = -1e9
        self.base = None
        try:
            self.libc = ctypes.CDLL("libc.so.6")

            class MI2(ctypes.Structure):
                _fields_ = [(n, ctypes.c_size_t) for n in (
                    "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                    "uordblks", "fordblks", "keepcost")]
            self.MI2 = MI2
            self.libc.mallinfo2.restype = MI2
        except (OSError, AttributeError):
            self.libc = None

    def maybe(self, el: float, sampler, store_dir: str) -> None:
        if el - self.last < args_log_every[0]:
            return
        self.last = el
        rec: dict = {"t": round(el), "rss_mb": round(self.proc.memory_info().rss / 2**20, 1)}
        if self.libc is not None:
            mi = self.libc.mallinfo2()
            rec["malloc_inuse_mb"] = round(mi.uordblks / 2**20, 1)
            rec["malloc_free_mb"] = round(mi.fordblks / 2**20, 1)
            rec["malloc_arena_mb"] = round(mi.arena / 2**20, 1)
            rec["malloc_mmap_mb"] = round(mi.hblkhd / 2**20, 1)
        rec["py_blocks"] = self.sys.getallocatedblocks()
        rec["gc_objects"] = len(self.gc.get_objects())
        rec["gc_counts"] = self.gc.get_count()
        rec["threads"] = self.proc.num_threads()
        cy = sampler.cycler
        rec["table_parts"] = len(cy.table)
        if cy.next_times is not None:
            rec["next_cache"] = len(cy.next_times._cache)
            rec["fetched"] = cy.next_times.fetched
        rec["recent_groups"] = len(sampler._recent)
        rec["buffered"] = sampler._buffered
        rec["store_mb"] = {p.name: round(p.stat().st_size / 2**20, 1)
                           for p in Path(store_dir).iterdir()}
        if self.tm.is_tracing():
            rec["tracemalloc_mb"] = round(self.tm.get_traced_memory()[0] / 2**20, 1)
            rec["tracemalloc_self_mb"] = round(self.tm.get_tracemalloc_memory() / 2**20, 1)
            if self.base is None and el >= 60:
                self.base = self.tm.take_snapshot()
            elif self.base is not None and int(el) % 300 < args_log_every[0]:
                top = self.tm.take_snapshot().compare_to(self.base, "lineno")[:8]
                rec["tm_top"] = [f"{s.size_diff / 1024:+.0f}K {s.count_diff:+d} "
                                 f"{s.traceback[0].filename.split('/')[-1]}:{s.traceback[0].lineno}"
                                 for s in top]
        self.f.write(json.dumps(rec) + "\n")


args_log_every = [20.0]


def soak(bootstrap: str, args) -> dict:
    """Sample every second for --soak seconds while offsets and log ends move; RSS every 10 s."""
    import psutil

    from offsetkeeper.history.sampler import Sampler, SamplerConfig
    from offsetkeeper.history.store import open_store

    names, topics = setup(bootstrap, args.groups, args.partitions, args.groups_per_topic, args.records)
    stop = threading.Event()

    def churn():
        """Producers and consumers keep moving: --produce-rate records/s per partition of the first
        10 topics; 50 groups commit every second. `--churn advance` (real life): their committed
        offsets advance with the log (lag stays ~records/2); `--churn wrap` (the old soak): they
        cycle through the first `records` offsets, so their backlog grows without bound."""
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
        admin = AdminClient({"bootstrap.servers": bootstrap})
        step = 0
        while not stop.wait(1.0):
            step += 1
            for t in topics[:10]:
                for part in range(args.partitions):
                    for _ in range(args.produce_rate):
                        p.produce(t, value=b"y" * 16, partition=part)
            p.poll(0)
            fs = []
            for i, g in enumerate(names[:50]):
                t = topics[i % len(topics)]
                if args.churn == "wrap" or i % len(topics) >= 10:
                    off = args.records // 2 + step % args.records
                else:
                    off = args.records // 2 + step * args.produce_rate
                tps = [CkTP(t, part, off) for part in range(args.partitions)]
                fs.append(admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, tps)])[g])
            for f in fs:
                with contextlib.suppress(Exception):
                    f.result(30)
        p.flush(10)

    proc = psutil.Process()
    probe = MemProbe(args.log, proc) if args.log else None
    rss: list[tuple[float, int]] = []
    cycles: list[float] = []
    store_dir = tempfile.mkdtemp(prefix="okh-soak-")
    store = open_store(str(Path(store_dir) / "history.db"))
    churner = threading.Thread(target=churn, daemon=True)
    churner.start()
    start = time.monotonic()
    with KafkaAdmin(Connection(bootstrap), timeout=30) as admin:
        sampler = Sampler(admin, store, SamplerConfig(scope=SampleScope(all_groups=True),
                                                      interval_ms=1000,
                                                      time_lag=not args.no_time_lag))
        run_stop = threading.Event()
        import signal

        # SIGTERM ends the soak early but cleanly (the JSON is still printed, the broker stopped).
        signal.signal(signal.SIGTERM, lambda *_: run_stop.set())

        def on_cycle(o):
            cycles.append(o.duration_ms / 1000)
            el = time.monotonic() - start
            if not rss or el - rss[-1][0] >= 10:
                rss.append((round(el, 1), proc.memory_info().rss))
                if args.progress:
                    print(json.dumps({"t": round(el), "rss_mb": round(rss[-1][1] / 2**20, 1),
                                      "cycle_s": cycles[-1]}), flush=True)
            if probe is not None:
                probe.maybe(el, sampler, store_dir)
            if el >= args.soak:
                run_stop.set()

        sampler.run(run_stop, on_cycle=on_cycle)
    stop.set()
    import shutil

    store.close()
    shutil.rmtree(store_dir, ignore_errors=True)  # an hour at 1 s writes ~1 GB of samples
    after_1min = next((r for t, r in rss if t >= 60), rss[0][1])
    end = rss[-1][1]
    return {
        "benchmark": "history_sampler_rss", "groups": args.groups,
        "partitions": args.groups * args.partitions, "interval_s": 1, "seconds": args.soak,
        "cycles": len(cycles), "cycle_p50_s": round(statistics.median(cycles), 3),
        "cycle_max_s": round(max(cycles), 3),
        "rss_mb_after_1min": round(after_1min / 2**20, 1), "rss_mb_end": round(end / 2**20, 1),
        "rss_end_over_1min": round(end / after_1min, 3),
        # The same, robust to one sample landing on a transient peak: medians of the samples in
        # the second minute and in the last minute.
        **window_medians(rss, args.soak),
        "load_average_1m": os.getloadavg()[0],
        "rss_series_mb": [(t, round(r / 2**20, 1)) for t, r in rss],
        "time_lag": not args.no_time_lag, "churn": args.churn, "produce_rate": args.produce_rate,
        "target": "rss_end_over_1min <= 1.10 after 1 hour",
    }


def window_medians(rss: list[tuple[float, int]], seconds: float) -> dict:
    """Median RSS (MB) over minute 1-2 and over the last minute, and their ratio."""
    first = [r for t, r in rss if 60 <= t < 120] or [rss[0][1]]
    last = [r for t, r in rss if t >= seconds - 60] or [rss[-1][1]]
    a, b = statistics.median(first), statistics.median(last)
    return {"rss_mb_median_minute_2": round(a / 2**20, 1),
            "rss_mb_median_last_minute": round(b / 2**20, 1),
            "rss_last_minute_over_minute_2": round(b / a, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap-server")
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--groups-per-topic", type=int, default=8)
    ap.add_argument("--records", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--naive-fetches", type=int, default=100,
                    help="partitions fetched one by one for the fetch yardstick (projected to all)")
    ap.add_argument("--soak", type=int, default=0, help="seconds of sampling at 1 s (RSS mode)")
    ap.add_argument("--progress", action="store_true", help="print RSS lines while soaking")
    ap.add_argument("--no-time-lag", action="store_true", help="soak without next-record fetches")
    ap.add_argument("--churn", choices=["advance", "wrap"], default="advance",
                    help="soak: committed offsets advance with the log, or wrap (growing backlog)")
    ap.add_argument("--produce-rate", type=int, default=1, help="soak: records/s per partition")
    ap.add_argument("--log", help="soak: append diagnostics (JSON lines) to this file")
    ap.add_argument("--log-every", type=float, default=20.0)
    ap.add_argument("--tracemalloc", action="store_true", help="soak: trace Python allocations")
    args = ap.parse_args()
    args_log_every[0] = args.log_every
    if args.tracemalloc:
        import tracemalloc

        tracemalloc.start(1)
    run = soak if args.soak else bench_cycle
    if args.bootstrap_server:
        print(json.dumps(run(args.bootstrap_server, args), indent=2))
        return
    with tempfile.TemporaryDirectory(prefix="okh-bench-") as d:
        st = devbroker.start(devbroker.free_port(), d, tied=True)
        try:
            print(json.dumps(run(st.bootstrap or "", args), indent=2))
        finally:
            devbroker.stop(d)


if __name__ == "__main__":
    main()
