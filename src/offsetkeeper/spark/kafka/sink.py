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

from offsetkeeper.errors import KafkaOperationError, UsageError

_COLUMNS = {"topic", "key", "value", "headers", "partition"}


@dataclass(frozen=True)
class SinkOptions:
    """The sink options, parsed once on the driver."""

    kafka: dict[str, str]
    topic: str | None
    columns: tuple[str, ...]
    flush_timeout_s: float = 120.0


def parse_sink_options(options: Mapping[str, str], schema: StructType) -> SinkOptions:
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
    return SinkOptions(kafka=kafka, topic=topic, columns=cols, flush_timeout_s=flush_s)


@dataclass
class SinkCommitMessage(WriterCommitMessage):
    """What one task delivered."""

    records: int


def _bytes(v):
    return v.encode("utf-8") if isinstance(v, str) else v


def _plain(v):
    """A Row's value as pyarrow takes it (binary comes as bytearray, structs as Rows)."""
    if isinstance(v, bytearray):
        return bytes(v)
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if hasattr(v, "asDict"):
        return {k: _plain(x) for k, x in v.asDict().items()}
    return v


def rows_as_batches(rows: Iterator, columns: tuple[str, ...], size: int = 1000) -> Iterator:
    """Spark Rows (what pyspark 4.0 hands a stream writer) as Arrow batches of `size` rows."""
    import pyarrow as pa

    chunk: list = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == size:
            yield pa.RecordBatch.from_pydict({c: [_plain(r[c]) for r in chunk] for c in columns})
            chunk = []
    if chunk:
        yield pa.RecordBatch.from_pydict({c: [_plain(r[c]) for r in chunk] for c in columns})


def produce_batches(opts: SinkOptions, batches: Iterator) -> int:
    """Produce every row of the Arrow `batches`; return the count delivered.

    Raises KafkaOperationError when any record is not acknowledged (the task then fails).
    """
    from confluent_kafka import KafkaException

    from offsetkeeper.kafka import clients
    from offsetkeeper.kafka.errors import delivery_message

    producer = clients.producer(opts.kafka, {"enable.idempotence": "true", "acks": "all"},
                                defaults={"linger.ms": "5"})
    errors: list[str] = []
    delivered = 0

    def on_delivery(err, msg) -> None:
        nonlocal delivered
        if err is not None:
            errors.append(delivery_message(err, topic=msg.topic(), partition=msg.partition()))
        else:
            delivered += 1

    sent = 0
    for batch in batches:
        cols = {name.lower(): batch.column(name).to_pylist() for name in opts.columns
                if name in batch.schema.names}
        n = batch.num_rows
        for i in range(n):
            topic = (cols["topic"][i] if "topic" in cols else None) or opts.topic
            if topic is None:
                raise UsageError("a row has a null topic and no topic option is given")
            kw = {}
            if "partition" in cols and cols["partition"][i] is not None:
                kw["partition"] = cols["partition"][i]
            if "headers" in cols and cols["headers"][i]:
                kw["headers"] = [(h["key"], h["value"]) for h in cols["headers"][i]]
            key = _bytes(cols["key"][i]) if "key" in cols else None
            value = _bytes(cols["value"][i])
            while True:
                try:
                    producer.produce(topic, value=value, key=key, on_delivery=on_delivery, **kw)
                    break
                except BufferError:
                    producer.poll(0.1)
                except KafkaException as exc:  # refused at once (too large, unknown partition)
                    raise KafkaOperationError(delivery_message(
                        exc, topic=topic, partition=kw.get("partition"))) from exc
            sent += 1
            if errors:
                break
        producer.poll(0)
        if errors:
            break
    remaining = producer.flush(opts.flush_timeout_s)
    if errors or remaining:
        detail = errors[0] if errors else (
            f"{remaining} record(s) unacknowledged after {opts.flush_timeout_s:.0f} s; check that "
            "the brokers are reachable, or raise flushTimeoutMs")
        raise KafkaOperationError(f"delivery failed ({len(errors) + remaining} of {sent} "
                                  f"records): {detail}")
    return delivered


class KafkaBatchWriter(DataSourceArrowWriter):
    """``df.write``: each task produces its rows and waits for every acknowledgement."""

    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator) -> SinkCommitMessage:
        return SinkCommitMessage(produce_batches(self.opts, iterator))


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream``: like the batch writer, per micro-batch (at-least-once)."""

    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator) -> SinkCommitMessage:
        if not STREAM_ARROW:
            iterator = rows_as_batches(iterator, self.opts.columns)
        return SinkCommitMessage(produce_batches(self.opts, iterator))

    def commit(self, messages, batchId: int) -> None:
        pass  # records are acknowledged by the broker when write() returns

    def abort(self, messages, batchId: int) -> None:
        pass  # delivered records cannot be taken back (at-least-once; docs/streaming.md)
