"""Lag that understands transactions: the log as a read_committed consumer sees it. Pure.

On a transactional topic every transaction ends with a control record (COMMIT or ABORT marker)
that takes an offset but is never delivered, and the records of aborted transactions are never
delivered to a read_committed consumer. So `log end - committed offset` of a consumer that has
read everything stays at 1 or more for ever (librdkafka #2539). And while a transaction is open,
a read_committed consumer cannot read past the last stable offset (LSO): the first offset of the
oldest open transaction.

Lag, here, is the number of records a read_committed consumer still has to read:

    lag = LSO - max(committed, next readable offset)        (never negative)

where the next readable offset is the offset of the first record a read_committed consumer
gets when it fetches from the committed offset (markers and aborted records skipped), or the
LSO when it gets none: only control markers (or aborted records) lie between the committed
offset and the end, so the consumer is caught up and the lag is 0. When the next readable offset
was not read (the fetch is made only for partitions whose raw lag is small, or the broker did
not answer in time), lag is `LSO - committed`: it counts markers, so on transactional topics it
is an upper bound, exact on all others.

`lag_raw = log end - committed` is kept beside it, named so.
"""

from __future__ import annotations

from dataclasses import dataclass

# Fetch the next readable record only for partitions whose raw lag is at most this many offsets:
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
                 next_offset: int | None = None) -> int:
    """Records a read_committed consumer at `committed` still has to read (see the module doc).

    `next_offset`: the offset of the first record a read_committed fetch from `committed`
    returned, or the offset it reached the end at when it returned none (None: not read).
    """
    pos = committed if next_offset is None else max(committed, next_offset)
    return max(0, stable_end(log_end, lso) - pos)


def raw_lag(committed: int, log_end: int) -> int:
    """The plain offset difference `log end - committed` (kafka-consumer-groups.sh's LAG)."""
    return log_end - committed


def wants_probe(committed: int | None, log_end: int, lso: int | None,
                max_raw_lag: int = PROBE_MAX_RAW_LAG) -> bool:
    """Whether a read_committed fetch from `committed` is worth making: the consumer is behind
    the stable end by a few offsets only, which may all be markers or aborted records."""
    if committed is None:
        return False
    gap = stable_end(log_end, lso) - committed
    return 0 < gap <= max_raw_lag
