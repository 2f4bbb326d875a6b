"""Development brokers (`dev-broker start|stop|status|kafka-tool`): Apache Kafka on this machine."""

from offsetkeeper.devbroker import (
    DEFAULT_PORT,
    BrokerStatus,
    as_dict,
    run_kafka_tool,
    running_elsewhere,
    start,
    status,
    stop,
)

__all__ = ["DEFAULT_PORT", "BrokerStatus", "as_dict", "run_kafka_tool", "running_elsewhere",
           "start", "status", "stop"]
