"""A PySpark Python data source that reads Kafka with confluent-kafka: ``offsetkeeper-kafka``.

Usage (batch)::

    from offsetkeeper.spark.kafka_source import register
    register(spark)
    df = (spark.read.format("offsetkeeper-kafka")
          .option("kafka.bootstrap.servers", "localhost:9092")
          .option("subscribe", "orders,payments")          # or subscribePattern / assign
          .option("startingOffsets", "earliest")           # or JSON {"orders":{"0":23,"1":-2}}
          .option("endingOffsets", "latest")               # or JSON; -1 = latest
          .load())

Options follow Spark's Kafka source: ``subscribe``, ``subscribePattern``, ``assign``,
``startingOffsets``, ``endingOffsets``, ``startingTimestamp``, ``startingOffsetsByTimestamp``,
``minPartitions``, ``maxRecordsPerPartition``, ``failOnDataLoss`` (default false here) and
``kafka.*`` passed to librdkafka untouched (``kafka.isolation.level`` defaults to
read_committed). Extra: ``reportPath`` (a directory where each task writes a JSON report with
its range, record count and gaps), ``batchSize`` (records per Arrow batch) and
``pollTimeoutMs`` (how long a task waits without progress before failing).

Ranges end at positions: a task reads until it sees an offset >= its end or reaches the end of
the partition, so compacted topics and transaction markers (which occupy offsets) are handled.
Offsets lost to retention while reading (the log start moved past the range start) are reported
as gaps, not errors, unless ``failOnDataLoss`` is true.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from offsetkeeper.errors import UsageError

SOURCE_NAME = "offsetkeeper-kafka"
EARLIEST, LATEST = -2, -1
log = logging.getLogger("offsetkeeper.kafka_source")

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

# timestamp_type as Spark's Kafka source reports it: 0 CreateTime, 1 LogAppendTime; -1 none.
_TS_TYPE = {0: -1, 1: 0, 2: 1}


# -- options -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class OffsetRange:
    """Offsets ``[start, end)`` of one partition (positions, not counts)."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


@dataclass(frozen=True)
class SourceOptions:
    """The data source options, parsed once."""

    kafka: dict[str, str]
    subscribe: tuple[str, ...] = ()
    subscribe_pattern: str | None = None
    assign: dict[str, tuple[int, ...]] | None = None
    starting: int | dict[str, dict[int, int]] = EARLIEST
    ending: int | dict[str, dict[int, int]] = LATEST
    starting_timestamp: int | None = None
    starting_by_timestamp: dict[str, dict[int, int]] | None = None
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    fail_on_data_loss: bool = False
    report_path: str | None = None
    batch_size: int = 5000
    poll_timeout_ms: int = 120_000
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def read_committed(self) -> bool:
        return self.kafka.get("isolation.level", "read_committed") == "read_committed"


def _json_offsets(name: str, text: str, *, allow: set[int]) -> dict[str, dict[int, int]]:
    try:
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError
        out: dict[str, dict[int, int]] = {}
        for topic, parts in raw.items():
            if not isinstance(parts, dict):
                raise ValueError
            out[topic] = {int(p): int(o) for p, o in parts.items()}
    except (ValueError, TypeError):
        raise UsageError(f"option {name}: expected earliest, latest or JSON like "
                         f'{{"topic":{{"0":23,"1":-2}}}}, got {text!r}') from None
    for topic, parts in out.items():
        for p, o in parts.items():
            if o < 0 and o not in allow:
                raise UsageError(f"option {name}: offset {o} for {topic}:{p} is not allowed "
                                 f"(use an offset >= 0 or {sorted(allow)})")
    return out


def _int_opt(opts: Mapping[str, str], name: str, *, minimum: int = 1) -> int | None:
    v = opts.get(name.lower())
    if v is None or v == "":
        return None
    try:
        n = int(v)
    except ValueError:
        raise UsageError(f"option {name}: expected an integer, got {v!r}") from None
    if n < minimum:
        raise UsageError(f"option {name}: must be >= {minimum}, got {n}")
    return n


