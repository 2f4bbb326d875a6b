"""The operations layer: one function per user operation, with typed requests and results.

The command line, the web dashboard and the streaming tools call these functions; none of them
plans, executes or merges configuration on its own. Layers (a module may import only from its
own layer or those below; tests/unit/test_layers.py enforces it):

    cli, web, demo              parse input, call ONE operation, render the result
                                (cli imports web only to start it: `offsetkeeper ui`)
    ops                         this package: requests -> domain calls -> outcomes, one module
                                per capability (reset, targets, snapshots, history, commits,
                                zk, streaming, backup, restore, live, streams_reset); the
                                modules not re-exported here are imported by name
    reset, snapshots, backup,   domain logic (reset/ imports neither snapshots nor restore:
    restore, describe, history,  the executor gets its snapshot function injected)
    consumer, streaming, ...
    kafka, spark                the only code that talks to confluent-kafka / pyspark
    config, errors, models,     foundations
    storage, progress, redact
"""

from offsetkeeper.describe import (
    OffsetRow,
    PartitionOffsets,
    describe_offsets,
    describe_states,
    list_groups,
    show_offsets,
)
from offsetkeeper.ops.backup import (
    BackupRequest,
    describe_backup,
    list_backups,
    run_backup,
    validate_backup,
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
from offsetkeeper.ops.restore import (
    MappingSummary,
    RestoreRequest,
    ThreePhaseRequest,
    ValidateRequest,
    list_restores,
    mapping_lookup,
    mapping_summary,
    restore,
    three_phase,
)
from offsetkeeper.ops.restore import validate as validate_restore
from offsetkeeper.ops.snapshots import (
    create_snapshot,
    diff_with_live,
    list_snapshots,
    open_snapshot_store,
)
from offsetkeeper.ops.targets import TargetKind, TargetSpec, target_from_flags

__all__ = [
    "BackupRequest",
    "DeleteRequest",
    "ExecuteOptions",
    "MappingSummary",
    "OffsetRow",
    "Outcome",
    "PartitionOffsets",
    "ResetRequest",
    "RestoreRequest",
    "RollbackRequest",
    "TargetKind",
    "TargetSpec",
    "ThreePhaseRequest",
    "ValidateRequest",
    "create_snapshot",
    "delete",
    "describe_backup",
    "describe_offsets",
    "describe_states",
    "diff_with_live",
    "execute_plan",
    "list_backups",
    "list_groups",
    "list_restores",
    "list_snapshots",
    "mapping_lookup",
    "mapping_summary",
    "open_snapshot_store",
    "plan_reset_request",
    "reset_offsets",
    "restore",
    "rollback",
    "run_backup",
    "show_offsets",
    "snapshot_store_url",
    "target_from_flags",
    "three_phase",
    "validate_backup",
    "validate_restore",
]
