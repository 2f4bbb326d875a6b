"""``offsetkeeper-kafka``: a PySpark Python data source for Kafka built on confluent-kafka.

Usage::

    from offsetkeeper.spark.kafka import register
    register(spark)
    df = (spark.read.format("offsetkeeper-kafka")            # or spark.readStream
          .option("kafka.bootstrap.servers", "localhost:9092")
          .option("subscribe", "orders,payments")          # or subscribePattern / assign
          .option("startingOffsets", "earliest")           # or JSON {"orders":{"0":23,"1":-2}}
          .load())

Modules: `options` (parsing), `planning` (partitions and ranges), `source` (the data source and
the batch reader), `partition` (the readers' input partition), `stream` (the streaming reader),
`sink` (batch and streaming writers). The executors read ranges with `offsetkeeper.records`
(ranges, the range reader, task reports). See docs/streaming.md.
"""

from offsetkeeper.spark.kafka.options import (
    EARLIEST,
    LATEST,
    SourceOptions,
    parse_options,
)
from offsetkeeper.spark.kafka.planning import plan, resolve_ranges, select_topics
from offsetkeeper.spark.kafka.schema import RECORD_SCHEMA, SOURCE_NAME
from offsetkeeper.spark.kafka.source import KafkaDataSource, register

__all__ = [
    "EARLIEST", "LATEST", "RECORD_SCHEMA", "SOURCE_NAME", "KafkaDataSource", "SourceOptions",
    "parse_options", "plan", "register", "resolve_ranges", "select_topics",
]
