"""The long-running sampler: one cycle per interval into a store, through outages, until stopped.

- Cluster unreachable: the cycle is skipped, one line is logged, the client is replaced
  (KafkaAdmin.reconnect) and the time without samples is recorded as a gap once a cycle works.
- Store unreachable: the cycle's samples stay in memory (at most `buffer_limit` samples; the
  oldest cycles are dropped beyond that and recorded as a gap) and are written, oldest first,
  when the store answers again.
- SIGTERM/SIGINT (see `stop_on_signals`): the wait between cycles ends at once and no new cycle
  starts; a running cycle stops after the chunk of groups it is reading (what was read is
  kept), buffered samples are flushed if the store answers, an open gap is closed, and `run`
  returns.
- Samples are published chunk by chunk as a cycle proceeds (`recent()`, `listeners`): the
  exporter serves the first groups long before a cycle over thousands of groups ends.
- A cycle longer than the interval is an overrun: a warning line says so (and what to do), and
  `overruns` counts them (the exporter's `offsetkeeper_sampler_overruns_total`).
- Kafka Connect source connectors (`positions`, a reader the operations layer builds from the
  workers' REST APIs): after each cycle their partition -> offset maps are read, kept for the
  exporter (`latest_positions()`) and written with the cycle's time (`write_positions`),
  buffered like samples while the store is down. A worker that fails is one log line; the
  cycle's samples are never held back by it.
- One log line per cycle. Memory is bounded: per-partition state is dropped for partitions no
  longer sampled, the status window keeps `window` cycles per group.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from offsetkeeper.errors import OffsetkeeperError
from offsetkeeper.history.model import Cycle, Gap, Position, Sample
from offsetkeeper.history.sample_cycle import CycleResult, CycleSampler, SampleScope
from offsetkeeper.history.status import DEFAULT_WINDOW
from offsetkeeper.history.store.base import HistoryStore, RetentionPolicy, StoreUnavailable
from offsetkeeper.history.timelag import DEFAULT_POINTS
from offsetkeeper.kafka.ports import KafkaPort
from offsetkeeper.times import iso_ms

log = logging.getLogger("offsetkeeper.history")

DEFAULT_INTERVAL_MS = 30_000
DEFAULT_BUFFER_LIMIT = 200_000
PRUNE_EVERY_MS = 3_600_000
DROPPED = "store unreachable; samples dropped beyond the in-memory buffer"
POSITION_BUFFER = 1000  # reads of source positions kept while the store is down (oldest dropped)

# ts -> (the positions of every source connector at ts, per worker URL (masked) its error, ""
# when it answered)
PositionReader = Callable[[int], tuple[list[Position], dict[str, str]]]


@dataclass(frozen=True)
class SamplerConfig:
    """How the sampler runs."""

    scope: SampleScope
    interval_ms: int = DEFAULT_INTERVAL_MS
    time_lag: bool = True
    retention: RetentionPolicy | None = field(default_factory=RetentionPolicy)
    buffer_limit: int = DEFAULT_BUFFER_LIMIT
    window: int = DEFAULT_WINDOW


@dataclass(frozen=True)
class CycleOutcome:
    """What happened in one cycle (for logs, tests and `--once`)."""

    ts: int
    ok: bool
    samples: int
    groups: int
    total_lag: int
    duration_ms: int
    stored: bool
    buffered: int
    message: str
    group_errors: dict[str, str]
    error: str = ""  # why the cycle or its write failed ("" when it did not)


class Sampler:
    """Samples a cluster into a store. `run_once()` for cron, `run(stop)` as a service."""

    def __init__(self, admin: KafkaPort, store: HistoryStore, config: SamplerConfig, *,
                 positions: PositionReader | None = None) -> None:
        self.admin = admin
        self.position_reader = positions
        self._positions: tuple[Position, ...] = ()
        self.position_errors: dict[str, str] = {}
        self._pos_buffer: deque[list[Position]] = deque(maxlen=POSITION_BUFFER)
        self.store = store
        self.config = config
        self.cycler = CycleSampler(admin, config.scope, time_lag=config.time_lag)
        self._buffer: deque[tuple[list[Sample], Cycle]] = deque()
        self._buffered = 0
        self._pending_gaps: list[Gap] = []
        self._gap_start: int | None = None
        self._gap_reason = ""
        self._failures = 0
        self._last_prune = 0
        self.cycles = 0
        # The latest cycles per group, for the exporter and status (read from other threads).
        self._lock = threading.Lock()
        self._recent: dict[str, deque[tuple[Sample, ...]]] = {}
        self._seeded = False
        self.last_cycle_ms: int | None = None  # duration of the latest successful cycle
        self.overruns = 0  # cycles that took longer than the interval
        # Called with {group: recent samples} of the groups each chunk of a cycle published
        # (the exporter renders them ahead of the next scrape).
        self.listeners: list[Callable[[dict[str, RecentSamples]], None]] = []
        self._stop: threading.Event | None = None
        self.last_success_ms: int | None = None  # when the latest successful cycle ran
        self.up: bool | None = None  # whether the latest cycle reached the cluster

    # -- state for readers (exporter) --------------------------------------------------------
    def recent(self) -> dict[str, RecentSamples]:
        """The last `window` cycles of each sampled group (an immutable view per group)."""
        with self._lock:
            return {g: RecentSamples(tuple(d)) for g, d in self._recent.items()}

    def latest_positions(self) -> tuple[tuple[Position, ...], dict[str, str]]:
        """The latest read of source connectors' positions, and the workers that failed it."""
        with self._lock:
            return self._positions, dict(self.position_errors)

    def _read_positions(self, ts: int) -> None:
        if self.position_reader is None:
            return
        try:
            got, errors = self.position_reader(ts)
        except OffsetkeeperError as exc:
            got, errors = [], {"": str(exc)}
        with self._lock:
            self._positions, self.position_errors = tuple(got), errors
        for worker, err in errors.items():
            if err:
                log.warning(f"source positions of {worker or 'the Connect workers'} not read: "
                            f"{err}")
        if got:
            self._pos_buffer.append(list(got))

    def _publish(self, samples: list[Sample]) -> None:
        """Make one chunk of a cycle visible to readers (exporter, status) at once."""
        by: dict[str, list[Sample]] = {}
        for s in samples:
            by.setdefault(s.group, []).append(s)
        with self._lock:
            for g, ss in by.items():
                d = self._recent.get(g)
                if d is None:
                    d = self._recent[g] = deque(maxlen=self.config.window)
                d.append(tuple(ss))
            views = {g: RecentSamples(tuple(self._recent[g])) for g in by}
        for fn in self.listeners:
            fn(views)

    def _forget_others(self, result: CycleResult) -> None:
        """Drop the groups a complete cycle did not sample (gone: flat memory)."""
        seen = {s.group for s in result.samples}
        with self._lock:
            for g in [g for g in self._recent if g not in seen]:
                del self._recent[g]

    # -- one cycle ---------------------------------------------------------------------------
    def _seed(self) -> None:
        """Seed the interpolation table from the store, so the first cycles have a history."""
        self._seeded = True
        since = int(time.time() * 1000) - DEFAULT_POINTS * self.config.interval_ms
        with contextlib.suppress(StoreUnavailable):
            for tp, pts in self.store.log_end_points(since).items():
                self.cycler.table.seed((tp.topic, tp.partition), pts[-DEFAULT_POINTS:])

    def run_once(self) -> CycleOutcome:
        """Sample once and write (or buffer) the result. Never raises for outages."""
        if not self._seeded:
            self._seed()
        self.cycles += 1
        started = int(time.time() * 1000)
        stop = self._stop
        try:
            result = self.cycler.sample(on_chunk=self._publish,
                                        should_stop=stop.is_set if stop is not None else None)
        except OffsetkeeperError as exc:
            return self._cluster_failed(started, exc)
        if result.interrupted and not result.samples:
            self.cycles -= 1   # stopped before any group was read: nothing to record
            return CycleOutcome(started, True, 0, 0, 0, result.duration_ms, True, self._buffered,
                                "stopped before sampling", {})
        if not result.interrupted:
            self._forget_others(result)
        previous = self.last_success_ms
        self.last_cycle_ms = result.duration_ms
        self.last_success_ms, self.up = result.ts, True
        if self._gap_start is not None:
            self._pending_gaps.append(Gap(self._gap_start, result.ts, self._gap_reason))
            self._gap_start = None
        elif previous is not None and not result.interrupted and \
                (gap := partial_gap(previous, result, self.config.interval_ms)):
            self._pending_gaps.append(gap)
        self._read_positions(result.ts)
        cycle = Cycle(result.ts, self.config.interval_ms, result.groups, len(result.samples),
                      result.duration_ms)
        self._buffer.append((result.samples, cycle))
        self._buffered += len(result.samples)
        self._trim_buffer()
        stored, store_msg = self._flush()
        self._maybe_prune(result.ts)
        msg = (f"cycle {self.cycles}: {result.groups} groups, {len(result.samples)} partitions, "
               f"total lag {result.total_lag}, {result.duration_ms / 1000:.2f}s")
        if self.position_reader is not None:
            msg += f", {len(self._positions)} source connector positions"
        if result.errors:
            msg += f"; {len(result.errors)} group(s) failed (first: {next(iter(result.errors.values()))})"
        if result.interrupted:
            msg += "; stopped before the other groups (stopping)"
        if not stored:
            msg += f"; {store_msg}; {self._buffered} samples kept in memory"
        log.info(msg)
        if result.duration_ms > self.config.interval_ms and not result.interrupted:
            self.overruns += 1
            log.warning(overrun_message(result.duration_ms, self.config.interval_ms,
                                        result.groups, self.overruns, self.config.time_lag))
        return CycleOutcome(result.ts, True, len(result.samples), result.groups, result.total_lag,
                            result.duration_ms, stored, self._buffered, msg, dict(result.errors),
                            error=store_msg)

    def _cluster_failed(self, started: int, exc: OffsetkeeperError) -> CycleOutcome:
        self.up = False
        if self._gap_start is None:
            self._gap_start, self._gap_reason = started, f"cluster unreachable: {exc}"
            self._failures = 0
        self._failures += 1
        # A fresh client: after a broker restart the old one can keep timing out (see
        # KafkaAdmin.reconnect), but retired clients live until close(), so during a long outage
        # only failures 1, 2, 4, 8, ... replace it (a day at 1 s: 17 clients, not 86,400).
        if self._failures & (self._failures - 1) == 0:
            self.admin.reconnect()
            self.cycler.close()
        stored, _ = self._flush()  # earlier cycles may still be waiting for the store
        msg = (f"cycle {self.cycles} failed: {exc}; no samples since {iso_ms(self._gap_start)}, "
               f"retrying in {self.config.interval_ms / 1000:g}s")
        log.warning(msg)
        return CycleOutcome(started, False, 0, 0, 0, int(time.time() * 1000) - started, stored,
                            self._buffered, msg, {}, error=str(exc))

    def _trim_buffer(self) -> None:
        """Drop the oldest buffered cycles beyond the limit; record them as one gap."""
        while self._buffered > self.config.buffer_limit and len(self._buffer) > 1:
            samples, cycle = self._buffer.popleft()
            self._buffered -= len(samples)
            nxt = self._buffer[0][1].ts
            last = self._pending_gaps[-1] if self._pending_gaps else None
            if last is not None and last.reason == DROPPED and last.end == cycle.ts:
                self._pending_gaps[-1] = Gap(last.start, nxt, DROPPED)
            else:
                self._pending_gaps.append(Gap(cycle.ts, nxt, DROPPED))

    def _flush(self) -> tuple[bool, str]:
        try:
            while self._pending_gaps:
                self.store.write_gap(self._pending_gaps[0])
                self._pending_gaps.pop(0)
            while self._buffer:
                samples, cycle = self._buffer[0]
                self.store.write(samples, cycle)
                self._buffer.popleft()
                self._buffered -= len(samples)
            while self._pos_buffer:
                self.store.write_positions(self._pos_buffer[0])
                self._pos_buffer.popleft()
            return True, ""
        except StoreUnavailable as exc:
            return False, str(exc)

    def _maybe_prune(self, now: int) -> None:
        policy = self.config.retention
        if policy is None or now - self._last_prune < PRUNE_EVERY_MS:
            return
        self._last_prune = now
        try:
            res = self.store.prune(policy, now)
        except StoreUnavailable as exc:
            log.warning(f"retention skipped: {exc}")
            return
        if res.deleted or res.downsampled:
            log.info(f"retention: deleted {res.deleted} samples, downsampled {res.downsampled}")

    # -- the loop ----------------------------------------------------------------------------
    def run(self, stop: threading.Event, *, max_cycles: int | None = None,
            on_cycle: Callable[[CycleOutcome], None] | None = None) -> None:
        """Sample every interval until `stop` is set (or `max_cycles` ran)."""
        interval = self.config.interval_ms / 1000
        next_at = time.monotonic()
        self._stop = stop
        try:
            while not stop.is_set():
                outcome = self.run_once()
                if on_cycle is not None:
                    on_cycle(outcome)
                if max_cycles is not None and self.cycles >= max_cycles:
                    break
                next_at += interval
                now = time.monotonic()
                if next_at < now:  # a slow cycle: skip ahead rather than bursting to catch up
                    next_at = now
                stop.wait(max(0.0, next_at - now))
        finally:
            self._stop = None
            self.finish()

    def stale_after_ms(self) -> int:
        """How old the newest sample of a group may be before it is stale: three intervals, or
        three times the latest cycle when cycles overrun (they are that far apart then)."""
        return 3 * max(self.config.interval_ms, self.last_cycle_ms or 0)

    def finish(self) -> None:
        """Flush what is buffered (if the store answers), close an open gap, release clients."""
        if self._gap_start is not None:
            self._pending_gaps.append(Gap(self._gap_start, int(time.time() * 1000),
                                          self._gap_reason + " (until the sampler stopped)"))
            self._gap_start = None
        stored, msg = self._flush()
        if not stored:
            log.warning(f"stopping with {self._buffered} samples not stored: {msg}")
        self.cycler.close()


