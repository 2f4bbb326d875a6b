"""Read a whole topic, from each partition's log start to its log end as it was when the read
began, with one consumer that never joins a group or commits.

The independent readers of internal topics use it: Connect's offsets topic
(connect/offsets_topic.py) and MirrorMaker 2's checkpoints and offset syncs (mm2/records.py).
Records arriving after the read began are not waited for, so a topic written all the time
still ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from offsetkeeper.errors import OffsetkeeperError

__all__ = ["RawRecord", "read_to_end"]


@dataclass(frozen=True)
class RawRecord:
    """One record as read: untrusted bytes and where they were."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int | None


def read_to_end(client_config: dict, topic: str, on_record: Callable[[RawRecord], None], *,
                read_committed: bool = False, timeout_s: float = 60.0,
                missing_hint: str = "") -> int:
    """Call `on_record` for every record of `topic` up to the log ends seen at the start, in
    log order per partition; return how many records it was given.

    `read_committed`: aborted transactional records are skipped (Connect writes its offsets
    topic transactionally with exactly-once source support). A topic that does not exist is an
    OffsetkeeperError naming it (with `missing_hint` appended); so is a read that takes longer
    than `timeout_s`. `on_record` may raise to stop the read.
    """
    from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

    from offsetkeeper.kafka import clients

    conf = {**client_config, "group.id": "offsetkeeper-topic-reader",
            "enable.auto.commit": False, "enable.partition.eof": False}
    if read_committed:
        conf["isolation.level"] = "read_committed"
    consumer = clients.consumer(conf)
    count = 0
    try:
        md = consumer.list_topics(topic, timeout=10)
        t = md.topics.get(topic)
        if t is None or t.error is not None or not t.partitions:
            raise OffsetkeeperError(f"topic {topic!r} does not exist on the cluster"
                                    + (f" ({missing_hint})" if missing_hint else ""))
        ends = {}
        for p in t.partitions:
            lo, hi = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            if hi > lo:
                ends[p] = hi
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
        deadline = time.monotonic() + timeout_s
        done: set[int] = set()
        while len(done) < len(ends):
            if time.monotonic() > deadline:
                raise OffsetkeeperError(f"reading topic {topic!r} took longer than "
                                        f"{timeout_s:.0f}s")
            for msg in consumer.consume(1000, 1.0):
                if msg.error():
                    continue
                p, off = msg.partition(), msg.offset()
                if p in done or off >= ends[p]:
                    continue  # written after the read began
                kind, ts = msg.timestamp()
                count += 1
                on_record(RawRecord(p, off, msg.key(), msg.value(), ts if kind else None))
                if off + 1 >= ends[p]:
                    done.add(p)
            # transaction markers may end a partition: its position tells, not the last record
            for tp in consumer.position([TopicPartition(topic, p) for p in ends if p not in done]):
                if tp.offset >= ends[tp.partition]:
                    done.add(tp.partition)
    except KafkaException as exc:
        raise OffsetkeeperError(f"reading topic {topic!r} failed: {exc}") from None
    finally:
        consumer.close()
    return count
