"""The operations layer: one function per user operation, with typed requests and results.

The command line, the web dashboard and the streaming tools call these functions; none of them
plans, executes or merges configuration on its own. Layers (a module may import only from its
own layer or those below; tests/unit/test_layers.py enforces it):

    cli, web, demo              parse input, call ONE operation, render the result
    ops                         this package: requests -> domain calls -> outcomes
    reset, snapshots, backup,   domain logic (reset/ imports neither snapshots nor restore:
    restore, inspect, history,  the executor gets its snapshot function injected)
    consumer, streaming, ...
    kafka, spark                the only code that talks to confluent-kafka / pyspark
    config, errors, models,     foundations
    storage, progress, redact
"""

from offsetkeeper.inspect import (
    OffsetRow,
    PartitionOffsets,
    describe_offsets,
    describe_states,
    list_groups,
    show_offsets,
)
from offsetkeeper.ops.reset import (
    DeleteRequest,
    ExecuteOptions,
    Outcome,
    ResetRequest,
    RollbackRequest,
    delete,
    execute_plan,
    plan_reset_request,
    reset_offsets,
    rollback,
    snapshot_store_url,
)
from offsetkeeper.ops.snapshots import (
    create_snapshot,
    diff_with_live,
    list_snapshots,
    open_snapshot_store,
)
from offsetkeeper.ops.targets import TargetKind, TargetSpec, target_from_flags

__all__ = [
    "DeleteRequest",
    "ExecuteOptions",
    "OffsetRow",
    "Outcome",
    "PartitionOffsets",
    "ResetRequest",
    "RollbackRequest",
    "TargetKind",
    "TargetSpec",
    "create_snapshot",
    "delete",
    "describe_offsets",
    "describe_states",
    "diff_with_live",
    "execute_plan",
    "list_groups",
    "list_snapshots",
    "open_snapshot_store",
    "plan_reset_request",
    "reset_offsets",
    "rollback",
    "show_offsets",
    "snapshot_store_url",
    "target_from_flags",
]
