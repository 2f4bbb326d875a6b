"""Measure each step of a backup task separately, on the same records, in one process.

    .venv/bin/python bench/backup_parts.py [--mb 20] [--value-bytes 1000] [--bootstrap HOST:PORT]

Fills one partition, consumes it once into memory (confluent-kafka Messages), then times each
step of `backup.task` on those records: Message -> Arrow conversion (`_Batch.to_arrow`, per
batch size), the record checksum (`checksum.batch_checksum`), and the Parquet write at several
zstd levels and row-group sizes (to memory). Prints JSON with seconds and MB/s per step, and
kcat consuming the same partition to a file as the yardstick.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import time
import uuid

from fill import fill_topic, workspace  # bench/ is on sys.path when run as a script


def best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=20)
    ap.add_argument("--value-bytes", type=int, default=1000)
    ap.add_argument("--bootstrap", default=None)
    args = ap.parse_args()

    import pyarrow as pa
    import pyarrow.parquet as pq
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CkTP

    from offsetkeeper.backup import checksum as ck
    from offsetkeeper.backup.task import file_schema
    from offsetkeeper.records.read import _Batch
    from offsetkeeper.records.read import arrow_schema as _arrow_schema

    with workspace("okparts-", args.bootstrap) as (tmp, bootstrap):
        topic = f"parts-{uuid.uuid4().hex[:8]}"
        n, nbytes = fill_topic(bootstrap, topic, 1, args.mb, args.value_bytes)
        mb = nbytes / 2**20
        with (tmp / "kcat.out").open("wb") as f:
            t = time.perf_counter()
            subprocess.run(["kcat", "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e",
                            "-q", "-X", "receive.message.max.bytes=1000000000", "-f", "%o %k %s\n"],
                           stdout=f, check=True)
            kcat_s = time.perf_counter() - t

        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "parts", "enable.auto.commit": False,
                      "receive.message.max.bytes": "1000000000", "fetch.wait.max.ms": "10"})
        c.assign([CkTP(topic, 0, 0)])
        msgs: list = []
        t = time.perf_counter()
        while len(msgs) < n:
            msgs.extend(m for m in c.consume(min(5000, n - len(msgs)), 1.0) if m.error() is None)
        consume_s = time.perf_counter() - t
        c.close()

        schema = _arrow_schema()
        fschema = file_schema()
        out: dict = {"records": n, "mb": round(mb, 1), "kcat_seconds": round(kcat_s, 3),
                     "consume_into_messages": round(consume_s, 3)}

        def convert(size: int) -> list:
            batches = []
            for i in range(0, n, size):
                b = _Batch()
                b.msgs = msgs[i:i + size]
                full = b.to_arrow(schema, topic, 0)
                batches.append(pa.RecordBatch.from_arrays(full.columns[2:], schema=fschema))
            return batches

        for size in (1000, 5000, 20000):
            out[f"to_arrow_batch_{size}"] = round(best(lambda s=size: convert(s)), 3)
        batches = convert(5000)
        out["checksum"] = round(best(lambda: [ck.batch_checksum(b) for b in batches]), 3)
        table = pa.Table.from_batches(batches, schema=fschema)

        def write(**kw) -> int:
            buf = io.BytesIO()
            pq.write_table(table, buf, **kw)
            return buf.tell()

        for name, kw in {"zstd_default_level": {"compression": "zstd"},
                         "zstd_level_3": {"compression": "zstd", "compression_level": 3},
                         "zstd_level_1": {"compression": "zstd", "compression_level": 1},
                         "zstd_row_group_8mb": {"compression": "zstd", "row_group_size": 8000},
                         "none": {"compression": "none"}}.items():
            secs = best(lambda kw=kw: write(**kw))
            out[f"parquet_{name}"] = {"seconds": round(secs, 3), "mb": round(write(**kw) / 2**20, 1)}
        out["mb_per_s"] = {k: round(mb / v, 1) for k, v in out.items()
                           if isinstance(v, float) and k not in ("kcat_seconds", "mb") and v > 0}
        out["kcat_mb_per_s"] = round(mb / kcat_s, 1)
        out["load_average_1m"] = round(os.getloadavg()[0], 2)
        print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
