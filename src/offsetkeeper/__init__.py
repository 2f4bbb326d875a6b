"""offsetkeeper: see, move, back up and restore Kafka consumer offsets — safely.

The public surface is re-exported here — the operations layer (one function per user operation,
with typed requests), the admin facade, the domain types and the error tree; everything else
is an implementation detail.
"""

# Names are imported on first use (PEP 562): Spark's Python workers import this package for
# every job and must not pay for pydantic, YAML and the admin client they do not use.
_EXPORTS = {
    "Connection": "offsetkeeper.config",
    "load_config_file": "offsetkeeper.config",
    "resolve_connection": "offsetkeeper.kafka.connect",
    "ConfigError": "offsetkeeper.errors",
    "GroupActiveError": "offsetkeeper.errors",
    "KafkaOperationError": "offsetkeeper.errors",
    "OffsetkeeperError": "offsetkeeper.errors",
    "StoreError": "offsetkeeper.errors",
    "UnknownGroupError": "offsetkeeper.errors",
    "UnknownTopicError": "offsetkeeper.errors",
    "UsageError": "offsetkeeper.errors",
    "KafkaAdmin": "offsetkeeper.kafka.admin",
    "CommittedOffset": "offsetkeeper.models",
    "GroupInfo": "offsetkeeper.models",
    "GroupListing": "offsetkeeper.models",
    "MemberInfo": "offsetkeeper.models",
    "TopicPartition": "offsetkeeper.models",
    "Watermarks": "offsetkeeper.models",
    "DeleteRequest": "offsetkeeper.ops",
    "ExecuteOptions": "offsetkeeper.ops",
    "Outcome": "offsetkeeper.ops",
    "PlanFiles": "offsetkeeper.ops",
    "ResetRequest": "offsetkeeper.ops",
    "RollbackRequest": "offsetkeeper.ops",
    "TargetKind": "offsetkeeper.ops",
    "TargetSpec": "offsetkeeper.ops",
    "create_snapshot": "offsetkeeper.ops",
    "delete": "offsetkeeper.ops",
    "describe_offsets": "offsetkeeper.ops",
    "describe_states": "offsetkeeper.ops",
    "diff_with_live": "offsetkeeper.ops",
    "execute_plan": "offsetkeeper.ops",
    "list_groups": "offsetkeeper.ops",
    "list_snapshots": "offsetkeeper.ops",
    "plan_reset_request": "offsetkeeper.ops",
    "reset_offsets": "offsetkeeper.ops",
    "rollback": "offsetkeeper.ops",
    "show_offsets": "offsetkeeper.ops",
    "ProgressEvent": "offsetkeeper.progress",
    "ResetScope": "offsetkeeper.reset.plan",
    "TopicSpec": "offsetkeeper.reset.plan",
}


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'offsetkeeper' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


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
    "PlanFiles",
    "ProgressEvent",
    "ResetRequest",
    "ResetScope",
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
