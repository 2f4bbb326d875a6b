"""offsetkeeper: see, move, back up and restore Kafka consumer offsets — safely.

The public surface is re-exported here; everything else is an implementation detail.
"""

# Names are imported on first use (PEP 562): Spark's Python workers import this package for
# every job and must not pay for pydantic, YAML and the admin client they do not use.
_EXPORTS = {
    "Connection": "offsetkeeper.config",
    "load_config_file": "offsetkeeper.config",
    "resolve_connection": "offsetkeeper.config",
    "ConfigError": "offsetkeeper.errors",
    "GroupActiveError": "offsetkeeper.errors",
    "KafkaOperationError": "offsetkeeper.errors",
    "OffsetkeeperError": "offsetkeeper.errors",
    "PartialFailure": "offsetkeeper.errors",
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