def _bool_opt(opts: Mapping[str, str], name: str, default: bool) -> bool:
    v = opts.get(name.lower())
    if v is None:
        return default
    if v.strip().lower() in ("true", "1", "yes"):
        return True
    if v.strip().lower() in ("false", "0", "no"):
        return False
    raise UsageError(f"option {name}: expected true or false, got {v!r}")


def parse_options(options: Mapping[str, str]) -> SourceOptions:
    """Parse data source options (names case-insensitive, values strings) into SourceOptions."""
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    kafka = {k[len("kafka."):]: v for k, v in opts.items() if k.startswith("kafka.")}
    if not kafka.get("bootstrap.servers"):
        raise UsageError("option kafka.bootstrap.servers is required (HOST:PORT[,HOST:PORT])")
    kafka.setdefault("isolation.level", "read_committed")
    if kafka["isolation.level"] not in ("read_committed", "read_uncommitted"):
        raise UsageError(f"option kafka.isolation.level: expected read_committed or "
                         f"read_uncommitted, got {kafka['isolation.level']!r}")

    chosen = [k for k in ("subscribe", "subscribepattern", "assign") if opts.get(k)]
    if len(chosen) != 1:
        raise UsageError("give exactly one of the options subscribe, subscribePattern, assign")
    subscribe: tuple[str, ...] = ()
    pattern = None
    assign = None
    if opts.get("subscribe"):
        subscribe = tuple(t.strip() for t in opts["subscribe"].split(",") if t.strip())
        if not subscribe:
            raise UsageError("option subscribe: expected a comma-separated list of topics")
    elif opts.get("subscribepattern"):
        pattern = opts["subscribepattern"]
        try:
            re.compile(pattern)
        except re.error as exc:
            raise UsageError(f"option subscribePattern: invalid regex {pattern!r}: {exc}") from None
    else:
        try:
            raw = json.loads(opts["assign"])
            assign = {t: tuple(sorted(int(p) for p in ps)) for t, ps in raw.items()}
        except (ValueError, TypeError, AttributeError):
            raise UsageError(f'option assign: expected JSON like {{"topic":[0,1]}}, '
                             f"got {opts['assign']!r}") from None

    def spec(name: str, default: int, allow: set[int]) -> int | dict[str, dict[int, int]]:
        v = opts.get(name)
        if v is None or v.strip() == "":
            return default
        if v.strip().lower() == "earliest":
            if EARLIEST not in allow:
                raise UsageError(f"option {name}: earliest is not allowed here")
            return EARLIEST
        if v.strip().lower() == "latest":
            return LATEST
        return _json_offsets(name, v, allow=allow)

    starting = spec("startingoffsets", EARLIEST, {EARLIEST, LATEST})
    ending = spec("endingoffsets", LATEST, {LATEST})
    ts = _int_opt(opts, "startingTimestamp", minimum=0)
    by_ts = None
    if opts.get("startingoffsetsbytimestamp"):
        by_ts = _json_offsets("startingOffsetsByTimestamp", opts["startingoffsetsbytimestamp"],
                              allow=set())
    known = {"subscribe", "subscribepattern", "assign", "startingoffsets", "endingoffsets",
             "startingtimestamp", "startingoffsetsbytimestamp", "minpartitions",
             "maxrecordsperpartition", "failondataloss", "reportpath", "batchsize",
             "pollTimeoutMs".lower(), "path"}
    extra = {k: v for k, v in opts.items() if not k.startswith("kafka.") and k not in known}
    return SourceOptions(
        kafka=kafka,
        subscribe=subscribe,
        subscribe_pattern=pattern,
        assign=assign,
        starting=starting,
        ending=ending,
        starting_timestamp=ts,
        starting_by_timestamp=by_ts,
        min_partitions=_int_opt(opts, "minPartitions"),
        max_records_per_partition=_int_opt(opts, "maxRecordsPerPartition"),
        fail_on_data_loss=_bool_opt(opts, "failOnDataLoss", False),
        report_path=opts.get("reportpath") or None,
        batch_size=_int_opt(opts, "batchSize") or 5000,
        poll_timeout_ms=_int_opt(opts, "pollTimeoutMs") or 120_000,
        extra=extra,
    )


