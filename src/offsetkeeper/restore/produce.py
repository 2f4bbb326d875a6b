"""The producing loop of a restore task: routes in parallel, few Python objects, derived mapping.

`restore_task(cfg, specs)` is the Spark task (the entry point executors import);
`restore_routes(cfg, routes)` writes a task's routes (source partition -> target partition),
each in its own thread, all through the task's one idempotent producer, so one route's wait for
acknowledgements overlaps another's reading and producing (librdkafka and pyarrow release the
GIL while they work). The producer is warmed up (`_Producer.warm_up`) so that it has its
producer id before the first batch is ready, and the cyclic garbage collector is off during the
task. Per route:

1. resume: `resume.RouteResume` finds what an earlier attempt wrote but did not map (the target
   records after the last mapped one) and maps those rows instead of producing them;
2. the remaining rows are produced in chunks of ``chunk_records``: the columns of each Arrow
   batch become Python lists once (``to_pylist``; the offset and timestamp headers are made by
   Arrow casts, not per record in Python), and the inner loop is one ``produce()`` call per
   record with positional arguments — no delivery callback per record
   (``delivery.report.only.error``: only failures call back);
3. after each chunk: flush, then the chunk's target offsets are derived and proved
   (`derive.proof_holds`) — or, if the proof fails, read back (`derive.map_read_back`) — and
   written as a mapping chunk.

With ``WriterConfig.derive_mapping`` false, every chunk is mapped by reading the target back:
the slow, always-exact path, kept for comparison and as the reference in tests.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pyarrow as pa

from offsetkeeper.arrowbuf import int_scalar
from offsetkeeper.errors import OffsetkeeperError
from offsetkeeper.models import TopicPartition
from offsetkeeper.restore.derive import (
    ChunkRecords,
    MissingRecordError,
    TargetReader,
    TargetRecord,
    map_read_back,
    proof_holds,
)
from offsetkeeper.restore.mapping import write_chunk
from offsetkeeper.restore.resume import (
    OFFSET_HEADER,
    PARTITION_HEADER,
    TIMESTAMP_HEADER,
    TOPIC_HEADER,
    RestoreWriteError,
    RouteResume,
    WriterConfig,
    read_target_tail,
    spec_records,
    write_progress,
)

# Routes of one task produced at the same time (one thread each, one producer for the task).
ROUTES_IN_PARALLEL = 4
# librdkafka's queue of the task's producer: bounds memory whatever the topic size (produce()
# waits for room when it is full); 32 MB keeps 32 full 1 MB batches in flight.
QUEUE_KBYTES = 32_768
# Rows per Arrow batch read from the backup files (and turned into Python lists at once).
BATCH_ROWS = 5_000
# How long produce() waits for room when the queue is full. Successful deliveries raise no
# event (`delivery.report.only.error`), so poll() does not return early when room frees up:
# it sleeps the whole timeout, and a long one leaves the connection idle.
QUEUE_FULL_WAIT_S = 0.002

# Called when a chunk starts, after its target log end was read, with (target, log end):
# tests use it to write to the target partition in the middle of a restore.
on_chunk_start: Callable[[TopicPartition, int], None] | None = None


class _Producer:
    """An idempotent producer that reports failed deliveries only (no callback per record).

    One per task, shared by the task's routes (each route is one target partition, so every
    target partition still has exactly one producer — what the derived mapping's proof needs).
    One producer instead of one per route: its requests carry several partitions' batches, as
    kcat's do, and a task has one set of librdkafka threads (measured: 15% less CPU per task)."""

    def __init__(self, cfg: WriterConfig) -> None:
        from offsetkeeper.kafka import clients

        self.errors: dict[tuple[str, int], Any] = {}  # first failure (KafkaError) per target partition
        conf = {"linger.ms": "20", "batch.size": "1000000",
                "queue.buffering.max.messages": "500000",
                "queue.buffering.max.kbytes": str(QUEUE_KBYTES), **cfg.producer_conf,
                "enable.idempotence": "true", "delivery.report.only.error": True,
                "on_delivery": self._on_error}
        conf.setdefault("acks", "all")
        self.p = clients.producer(conf)
        self.warm = False
        # flush() returns when the producer's whole queue is empty; while one route waits for
        # its chunk, the others must not keep adding records, or it may never be empty.
        self._cv = threading.Condition()
        self._producing = 0   # routes inside a produce() run
        self._flushing = 0    # routes waiting for their acknowledgements

    @contextmanager
    def producing(self) -> Iterator[None]:
        """Around a run of produce() calls: waits while another route flushes."""
        with self._cv:
            while self._flushing:
                self._cv.wait()
            self._producing += 1
        try:
            yield
        finally:
            with self._cv:
                self._producing -= 1
                self._cv.notify_all()

    def flush(self, timeout: float) -> int:
        """Wait until every record produced so far is acknowledged (or failed); the other
        routes pause producing meanwhile. Returns the records still unacknowledged."""
        with self._cv:
            self._flushing += 1
            while self._producing:
                self._cv.wait()
        try:
            return self.p.flush(timeout)
        finally:
            with self._cv:
                self._flushing -= 1
                self._cv.notify_all()

    def warm_up(self, topic: str) -> None:
        """Have the producer id acquired now rather than 0.5 s later.

        librdkafka (2.10 and later) asks for the producer id when its first metadata response
        arrives; at that moment it has just dropped its bootstrap connection and the broker's
        own connection is not up yet, so it retries on a fixed 500 ms timer. Every metadata
        response retries at once, so two metadata requests (the second one waits for the
        broker's connection) get the id within milliseconds (measured: first delivery after
        0.07 s instead of 0.51 s; kcat, built on librdkafka 2.0, does not have the wait)."""
        if self.warm:
            return
        self.warm = True
        for _ in range(2):
            try:
                self.p.list_topics(topic, timeout=10)
            except Exception:  # only a speed-up: the timer still gets the id
                return

    def _on_error(self, err, msg) -> None:
        self.errors.setdefault((msg.topic(), msg.partition()), err)

    def error_for(self, target: TopicPartition) -> str | None:
        """The sentence for the first failed delivery to `target` (kafka.errors), or None."""
        err = self.errors.get((target.topic, target.partition))
        if err is None:
            return None
        from offsetkeeper.kafka.errors import delivery_message

        return delivery_message(err, topic=target.topic, partition=target.partition)


