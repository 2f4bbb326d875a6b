"""The consumer process of the delivery lab (`python -m offsetkeeper.consumer.lab_child ...`).

It consumes the lab topic with OffsetConsumer under one policy and "processes" each record by
appending its number to the ledger (one os.write of one line on an O_APPEND file: whole lines,
never torn, even under SIGKILL). With the `store` policy the ledger is a table written in the
same store transaction as the offsets. Every processed record also appends a byte to the
trace file, which the parent watches to kill the process at random points of real progress.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from offsetkeeper.consumer.core import OffsetConsumer
from offsetkeeper.consumer.policy import AckMode, CommitPolicy
from offsetkeeper.models import TopicPartition

# Small values so commits happen between kills.
LAB_POLICIES = {
    "auto": lambda a: CommitPolicy.auto(100),
    "record": lambda a: CommitPolicy.record(asynchronous=a),
    "batch": lambda a: CommitPolicy.batch(asynchronous=a),
    "time": lambda a: CommitPolicy.time(0.05, asynchronous=a),
    "count": lambda a: CommitPolicy.count(5, asynchronous=a),
    "count_time": lambda a: CommitPolicy.count_time(5, 0.05, asynchronous=a),
    "manual": lambda a: CommitPolicy.manual(asynchronous=a),
    "manual_immediate": lambda a: CommitPolicy.manual(immediate=True, asynchronous=a),
    "before_processing": lambda a: CommitPolicy.before_processing(),
    "store": lambda a: None,
}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--policy", required=True, choices=sorted(LAB_POLICIES))
    ap.add_argument("--asynchronous", action="store_true")
    ap.add_argument("--ledger", required=True)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--store")
    ap.add_argument("--table", default="lab_ledger")
    ap.add_argument("--instance")
    ap.add_argument("--until-end", action="store_true")
    ap.add_argument("--duration", type=float)
    ap.add_argument("--work-ms", type=float, default=1.0)
    ap.add_argument("--protocol", choices=("classic", "consumer"), default="classic")
    args = ap.parse_args(argv)

    conf = {"bootstrap.servers": args.bootstrap, "group.id": args.group, "log_level": 3,
            "client.id": f"lab-{args.instance or 'dyn'}"}
    if args.protocol == "consumer":
        # KIP-848: session and heartbeat times are the group's (set by the lab), assignment is
        # the broker's; librdkafka refuses those client-side properties under this protocol.
        conf["group.protocol"] = "consumer"
    else:
        conf.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    if args.instance:
        # Static membership: a restarted process takes its place at once (no session timeout).
        conf["group.instance.id"] = args.instance
    policy = LAB_POLICIES[args.policy](args.asynchronous)
    ready = Path(args.trace + ".ready")
    c = OffsetConsumer(conf, [args.topic], policy=policy,
                       store=args.store if args.policy == "store" else None,
                       auto_offset_reset="earliest", live_reset=False, max_poll_records=10,
                       on_assign=lambda tps: tps and ready.touch())  # tells the parent we are in
    ledger = os.open(args.ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    trace = os.open(args.trace, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    work = args.work_ms / 1000
    ph = "?" if not (args.store or "").startswith("postgres") else "%s"
    pool = ThreadPoolExecutor(4) if policy is not None and policy.mode is AckMode.MANUAL else None
    last_record = [time.monotonic()]
    started = time.monotonic()

    def process(msg) -> None:
        time.sleep(work)
        os.write(ledger, msg.value() + b"\n")
        os.write(trace, b".")

    def worker(msg) -> None:  # MANUAL: processed by a pool, acknowledged out of order
        process(msg)
        c.ack(msg)

    def watchdog() -> None:
        while not (args.duration and time.monotonic() - started > args.duration):
            time.sleep(0.05)
        c.stop()

    def idle(consumer: OffsetConsumer) -> None:  # on the consumer thread
        if args.until_end and time.monotonic() - last_record[0] > 1.0 and _at_end(consumer, args.topic):
            consumer.stop()

    if args.duration:
        threading.Thread(target=watchdog, daemon=True).start()
    for msg in c.records(0.2, on_idle=idle):
        last_record[0] = time.monotonic()
        if args.policy == "store":
            with c.transaction() as tx:
                tx.execute(f"INSERT INTO {args.table} (n) VALUES ({ph})", (int(msg.value()),))
                tx.ack(msg)
            os.write(trace, b".")
        elif pool is not None:
            pool.submit(worker, msg)
        else:
            process(msg)
            if policy.is_manual:
                c.ack(msg)
    if pool is not None:
        pool.shutdown(wait=True)
        c.poll(0)  # applies the pool's queued acknowledgements
    c.close()


def _at_end(c: OffsetConsumer, topic: str) -> bool:
    """Every partition of the topic read to its log end, not only the owned ones: under the
    consumer protocol a killed member keeps its partitions until its session expires, so the
    last process can own part of the topic for a while, and finishing that part is not the end.
    An owned partition stands at its position; one with nothing fetched since the assignment,
    or one owned by somebody else, stands at the group's committed (or stored) offset."""
    from confluent_kafka import TopicPartition as CkTP

    meta = c.kafka.list_topics(topic, timeout=10).topics.get(topic)
    if meta is None or meta.error is not None or not meta.partitions:
        return False
    everything = [CkTP(topic, p) for p in sorted(meta.partitions)]
    owned = [CkTP(tp.topic, tp.partition) for tp in c.assignment() if tp.topic == topic]
    known = {(p.topic, p.partition): p.offset for p in c.kafka.position(owned) if p.offset >= 0}
    rest = [tp for tp in everything if (tp.topic, tp.partition) not in known]
    if rest:
        if c._store is not None:
            stored = c._store.load(c.group)
            for p in rest:
                known[(p.topic, p.partition)] = stored.get(TopicPartition(p.topic, p.partition), -1)
        else:
            for p in c.kafka.committed(rest, timeout=10):
                known[(p.topic, p.partition)] = p.offset
    for tp in everything:
        lo, hi = c.kafka.get_watermark_offsets(tp, timeout=5, cached=False)
        at = known.get((tp.topic, tp.partition), -1)
        if (at if at >= 0 else lo) < hi:  # no offset yet: the lab's reset policy is earliest
            return False
    return True

if __name__ == "__main__":
    main()