# -- planning (pure) ---------------------------------------------------------------------------
def select_topics(opts: SourceOptions, available: Mapping[str, Sequence[int]]) -> dict[str, list[int]]:
    """Topics and partitions to read, from subscribe / subscribePattern / assign."""
    if opts.assign is not None:
        out = {}
        for t, ps in opts.assign.items():
            if t not in available:
                raise UsageError(f"option assign: unknown topic '{t}'")
            missing = sorted(set(ps) - set(available[t]))
            if missing:
                raise UsageError(f"option assign: topic '{t}' has no partition {missing[0]}")
            out[t] = list(ps)
        return out
    if opts.subscribe_pattern is not None:
        rx = re.compile(opts.subscribe_pattern)
        return {t: list(ps) for t, ps in sorted(available.items()) if rx.fullmatch(t)}
    out = {}
    for t in opts.subscribe:
        if t not in available:
            raise UsageError(f"option subscribe: unknown topic '{t}'")
        out[t] = list(available[t])
    return out


def resolve_ranges(
    partitions: Mapping[str, Sequence[int]],
    *,
    low: Mapping[tuple[str, int], int],
    high: Mapping[tuple[str, int], int],
    starting: int | Mapping[str, Mapping[int, int]],
    ending: int | Mapping[str, Mapping[int, int]],
    start_overrides: Mapping[tuple[str, int], int] | None = None,
) -> list[OffsetRange]:
    """Offset ranges per partition, clamped to [log start, log end]; `start_overrides` (from
    timestamps) win over `starting`. A start below the log start is kept (the reader reports
    the missing offsets as a gap)."""
    out = []
    for t, ps in sorted(partitions.items()):
        for p in sorted(ps):
            lo, hi = low[(t, p)], high[(t, p)]

            s = _pick(starting, t, p, EARLIEST)
            if start_overrides and (t, p) in start_overrides:
                s = start_overrides[(t, p)]
            s = lo if s == EARLIEST else hi if s == LATEST else s
            e = _pick(ending, t, p, LATEST)
            e = hi if e == LATEST else e
            e = min(e, hi)
            s = min(s, e)
            out.append(OffsetRange(t, p, s, e))
    return out


def _pick(spec: int | Mapping[str, Mapping[int, int]], t: str, p: int, default: int) -> int:
    if isinstance(spec, int):
        return spec
    return spec.get(t, {}).get(p, default)


def split_ranges(
    ranges: Sequence[OffsetRange],
    *,
    min_partitions: int | None = None,
    max_records: int | None = None,
) -> list[OffsetRange]:
    """Split large ranges so that there are at least `min_partitions` pieces (by size, as
    Spark's Kafka source does) and no piece spans more than `max_records` offsets.
    Empty ranges are kept (they still verify the partition) but never split."""
    out: list[OffsetRange] = []
    total = sum(r.size for r in ranges)
    target = None
    if min_partitions and min_partitions > len(ranges) and total > 0:
        target = total / min_partitions
    for r in ranges:
        parts = 1
        if target and r.size > target:
            parts = math.ceil(r.size / target)
        if max_records and r.size > max_records:
            parts = max(parts, math.ceil(r.size / max_records))
        parts = max(1, min(parts, r.size or 1))
        step = r.size / parts
        bounds = [r.start + round(i * step) for i in range(parts)] + [r.end]
        out.extend(OffsetRange(r.topic, r.partition, bounds[i], bounds[i + 1]) for i in range(parts))
    return out


def detect_gap(start: int, end: int, first_seen: int | None, log_start: int) -> tuple[int, int] | None:
    """The offsets ``[start, x)`` of a range lost to retention, or None.

    Offsets skipped because of compaction or transaction markers are not gaps: only offsets
    below the current log start are. `first_seen` is the first offset read (None if none).
    """
    upto = end if first_seen is None else min(first_seen, end)
    if log_start > start and upto > start:
        return (start, min(log_start, upto))
    return None


