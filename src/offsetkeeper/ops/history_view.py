"""The group pages' ONE adapter to the offset history store (`offsetkeeper.history`).

Every read of the history for the groups overview and a group's detail goes through
`HistoryView` (opened once, shared by request threads, cached per group until the store has a
newer cycle), so a change of the history API is a fix in this file only. The pages need three
things: per group a status with its reason, a time lag and a sparkline (groups page); per group
lag and time-lag series over a range (group page); and the per-partition status with reasons.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from offsetkeeper.errors import OffsetkeeperError
from offsetkeeper.ops.itemerr import guarded, message
from offsetkeeper.times import iso_ms

# the dashboard's log: these reads serve its pages
log = logging.getLogger("offsetkeeper.web")

# Samples the groups page uses per group: the status window plus a longer sparkline.
SPARK_CYCLES = 20
PREWARM_MAX = 5000   # groups read at start, newest first
BATCH = 100          # groups per history store call on the groups page (see _refresh)
LAST_BATCH = 1000    # groups per store call when only their last cycle is read (sorting)
RANGES_MS = {"1h": 3600_000, "24h": 86_400_000, "7d": 7 * 86_400_000}


@dataclass(frozen=True)
class PartitionVerdict:
    """One partition's status from the history (Burrow-style) with the reason."""

    topic: str
    partition: int
    status: str
    reason: str
    time_lag_s: float
    # the lag of the sample the status judged (its reason quotes this number, not the live lag)
    lag: int | None = None


@dataclass(frozen=True)
class GroupHistory:
    """What the history says about a group now."""

    status: str | None = None
    reason: str = ""
    time_lag_s: float | None = None
    spark: tuple[float, ...] = ()          # total lag per cycle, oldest first
    last_sample_ms: int | None = None
    partitions: tuple[PartitionVerdict, ...] = ()
    error: str | None = None               # this group's history could not be read
    # the window the status judged: "4 of 10 samples, <first> to <last>" (the CLI's --window
    # may differ, so the page says which one it used)
    judged: str = ""


@dataclass(frozen=True)
class LastCycle:
    """A group's last sampled cycle: what the groups page sorts by lag, time lag and members
    when a history store is configured (no describe of every group)."""

    ts: int
    lag: int
    time_lag_s: float
    members: int


@dataclass(frozen=True)
class Series:
    """A group's lag and time lag over a range: one point per sampling cycle."""

    lag: list[tuple[int, float]] = field(default_factory=list)        # (ts ms, total lag)
    time_lag: list[tuple[int, float]] = field(default_factory=list)   # (ts ms, max time lag s)
    since_ms: int = 0
    until_ms: int = 0


def _totals(samples: Iterable) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    lag: dict[int, float] = defaultdict(float)
    tlag: dict[int, float] = defaultdict(float)
    for s in samples:
        lag[s.ts] += s.lag
        tlag[s.ts] = max(tlag[s.ts], s.time_lag_s)
    ts = sorted(lag)
    return [(t, lag[t]) for t in ts], [(t, tlag[t]) for t in ts]


