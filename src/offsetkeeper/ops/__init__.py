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

# Names are imported on first use (PEP 562): a command imports the operations it runs, not
# every operation's dependencies (`groups list` needs neither Spark planning nor restore).
_EXPORTS = {
    "OffsetRow": ("offsetkeeper.describe", "OffsetRow"),
    "PartitionOffsets": ("offsetkeeper.describe", "PartitionOffsets"),
    "describe_offsets": ("offsetkeeper.describe", "describe_offsets"),
    "describe_states": ("offsetkeeper.describe", "describe_states"),
    "list_groups": ("offsetkeeper.describe", "list_groups"),
    "show_offsets": ("offsetkeeper.describe", "show_offsets"),
    "BackupRequest": ("offsetkeeper.ops.backup", "BackupRequest"),
    "describe_backup": ("offsetkeeper.ops.backup", "describe_backup"),
    "follow_backup": ("offsetkeeper.ops.backup", "follow_backup"),
    "follow_state": ("offsetkeeper.ops.backup", "follow_state"),
    "list_backups": ("offsetkeeper.ops.backup", "list_backups"),
    "run_backup": ("offsetkeeper.ops.backup", "run_backup"),
    "validate_backup": ("offsetkeeper.ops.backup", "validate_backup"),
    "DeleteRequest": ("offsetkeeper.ops.reset", "DeleteRequest"),
    "ExecuteOptions": ("offsetkeeper.reset.options", "ExecuteOptions"),
    "Outcome": ("offsetkeeper.ops.reset", "Outcome"),
    "PlanFiles": ("offsetkeeper.ops.reset", "PlanFiles"),
    "PlannedChange": ("offsetkeeper.ops.reset", "PlannedChange"),
    "ResetRequest": ("offsetkeeper.ops.reset", "ResetRequest"),
    "RollbackRequest": ("offsetkeeper.ops.reset", "RollbackRequest"),
    "delete": ("offsetkeeper.ops.reset", "delete"),
    "execute_plan": ("offsetkeeper.ops.reset", "execute_plan"),
    "plan_reset_request": ("offsetkeeper.ops.reset", "plan_reset_request"),
    "prepare_reset": ("offsetkeeper.ops.reset", "prepare_reset"),
    "prepare_rollback": ("offsetkeeper.ops.reset", "prepare_rollback"),
    "execute_planned": ("offsetkeeper.ops.reset", "execute_planned"),
    "reset_offsets": ("offsetkeeper.ops.reset", "reset_offsets"),
    "rollback": ("offsetkeeper.ops.reset", "rollback"),
    "snapshot_store_url": ("offsetkeeper.ops.reset", "snapshot_store_url"),
    "MappingSummary": ("offsetkeeper.ops.restore", "MappingSummary"),
    "RestoreRequest": ("offsetkeeper.ops.restore", "RestoreRequest"),
    "ThreePhaseRequest": ("offsetkeeper.ops.restore", "ThreePhaseRequest"),
    "ValidateRequest": ("offsetkeeper.ops.restore", "ValidateRequest"),
    "list_restores": ("offsetkeeper.ops.restore", "list_restores"),
    "mapping_lookup": ("offsetkeeper.ops.restore", "mapping_lookup"),
    "mapping_summary": ("offsetkeeper.ops.restore", "mapping_summary"),
    "restore": ("offsetkeeper.ops.restore", "restore"),
    "three_phase": ("offsetkeeper.ops.restore", "three_phase"),
    "create_snapshot": ("offsetkeeper.ops.snapshots", "create_snapshot"),
    "diff_with_live": ("offsetkeeper.ops.snapshots", "diff_with_live"),
    "list_snapshots": ("offsetkeeper.ops.snapshots", "list_snapshots"),
    "open_snapshot_store": ("offsetkeeper.ops.snapshots", "open_snapshot_store"),
    "validate_restore": ("offsetkeeper.ops.restore", "validate"),
    "TargetKind": ("offsetkeeper.ops.targets", "TargetKind"),
    "TargetSpec": ("offsetkeeper.ops.targets", "TargetSpec"),
    "target_from_flags": ("offsetkeeper.ops.targets", "target_from_flags"),
}


def __getattr__(name: str):
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'offsetkeeper.ops' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "BackupRequest",
    "DeleteRequest",
    "ExecuteOptions",
    "MappingSummary",
    "OffsetRow",
    "Outcome",
    "PartitionOffsets",
    "PlanFiles",
    "PlannedChange",
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
    "execute_planned",
    "follow_backup",
    "follow_state",
    "list_backups",
    "list_groups",
    "list_restores",
    "list_snapshots",
    "mapping_lookup",
    "mapping_summary",
    "open_snapshot_store",
    "plan_reset_request",
    "prepare_reset",
    "prepare_rollback",
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
