"""Producing Arrow record batches to Kafka (runs in executors): the writer the
``offsetkeeper-kafka`` sink's tasks produce with.

Columns as in Spark's Kafka sink: ``value``, ``key``, ``topic``, ``headers``, ``partition``.
Each call produces with an idempotent producer (``acks=all``, ``enable.idempotence=true``) and
flushes before it returns; any delivery failure raises.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from offsetkeeper.errors import KafkaOperationError, UsageError


@dataclass(frozen=True)
class WriteOptions:
    """How rows are produced: librdkafka properties, the topic for rows without one, the
    columns to produce from, how long the final flush may wait."""

    kafka: dict[str, str]
    topic: str | None
    columns: tuple[str, ...]
    flush_timeout_s: float = 120.0


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


def produce_batches(opts: WriteOptions, batches: Iterator) -> int:
    """Produce every row of the Arrow `batches`; return the count delivered.

    Raises KafkaOperationError when any record is not acknowledged (the task then fails).
    """
    from confluent_kafka import KafkaException

    from offsetkeeper.kafka import clients
    from offsetkeeper.kafka.errors import delivery_message

    conf = {"linger.ms": "5", **opts.kafka, "enable.idempotence": "true", "acks": "all"}
    producer = clients.producer(conf)
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
