"""Hand-made streaming checkpoints in the format of Spark's JVM Kafka source (for tests)."""

from __future__ import annotations

import json
import os
import time

META = ('{"batchWatermarkMs":0,"batchTimestampMs":1700000000000,"conf":'
        '{"spark.sql.shuffle.partitions":"200"}}')


def minute_topic(bootstrap: str, name: str) -> str:
    """Create `name`: 2 partitions x 20 records, one a minute up to about now (kept: no retention)."""
    from kafkatools import create_topic, produce

    create_topic(bootstrap, name, 2, {"retention.ms": "-1"})
    now = int(time.time() * 1000)
    produce(bootstrap, name, [(p, None, f"{p}-{i}".encode(), None, now - (20 - i) * 60_000)
                              for i in range(20) for p in range(2)])
    return name


def jvm_checkpoint(root, batches: dict[int, dict], commits: list[int], *, state=False,
                   crc=True, extra_sources: tuple[str, ...] = ()):
    """A checkpoint as Spark's JVM Kafka source writes it (v1, metadata line, offsets line)."""
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    (root / "metadata").write_text('{"id":"0c3a1d2e-5f6a-4b7c-8d9e-0f1a2b3c4d5e"}')
    for n, offsets in batches.items():
        lines = ["v1", META, json.dumps(offsets, separators=(",", ":")), *extra_sources]
        (root / "offsets" / str(n)).write_text("\n".join(lines))
        if crc:
            (root / "offsets" / f".{n}.crc").write_bytes(b"crc\x00\x00\x00\x02\x00junk")
    for n in commits:
        (root / "commits" / str(n)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    (root / "sources" / "0").mkdir(parents=True)
    first = batches[min(batches)]
    (root / "sources" / "0" / "0").write_bytes(b"\x00v1\n" + json.dumps(first).encode())
    if state:
        (root / "state" / "0" / "0").mkdir(parents=True)
        (root / "state" / "0" / "0" / "1.delta").write_bytes(b"x")
    old = time.time() - 3600
    for dirpath, _, files in os.walk(root):
        for f in files:
            os.utime(os.path.join(dirpath, f), (old, old))
    return str(root)
