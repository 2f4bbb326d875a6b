"""offsetkeeper: see, move, back up and restore Kafka consumer offsets — safely.

The public surface is re-exported here — the operations layer (one function per user operation,
with typed requests), the admin facade, the domain types and the error tree; everything else
is an implementation detail.
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
from offsetkeeper.ops import (
    DeleteRequest,
    ExecuteOptions,
    Outcome,
    ResetRequest,
    RollbackRequest,
    TargetKind,
    TargetSpec,
    create_snapshot,
    delete,
    describe_offsets,
    describe_states,
    diff_with_live,
    execute_plan,
    list_groups,
    list_snapshots,
    plan_reset_request,
    reset_offsets,
    rollback,
    show_offsets,
)
from offsetkeeper.progress import ProgressEvent
from offsetkeeper.reset.plan import TopicSpec

__version__ = "0.1.0"

__all__ = [
    "CommittedOffset",
    "ConfigError",
    "Connection",
    "DeleteRequest",
    "ExecuteOptions",
    "GroupActiveError",
    "GroupInfo",
    "GroupListing",
    "KafkaAdmin",
    "KafkaOperationError",
    "MemberInfo",
    "OffsetkeeperError",
    "Outcome",
    "PartialFailure",
    "ProgressEvent",
    "ResetRequest",
    "RollbackRequest",
    "StoreError",
    "TargetKind",
    "TargetSpec",
    "TopicPartition",
    "TopicSpec",
    "UnknownGroupError",
    "UnknownTopicError",
    "UsageError",
    "Watermarks",
    "__version__",
    "create_snapshot",
    "delete",
    "describe_offsets",
    "describe_states",
    "diff_with_live",
    "execute_plan",
    "list_groups",
    "list_snapshots",
    "load_config_file",
    "plan_reset_request",
    "reset_offsets",
    "resolve_connection",
    "rollback",
    "show_offsets",
]
