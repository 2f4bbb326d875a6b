"""Lag that understands transactions: the log as a read_committed consumer sees it. Pure.

On a transactional topic every transaction ends with a control record (COMMIT or ABORT marker)
that takes an offset but is never delivered, and the records of aborted transactions are never
delivered to a read_committed consumer. So `log end - committed offset` of a consumer that has
read everything stays at 1 or more for ever (librdkafka #2539). And while a transaction is open,
a read_committed consumer cannot read past the last stable offset (LSO): the first offset of the
oldest open transaction.

Lag, here, is the number of records a read_committed consumer still has to read:

- when the committed offset is a few offsets short of the LSO (`wants_count`: at most
  PROBE_MAX_RAW_LAG), those records are counted: a read_committed consumer fetches from the
  committed offset up to the LSO (markers and aborted records are skipped) — so a consumer with
  only control markers (or aborted records) ahead of it has lag 0;
- otherwise (a real backlog, or the broker did not answer in time) `LSO - committed`, never
  negative: it counts markers, so on transactional topics it is an upper bound by at most one
  offset per transaction, exact on all others.

`lag_raw = log end - committed` is kept beside it, named so.
"""

from __future__ import annotations

from dataclasses import dataclass

# Count readable records only for partitions at most this many offsets short of the LSO:
# a consumer caught up behind a few markers has a raw lag of one per transaction since its last
# record, a consumer with a real backlog would not show a different answer worth a fetch.
PROBE_MAX_RAW_LAG = 64


@dataclass(frozen=True, slots=True)
class LogOffsets:
    """Log start, log end and last stable offset of a partition (from one batched ListOffsets)."""

    log_start: int
    log_end: int
    lso: int

    @property
    def open_transaction(self) -> bool:
        """An open transaction holds the LSO back: read_committed consumers wait at the LSO."""
        return self.lso < self.log_end


def stable_end(log_end: int, lso: int | None) -> int:
    """Where a read_committed consumer must stop: the LSO (never past the log end)."""
    return log_end if lso is None else min(lso, log_end)


def readable_lag(committed: int, log_end: int, lso: int | None,
                 counted: int | None = None) -> int:
    """Records a read_committed consumer at `committed` still has to read (see the module doc).

    `counted`: the records a read_committed fetch from `committed` up to the LSO returned
    (None: not counted).
    """
    if counted is not None:
        return max(0, counted)
    return max(0, stable_end(log_end, lso) - committed)


def raw_lag(committed: int, log_end: int) -> int:
    """The plain offset difference `log end - committed` (kafka-consumer-groups.sh's LAG)."""
    return log_end - committed


def wants_count(committed: int | None, log_end: int, lso: int | None,
                max_raw_lag: int = PROBE_MAX_RAW_LAG) -> bool:
    """Whether counting the records from `committed` to the LSO is worth a fetch: the consumer
    is behind the stable end by a few offsets only, which may all be markers or aborted
    records."""
    if committed is None:
        return False
    gap = stable_end(log_end, lso) - committed
    return 0 < gap <= max_raw_lag
