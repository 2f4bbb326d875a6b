"""Reading one offset range of one partition into Arrow record batches (runs in executors).

The plain range reader below the domain: the ``offsetkeeper-kafka`` data source, backup tasks
and restore validation read through it. The batches have Spark's Kafka source columns
(`arrow_schema`), built with pyarrow alone, so this module needs no Spark.

Offsets lost to retention while reading (the log start moved past the range start) are reported
as gaps, not errors, unless ``failOnDataLoss`` is true.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

from offsetkeeper.arrowbuf import binaries, ints, repeated_string
from offsetkeeper.kafka.errors import AUTHORIZATION, PARTITION_EOF, denied, translate
from offsetkeeper.records.ranges import OffsetRange, detect_gap
from offsetkeeper.records.reports import write_report

log = logging.getLogger("offsetkeeper.records")

# timestamp_type as Spark's Kafka source reports it: 0 CreateTime, 1 LogAppendTime; -1 none.
_TS_TYPE = {0: -1, 1: 0, 2: 1}


@dataclass(frozen=True)
class ReadOptions:
    """How a range is read: librdkafka properties (bootstrap servers, security, isolation
    level), records per Arrow batch, how long a read may make no progress, and whether offsets
    lost to retention fail the read. The data source's `SourceOptions` has the same fields."""

    kafka: dict[str, str]
    batch_size: int = 5000
    poll_timeout_ms: int = 120_000
    fail_on_data_loss: bool = False
    include_headers: bool = True


def arrow_schema(include_headers: bool = True):
    """The Arrow schema of the record batches the reader yields: Spark's Kafka source columns,
    the timestamp in epoch milliseconds (binary, not large_binary; what pyspark's
    ``to_arrow_schema`` makes of the data source's record schema)."""
    import pyarrow as pa

    header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
    fields = [
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.int64()),
        pa.field("timestamp_type", pa.int32()),
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("headers", pa.list_(pa.field("element", header))),
        pa.field("leader_epoch", pa.int32()),
    ]
    if not include_headers:
        fields = [f for f in fields if f.name != "headers"]
    return pa.schema(fields)


class _Batch:
    """The messages of one Arrow record batch; columns are built in `to_arrow` (one list
    comprehension per column is much cheaper than appending field by field)."""

    def __init__(self) -> None:
        self.msgs: list = []
        self.offsets: list[int] = []
        self.ts: list[int] = []

    def add(self, m) -> None:
        self.msgs.append(m)

    def __len__(self) -> int:
        return len(self.msgs)

    def to_arrow(self, schema, topic: str, partition: int):
        """The record batch; also fills `offsets` and `ts` (for the caller's statistics).

        Columns are built from buffers (`arrowbuf`), not with ``pa.array``: the
        first ``pa.array`` of a process imports pandas (pyarrow's pandas shim, ~0.5 s of CPU in
        every new Spark Python worker), and ``b"".join`` plus one length per value is as fast
        as pyarrow's per-value conversion."""
        import pyarrow as pa

        msgs = self.msgs
        n = len(msgs)
        self.offsets = [m.offset() for m in msgs]
        stamps = [m.timestamp() for m in msgs]
        self.ts = [ts if tt else -1 for tt, ts in stamps]
        ts_type = [_TS_TYPE.get(tt, -1) for tt, _ in stamps]
        cols = [
            repeated_string(topic, n),
            ints([partition] * n, pa.int32()),
            ints(self.offsets, pa.int64()),
            ints(self.ts, pa.int64()),
            ints(ts_type, pa.int32()),
            binaries([m.key() for m in msgs], pa.binary()),
            binaries([m.value() for m in msgs], pa.binary()),
        ]
        if "headers" in schema.names:
            cols.append(headers_column(schema, [m.headers() for m in msgs]))
        cols.append(ints([m.leader_epoch() for m in msgs], pa.int32()))
        return pa.RecordBatch.from_arrays(cols, schema=schema)


def headers_column(schema, hs: list):
    """The ``headers`` column of `schema` for the messages' headers `hs` (lists of
    ``(key, value)`` pairs or None), built from buffers."""
    import numpy as np
    import pyarrow as pa

    n = len(hs)
    h_offsets = [0]
    h_keys: list[bytes] = []
    h_values: list[bytes | None] = []
    if any(hs):
        for h in hs:
            if h:
                for k, v in h:
                    h_keys.append(k.encode())
                    h_values.append(v)
            h_offsets.append(len(h_keys))
    else:
        h_offsets = [0] * (n + 1)
    h_struct = pa.StructArray.from_arrays(
        [binaries(h_keys, pa.string()), binaries(h_values, pa.binary())],
        fields=list(schema.field("headers").type.value_type),
    )
    offsets = pa.Array.from_buffers(pa.int32(), n + 1,
                                    [None, pa.py_buffer(np.array(h_offsets, np.int32))])
    return pa.ListArray.from_arrays(offsets, h_struct, type=schema.field("headers").type)


