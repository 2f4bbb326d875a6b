"""Offsets from application code: commit policies, out-of-order acknowledgements, rebalance
handling, external offset stores with transactions, live resets, and counters — a thin layer
over confluent_kafka.Consumer (the application still receives confluent-kafka messages).

    from offsetkeeper.consumer import CommitPolicy, OffsetConsumer

    with OffsetConsumer({"bootstrap.servers": "localhost:9092", "group.id": "payments"},
                        ["orders"], policy=CommitPolicy.batch(), auto_offset_reset="earliest") as c:
        for msg in c.records():
            handle(msg)

See docs/consumer.md.
"""

from offsetkeeper.consumer.core import CommitResult, OffsetConsumer
from offsetkeeper.consumer.live import CONTROL_TOPIC, ControlTopicChannel, live_reset
from offsetkeeper.consumer.live_auth import generate_key, load_signer
from offsetkeeper.consumer.metrics import ConsumerMetrics, prometheus_collector
from offsetkeeper.consumer.policy import AckMode, CommitPolicy
from offsetkeeper.consumer.stores import (
    OffsetStore,
    PostgresOffsetStore,
    SqliteOffsetStore,
    StoreTransaction,
    open_store,
)

__all__ = [
    "CONTROL_TOPIC",
    "AckMode",
    "CommitPolicy",
    "CommitResult",
    "ConsumerMetrics",
    "ControlTopicChannel",
    "OffsetConsumer",
    "OffsetStore",
    "PostgresOffsetStore",
    "SqliteOffsetStore",
    "StoreTransaction",
    "generate_key",
    "live_reset",
    "load_signer",
    "open_store",
    "prometheus_collector",
]
