"""Consumer status the way Burrow evaluates it, without its false alarms. Pure: samples in, status out.

Per partition, over the last `window` samples (oldest first), with `allowed_lag` (default 0):

1. current lag <= allowed            -> OK     (an idle topic whose consumer is caught up is OK:
                                                 Burrow #38, #140, #287 reported STOP there)
2. the committed offset went back     -> REWIND
3. the window is full and the committed offset never changed in it:
     no member owns the partition     -> STOP   (nobody consumes it)
     lag > allowed in every sample    -> STALL  (a member owns it but does not move)
4. the window is full, lag > allowed in every sample and never decreased -> WARN
5. the window is not full yet         -> INCOMPLETE (no verdict: a stopped consumer and a
                                                 moving one look alike in one sample)
6. otherwise                          -> OK

Samples are taken on a timer, not at commit time, so lag is evaluated between commits too
(Burrow #127 evaluated only when a commit arrived). Without commit timestamps, "the consumer
stopped committing" is judged from the offset not moving for the whole window plus group
membership: STOP when no member owns the partition, STALL when one does.

Group: ERR if any partition is STOP, STALL or REWIND; else WARN if any is WARN; else
INCOMPLETE if any is INCOMPLETE; else OK.

Lag is what a read_committed consumer still has to read (kafka/stable.py): a group caught up
behind transaction markers is caught up, and one held at the last stable offset by an open
transaction has read all it may read — OK, and the reason says it waits on that transaction,
since when, and that this is not the consumer's fault (the producer's transaction is open).
A group with lag whose window is not full yet has no verdict: its status is INCOMPLETE (never
OK, never ERR), its reason says `not enough samples (4/10)`, and `lag status` exits 3 for it
(1 with `--fail-on incomplete`) when no group fails.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from offsetkeeper.history.model import Sample
from offsetkeeper.times import iso_ms

DEFAULT_WINDOW = 10
# Cycles `lag status` looks back for a rewind not yet recovered from (rewind_mark).
DEFAULT_REWIND_LOOKBACK = 60
NO_LOOKBACK = object()  # evaluate_partition's `rewind` when no look-back was read


class Status(StrEnum):
    """Burrow's status names (group status is OK, WARN, ERR or INCOMPLETE), and INCOMPLETE: no
    verdict yet, the window of samples is not full."""

    OK = "OK"
    WARN = "WARN"
    ERR = "ERR"
    STOP = "STOP"
    STALL = "STALL"
    REWIND = "REWIND"
    INCOMPLETE = "INCOMPLETE"

    @property
    def code(self) -> int:
        """Numeric value for the Prometheus gauge (0 OK, 1 WARN, 2 ERR, 3 STOP, 4 STALL,
        5 REWIND, 6 INCOMPLETE)."""
        return list(Status).index(self)


ERROR_STATES = frozenset({Status.STOP, Status.STALL, Status.REWIND})


@dataclass(frozen=True)
class PartitionStatus:
    """The verdict for one partition, with the numbers behind it."""

    topic: str
    partition: int
    status: Status
    reason: str
    committed: int
    log_end: int
    lag: int
    time_lag_s: float
    samples: int
    consumer_id: str = ""
    lag_raw: int = 0                    # log end - committed (markers and open transactions count)
    lso: int | None = None              # last stable offset
    open_txn_since: int | None = None   # an open transaction holds the LSO back since (ms)


@dataclass(frozen=True)
class GroupStatus:
    """The verdict for a group: worst of its partitions, a one-line reason, and the partitions."""

    group: str
    status: Status
    reason: str
    partitions: tuple[PartitionStatus, ...] = field(default_factory=tuple)
    total_lag: int = 0
    max_lag: int = 0
    max_time_lag_s: float = 0.0
    complete: float = 0.0       # how full the window is (1.0 = `window` samples)
    last_sample: int | None = None
    state: str = ""
    members: int = 0
    # OK only because the window is not full yet (lag above allowed, fewer than `window` samples)
    undecided: bool = False

    def as_dict(self) -> dict:
        return {
            "group": self.group, "status": str(self.status), "reason": self.reason,
            "total_lag": self.total_lag, "max_lag": self.max_lag,
            "max_time_lag_s": round(self.max_time_lag_s, 3), "complete": round(self.complete, 2),
            "last_sample": self.last_sample, "last_sample_iso": iso_ms(self.last_sample), "state": self.state, "members": self.members,
            "partitions": [{**p.__dict__, "status": str(p.status),
                            "time_lag_s": round(p.time_lag_s, 3),
                            "open_txn_since_iso": iso_ms(p.open_txn_since)} for p in self.partitions],
        }


def evaluate_partition(samples: Sequence[Sample], *, window: int = DEFAULT_WINDOW,
                       allowed_lag: int = 0, rewind: RewindMark | object | None = NO_LOOKBACK
                       ) -> PartitionStatus:
    """Status of one partition from its samples (any order; the last `window` by time count).

    `rewind`: what a longer look-back than the window says (`rewind_mark`): the rewind the
    partition has not recovered from yet, or None when there is none; left out, a rewind is
    seen only inside the window (Burrow's rule)."""
    w = sorted(samples, key=lambda s: s.ts)[-window:]
    if not w:
        raise ValueError("evaluate_partition needs at least one sample")
    cur = w[-1]
    full = len(w) >= window and len(w) >= 2

    def result(status: Status, reason: str) -> PartitionStatus:
        if cur.open_transaction:
            reason += f"; {waiting_reason(cur)}"
        return PartitionStatus(cur.topic, cur.partition, status, reason, cur.committed,
                               cur.log_end, cur.lag, cur.time_lag_s, len(w), cur.consumer_id,
                               cur.lag_raw, cur.lso, cur.open_txn_since)

    if cur.lag <= allowed_lag:
        return result(Status.OK, "caught up" if cur.lag == 0 else f"lag {cur.lag} within allowed {allowed_lag}")
    if rewind is not NO_LOOKBACK:
        if isinstance(rewind, RewindMark) and rewind_holds(rewind, cur):
            return result(Status.REWIND, rewind_reason(rewind, cur))
    else:
        for a, b in itertools.pairwise(w):
            if b.committed < a.committed:
                return result(Status.REWIND, f"committed offset went back from {a.committed} to "
                                             f"{b.committed} at {iso_ms(b.ts)}")
    lags = [s.lag for s in w]
    never_ok = all(x > allowed_lag for x in lags)
    unchanged = len({s.committed for s in w}) == 1
    if full and unchanged:
        if not cur.consumer_id:
            return result(Status.STOP, f"no consumer: offset {cur.committed} unchanged since "
                                       f"{iso_ms(w[0].ts)} or earlier, lag {cur.lag}")
        if never_ok:
            return result(Status.STALL, f"consumer {cur.consumer_id} owns it but offset "
                                        f"{cur.committed} has not moved in {len(w)} samples, "
                                        f"lag {cur.lag}")
    if full and never_ok and falling_behind(w):
        return result(Status.WARN, f"lag has not decreased in {len(w)} samples "
                                   f"({lags[0]} -> {lags[-1]})")
    if not full:
        return result(Status.INCOMPLETE, f"lag {cur.lag}; not enough samples ({len(w)}/{window}) "
                                         "to judge")
    return result(Status.OK, f"lag {cur.lag}, consumer moving")


def waiting_reason(s: Sample) -> str:
    """Why a partition's log end is out of reach: an open transaction holds the LSO back."""
    since = f" since {iso_ms(s.open_txn_since)}" if s.open_txn_since is not None else ""
    return (f"an open transaction{since} holds the last stable offset at {s.lso} (log end "
            f"{s.log_end}): read_committed consumers wait there until its producer commits or "
            "aborts it, not the consumer's fault")


def evaluate_status(samples: Iterable[Sample], *, window: int = DEFAULT_WINDOW,
                    allowed_lag: int = 0, group: str | None = None,
                    rewinds: Mapping[tuple[str, int], RewindMark | None] | None = None
                    ) -> GroupStatus:
    """Status of one group from its samples (every partition's recent samples, any order).

    `rewinds`: per (topic, partition), the look-back's `rewind_mark` (see `rewind_marks`);
    partitions missing from it, or all when it is None, see rewinds inside the window only."""
    by_tp: dict[tuple[str, int], list[Sample]] = defaultdict(list)
    gid = group
    for s in samples:
        if gid is None:
            gid = s.group
        if s.group == gid:
            by_tp[(s.topic, s.partition)].append(s)
    if gid is None or not by_tp:
        raise ValueError("evaluate_status needs samples of one group")
    parts = tuple(evaluate_partition(v, window=window, allowed_lag=allowed_lag,
                                     rewind=rewinds[tp] if rewinds is not None and tp in rewinds
                                     else NO_LOOKBACK)
                  for tp, v in sorted(by_tp.items()))
    latest = max((max(v, key=lambda s: s.ts) for v in by_tp.values()), key=lambda s: s.ts)
    bad = [p for p in parts if p.status in ERROR_STATES]
    warn = [p for p in parts if p.status is Status.WARN]
    total = sum(p.lag for p in parts)
    fewest = min(p.samples for p in parts)
    lagging = [p for p in parts if p.lag > allowed_lag]
    undecided = not bad and not warn and any(p.status is Status.INCOMPLETE for p in parts)
    if bad:
        status, worst = Status.ERR, bad
    elif warn:
        status, worst = Status.WARN, warn
    else:
        status, worst = (Status.INCOMPLETE if undecided else Status.OK), []
    if worst:
        first = worst[0]
        more = f" (+{len(worst) - 1} more)" if len(worst) > 1 else ""
        reason = f"{first.status} {first.topic}:{first.partition}: {first.reason}{more}"
    elif undecided:
        have = min(p.samples for p in lagging)
        reason = (f"not enough samples ({have}/{window}) to judge: total lag {total}, "
                  "no verdict yet")
    else:
        reason = "all partitions caught up" if total == 0 else f"total lag {total}, consumers moving"
        waiting = [p for p in parts if p.open_txn_since is not None or
                   (p.lso is not None and p.lso < p.log_end)]
        if waiting:
            w0 = waiting[0]
            since = f" since {iso_ms(w0.open_txn_since)}" if w0.open_txn_since is not None else ""
            more = f" (+{len(waiting) - 1} more)" if len(waiting) > 1 else ""
            reason += (f"; {w0.topic}:{w0.partition}{more} held at the last stable offset by an "
                       f"open transaction{since}: not the consumer's fault")
    complete = min(1.0, fewest / window)
    return GroupStatus(
        group=gid, status=status, reason=reason, partitions=parts, total_lag=total,
        max_lag=max(p.lag for p in parts), max_time_lag_s=max(p.time_lag_s for p in parts),
        complete=complete, last_sample=latest.ts, state=latest.state, members=latest.members,
        undecided=undecided)


# -- verdicts that hold (issue 32): a rewind until it is recovered, no WARN for a bounded lag ----

@dataclass(frozen=True)
class RewindMark:
    """A partition's committed offset went back and has not come back yet (within the
    look-back): from `peak` (the highest offset before it went back, last seen at `peak_ts`)
    down to `low` (first seen below the peak at `back_ts`)."""

    peak: int
    peak_ts: int
    low: int
    back_ts: int


@dataclass(frozen=True)
class CommitPeak:
    """The running state `rewind_mark` folds a partition's committed offsets into: the highest
    offset so far (`peak`, last seen at `peak_ts`), and since it, the lowest (`low`, None
    while the offset has not gone below the peak) and when it first went below (`back_ts`).
    The exporter keeps one per partition across cycles instead of a look-back."""

    peak: int
    peak_ts: int
    low: int | None = None
    back_ts: int | None = None

    def mark(self) -> RewindMark | None:
        """The rewind not recovered from, if the latest offset is below the peak."""
        if self.low is None or self.back_ts is None:
            return None
        return RewindMark(self.peak, self.peak_ts, self.low, self.back_ts)


def advance_peak(state: CommitPeak | None, ts: int, committed: int) -> CommitPeak:
    """The state after one more (ts, committed) point, in time order. Reaching the peak again
    ends a rewind; going below it starts one (or lowers its `low`). A point seen again (a
    cycle evaluated twice) changes nothing."""
    if state is not None and committed <= state.peak and ts <= state.peak_ts:
        return state
    if state is None or committed >= state.peak:
        return CommitPeak(committed, ts)
    if state.low is None:
        return CommitPeak(state.peak, state.peak_ts, committed, ts)
    return CommitPeak(state.peak, state.peak_ts, min(state.low, committed), state.back_ts)


def rewind_mark(points: Sequence[tuple[int, int]]) -> RewindMark | None:
    """The rewind a partition is still recovering from, from its (ts, committed) points oldest
    first (a look-back longer than the window): None when its latest offset is at or above
    every earlier one. Several rewinds in a row count from the highest offset before them; the
    progress back is measured from the lowest offset since."""
    state: CommitPeak | None = None
    for ts, c in points:
        state = advance_peak(state, ts, c)
    return state.mark() if state is not None else None


def rewind_marks(points: Mapping[tuple[str, int], Sequence[tuple[int, int]]]
                 ) -> dict[tuple[str, int], RewindMark | None]:
    """`rewind_mark` of every partition of a group (`HistoryStore.committed_points_many`)."""
    return {tp: rewind_mark(sorted(p)) for tp, p in points.items()}


def rewind_holds(mark: RewindMark, cur: Sample) -> bool:
    """REWIND stays until the committed offset passes the offset it had before the rewind.
    A log end below that offset (topic deleted and created again, records deleted) can never
    be passed: the rewind no longer holds then."""
    return cur.committed < mark.peak <= cur.log_end


def rewind_reason(mark: RewindMark, cur: Sample) -> str:
    """`rewound from 1000 to 200 at T; re-reading: 300 of 800 back (37%)`."""
    span = max(1, mark.peak - mark.low)
    done = max(0, cur.committed - mark.low)
    return (f"committed offset went back from {mark.peak} to {mark.low} at {iso_ms(mark.back_ts)}; "
            f"re-reading: {done} of {span} back ({100 * done // span}%), "
            f"REWIND until it passes {mark.peak}")


def falling_behind(w: Sequence[Sample]) -> bool:
    """Burrow's WARN ("lag never decreased in the window"), without its false alarm on a
    consumer whose lag stays small and bounded: the lag must also have grown over the window,
    and be more than the producers wrote between two samples (a lag under one interval's
    records is the batch the consumer is reading, not a backlog). Samples oldest first."""
    lags = [s.lag for s in w]
    if any(b < a for a, b in itertools.pairwise(lags)) or lags[-1] <= lags[0]:
        return False
    per_interval = max((b.log_end - a.log_end for a, b in itertools.pairwise(w)), default=0)
    return lags[-1] > per_interval
