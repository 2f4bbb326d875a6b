"""Benchmark: how far behind a followed backup is (`backup run --follow`), against a kcat tail.

On one broker (started here, or --bootstrap) and one Spark session: a follower (the library's
`follow_backup`, --interval I) and `kcat -C -o end` tail the same topic while batches of N
records per partition are produced every B seconds. Per batch it records
  - kcat: produce (flushed) -> kcat printed the batch's last offset of every partition;
  - backup: produce -> a manifest generation covering the batch was written (polled every 20 ms);
and per increment its duration. Prints one JSON document (medians and all values).

    .venv/bin/python bench/follow_latency.py --interval 5 --batches 8 --every 7 --records 2000
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--interval", type=float, default=5.0, help="follower interval, seconds")
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--every", type=float, default=7.0, help="seconds between batches")
    ap.add_argument("--records", type=int, default=2000, help="records per partition per batch")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--bootstrap")
    args = ap.parse_args()

    from confluent_kafka import Producer

    from offsetkeeper import devbroker
    from offsetkeeper.backup.config import BackupConfig
    from offsetkeeper.backup.follow import FollowOptions, follow_backup
    from offsetkeeper.backup.manifest import load_manifest, manifest_exists
    from offsetkeeper.config import Connection
    from offsetkeeper.kafka.admin import KafkaAdmin
    from offsetkeeper.spark.session import get_spark

    tmp = Path(tempfile.mkdtemp(prefix="ok-bench-follow-"))
    bootstrap = args.bootstrap or devbroker.start(devbroker.free_port(), tmp / "broker",
                                                  tied=True).bootstrap
    topic = f"bench-follow-{uuid.uuid4().hex[:6]}"
    with KafkaAdmin(Connection(bootstrap)) as admin:
        admin.create_topic(topic, args.partitions)
    dest = str(tmp / "backups")
    cfg = BackupConfig(connection=Connection(bootstrap), include=(topic,), destination=dest,
                       backup_id="bench")
    spark = get_spark("local[*]")

    stop = threading.Event()
    increments: list[float] = []
    follower = threading.Thread(target=follow_backup, args=(cfg, FollowOptions(
        interval_s=args.interval)), kwargs={"stop": stop, "spark": spark, "on_increment":
                                            lambda inc: increments.append(inc.seconds)})
    follower.start()

    seen: dict[int, int] = {}  # partition -> highest offset kcat printed
    seen_lock = threading.Lock()
    kcat = subprocess.Popen(["kcat", "-C", "-b", bootstrap, "-t", topic, "-o", "end", "-u",
                             "-f", "%p %o\\n"], stdout=subprocess.PIPE, text=True)

    def tail() -> None:
        for line in kcat.stdout:
            p, o = map(int, line.split())
            with seen_lock:
                seen[p] = max(seen.get(p, -1), o)
    threading.Thread(target=tail, daemon=True).start()
    time.sleep(3)  # kcat at the end before the first batch

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    value = b"x" * 500
    lat_kcat: list[float] = []
    lat_backup: list[float] = []
    sent = {p: 0 for p in range(args.partitions)}
    for b in range(args.batches):
        t_batch = time.monotonic()
        for p in range(args.partitions):
            for i in range(args.records):
                producer.produce(topic, key=f"{b}-{i}".encode(), value=value, partition=p)
                producer.poll(0)
        producer.flush(60)
        t0 = time.monotonic()
        for p in range(args.partitions):
            sent[p] += args.records
        want = dict(sent)
        got_kcat = got_backup = None
        deadline = t0 + 600
        while (got_kcat is None or got_backup is None) and time.monotonic() < deadline:
            now = time.monotonic()
            if got_kcat is None:
                with seen_lock:
                    if all(seen.get(p, -1) >= want[p] - 1 for p in want):
                        got_kcat = now - t0
            if got_backup is None and manifest_exists(dest, "bench"):
                ends = load_manifest(dest, "bench").end_offsets()
                if all(ends.get((topic, p), 0) >= want[p] for p in want):
                    got_backup = now - t0
            time.sleep(0.02)
        lat_kcat.append(round(got_kcat, 3) if got_kcat is not None else None)
        lat_backup.append(round(got_backup, 3) if got_backup is not None else None)
        time.sleep(max(0.0, args.every - (time.monotonic() - t_batch)))
    stop.set()
    follower.join(120)
    kcat.terminate()

    def med(xs):
        xs = [x for x in xs if x is not None]
        return round(statistics.median(xs), 3) if xs else None
    out = {"partitions": args.partitions, "records_per_batch": args.records * args.partitions,
           "interval_s": args.interval, "every_s": args.every, "batches": args.batches,
           "median_s": {"kcat_tail": med(lat_kcat), "backup_recorded": med(lat_backup),
                        "increment": med(increments)},
           "all_s": {"kcat_tail": lat_kcat, "backup_recorded": lat_backup,
                     "increment": [round(x, 3) for x in increments]}}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