class HistoryView:
    """Read-only access to one history store (opened once, shared by request threads)."""

    # False: read stale groups one query each, as before issue 15's batch read (only
    # bench/ui_groups.py sets it, to time the old way against the new in the same run).
    batched = True

    def __init__(self, url: str, *, window: int = 10) -> None:
        from offsetkeeper.ops.history import open_history_store

        self.window = window
        self._store = open_history_store(url)
        self.display_url = self._store.display_url
        self._lock = threading.Lock()
        # group -> (its last sample time, its GroupHistory): recomputed only when the store has
        # a newer cycle of the group, so reloading the groups page between cycles is cheap.
        self._cache: dict[str, tuple[int, GroupHistory]] = {}
        # Groups a page asked for recently: the warmer keeps their entries current.
        self._wanted: dict[str, float] = {}
        self._stop = threading.Event()
        self._warmer: threading.Thread | None = None
        self._known: int | None = None   # groups with samples, as of the last look
        # group -> its LastCycle (valid while the store's last sample time of it is the same)
        self._last: dict[str, LastCycle] = {}

    def close(self) -> None:
        self._stop.set()
        if self._warmer is not None:
            self._warmer.join(10)
        self._store.close()

    def start_warming(self, every_s: float = 2.0, keep_s: float = 600.0) -> None:
        """Recompute, in the background, the groups shown in the last `keep_s` seconds as soon
        as the store has a new cycle of them, so the groups page after a sampling cycle does
        not pay for reading every group's history. At start, every group in the store (up to
        PREWARM_MAX) counts as shown."""
        def loop() -> None:
            # At start: every group the store knows, so the first page load is warm too.
            self._warm(lambda: self._refresh(self.known_groups()[:PREWARM_MAX], remember=True))
            while not self._stop.wait(every_s):
                cutoff = time.monotonic() - keep_s
                names = [g for g, t in list(self._wanted.items()) if t >= cutoff]
                self._warm(lambda n=names: self._refresh(n, remember=False))
        self._warmer = threading.Thread(target=loop, name="history-warmer", daemon=True)
        self._warmer.start()

    @staticmethod
    def _warm(fn) -> None:
        # Nothing may end the warmer thread: a store that is down is reported by the pages
        # (they read it themselves); anything else is logged and the next round tries again.
        try:
            fn()
        except (OffsetkeeperError, OSError):
            pass
        except Exception:
            log.exception("history warmer: a round failed (it keeps running)")

    def _recent(self, group: str, cycles: int) -> list:
        with self._lock:
            return self._store.recent(group, cycles)

    def group(self, group: str, *, partitions: bool = False) -> GroupHistory:
        """Status (with reason), current time lag and sparkline of one group; empty if the
        store has no samples of it. A store that cannot be reached raises (OffsetkeeperError);
        samples that cannot be decoded give a GroupHistory with `error`."""
        cycles = max(SPARK_CYCLES, self.window)
        try:
            samples = self._recent(group, cycles)
        except (OffsetkeeperError, OSError):
            raise
        except Exception as exc:  # a malformed record of this group
            log.warning("history of group %r unreadable", group, exc_info=True)
            return GroupHistory(error=f"its history is unreadable: {message(exc)}")
        return self._history_or_error(group, samples, partitions=partitions)

    def _history_or_error(self, group: str, samples: list, *,
                          partitions: bool = False) -> GroupHistory:
        h, err = guarded(lambda: self._history(group, samples, partitions=partitions), None,
                         what=f"history status of group {group!r}")
        return h if h is not None else GroupHistory(error=f"its history is unreadable: {err}")

    def _history(self, group: str, samples: list, *, partitions: bool = False) -> GroupHistory:
        from offsetkeeper.ops.history import judge_group

        if not samples:
            return GroupHistory()
        cycle_ts = sorted({s.ts for s in samples})
        window_from = cycle_ts[-self.window] if len(cycle_ts) >= self.window else cycle_ts[0]
        # the samples read for the sparkline are the look-back of the rewind rule (lag status)
        st = judge_group(samples, window=self.window, group=group)
        lag, tlag = _totals(samples)
        verdicts = tuple(PartitionVerdict(p.topic, p.partition, str(p.status), p.reason,
                                          p.time_lag_s, p.lag)
                         for p in st.partitions) if partitions else ()
        judged = [t for t in cycle_ts if t >= window_from]
        return GroupHistory(status=str(st.status), reason=st.reason,
                            time_lag_s=tlag[-1][1] if tlag else None,
                            spark=tuple(v for _, v in lag), last_sample_ms=cycle_ts[-1],
                            partitions=verdicts,
                            judged=f"window: {len(judged)} of {self.window} samples, "
                                   f"{iso_ms(judged[0])} to {iso_ms(judged[-1])}")

    def groups(self, names: Sequence[str]) -> dict[str, GroupHistory]:
        """`group()` for many groups (the groups page); one query says which groups have new
        samples, and one `recent_many` call reads those again."""
        return self._refresh(names, remember=True)

    def _refresh(self, names: Sequence[str], *, remember: bool) -> dict[str, GroupHistory]:
        if remember:
            now = time.monotonic()
            for g in names:
                self._wanted[g] = now
        with self._lock:
            last = {g.group: g.last_ts for g in self._store.groups()}
        self._known = len(last)
        stale = [g for g in dict.fromkeys(names) if g in last
                 and self._cache.get(g, (None,))[0] != last[g]]
        if stale:
            cycles = max(SPARK_CYCLES, self.window)
            for i in range(0, len(stale), BATCH):
                chunk = stale[i:i + BATCH]
                fresh = self._read_chunk(chunk, cycles)
                for g in chunk:
                    got = fresh.get(g, [])
                    h = got if isinstance(got, GroupHistory) else self._history_or_error(g, got)
                    self._cache[g] = (last[g], h)
        return {g: self._cache[g][1] if g in last else GroupHistory() for g in names}

    def _read_chunk(self, chunk: list[str], cycles: int) -> dict[str, list | GroupHistory]:
        """Samples per group of `chunk`; a group whose records cannot be decoded maps to a
        GroupHistory with its error (one bad record must not blank every other group)."""
        if self.batched:
            # BATCH groups per store call (one SQL statement, one pipelined Redis round trip)
            # instead of one query per group. Not all groups at once: 20,000 samples alive
            # together survive into the GC's old generations and make full collections of the
            # whole process (measured slower than one by one); and the lock is released between
            # calls, so a group page does not wait long.
            try:
                with self._lock:
                    return self._store.recent_many(chunk, cycles)
            except (OffsetkeeperError, OSError):
                raise  # the store itself: the page says so once
            except Exception:  # a malformed record: find its group below
                log.warning("history: a batch of %d groups is unreadable; reading them one by "
                            "one", len(chunk), exc_info=True)
        # One query per group: after a failed batch, and the old way the benchmark compares.
        out: dict[str, list | GroupHistory] = {}
        for g in chunk:
            try:
                out[g] = self._recent(g, cycles)
            except (OffsetkeeperError, OSError):
                raise
            except Exception as exc:
                log.warning("history of group %r unreadable", g, exc_info=True)
                out[g] = GroupHistory(error=f"its history is unreadable: {message(exc)}")
        return out

    def last_cycles(self, names: Sequence[str]) -> dict[str, LastCycle]:
        """The last sampled cycle of each of `names` that the store has samples of: one query
        for every group's last sample time, then only the groups with a newer cycle than last
        time are read (their last cycle only, LAST_BATCH groups per store call). A store that
        cannot be reached raises; a group whose records cannot be decoded is left out."""
        with self._lock:
            last = {g.group: g.last_ts for g in self._store.groups()}
        self._known = len(last)
        stale = [g for g in dict.fromkeys(names) if g in last
                 and (g not in self._last or self._last[g].ts != last[g])]
        for i in range(0, len(stale), LAST_BATCH):
            chunk = stale[i:i + LAST_BATCH]
            for g, samples in self._read_chunk(chunk, 1).items():
                if isinstance(samples, GroupHistory) or not samples:
                    continue
                ts = max(s.ts for s in samples)
                now = [s for s in samples if s.ts == ts]
                self._last[g] = LastCycle(ts, sum(max(0, s.lag) for s in now),
                                          max(s.time_lag_s for s in now),
                                          max(s.members for s in now))
        return {g: self._last[g] for g in names if g in last and g in self._last}

    def series(self, group: str, range_key: str, *, now_ms: int | None = None) -> Series:
        """Total lag and max time lag per cycle over the last 1h, 24h or 7d."""
        span = RANGES_MS[range_key]
        until = now_ms if now_ms is not None else int(time.time() * 1000)
        with self._lock:
            samples = self._store.series(group, since=until - span, until=until)
        lag, tlag = _totals(samples)
        return Series(lag, tlag, until - span, until)

    def known_groups(self) -> list[str]:
        with self._lock:
            names = [g.group for g in self._store.groups()]
        self._known = len(names)
        return names

    def is_empty(self) -> bool:
        """True when the store holds no sample at all (the pages say so: a store nobody
        records into, or the wrong file). Looked up again only while it was empty: asking an
        empty store is cheap, and a store with samples rarely loses them all."""
        if not self._known:
            self.known_groups()
        return self._known == 0


def open_history(url: str | None) -> HistoryView | None:
    """The history view for `url` (None when no store is configured)."""
    if not url:
        return None
    return HistoryView(url)


def safe(fn, default):
    """Run a history read; a store that fails must not take the page down with it."""
    return guarded(fn, default, what="history store")
