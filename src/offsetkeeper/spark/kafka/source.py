"""The ``offsetkeeper-kafka`` Python data source: batch and streaming reads, batch and
streaming writes, registered under one name."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from offsetkeeper.records.ranges import OffsetRange
from offsetkeeper.records.read import read_range
from offsetkeeper.spark.kafka.options import SourceOptions, parse_options
from offsetkeeper.spark.kafka.partition import KafkaInputPartition
from offsetkeeper.spark.kafka.planning import plan
from offsetkeeper.spark.kafka.schema import SOURCE_NAME, record_schema


class KafkaDataSource(DataSource):
    """``spark.read`` / ``spark.readStream`` / ``df.write`` / ``df.writeStream``
    ``.format("offsetkeeper-kafka")``: Kafka records with confluent-kafka."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        include = str(self.options.get("includeHeaders", "true")).strip().lower() \
            not in ("false", "0", "no")
        return record_schema(include)

    def reader(self, schema: StructType) -> KafkaReader:
        return KafkaReader(parse_options(self.options))

    def streamReader(self, schema: StructType):
        from offsetkeeper.spark.kafka.stream import KafkaStreamReader

        return KafkaStreamReader(parse_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool):
        from offsetkeeper.spark.kafka.sink import KafkaBatchWriter, parse_sink_options

        return KafkaBatchWriter(parse_sink_options(self.options, schema))

    def streamWriter(self, schema: StructType, overwrite: bool):
        from offsetkeeper.spark.kafka.sink import KafkaStreamWriter, parse_sink_options

        return KafkaStreamWriter(parse_sink_options(self.options, schema))


def register(spark) -> None:
    """Register the data source with a session (idempotent)."""
    spark.dataSource.register(KafkaDataSource)


class KafkaReader(DataSourceReader):
    """The batch reader: ranges planned on the driver, read by the executors."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts

    def partitions(self) -> Sequence[InputPartition]:
        ranges = plan(self.opts)
        return [KafkaInputPartition(i, r.topic, r.partition, r.start, r.end)
                for i, r in enumerate(ranges)]

    def read(self, partition: KafkaInputPartition) -> Iterator:
        yield from read_range(self.opts.reading(),
                              OffsetRange(partition.topic, partition.partition, partition.start,
                                          partition.end), self.opts.report_path)
