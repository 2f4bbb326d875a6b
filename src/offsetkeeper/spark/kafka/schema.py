"""The record schema of the ``offsetkeeper-kafka`` source (Spark's Kafka source columns; the
timestamp in epoch milliseconds). Its Arrow form is `offsetkeeper.records.read.arrow_schema`."""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

SOURCE_NAME = "offsetkeeper-kafka"

HEADER_TYPE = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
RECORD_SCHEMA = StructType([
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", LongType()),
    StructField("timestamp_type", IntegerType()),
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("headers", ArrayType(HEADER_TYPE)),
    StructField("leader_epoch", IntegerType()),
])


def record_schema(include_headers: bool = True) -> StructType:
    """The record schema, without the headers column when `include_headers` is false."""
    if include_headers:
        return RECORD_SCHEMA
    return StructType([f for f in RECORD_SCHEMA.fields if f.name != "headers"])

