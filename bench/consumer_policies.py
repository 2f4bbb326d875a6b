"""Benchmark: OffsetConsumer commit policies vs a bare confluent-kafka loop, in one run.

Fills one topic (a fresh local Apache Kafka (dev-broker) unless --bootstrap-server is given), then, each in its
own consumer group over the same records, consumes for at most --seconds or --records:
  (a) bare:        confluent_kafka.Consumer.consume(500) loop, no commits (the ceiling)
  (b) bare-batch:  the same, committing synchronously after each poll's records (the yardstick
                   for BATCH: the same commit points, hand-rolled)
  (c) every policy of OffsetConsumer (BATCH through poll(); the others through records()).
Rounds alternate (a), (b), (c) --rounds times; the median records/s of each is reported with
its ratio to bare-batch (target for BATCH: >= 0.9) and its overhead against bare.

    .venv/bin/python bench/consumer_policies.py --records 200000
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTP
from confluent_kafka.admin import AdminClient, NewTopic

from offsetkeeper import devbroker
from offsetkeeper.consumer import CommitPolicy, OffsetConsumer

POLICIES = {
    "batch": (CommitPolicy.batch(), "poll"),
    "batch-records": (CommitPolicy.batch(), "records"),
    "batch-async": (CommitPolicy.batch(asynchronous=True), "poll"),
    "auto": (CommitPolicy.auto(), "records"),
    "time": (CommitPolicy.time(1.0), "records"),
    "count": (CommitPolicy.count(1000), "records"),
    "count_time": (CommitPolicy.count_time(1000, 1.0), "records"),
    "manual": (CommitPolicy.manual(), "records"),
    "manual_immediate": (CommitPolicy.manual(immediate=True), "records"),
    "record": (CommitPolicy.record(), "records"),
    "record-async": (CommitPolicy.record(asynchronous=True), "records"),
    "before_processing": (CommitPolicy.before_processing(), "records"),
}


def fill(bootstrap: str, topic: str, partitions: int, records: int, size: int) -> None:
    a = AdminClient({"bootstrap.servers": bootstrap})
    for f in a.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)
    time.sleep(0.5)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000})
    value = b"x" * size
    for i in range(records):
        while True:
            try:
                p.produce(topic, value=value, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.1)
    p.flush(120)


def _conf(bootstrap: str) -> dict:
    return {"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "session.timeout.ms": 6000, "log_level": 3}


def bare(bootstrap: str, topic: str, limit: int, seconds: float, commit: bool) -> tuple[int, float]:
    c = Consumer({**_conf(bootstrap), "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    n, start = 0, None
    try:
        while n < limit and (start is None or time.perf_counter() - start < seconds):
            msgs = c.consume(500, 1.0)
            if not msgs:
                continue
            start = start or time.perf_counter()
            nxt: dict[tuple[str, int], int] = {}
            for m in msgs:
                if m.error() is None:
                    n += 1
                    nxt[(m.topic(), m.partition())] = m.offset() + 1
            if commit and nxt:
                c.commit(offsets=[CkTP(t, p, o) for (t, p), o in nxt.items()], asynchronous=False)
        return n, time.perf_counter() - (start or time.perf_counter())
    finally:
        c.close()


def library(bootstrap: str, topic: str, limit: int, seconds: float, name: str) -> tuple[int, float]:
    policy, style = POLICIES[name]
    c = OffsetConsumer(_conf(bootstrap), [topic], policy=policy, auto_offset_reset="earliest",
                       live_reset=False, max_poll_records=500)
    n, start = 0, None
    manual = policy.is_manual
    try:
        if style == "poll":
            while n < limit and (start is None or time.perf_counter() - start < seconds):
                msgs = c.poll(1.0)
                if msgs:
                    start = start or time.perf_counter()
                    n += len(msgs)
        else:
            for m in c.records(1.0):
                start = start or time.perf_counter()
                n += 1
                if manual:
                    c.ack(m)
                if n >= limit or time.perf_counter() - start >= seconds:
                    break
        return n, time.perf_counter() - (start or time.perf_counter())
    finally:
        c.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap-server")
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=4.0, help="cap per measurement")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--policies", default=",".join(POLICIES))
    args = ap.parse_args()
    names = [p for p in args.policies.split(",") if p]
    with tempfile.TemporaryDirectory() as tmp:
        st = None
        bootstrap = args.bootstrap_server
        if not bootstrap:
            st = devbroker.start(devbroker.free_port(), tmp, tied=True)
            bootstrap = st.bootstrap
        try:
            topic = f"bench-consumer-{uuid.uuid4().hex[:6]}"
            fill(bootstrap, topic, args.partitions, args.records, args.value_bytes)
            rates: dict[str, list[float]] = {"bare": [], "bare-batch": [], **{n: [] for n in names}}
            for _ in range(args.rounds):
                for key, run in [("bare", lambda: bare(bootstrap, topic, args.records, args.seconds, False)),
                                 ("bare-batch", lambda: bare(bootstrap, topic, args.records, args.seconds, True)),
                                 *[(n, lambda n=n: library(bootstrap, topic, args.records, args.seconds, n))
                                   for n in names]]:
                    count, secs = run()
                    rates[key].append(count / secs if secs > 0 else 0.0)
                    print(f"{key}: {count} records in {secs:.2f} s", file=sys.stderr, flush=True)
        finally:
            if st is not None:
                devbroker.stop(tmp)
    med = {k: statistics.median(v) for k, v in rates.items()}
    out = {
        "records": args.records, "partitions": args.partitions, "value_bytes": args.value_bytes,
        "rounds": args.rounds, "seconds_cap": args.seconds,
        "records_per_s": {k: round(v) for k, v in med.items()},
        "batch_vs_bare_batch": round(med["batch"] / med["bare-batch"], 3) if "batch" in med else None,
        "ratio_to_bare_batch": {k: round(v / med["bare-batch"], 3) for k, v in med.items()},
        "overhead_vs_bare": {k: round(1 - v / med["bare"], 3) for k, v in med.items()},
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