def _as_bytes(col: pa.Array) -> list[bytes]:
    """Decimal ASCII of an integer column, as bytes objects (made by Arrow, not per record)."""
    import pyarrow.compute as pc

    return pc.cast(pc.cast(col, pa.string()), pa.binary()).to_pylist()


class RouteProducer:
    """Produces one route's rows and writes its mapping, chunk by chunk."""

    def __init__(self, cfg: WriterConfig, source: TopicPartition, target: TopicPartition,
                 producer: _Producer, *, records_per_second: float | None = None,
                 bytes_per_second: float | None = None, stop: threading.Event | None = None) -> None:
        self.cfg, self.source, self.target = cfg, source, target
        self.rw = RouteResume(cfg, source, target)  # resume: mapping + unmapped target tail
        self.summary = self.rw.summary
        self.summary.update(mapping="derived" if cfg.derive_mapping else "read-back",
                            foreign_records=0)
        self.shared = producer
        self.producer = producer.p
        self.reader = TargetReader(cfg.consumer_conf)
        self.stop = stop or threading.Event()
        self.rps, self.bps = records_per_second, bytes_per_second
        self.t0 = time.monotonic()
        self.sent_records = self.sent_bytes = 0
        self.chunk: ChunkRecords | None = None
        self.chunk_start = 0
        self.first: TargetRecord | None = None
        self._first_reader: threading.Thread | None = None

    # -- chunks ----------------------------------------------------------------------------
    def _begin_chunk(self) -> None:
        self.chunk = ChunkRecords(self.source, self.cfg.offset_headers)
        self.chunk_start = self.reader.log_end(self.target)
        self.first = None
        if on_chunk_start is not None:
            on_chunk_start(self.target, self.chunk_start)
        self._first_reader = None
        if self.cfg.derive_mapping:
            # Read the chunk's first record back as soon as it lands, while it is among the
            # partition's last (a small fetch even on brokers that ignore fetch size limits).
            t = threading.Thread(target=self._read_first, args=(self.chunk_start,), daemon=True,
                                 name=f"restore-proof-{self.target}")
            self._first_reader = t
            t.start()

    def _read_first(self, start: int) -> None:
        reader = TargetReader(self.cfg.consumer_conf)
        try:
            self.first = reader.read_one(self.target, start, timeout=120)
        finally:
            reader.close()

    def _wait_acks(self) -> None:
        # the task's producer: this waits for the other routes' records too (they pause)
        remaining = self.shared.flush(120)
        if (err := self.shared.error_for(self.target)) is not None:
            raise RestoreWriteError(err)
        if remaining:
            raise RestoreWriteError(f"producing to {self.target}: {remaining} records not "
                                    "acknowledged in 120 s; check that the partition has a "
                                    "leader and its broker is reachable, then run again")

    def _end_chunk(self) -> None:
        chunk, start = self.chunk, self.chunk_start
        self.chunk = None
        if chunk is None or not len(chunk):
            return
        self._wait_acks()
        n = len(chunk)
        targets: list[int] | range | None = None
        if self._first_reader is not None:
            self._first_reader.join(120)
        if self.cfg.derive_mapping:
            end = self.reader.log_end(self.target)
            last = self.reader.read_one(self.target, end - 1) if end > start else None
            if proof_holds(start=start, end=end, count=n, first=self.first, last=last, chunk=chunk):
                targets = range(start, end)
            else:
                self.summary["mapping"] = "read-back"
        if targets is None:
            targets, foreign = self._read_back(chunk, start)
            self.summary["foreign_records"] += foreign
        write_chunk(self.cfg.mapping_root, self.cfg.restore_id, self.source, self.target,
                    chunk.source_offsets, list(targets), chunk.timestamps)
        self.rw._note(chunk.source_offsets[0], chunk.source_offsets[-1], targets[0], targets[-1])
        self.summary["records"] += n
        if self.cfg.report_path:
            write_progress(self.cfg.report_path, self.summary)

    def _read_back(self, chunk, start: int) -> tuple[list[int], int]:
        """Map the chunk by reading the target from `start`. Every record was acknowledged, so a
        record not found yet is read again a few times before giving up: a broker under load
        can report a log end that lags the acknowledgements by a moment."""
        for attempt in range(4):
            records = [TargetRecord.from_message(m)
                       for m in read_target_tail(self.cfg.consumer_conf, self.target, start)]
            try:
                return map_read_back(chunk, records)
            except MissingRecordError as exc:
                if attempt == 3:
                    raise RestoreWriteError(f"{exc}; cannot record the mapping of {self.target}") from None
                time.sleep(0.5 * (attempt + 1))
        raise AssertionError("unreachable")  # pragma: no cover

    # -- rows ------------------------------------------------------------------------------
    def _recover(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Map the batch's leading rows that an earlier attempt already wrote; the rest."""
        rw = self.rw
        offs = batch.column("offset").to_pylist()
        tss = batch.column("timestamp").to_pylist()
        keys = batch.column("key").to_pylist()
        values = batch.column("value").to_pylist()
        i = 0
        while i < len(offs) and rw.tail_i < len(rw.tail):
            ts = tss[i] if tss[i] is not None and tss[i] > 0 else 0
            if not rw.recover(offs[i], ts, keys[i], values[i]):
                break
            i += 1
        if rw.tail_i >= len(rw.tail):
            rw.flush_recovered()
        return batch.slice(i)

    def write(self, batches: Iterator[pa.RecordBatch]) -> dict[str, Any]:
        import pyarrow.compute as pc

        last_source = self.rw.last_source if self.rw.last_source is not None else -1
        chunk_records = self.cfg.chunk_records
        headers_on = self.cfg.offset_headers
        ttopic, tpart = self.target.topic, self.target.partition
        part_h = (PARTITION_HEADER, str(self.source.partition).encode())
        topic_h = (TOPIC_HEADER, self.source.topic.encode())
        limited = bool(self.rps or self.bps)
        zero = int_scalar(0)
        skipped = 0
        for batch in batches:
            if self.stop.is_set():
                raise RestoreWriteError(f"stopped: another route of the task failed ({self.target})")
            if batch.num_rows and batch.column("offset")[0].as_py() <= last_source:
                keep = pc.greater(batch.column("offset"), int_scalar(last_source))
                skipped += batch.num_rows - pc.sum(keep.cast(pa.int64())).as_py()
                batch = batch.filter(keep)
            if batch.num_rows and self.rw.tail_i < len(self.rw.tail):
                batch = self._recover(batch)
            n = batch.num_rows
            if not n:
                continue
            ts_col = batch.column("timestamp")
            ts_arr = pc.if_else(pc.greater(ts_col, zero), ts_col, zero).fill_null(zero)
            tss = ts_arr.to_pylist()
            offs = batch.column("offset").to_pylist()
            keys = batch.column("key").to_pylist()
            values = batch.column("value").to_pylist()
            hcol = batch.column("headers")
            own = None
            if len(hcol.flatten()):
                own = [[(d["key"], d["value"]) for d in h] if h else None for h in hcol.to_pylist()]
            hdrs: list | None = None
            if headers_on:
                ob, tb = _as_bytes(batch.column("offset")), _as_bytes(ts_arr)
                if own is None:
                    hdrs = [[(OFFSET_HEADER, o), (TIMESTAMP_HEADER, t), part_h, topic_h]
                            for o, t in zip(ob, tb, strict=True)]
                else:
                    hdrs = [(h or []) + [(OFFSET_HEADER, o), (TIMESTAMP_HEADER, t), part_h, topic_h]
                            for h, o, t in zip(own, ob, tb, strict=True)]
            elif own is not None:
                hdrs = own
            self.summary["bytes"] += ((pc.sum(pc.binary_length(batch.column("key"))).as_py() or 0)
                                      + (pc.sum(pc.binary_length(batch.column("value"))).as_py() or 0))
            i = 0
            while i < n:
                if self.chunk is None:
                    self._begin_chunk()
                chunk = self.chunk
                room = chunk_records - len(chunk)
                j = min(n, i + room, i + 64 if limited else n)
                chunk.source_offsets.extend(offs[i:j])
                chunk.timestamps.extend(tss[i:j])
                if not headers_on:
                    chunk.keys.extend(keys[i:j])
                    chunk.values.extend(values[i:j])
                    chunk.headers.extend(own[i:j] if own is not None else [None] * (j - i))
                with self.shared.producing():
                    self._produce(ttopic, tpart, values, keys, tss, hdrs, i, j)
                if limited:
                    self._throttle(j - i, keys[i:j], values[i:j])
                i = j
                if len(chunk) >= chunk_records:
                    self._end_chunk()
            self.producer.poll(0)
        self._end_chunk()
        self.rw.flush_recovered()
        if self.rw.tail_i < len(self.rw.tail):
            m = self.rw.tail[self.rw.tail_i]
            raise RestoreWriteError(f"target {self.target} holds more records than the backup "
                                    f"selection (offset {m.offset()} and later); cannot resume safely")
        self.summary["skipped"] += skipped
        self.summary["seconds"] = round(time.monotonic() - self.t0, 3)
        return self.summary

    def _produce(self, topic: str, part: int, values: list, keys: list, tss: list,
                 hdrs: list | None, i: int, j: int) -> None:
        """The inner loop: one positional produce() per record, nothing else."""
        produce = self.producer.produce
        try:
            if hdrs is None:
                for v, k, t in zip(values[i:j], keys[i:j], tss[i:j], strict=True):
                    try:
                        produce(topic, v, k, part, None, None, t)
                    except BufferError:
                        self._retry(topic, v, k, part, t, None)
            else:
                for v, k, t, h in zip(values[i:j], keys[i:j], tss[i:j], hdrs[i:j], strict=True):
                    try:
                        produce(topic, v, k, part, None, None, t, h)
                    except BufferError:
                        self._retry(topic, v, k, part, t, h)
        except Exception as exc:  # produce() refused a record (too large, unknown partition)
            from offsetkeeper.kafka.errors import delivery_message, error_name

            if not error_name(exc):
                raise
            raise RestoreWriteError(delivery_message(exc, topic=topic, partition=part)) from exc

    def _retry(self, topic: str, v, k, part: int, t: int, h) -> None:
        """The producer's queue is full: serve it until there is room, then produce."""
        while True:
            self.producer.poll(QUEUE_FULL_WAIT_S)
            if (err := self.shared.error_for(self.target)) is not None:
                raise RestoreWriteError(err)
            try:
                self.producer.produce(topic, v, k, part, None, None, t, h)
                return
            except BufferError:
                continue

    def _throttle(self, n: int, keys: list, values: list) -> None:
        self.sent_records += n
        self.sent_bytes += sum(len(k) for k in keys if k) + sum(len(v) for v in values if v)
        need = 0.0
        if self.rps:
            need = self.sent_records / self.rps
        if self.bps:
            need = max(need, self.sent_bytes / self.bps)
        wait = need - (time.monotonic() - self.t0)
        if wait > 0:
            self.producer.poll(0)
            time.sleep(wait)

    def close(self) -> None:
        self.reader.close()


def restore_routes(cfg: WriterConfig, routes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Write a task's routes (each spec: source/target topic and partition, files,
    resume_after), up to `ROUTES_IN_PARALLEL` at a time with one producer; one summary per
    route, in order."""
    if not routes:
        return []
    # The cyclic garbage collector runs every 700 new containers (each record's header list
    # and tuples) and then walks every tracked object of the worker: measured 20-25% of a
    # restore task's CPU. Nothing here makes reference cycles that matter (the batches and
    # lists are freed by reference counting), so it is off for the task.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _restore_routes(cfg, routes)
    finally:
        if gc_was_enabled:
            gc.enable()


def _restore_routes(cfg: WriterConfig, routes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    share = min(len(routes), ROUTES_IN_PARALLEL)  # routes producing at the same time
    stop = threading.Event()
    producer = _Producer(cfg)

    def one(spec: dict[str, Any]) -> dict[str, Any]:
        src = TopicPartition(spec["source_topic"], spec["source_partition"])
        tgt = TopicPartition(spec["target_topic"], spec["target_partition"])
        rp = RouteProducer(cfg, src, tgt, producer, stop=stop,
                           records_per_second=cfg.records_per_second / share if cfg.records_per_second else None,
                           bytes_per_second=cfg.bytes_per_second / share if cfg.bytes_per_second else None)
        try:
            producer.warm_up(tgt.topic)  # after the resume read, which overlaps its connecting
            return rp.write(spec_records(spec, cfg, batch_rows=BATCH_ROWS))
        except OffsetkeeperError as exc:
            stop.set()
            if exc.topic is None:
                exc.topic, exc.partition = src.topic, src.partition
            raise
        except Exception as exc:
            stop.set()
            from offsetkeeper.spark.task_failure import one_line

            raise RestoreWriteError(f"restoring {src} to {tgt} failed: {one_line(exc)}",
                                    topic=src.topic, partition=src.partition) from exc
        except BaseException:
            stop.set()
            raise
        finally:
            rp.close()

    try:
        if share == 1:
            return [one(spec) for spec in routes]
        with ThreadPoolExecutor(max_workers=share, thread_name_prefix="restore-route") as pool:
            return list(pool.map(one, routes))
    finally:
        producer.p.flush(30)


def restore_task(cfg: WriterConfig, specs: Iterator[str]) -> Iterator[dict[str, Any]]:
    """Spark task (`RDD.mapPartitions` over task specs — JSON lists of routes: source, target,
    segments (or files), resume_after): produce each route's records with one producer; one
    summary per route. Run it under spark.task_failure.guarded so that a failure reaches the
    driver as a typed TaskFailure.

    The plain RDD API is used on purpose: its Python workers start in ~3 s, Arrow UDF workers
    (mapInArrow) in ~10 s on a fresh session, and nothing here needs Arrow exchange with the JVM.
    """
    import json

    summaries = []
    for raw in specs:
        summaries.extend(restore_routes(cfg, json.loads(raw)))
    yield from summaries
