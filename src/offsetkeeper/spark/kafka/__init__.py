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
the batch reader), `read` (executor-side reads), `partition` (the readers' input partition), `reports` (task
reports), `stream` (the
streaming reader), `sink` (batch and streaming writers). See docs/streaming.md.
"""

from offsetkeeper.spark.kafka.options import (
    EARLIEST,
    LATEST,
    OffsetRange,
    SourceOptions,
    parse_options,
)
from offsetkeeper.spark.kafka.planning import (
    detect_gap,
    plan,
    resolve_ranges,
    select_topics,
    split_ranges,
)
from offsetkeeper.spark.kafka.read import RangeStats, read_batches, read_range
from offsetkeeper.spark.kafka.reports import read_reports, report_name, write_report
from offsetkeeper.spark.kafka.schema import RECORD_SCHEMA, SOURCE_NAME, arrow_schema
from offsetkeeper.spark.kafka.source import KafkaDataSource, register

__all__ = [
    "EARLIEST", "LATEST", "RECORD_SCHEMA", "SOURCE_NAME", "KafkaDataSource", "OffsetRange",
    "RangeStats", "SourceOptions", "arrow_schema", "detect_gap", "parse_options", "plan",
    "read_batches", "read_range", "read_reports", "register", "report_name", "resolve_ranges",
    "select_topics", "split_ranges", "write_report",
]
