"""Benchmark: restore with compressed batches (the default now) vs uncompressed (issue 32, goal 2).

    .venv/bin/python bench/restore_compression.py [--mb-per-partition 10 --partitions 4] [--repeat 2]

One local Apache Kafka (source and target), a topic of PARTITIONS x MB of 1 KB records that
compress like event JSON (a random id, a few words from a small vocabulary, numbers), backed up
once; then, alternating, restores of the backup on one Spark session with `--compression`
zstd (the default when the source does not say), lz4 and none. Per restore: the time of
`run_restore` and the bytes of the target topic on the broker (`kafka-log-dirs`). Yardstick in
the same run on the same records: `kcat -P` from a file with `-z zstd` and with no
compression (bytes the same way). JSON out, with ratios.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from fill import fill_topic

WORDS = ["order", "shipped", "pending", "payment", "refund", "customer", "warehouse", "berlin",
         "paris", "express", "standard", "priority", "gift", "return", "cancelled", "delivered"]


def _value(n: int) -> bytes:
    rnd = random.Random()
    doc = {"id": uuid.uuid4().hex, "amount": rnd.randint(1, 99999), "ts": time.time_ns(),
           "tags": [rnd.choice(WORDS) for _ in range(8)], "note": " ".join(
               rnd.choice(WORDS) for _ in range(200))}
    return json.dumps(doc).encode()[:n].ljust(n, b" ")


def topic_bytes(bootstrap: str, topic: str) -> int:
    from offsetkeeper.devbroker.dist import classpath, java_executable

    out = subprocess.run([java_executable(), "-Xmx256m", "-cp", classpath(),
                          "org.apache.kafka.tools.LogDirsCommand", "--describe",
                          "--bootstrap-server", bootstrap, "--topic-list", topic],
                         capture_output=True, text=True, timeout=180, check=True).stdout
    doc = json.loads(next(ln for ln in out.splitlines() if ln.startswith("{")))
    return sum(p["size"] for b in doc["brokers"] for d in b["logDirs"] for p in d["partitions"])


def kcat(bootstrap: str, topic: str, partitions: int, file: Path, codec: str) -> float:
    from confluent_kafka.admin import AdminClient, NewTopic

    a = AdminClient({"bootstrap.servers": bootstrap})
    for f in a.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)
    time.sleep(1)
    t = time.monotonic()
    subprocess.run(["kcat", "-P", "-b", bootstrap, "-t", topic, "-K", "\t", "-q", "-z", codec,
                    "-X", "enable.idempotence=true", "-X", "acks=all", "-X", "linger.ms=20",
                    "-X", "batch.size=1000000", "-l", str(file)], check=True)
    return time.monotonic() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb-per-partition", type=float, default=10)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--bootstrap")
    args = ap.parse_args()

    from offsetkeeper import devbroker
    from offsetkeeper.backup.config import BackupConfig
    from offsetkeeper.backup.run import run_backup
    from offsetkeeper.config import Connection
    from offsetkeeper.restore.config import RestoreOptions
    from offsetkeeper.restore.run import run_restore
    from offsetkeeper.spark.session import get_spark

    tmp = Path(tempfile.mkdtemp(prefix="ok-bench-rcomp-"))
    bootstrap = args.bootstrap or devbroker.start(devbroker.free_port(), tmp / "broker",
                                                  tied=True).bootstrap
    token = uuid.uuid4().hex[:6]
    topic = f"bench-rc-{token}"
    file = tmp / "records.tsv"
    records, nbytes = fill_topic(bootstrap, topic, args.partitions, args.mb_per_partition, 1000,
                                 make_value=_value, copy_to=file)
    spark = get_spark("local[*]")
    dest = str(tmp / "backups")
    run_backup(BackupConfig(connection=Connection(bootstrap), include=(topic,), destination=dest,
                            backup_id="bench"), spark=spark)
    secs: dict[str, list[float]] = {}
    size: dict[str, int] = {}
    for r in range(args.repeat):
        for codec in ("zstd", "lz4", "none"):
            target = f"{topic}-{codec}-{r}"
            t = time.monotonic()
            res = run_restore(RestoreOptions(dest, "bench", Connection(bootstrap),
                                             restore_id=f"{codec}{r}", rename={topic: target},
                                             compression=None if codec == "zstd" else codec),
                              spark=spark)
            secs.setdefault(f"restore_{codec}", []).append(time.monotonic() - t)
            assert res.records == records
            size[f"restore_{codec}"] = topic_bytes(bootstrap, target)
        for codec in ("zstd", "none"):
            target = f"{topic}-kcat-{codec}-{r}"
            secs.setdefault(f"kcat_{codec}", []).append(
                kcat(bootstrap, target, args.partitions, file, codec))
            size[f"kcat_{codec}"] = topic_bytes(bootstrap, target)
    med = {k: round(statistics.median(v), 2) for k, v in secs.items()}
    out = {"records": records, "key_value_mb": round(nbytes / 2**20, 1),
           "seconds_median": med, "seconds_all": {k: [round(x, 2) for x in v] for k, v in secs.items()},
           "target_mb": {k: round(v / 2**20, 1) for k, v in size.items()},
           "ratios": {
               "bytes_none_vs_zstd": round(size["restore_none"] / size["restore_zstd"], 2),
               "bytes_restore_zstd_vs_kcat_zstd": round(size["restore_zstd"] / size["kcat_zstd"], 2),
               "time_zstd_vs_none": round(med["restore_zstd"] / med["restore_none"], 2),
               "time_restore_zstd_vs_kcat_zstd": round(med["restore_zstd"] / med["kcat_zstd"], 2),
               "time_restore_none_vs_kcat_none": round(med["restore_none"] / med["kcat_none"], 2)}}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
