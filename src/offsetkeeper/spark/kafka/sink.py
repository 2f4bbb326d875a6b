"""The sink: ``df.write`` / ``df.writeStream`` ``.format("offsetkeeper-kafka")``.

Columns as in Spark's Kafka sink: ``value`` (required), ``key``, ``topic`` (or the ``topic``
option), ``headers`` (array<struct<key string, value binary>>), ``partition``; key and value
may be string or binary. Each task produces with an idempotent producer (``acks=all``,
``enable.idempotence=true``: no duplicates or reordering from producer retries inside a task)
and flushes before it reports success; any delivery failure fails the task.

Delivery guarantee: at-least-once. A task that Spark retries, or a streaming batch replayed
after a driver crash, produces its records again, because a new producer cannot know what the
previous attempt delivered. Deduplicate downstream (for example on a key or on the source
position carried in a header) where exactly-once output matters. See docs/streaming.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

try:
    from pyspark.sql.datasource import DataSourceStreamArrowWriter

    STREAM_ARROW = True
except ImportError:  # pyspark 4.0: stream writers get Rows (see `rows_as_batches`)
    from pyspark.sql.datasource import (  # type: ignore[assignment]
        DataSourceStreamWriter as DataSourceStreamArrowWriter,
    )

    STREAM_ARROW = False
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructType,
)

from offsetkeeper.errors import UsageError
from offsetkeeper.records.write import WriteOptions, produce_batches, rows_as_batches

_COLUMNS = {"topic", "key", "value", "headers", "partition"}


def parse_sink_options(options: Mapping[str, str], schema: StructType) -> WriteOptions:
    """Validate the options and the DataFrame's columns (UsageError naming the bad one)."""
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    kafka = {k[len("kafka."):]: v for k, v in opts.items() if k.startswith("kafka.")}
    if not kafka.get("bootstrap.servers"):
        raise UsageError("option kafka.bootstrap.servers is required (HOST:PORT[,HOST:PORT])")
    fields = {f.name.lower(): f.dataType for f in schema.fields}
    if "value" not in fields:
        raise UsageError("the DataFrame needs a value column (string or binary) to write to Kafka")
    topic = opts.get("topic") or None
    if topic is None and "topic" not in fields:
        raise UsageError("give the topic option or a topic column")
    for name in ("key", "value"):
        if name in fields and not isinstance(fields[name], StringType | BinaryType):
            raise UsageError(f"column {name} must be string or binary, got {fields[name].simpleString()}")
    if "topic" in fields and not isinstance(fields["topic"], StringType):
        raise UsageError(f"column topic must be string, got {fields['topic'].simpleString()}")
    if "partition" in fields and not isinstance(fields["partition"], IntegerType):
        raise UsageError(f"column partition must be int, got {fields['partition'].simpleString()}")
    if "headers" in fields:
        h = fields["headers"]
        ok = isinstance(h, ArrayType) and isinstance(h.elementType, StructType) and \
            [f.name for f in h.elementType.fields] == ["key", "value"]
        if not ok:
            raise UsageError("column headers must be array<struct<key:string,value:binary>>, got "
                             f"{h.simpleString()}")
    timeout = opts.get("flushtimeoutms")
    try:
        flush_s = float(timeout) / 1000 if timeout else 120.0
    except ValueError:
        raise UsageError(f"option flushTimeoutMs: expected milliseconds, got {timeout!r}") from None
    cols = tuple(f.name for f in schema.fields if f.name.lower() in _COLUMNS)
    return WriteOptions(kafka=kafka, topic=topic, columns=cols, flush_timeout_s=flush_s)


@dataclass
class SinkCommitMessage(WriterCommitMessage):
    """What one task delivered."""

    records: int


class KafkaBatchWriter(DataSourceArrowWriter):
    """``df.write``: each task produces its rows and waits for every acknowledgement."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator) -> SinkCommitMessage:
        return SinkCommitMessage(produce_batches(self.opts, iterator))


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream``: like the batch writer, per micro-batch (at-least-once)."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator) -> SinkCommitMessage:
        if not STREAM_ARROW:
            iterator = rows_as_batches(iterator, self.opts.columns)
        return SinkCommitMessage(produce_batches(self.opts, iterator))

    def commit(self, messages, batchId: int) -> None:
        pass  # records are acknowledged by the broker when write() returns

    def abort(self, messages, batchId: int) -> None:
        pass  # delivered records cannot be taken back (at-least-once; docs/streaming.md)
