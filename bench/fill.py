"""Shared by the benchmarks: a workspace with a broker, and filling a benchmark topic."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path


@contextlib.contextmanager
def workspace(prefix: str, bootstrap: str | None, *,
              keep: tuple[str, ...] = ()) -> Iterator[tuple[Path, str]]:
    """A temporary directory and a broker: `bootstrap`, or a development broker started in the
    directory. On exit the broker is stopped and the directory deleted (a run writes GBs: left
    behind, they filled the disk), except the entries named in `keep`."""
    from offsetkeeper import devbroker

    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    started = None
    try:
        if not bootstrap:
            started = tmp / "broker"
            bootstrap = devbroker.start(devbroker.free_port(), started, tied=True).bootstrap
        yield tmp, bootstrap
    finally:
        if started:
            devbroker.stop(started)
        if keep:
            for entry in tmp.iterdir():
                if entry.name not in keep:
                    shutil.rmtree(entry, ignore_errors=True)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def fill_topic(bootstrap: str, topic: str, partitions: int, mb: float, value_bytes: int, *,
               make_value: Callable[[int], bytes] = os.urandom,
               copy_to: Path | None = None) -> tuple[int, int]:
    """Create `topic` and produce ~`mb` MB per partition of `value_bytes`-byte values.

    With `copy_to`, also write every record as a `key<TAB>value` line (input for `kcat -P`).
    Returns (records, key+value bytes).
    """
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    a = AdminClient({"bootstrap.servers": bootstrap})
    for f in a.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)
    time.sleep(1)
    per_partition = max(1, int(mb * 1024 * 1024 / value_bytes))
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                  "compression.type": "none", "queue.buffering.max.kbytes": 1_048_576})
    total = 0
    out = copy_to.open("wb") if copy_to else None
    try:
        for i in range(per_partition):
            for part in range(partitions):
                k, v = f"key-{part}-{i}".encode(), make_value(value_bytes)
                if out:
                    out.write(k + b"\t" + v + b"\n")
                while True:
                    try:
                        p.produce(topic, key=k, value=v, partition=part)
                        break
                    except BufferError:
                        p.poll(0.1)
                total += len(k) + len(v)
            if i % 1000 == 0:
                p.poll(0)
    finally:
        if out:
            out.close()
    assert p.flush(300) == 0
    return per_partition * partitions, total