class RecentSamples(Sequence[Sample]):
    """A group's samples of its last cycles, oldest first, as one flat immutable sequence
    (flattened only when iterated; the first and last sample are O(1))."""

    __slots__ = ("_cycles", "_flat", "_len")

    def __init__(self, cycles: tuple[tuple[Sample, ...], ...]) -> None:
        self._cycles = tuple(c for c in cycles if c)
        self._len = sum(len(c) for c in self._cycles)
        self._flat: list[Sample] | None = None

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, i):
        if i == 0 and self._cycles and not isinstance(i, slice):
            return self._cycles[0][0]
        if i == -1 and self._cycles and not isinstance(i, slice):
            return self._cycles[-1][-1]
        if self._flat is None:
            self._flat = [s for c in self._cycles for s in c]
        return self._flat[i]

    def __iter__(self):
        for c in self._cycles:
            yield from c

    def __eq__(self, other) -> bool:
        return list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


def overrun_message(took_ms: int, interval_ms: int, groups: int, overruns: int,
                    time_lag: bool) -> str:
    """The warning for a sampling round longer than the interval, with what to do about it."""
    hint = "sample fewer groups (--group), a longer --interval"
    if time_lag:
        hint += " or --no-time-lag (exact time lag fetches records)"
    return (f"overrun: sampling {groups} groups took {took_ms / 1000:.1f}s, longer than the "
            f"{interval_ms / 1000:g}s interval ({overruns} overrun(s) so far): samples are "
            f"{took_ms / 1000:.0f}s apart, not {interval_ms / 1000:g}s; {hint}")


def partial_gap(previous_ts: int, result, interval_ms: int) -> Gap | None:
    """The gap a successful cycle still leaves (None when it leaves none): some groups could
    not be read (a coordinator or broker down: "partial cycle"), or the cycle came more than
    three intervals (and 5 s) after the previous one (a hole in every group's samples)."""
    hole = result.ts - previous_ts
    if result.missed:
        return Gap(previous_ts, result.ts, f"partial cycle: {result.missed} group(s) not sampled "
                                           f"(first: {result.missed_reason})")
    if hole > 3 * interval_ms and hole - interval_ms > 5_000:
        return Gap(previous_ts, result.ts, f"no samples for {hole / 1000:.0f}s (interval "
                                           f"{interval_ms / 1000:g}s): the cycle overran")
    return None


@contextlib.contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[threading.Event]:
    """Set `stop` on SIGTERM or SIGINT while the block runs (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    old = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}

    def handler(signum, _frame):
        log.info(f"received {signal.Signals(signum).name}; stopping")
        stop.set()

    for sig in old:
        signal.signal(sig, handler)
    try:
        yield stop
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