# -- Spark data source -------------------------------------------------------------------------
class KafkaInputPartition(InputPartition):
    """One task: read ``[start, end)`` of one Kafka partition."""

    def __init__(self, index: int, topic: str, partition: int, start: int, end: int) -> None:
        super().__init__(index)
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end


class KafkaDataSource(DataSource):
    """``spark.read.format("offsetkeeper-kafka")``: Kafka records with confluent-kafka."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        return RECORD_SCHEMA

    def reader(self, schema: StructType) -> KafkaReader:
        return KafkaReader(parse_options(self.options))


def register(spark) -> None:
    """Register the data source with a session (idempotent)."""
    spark.dataSource.register(KafkaDataSource)


def _connection(opts: SourceOptions):
    from offsetkeeper.config import Connection

    props = {k: v for k, v in opts.kafka.items()
             if k not in ("bootstrap.servers", "isolation.level", "group.id")}
    return Connection(bootstrap_servers=opts.kafka["bootstrap.servers"], properties=props)


def plan(opts: SourceOptions) -> list[OffsetRange]:
    """Ask the cluster for topics and offsets and compute the (split) ranges to read."""
    from offsetkeeper.kafka.admin import KafkaAdmin
    from offsetkeeper.models import TopicPartition

    with KafkaAdmin(_connection(opts)) as admin:
        wanted = None if (opts.subscribe_pattern is not None) else (
            list(opts.assign) if opts.assign is not None else list(opts.subscribe))
        try:
            available = admin.topic_partitions(wanted)
        except Exception as exc:  # UnknownTopicError names the topic
            raise UsageError(str(exc)) from exc
        parts = select_topics(opts, available)
        tps = [TopicPartition(t, p) for t, ps in parts.items() for p in ps]
        wm = admin.watermarks(tps)
        ends = admin.end_offsets(tps, read_committed=opts.read_committed)
        low = {(tp.topic, tp.partition): wm[tp].low for tp in tps}
        high = {(tp.topic, tp.partition): ends[tp] for tp in tps}
        overrides: dict[tuple[str, int], int] = {}
        if opts.starting_timestamp is not None:
            found = admin.offsets_for_time(tps, opts.starting_timestamp)
            overrides = {(tp.topic, tp.partition): (o if o is not None else LATEST)
                         for tp, o in found.items()}
        if opts.starting_by_timestamp:
            for t, ps in opts.starting_by_timestamp.items():
                for p, ts in ps.items():
                    tp = TopicPartition(t, p)
                    o = admin.offsets_for_time([tp], ts)[tp]
                    overrides[(t, p)] = o if o is not None else LATEST
    ranges = resolve_ranges(parts, low=low, high=high, starting=opts.starting,
                            ending=opts.ending, start_overrides=overrides)
    return split_ranges(ranges, min_partitions=opts.min_partitions,
                        max_records=opts.max_records_per_partition)


class KafkaReader(DataSourceReader):
    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts

    def partitions(self) -> Sequence[InputPartition]:
        ranges = plan(self.opts)
        return [KafkaInputPartition(i, r.topic, r.partition, r.start, r.end)
                for i, r in enumerate(ranges)]

    def read(self, partition: KafkaInputPartition) -> Iterator:
        yield from read_range(self.opts, OffsetRange(partition.topic, partition.partition,
                                                     partition.start, partition.end))


# -- reading (runs in executors) ---------------------------------------------------------------
def _arrow_schema():
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(RECORD_SCHEMA)


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
        """The record batch; also fills `offsets` and `ts` (for the caller's statistics)."""
        import pyarrow as pa

        msgs = self.msgs
        n = len(msgs)
        self.offsets = [m.offset() for m in msgs]
        stamps = [m.timestamp() for m in msgs]
        self.ts = [ts if tt else -1 for tt, ts in stamps]
        ts_type = [_TS_TYPE.get(tt, -1) for tt, _ in stamps]
        hs = [m.headers() for m in msgs]
        h_offsets = [0]
        h_keys: list[str] = []
        h_values: list[bytes | None] = []
        if any(hs):
            for h in hs:
                if h:
                    for k, v in h:
                        h_keys.append(k)
                        h_values.append(v)
                h_offsets.append(len(h_keys))
        else:
            h_offsets = [0] * (n + 1)
        h_struct = pa.StructArray.from_arrays(
            [pa.array(h_keys, pa.string()), pa.array(h_values, pa.binary())],
            fields=list(schema.field("headers").type.value_type),
        )
        headers = pa.ListArray.from_arrays(pa.array(h_offsets, pa.int32()), h_struct,
                                           type=schema.field("headers").type)
        cols = [
            pa.array([topic] * n, pa.string()),
            pa.array([partition] * n, pa.int32()),
            pa.array(self.offsets, pa.int64()),
            pa.array(self.ts, pa.int64()),
            pa.array(ts_type, pa.int32()),
            pa.array([m.key() for m in msgs], pa.binary()),
            pa.array([m.value() for m in msgs], pa.binary()),
            headers,
            pa.array([m.leader_epoch() for m in msgs], pa.int32()),
        ]
        return pa.RecordBatch.from_arrays(cols, schema=schema)


@dataclass
class RangeStats:
    """What reading one range found (filled in by `read_batches` while it runs)."""

    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    gaps: list[tuple[int, int]] = field(default_factory=list)


def read_batches(opts: SourceOptions, r: OffsetRange, stats: RangeStats) -> Iterator:
    """Yield Arrow record batches (`RECORD_SCHEMA`) with the records of `r`, in offset order.

    The shared reading logic of the data source and of the backup tasks. `stats` is filled in
    as batches are yielded; its gaps are final once the generator is exhausted.
    """
    from confluent_kafka import Consumer, KafkaError
    from confluent_kafka import TopicPartition as CkTP

    schema = _arrow_schema()
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
        c = Consumer(conf)
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
                        if err.code() == KafkaError._PARTITION_EOF:
                            done = True
                            break
                        raise RuntimeError(f"reading {r.topic}:{r.partition}: {err.str()}")
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


def read_range(opts: SourceOptions, r: OffsetRange) -> Iterator:
    """Yield Arrow record batches with the records of `r`, then write the task report."""
    stats = RangeStats()
    yield from read_batches(opts, r, stats)
    if opts.report_path:
        write_report(opts.report_path, r, count=stats.records, first=stats.first_offset,
                     last=stats.last_offset, gaps=stats.gaps, first_ts=stats.first_timestamp,
                     last_ts=stats.last_timestamp)


def report_name(r: OffsetRange) -> str:
    return f"{r.topic}-{r.partition}-{r.start}-{r.end}.json"


def write_report(path: str, r: OffsetRange, *, count: int, first: int | None, last: int | None,
                 gaps: list[tuple[int, int]], first_ts: int | None = None,
                 last_ts: int | None = None) -> None:
    """Write one task's report (atomically) into the directory or URL `path`."""
    from offsetkeeper.storage import join, write_bytes_atomic

    data = json.dumps({"topic": r.topic, "partition": r.partition, "start": r.start, "end": r.end,
                       "records": count, "first_offset": first, "last_offset": last,
                       "first_timestamp": first_ts, "last_timestamp": last_ts,
                       "gaps": [list(g) for g in gaps]}).encode()
    write_bytes_atomic(join(path, report_name(r)), data, what="task report")


def read_reports(path: str) -> list[dict]:
    """All task reports in `path` (one per range; retried tasks overwrite their own)."""
    import fsspec

    fs, root = fsspec.core.url_to_fs(path)
    if not fs.exists(root):
        return []
    out = []
    for f in fs.ls(root, detail=False):
        if f.endswith(".json"):
            try:
                with fs.open(f, "rb") as fh:
                    out.append(json.loads(fh.read()))
            except (OSError, ValueError):
                continue
    return out
