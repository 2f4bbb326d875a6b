"""The development cluster: Apache Kafka (KRaft) run locally from the release setup fetched.

`cluster` starts, stops and inspects clusters (one node, three, or secured); `dist` locates the
release's jars and runs its tools (the oracle `kafka-consumer-groups` among them).
"""

from offsetkeeper.devbroker.cluster import (
    DEFAULT_PORT,
    STATE_FILE,
    BrokerStatus,
    NodeStatus,
    as_dict,
    default_data_dir,
    free_port,
    kill_node,
    restart_node,
    running_broker,
    running_elsewhere,
    start,
    status,
    stop,
)
from offsetkeeper.devbroker.dist import KAFKA_VERSION, run_kafka_tool, tool_command

__all__ = [
    "DEFAULT_PORT",
    "KAFKA_VERSION",
    "STATE_FILE",
    "BrokerStatus",
    "NodeStatus",
    "as_dict",
    "default_data_dir",
    "free_port",
    "kill_node",
    "restart_node",
    "run_kafka_tool",
    "running_broker",
    "running_elsewhere",
    "start",
    "status",
    "stop",
    "tool_command",
]
