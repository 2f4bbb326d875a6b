"""offsetkeeper: see, move, back up and restore Kafka consumer offsets — safely.

The public surface is re-exported here; everything else is an implementation detail.
"""

from offsetkeeper.config import Connection, load_config_file, resolve_connection
from offsetkeeper.errors import (
    ConfigError,
    GroupActiveError,
    KafkaOperationError,
    OffsetkeeperError,
    PartialFailure,
    StoreError,
    UnknownGroupError,
    UnknownTopicError,
    UsageError,
)
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.models import (
    CommittedOffset,
    GroupInfo,
    GroupListing,
    MemberInfo,
    TopicPartition,
    Watermarks,
)

__version__ = "0.1.0"

__all__ = [
    "CommittedOffset",
    "ConfigError",
    "Connection",
    "GroupActiveError",
    "GroupInfo",
    "GroupListing",
    "KafkaAdmin",
    "KafkaOperationError",
    "MemberInfo",
    "OffsetkeeperError",
    "PartialFailure",
    "StoreError",
    "TopicPartition",
    "UnknownGroupError",
    "UnknownTopicError",
    "UsageError",
    "Watermarks",
    "__version__",
    "load_config_file",
    "resolve_connection",
]
