"""Configuration: the YAML config file, property files, and the Connection value.

- `file`: the config file (``--config``; its format is in that module's docstring) and its models;
- `textfile`: reading configuration text strictly (size bound, UTF-8) and ``${VAR}`` expansion;
- `loading`: reading YAML files safely (alias and node bounds) into pydantic models;
- `properties`: Java-style client property files (``--command-config``);
- `connection`: `Connection`, one cluster's bootstrap servers and librdkafka properties.

Which cluster a command talks to is resolved (and its properties checked by librdkafka) in
`offsetkeeper.kafka.connect`.
"""

from offsetkeeper.config.connection import Connection

# Everything else loads on first use (PEP 562): the config file's models need pydantic and
# YAML (~0.15 s of CPU at every start), which commands that read no config file (`lag status`
# from a store, `--version`) never use.
_LAZY = {
    **dict.fromkeys(("CONFIG_ENV", "DEFAULT_CONFIG_PATH"), "offsetkeeper.config.paths"),
    **dict.fromkeys(("ClusterModel", "ClusterRef",
                     "ConfigFile", "SnapshotsModel", "SparkModel", "UiCheckpointModel", "UiModel",
                     "connect_url", "load_config_file"), "offsetkeeper.config.file"),
    **dict.fromkeys(("MAX_YAML_ALIASES", "MAX_YAML_NODES", "InputTooLarge", "expanded_size",
                     "load_yaml_model"), "offsetkeeper.config.loading"),
    **dict.fromkeys(("MAX_CONFIG_BYTES", "expand_env", "read_text_strict"),
                    "offsetkeeper.config.textfile"),
    **dict.fromkeys(("java_jaas_to_librdkafka", "load_properties_file", "parse_properties",
                     "prop_str"), "offsetkeeper.config.properties"),
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = ["CONFIG_ENV", "DEFAULT_CONFIG_PATH", "MAX_CONFIG_BYTES", "MAX_YAML_ALIASES",
           "MAX_YAML_NODES", "ClusterModel", "ClusterRef", "ConfigFile", "Connection",
           "InputTooLarge", "SnapshotsModel", "SparkModel", "UiCheckpointModel", "UiModel",
           "connect_url", "expand_env", "expanded_size", "java_jaas_to_librdkafka", "load_config_file",
           "load_properties_file", "load_yaml_model", "parse_properties", "prop_str",
           "read_text_strict"]
