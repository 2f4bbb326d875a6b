"""Helpers for backup tests: an independent reader (plain confluent-kafka) and record producers."""

from __future__ import annotations

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTP
from confluent_kafka.admin import AdminClient

from offsetkeeper.kafka.errors import PARTITION_EOF


def watermarks(bootstrap: str, c: Consumer, topic: str, p: int,
               patience: float = 60.0) -> tuple[int, int]:
    """Log start/end, asked again while the partition's leader moves (fault tests).

    After a failed try each try asks through a fresh consumer: librdkafka's client that saw the
    leader die can keep failing long after leadership moved (measured: over 60 s)."""
    import time

    from confluent_kafka import KafkaException

    deadline = time.monotonic() + patience
    asker = c
    while True:
        try:
            return asker.get_watermark_offsets(CkTP(topic, p), timeout=10, cached=False)
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
        finally:
            if asker is not c:
                asker.close()
        asker = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks-reader"})


def independent_read(bootstrap: str, topic: str, partitions: int,
                     isolation: str = "read_committed") -> list[tuple]:
    """Every record of a topic as (partition, offset, timestamp, key, value, headers)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "backup-test-reader",
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    out = []
    try:
        for p in range(partitions):
            low, high = watermarks(bootstrap, c, topic, p)
            if high <= low:
                continue
            c.assign([CkTP(topic, p, low)])
            while True:
                m = c.poll(10)
                assert m is not None, f"timed out reading {topic}:{p}"
                if m.error():
                    if m.error().code() == PARTITION_EOF:
                        break
                    raise AssertionError(m.error().str())
                out.append((p, m.offset(), m.timestamp()[1], m.key(), m.value(),
                            [(k, v) for k, v in (m.headers() or [])]))
    finally:
        c.close()
    return sorted(out, key=lambda r: (r[0], r[1]))


def rows_of(df) -> list[tuple]:
    """Records of a Spark DataFrame in the same shape as independent_read (one topic)."""
    return sorted(((r["partition"], r["offset"], r["timestamp"],
                    None if r["key"] is None else bytes(r["key"]),
                    None if r["value"] is None else bytes(r["value"]),
                    [(h["key"], None if h["value"] is None else bytes(h["value"]))
                     for h in (r["headers"] or [])]) for r in df.collect()),
                  key=lambda r: (r[0], r[1]))


def produce_transactions(bootstrap: str, topic: str, tx_id: str) -> None:
    """Partition 0: committed, aborted, committed transactions (markers occupy offsets)."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tx_id})
    p.init_transactions(15)
    for i, commit in enumerate([True, False, True, False, True]):
        p.begin_transaction()
        for j in range(3):
            p.produce(topic, key=f"tx{i}-{j}".encode(),
                      value=(b"committed" if commit else b"aborted") + bytes([i, j]), partition=0)
        p.flush(15)
        if commit:
            p.commit_transaction(15)
        else:
            p.abort_transaction(15)


def delete_records(bootstrap: str, topic: str, partition: int, before: int) -> None:
    """Advance the log start of a partition to `before`."""
    a = AdminClient({"bootstrap.servers": bootstrap})
    for f in a.delete_records([CkTP(topic, partition, before)]).values():
        f.result(15)


SPECIAL = [  # (partition, key, value, headers)
    (0, None, b"null-key"),
    (0, b"tomb", None),
    (0, b"dup-headers", b"v", [("h", b"1"), ("h", b"2"), ("h", None)]),
    (0, b"\x00\xff\x10binary", bytes(range(256))),
    (1, b"", b""),
    (1, None, None),
    (1, b"unicode-\xc3\xa9", "héllo".encode(), [("é", b"\x00")]),
]
