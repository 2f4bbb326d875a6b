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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from offsetkeeper.history.model import Sample
from offsetkeeper.times import iso_ms

DEFAULT_WINDOW = 10


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
                       allowed_lag: int = 0) -> PartitionStatus:
    """Status of one partition from its samples (any order; the last `window` by time count)."""
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
    if full and never_ok and all(b >= a for a, b in itertools.pairwise(lags)):
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
                    allowed_lag: int = 0, group: str | None = None) -> GroupStatus:
    """Status of one group from its samples (every partition's recent samples, any order)."""
    by_tp: dict[tuple[str, int], list[Sample]] = defaultdict(list)
    gid = group
    for s in samples:
        if gid is None:
            gid = s.group
        if s.group == gid:
            by_tp[(s.topic, s.partition)].append(s)
    if gid is None or not by_tp:
        raise ValueError("evaluate_status needs samples of one group")
    parts = tuple(evaluate_partition(v, window=window, allowed_lag=allowed_lag)
                  for _, v in sorted(by_tp.items()))
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
