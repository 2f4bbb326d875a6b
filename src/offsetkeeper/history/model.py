"""What the history stores: one `Sample` per group partition per cycle, cycles and gaps.

All times are epoch milliseconds (UTC). A committed offset is the offset of the next record the
group will read. `lag` is the number of records a read_committed consumer still has to read
(kafka/stable.py): against the last stable offset, 0 when only transaction markers or aborted
records lie between the committed offset and the end; `lag_raw = log_end - committed`. Neither
is negative (committed offsets are read before log ends in a cycle).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from offsetkeeper.kafka.stable import readable_lag
from offsetkeeper.models import TopicPartition


@dataclass(frozen=True, slots=True)
class Sample:
    """One partition of one group at one moment (the schema of every store, version 1)."""

    ts: int                       # when the cycle read this partition (ms)
    group: str
    topic: str
    partition: int
    committed: int                # committed offset (next record to read)
    log_start: int
    log_end: int
    metadata: str = ""            # commit metadata
    state: str = ""               # group state (stable, empty, ...)
    members: int = 0              # group member count
    consumer_id: str = ""         # member owning the partition ("" when none)
    client_id: str = ""
    host: str = ""
    next_ts: int | None = None    # timestamp of the record at `committed` (None: caught up/unknown)
    time_lag_ms: int | None = None          # exact: ts - next_ts (0 when caught up)
    time_lag_interp_ms: int | None = None   # interpolated from sampled log ends
    # schema version 4: transactions (None in samples recorded before, and where not read)
    lso: int | None = None        # last stable offset: read_committed consumers stop there
    readable: int | None = None   # records a read_committed consumer gets from `committed` to
                                  # the LSO, when counted (a few offsets short of it only)
    open_txn_since: int | None = None  # an open transaction holds the LSO back since (ms)

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def lag(self) -> int:
        """Records a read_committed consumer still has to read (0 when caught up, also when
        only transaction markers are left; never negative)."""
        return readable_lag(self.committed, self.log_end, self.lso, self.readable)

    @property
    def lag_raw(self) -> int:
        """The plain offset difference `log_end - committed` (never negative)."""
        return max(0, self.log_end - self.committed)

    @property
    def open_transaction(self) -> bool:
        """An open transaction holds the last stable offset below the log end."""
        return self.lso is not None and self.lso < self.log_end

    @property
    def time_lag_s(self) -> float:
        """Best time lag in seconds: exact when known, else interpolated, else 0 (never NaN)."""
        if self.lag == 0:
            return 0.0
        ms = self.time_lag_ms if self.time_lag_ms is not None else self.time_lag_interp_ms
        return max(0.0, (ms or 0) / 1000.0)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Cycle:
    """One sampling cycle as recorded: when, at what interval, how much, how long it took."""

    ts: int
    interval_ms: int
    groups: int
    partitions: int
    duration_ms: int


@dataclass(frozen=True, slots=True)
class Gap:
    """A time range without samples because the cluster or the store could not be reached."""

    start: int
    end: int
    reason: str





@dataclass(frozen=True, slots=True)
class Position:
    """A Kafka Connect source connector's position at one moment: its offset map for one of
    its partitions, both as canonical JSON text (sorted keys), exactly as the connector defines
    them (FileStream: ``{"filename": ...}`` -> ``{"position": 42}``). Sink connectors are not
    positions: their groups are sampled as every other consumer group."""

    ts: int
    worker: str         # the worker's REST URL, masked
    connector: str
    partition: str      # canonical JSON of the partition map
    offset: str         # canonical JSON of the offset map ("null": no offset)

    def as_dict(self) -> dict:
        return asdict(self)

    def numeric_fields(self) -> tuple[dict[str, float], int]:
        """The offset map's numeric values by key (the exporter's gauges), and how many values
        are not numbers (strings, booleans, maps, lists, null: skipped and counted)."""
        import json
        import math

        try:
            value = json.loads(self.offset)
        except ValueError:
            return {}, 1
        if not isinstance(value, dict):
            return {}, 1
        out: dict[str, float] = {}
        skipped = 0
        for k, v in value.items():
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
                out[k] = float(v)
            else:
                skipped += 1
        return out, skipped
