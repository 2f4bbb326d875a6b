"""Development brokers (`dev-broker start|stop|status|kafka-tool`): Apache Kafka on this machine,
and a Connect worker / MirrorMaker 2 beside it (`dev-broker connect|mm2 start|stop`)."""

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
from offsetkeeper.devbroker.connect import as_dict as connect_as_dict
from offsetkeeper.devbroker.connect import (
    start_mm2,
    start_worker,
    stop_mm2,
    stop_worker,
    worker_status,
)

__all__ = ["DEFAULT_PORT", "BrokerStatus", "as_dict", "connect_as_dict", "run_kafka_tool",
           "running_elsewhere", "start", "start_mm2", "start_worker", "status", "stop", "stop_mm2",
           "stop_worker", "worker_status"]