@dataclass
class RangeStats:
    """What reading one range found (filled in by `read_batches` while it runs)."""

    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    gaps: list[tuple[int, int]] = field(default_factory=list)


def read_batches(opts: ReadOptions, r: OffsetRange, stats: RangeStats) -> Iterator:
    """Yield Arrow record batches (`arrow_schema`) with the records of `r`, in offset order.

    The shared reading logic of the data source, the backup tasks and restore validation. `stats` is filled in
    as batches are yielded; its gaps are final once the generator is exhausted.
    """
    from confluent_kafka import KafkaError
    from confluent_kafka import TopicPartition as CkTP

    from offsetkeeper.kafka import clients

    schema = arrow_schema(opts.include_headers)
    first_seen = last_seen = None
    gaps = stats.gaps

    def emit(batch: _Batch):
        out = batch.to_arrow(schema, r.topic, r.partition)
        if stats.first_timestamp is None:
            stats.first_timestamp = batch.ts[0]
            stats.first_offset = batch.offsets[0]
        stats.last_timestamp = batch.ts[-1]
        stats.last_offset = batch.offsets[-1]
        stats.records += len(batch)
        return out

    if r.size > 0:
        conf = {
            "group.id": f"offsetkeeper-reader-{uuid.uuid4().hex[:8]}",
            **opts.kafka,
            "enable.auto.commit": "false",
            "enable.auto.offset.store": "false",
            "enable.partition.eof": "true",
            "auto.offset.reset": "earliest",
        }
        conf.setdefault("fetch.wait.max.ms", "100")
        # brokers that ignore fetch size limits can answer with a whole partition
        conf.setdefault("receive.message.max.bytes", "1000000000")
        c = clients.consumer(conf)
        try:
            c.assign([CkTP(r.topic, r.partition, r.start)])
            batch = _Batch()
            done = False
            idle_since = time.monotonic()
            while not done:
                # consume() waits for num_messages or the timeout: never ask for more records
                # than the range has left, or the range's last call waits out the timeout
                left = r.end - (r.start if last_seen is None else last_seen + 1)
                msgs = c.consume(num_messages=max(1, min(opts.batch_size, 100_000, left)),
                                 timeout=0.1)
                if not msgs:
                    # control records / aborted transactions up to the end yield no messages
                    pos = c.position([CkTP(r.topic, r.partition)])[0].offset
                    if pos >= r.end:
                        done = True
                    elif (time.monotonic() - idle_since) * 1000 > opts.poll_timeout_ms:
                        raise TimeoutError(
                            f"reading {r.topic}:{r.partition} [{r.start}, {r.end}): no progress "
                            f"for {opts.poll_timeout_ms} ms (last offset {last_seen})")
                    if done and len(batch):
                        yield emit(batch)
                    continue
                idle_since = time.monotonic()
                for m in msgs:
                    err = m.error()
                    if err is not None:
                        if err.code() == PARTITION_EOF:
                            done = True
                            break
                        if err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
                            # the coordinator lookup librdkafka makes for the group.id it insists
                            # on: this reader never joins or commits, so ACLs on it do not matter
                            continue
                        if err.name() in AUTHORIZATION:
                            raise RuntimeError(f"reading {r.topic}:{r.partition}: " + denied(
                                err.name(), action="read records", topic=r.topic))
                        raise RuntimeError(translate(
                            err, action=f"reading {r.topic}:{r.partition}", topic=r.topic,
                            partition=r.partition).message)
                    off = m.offset()
                    if off >= r.end:
                        done = True
                        break
                    if off < r.start:
                        continue
                    if first_seen is None:
                        first_seen = off
                    last_seen = off
                    batch.add(m)
                if len(batch) >= opts.batch_size or (done and len(batch)):
                    yield emit(batch)
                    batch = _Batch()
            if first_seen is None or first_seen > r.start:
                low, _ = c.get_watermark_offsets(CkTP(r.topic, r.partition), timeout=10,
                                                 cached=False)
                gap = detect_gap(r.start, r.end, first_seen, low)
                if gap:
                    gaps.append(gap)
        finally:
            c.close()
    if gaps:
        msg = (f"{r.topic}:{r.partition}: offsets {gaps[0][0]}..{gaps[0][1] - 1} were removed "
               f"(retention or delete_records) before they could be read")
        if opts.fail_on_data_loss:
            raise RuntimeError(msg + " (failOnDataLoss=true)")
        log.warning(msg)


def read_range(opts: ReadOptions, r: OffsetRange, report_path: str | None = None) -> Iterator:
    """Yield Arrow record batches with the records of `r`, then write the task report into
    `report_path` (when given)."""
    stats = RangeStats()
    yield from read_batches(opts, r, stats)
    if report_path:
        write_report(report_path, r, count=stats.records, first=stats.first_offset,
                     last=stats.last_offset, gaps=stats.gaps, first_ts=stats.first_timestamp,
                     last_ts=stats.last_timestamp)


