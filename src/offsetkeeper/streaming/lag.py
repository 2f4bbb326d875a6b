"""Timestamps of the records at given positions (for time lag), read with one consumer."""

from __future__ import annotations

import time
from collections.abc import Mapping

from offsetkeeper.models import TopicPartition


def record_timestamps(conn, positions: Mapping[TopicPartition, int], *,
                      timeout_s: float = 10.0) -> dict[TopicPartition, int | None]:
    """The timestamp (ms) of the first record at or after each position (None if none came)."""
    if not positions:
        return {}
    from confluent_kafka import TopicPartition as CkTP

    from offsetkeeper.kafka import clients

    out: dict[TopicPartition, int | None] = {tp: None for tp in positions}
    c = clients.consumer(conn, {"group.id": "offsetkeeper-lag-probe",
                                "enable.auto.commit": "false", "enable.partition.eof": "false",
                                "isolation.level": "read_committed", "log_level": "3"})
    try:
        c.assign([CkTP(tp.topic, tp.partition, o) for tp, o in positions.items()])
        deadline = time.monotonic() + timeout_s
        waiting = set(positions)
        while waiting and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            tp = TopicPartition(m.topic(), m.partition())
            if tp in waiting:
                out[tp] = m.timestamp()[1]
                waiting.discard(tp)
                c.pause([CkTP(tp.topic, tp.partition)])
    finally:
        c.close()
    return out
