"""Benchmark: what junk on the live reset control topic costs a consumer (issue 31 C).

    .venv/bin/python bench/live_watcher.py [--records 100000] [--big 60] [--bootstrap HOST:PORT]

Writes RECORDS junk records (distinct keys, so compaction would keep them; distinct values, a
newline in each) and BIG unsigned ~700 KB requests of 15,000 offsets to a private control
topic, then measures:
- `watcher_catch_up_s`: a new `LiveResetWatcher` (the member side, its own thread) reading the
  topic until it is ready to apply requests, and its ignored-reason count and log lines;
- `poll_max_ms`: the longest `pending()` call the application's poll makes meanwhile;
- yardstick, in the same run on the same topic: a plain confluent-kafka consumer reading the
  topic to its end (`raw_read_s`) — the cost of the bytes alone.
Prints JSON with the ratio watcher/raw.
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import sys
import tempfile
import time
import uuid
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--big", type=int, default=60)
    ap.add_argument("--bootstrap")
    args = ap.parse_args()
    from confluent_kafka import Consumer, Producer
    from confluent_kafka import TopicPartition as CkTP
    from confluent_kafka.admin import AdminClient, NewTopic

    from offsetkeeper import devbroker
    from offsetkeeper.consumer.live import LiveResetWatcher
    from offsetkeeper.consumer.live_auth import generate_key, load_signer, trusted_keys

    with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp:
        tmp = Path(tmp)
        bootstrap = args.bootstrap or devbroker.start(devbroker.free_port(), tmp / "broker",
                                                      tied=True).bootstrap
        conf = {"bootstrap.servers": bootstrap}
        topic, group = f"bench-ctl-{uuid.uuid4().hex[:6]}", "bench-group"
        adm = AdminClient(conf)  # kept: a collected client cancels its requests
        adm.create_topics([NewTopic(topic, 1, 1, config={
            "cleanup.policy": "compact", "max.message.bytes": "4194304"})])[topic].result(30)
        p = Producer({**conf, "linger.ms": 20, "message.max.bytes": 4_000_000})
        for i in range(args.records):
            p.produce(topic, key=json.dumps(["reset", group, i]).encode(),
                      value=json.dumps({"v": f"9{i}\nWARNING forged {i}", "type": "reset"}).encode(),
                      partition=0)
            if i % 10_000 == 0:
                p.poll(0)
        big = json.dumps({"v": 3, "type": "reset", "group": group, "cluster_id": "x",
                          "offsets": [{"topic": "orders", "partition": n, "offset": 1}
                                      for n in range(15_000)], "key_id": None, "sig": None}).encode()
        for _ in range(args.big):
            p.produce(topic, key=json.dumps(["reset", group]).encode(), value=big, partition=0)
        assert p.flush(60) == 0

        c = Consumer({**conf, "group.id": "bench-raw", "enable.auto.commit": False,
                      "fetch.message.max.bytes": 4_200_000})
        end = c.get_watermark_offsets(CkTP(topic, 0), timeout=10, cached=False)[1]
        c.assign([CkTP(topic, 0, 0)])
        t = time.monotonic()
        pos = -1
        while pos + 1 < end:
            for m in c.consume(500, 1):
                if not m.error():
                    pos = m.offset()
        raw_s = time.monotonic() - t
        c.close()

        generate_key(tmp / "k")
        lines: list[str] = []

        class Keep(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                lines.append(record.getMessage())
        logging.getLogger("offsetkeeper.consumer.live").addHandler(Keep())
        logging.getLogger("offsetkeeper.consumer.live").setLevel(logging.INFO)
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t = time.monotonic()
        w = LiveResetWatcher(conf, group, trusted_keys([load_signer(tmp / "k").public]), topic)
        poll_max = 0.0
        while not w._ready():
            t0 = time.monotonic()
            w.pending(set())
            poll_max = max(poll_max, time.monotonic() - t0)
            time.sleep(0.01)
        watcher_s = time.monotonic() - t
        rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        w.close()
        print(json.dumps({
            "records": args.records + args.big, "raw_read_s": round(raw_s, 2),
            "watcher_catch_up_s": round(watcher_s, 2),
            "ratio_watcher_to_raw": round(watcher_s / raw_s, 2) if raw_s else None,
            "poll_max_ms": round(poll_max * 1000, 2), "ignored": sum(w.ignored.values()),
            "reasons": len(w.ignored), "log_lines": len(lines),
            "max_rss_growth_mb": round((rss1 - rss0) / 1024, 1)}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
