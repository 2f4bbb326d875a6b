"""Reading the history for people: rows for `history show`, `history at` and `lag status`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from offsetkeeper.errors import UnknownGroupError, UsageError
from offsetkeeper.history.model import Cycle, Sample
from offsetkeeper.history.status import (
    DEFAULT_REWIND_LOOKBACK,
    DEFAULT_WINDOW,
    GroupStatus,
    RewindMark,
    evaluate_status,
    rewind_marks,
)
from offsetkeeper.history.store.base import HistoryStore
from offsetkeeper.times import human_duration_ms, iso_ms, now_ms

SHOW_COLUMNS = ["time", "topic", "partition", "committed", "log_end", "lag", "lag_raw",
                "time_lag_s", "time_lag_interp_s", "rate", "open_txn_since"]
AT_COLUMNS = ["group", "topic", "partition", "committed", "metadata", "log_start", "log_end",
              "lag", "sample_time", "sample_age_s"]


def _known(store: HistoryStore, group: str) -> None:
    if not store.recent(group, 1):
        raise UnknownGroupError(f"history store {store.display_url} has no samples of group "
                                f"'{group}' (record some with: offsetkeeper history record -g {group})",
                                group=group)


def _s(ms: int | None) -> float | None:
    return None if ms is None else round(ms / 1000, 3)


def show_rows(store: HistoryStore, group: str, *, topic: str | None = None,
              since: int | None = None, until: int | None = None) -> list[dict]:
    """One row per partition per sample: offsets, lag, both time lags and the consumption rate
    (records/s the group's committed offset advanced since the previous sample)."""
    samples = store.series(group, topic=topic, since=since, until=until)
    if not samples:
        _known(store, group)
        what = f" on topic '{topic}'" if topic else ""
        raise UsageError(f"no samples of group '{group}'{what} between {iso_ms(since) or 'the start'} "
                         f"and {iso_ms(until) or 'now'}")
    prev: dict[tuple[str, int], Sample] = {}
    rows = []
    for s in samples:
        p = prev.get((s.topic, s.partition))
        rate = None
        if p is not None and s.ts > p.ts:
            rate = round((s.committed - p.committed) / ((s.ts - p.ts) / 1000), 3)
        prev[(s.topic, s.partition)] = s
        rows.append({"time": s.ts, "topic": s.topic, "partition": s.partition,
                     "committed": s.committed, "log_start": s.log_start, "log_end": s.log_end,
                     "lag": s.lag, "lag_raw": s.lag_raw, "lso": s.lso,
                     "open_txn_since": s.open_txn_since,
                     "time_lag_s": 0.0 if s.lag == 0 else _s(s.time_lag_ms),
                     "time_lag_interp_s": 0.0 if s.lag == 0 else _s(s.time_lag_interp_ms),
                     "rate": rate, "state": s.state, "members": s.members})
    return rows


@dataclass(frozen=True)
class AtResult:
    """The committed offsets a group had at a time, and the sample they come from."""

    group: str
    asked: int
    sample_ts: int
    samples: tuple[Sample, ...]

    @property
    def age_s(self) -> float:
        return round((self.asked - self.sample_ts) / 1000, 3)

    def rows(self) -> list[dict]:
        return [{"group": s.group, "topic": s.topic, "partition": s.partition,
                 "committed": s.committed, "metadata": s.metadata, "log_start": s.log_start,
                 "log_end": s.log_end, "lag": s.lag, "sample_time": s.ts,
                 "sample_age_s": self.age_s} for s in self.samples]


def at(store: HistoryStore, group: str, ts: int) -> AtResult:
    """The group's latest sample at or before `ts` (UsageError when there is none)."""
    samples = store.at(group, ts)
    if not samples:
        _known(store, group)
        first = store.series(group)[0].ts
        raise UsageError(f"no sample of group '{group}' at or before {iso_ms(ts)}; its history "
                         f"starts at {iso_ms(first)}")
    return AtResult(group, ts, samples[0].ts, tuple(samples))


def status(store: HistoryStore, groups: Sequence[str] = (), *, all_groups: bool = False,
           window: int = DEFAULT_WINDOW, allowed_lag: int = 0,
           rewind_lookback: int = DEFAULT_REWIND_LOOKBACK) -> list[GroupStatus]:
    """Burrow-style status of groups from their last `window` samples in the store; a rewind
    holds while the partition is below its offset from before the rewind, looked for in the
    last `rewind_lookback` cycles (history/status.py). Three reads in all, whatever the number
    of groups: the windows, the look-back's committed offsets, the cycles of the latest
    samples."""
    check_status_args(window, allowed_lag, rewind_lookback)
    if all_groups and groups:
        raise UsageError("give groups or --all-groups, not both")
    names = [g.group for g in store.groups()] if all_groups else list(dict.fromkeys(groups))
    if not names:
        raise UsageError("no group given: name groups or use --all-groups" if not all_groups else
                         f"history store {store.display_url} has no samples yet "
                         "(record some with: offsetkeeper history record --all-groups)")
    recent = store.recent_many(names, window)
    for g in names:
        if not recent.get(g):
            _known(store, g)
    rewinds = _rewinds(store, recent, names, rewind_lookback)
    verdicts = [evaluate_status(recent[g], window=window, allowed_lag=allowed_lag, group=g,
                                rewinds=rewinds.get(g, {}))
                for g in names]
    now = now_ms()
    lasts = [st.last_sample for st in verdicts if st.last_sample is not None]
    cycles = {c.ts: c for c in store.cycles(since=min(lasts), until=max(lasts))} if lasts else {}
    return [_flag_stale(st, now, cycles.get(st.last_sample)) for st in verdicts]


def check_status_args(window: int, allowed_lag: int, rewind_lookback: int) -> None:
    """UsageError naming the option for a window, allowed lag or look-back out of range."""
    if window < 2:
        raise UsageError(f"--window {window} is too small (expected at least 2 samples)")
    if allowed_lag < 0:
        raise UsageError(f"--allowed-lag {allowed_lag} is negative (expected 0 or more)")
    if rewind_lookback < window:
        raise UsageError(f"--rewind-lookback {rewind_lookback} is shorter than --window {window} "
                         "(expected at least the window)")


def _rewinds(store: HistoryStore, recent: dict[str, list[Sample]], names: list[str],
             lookback: int) -> dict[str, dict[tuple[str, int], RewindMark | None]]:
    """The look-back's rewind marks: one aggregate says which partitions are below their
    highest offset of the look-back (rare: a rewind being recovered from), and only those
    groups' offsets are read point by point. Partitions at their peak get None (no rewind)."""
    peaks = store.committed_peaks_many(names, lookback)
    below: dict[str, set[tuple[str, int]]] = {}
    out: dict[str, dict[tuple[str, int], RewindMark | None]] = {}
    for g in names:
        latest: dict[tuple[str, int], int] = {}
        for s in recent[g]:  # ordered by ts: the last one per partition wins
            latest[(s.topic, s.partition)] = s.committed
        out[g] = {tp: None for tp in latest}
        for tp, c in latest.items():
            if c < peaks.get(g, {}).get(tp, c):
                below.setdefault(g, set()).add(tp)
    if below:
        points = store.committed_points_many(list(below), lookback)
        for g, tps in below.items():
            marks = rewind_marks({tp: p for tp, p in points.get(g, {}).items() if tp in tps})
            out[g].update(marks)
    return out


def _flag_stale(st: GroupStatus, now: int, cyc: Cycle | None) -> GroupStatus:
    """Say so in the reason when the newest sample is older than three sampling intervals (or
    10 minutes when the interval is unknown): the verdict is then about the past. A sampler
    whose cycles overrun the interval samples that much less often: the limit is then three
    times the cycle's duration (not a stopped sampler). `cyc`: the cycle of the newest sample."""
    last = st.last_sample or now
    limit = 3 * max(cyc.interval_ms, cyc.duration_ms) if cyc else 600_000
    if now - last <= limit:
        return st
    text = human_duration_ms(now - last)
    return replace(st, reason=f"{st.reason} (latest sample {text} old: is the sampler running?)")


def status_rows(statuses: Sequence[GroupStatus], *, partitions: bool = False) -> list[dict]:
    if not partitions:
        return [{k: v for k, v in st.as_dict().items() if k not in ("partitions", "last_sample_iso")}
                for st in statuses]
    return [{"group": st.group, "topic": p.topic, "partition": p.partition,
             "status": str(p.status), "lag": p.lag, "lag_raw": p.lag_raw,
             "time_lag_s": round(p.time_lag_s, 3), "committed": p.committed,
             "log_end": p.log_end, "lso": p.lso, "open_txn_since": p.open_txn_since,
             "reason": p.reason}
            for st in statuses for p in st.partitions]


STATUS_COLUMNS = ["group", "status", "total_lag", "max_lag", "max_time_lag_s", "complete",
                  "last_sample", "reason"]
PARTITION_STATUS_COLUMNS = ["group", "topic", "partition", "status", "lag", "lag_raw",
                            "time_lag_s", "committed", "log_end", "reason"]
