"""The one interface every history store offers (writers: the sampler; readers: CLI, dashboard).

Read API (stable; the web dashboard builds on it):

    groups()                         -> [GroupSummary]   every group with samples, newest first
    latest(group)                    -> [Sample]         the group's most recent cycle
    at(group, ts)                    -> [Sample]         the group's latest cycle at or before ts
    recent(group, cycles=N)          -> [Sample]         the last N cycles (status windows)
    recent_many(groups, cycles=N)    -> {group: [Sample]} recent() of many groups in one call
    committed_points_many(groups, cycles=N) -> {group: {(topic, part): [(ts, committed)]}}
    committed_peaks_many(groups, cycles=N)  -> {group: {(topic, part): highest committed}}
    series(group, topic=None, since=None, until=None) -> [Sample]   ordered by time
    cycles(since, until)             -> [Cycle]          when sampling ran, at what interval
    gaps(since, until)               -> [Gap]            when it could not
    log_end_points(since)            -> {tp: [(ts, log_end)]}

Source-connector positions (Kafka Connect, schema version 5; SQLite, PostgreSQL and memory):

    write_positions(positions)                          one read of the workers' source connectors
    positions(connector=None, since=None, until=None)   -> [Position] ordered by time
    keeps_positions                                     False where the store cannot (Redis)

Write API: write(samples, cycle), write_gap(gap), prune(policy, now).
All times are epoch milliseconds. A cycle writes every sampled partition of a group with the
same `ts`, so "the group at time T" is one consistent set of offsets.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from offsetkeeper.errors import StoreError
from offsetkeeper.history.model import Cycle, Gap, Position, Sample
from offsetkeeper.models import TopicPartition
from offsetkeeper.redact import mask_url

SCHEMA_VERSION = 5


class StoreUnavailable(StoreError):
    """The history store cannot be reached (the sampler keeps samples in memory and retries)."""


@dataclass(frozen=True)
class GroupSummary:
    """A group the store has samples of."""

    group: str
    first_ts: int
    last_ts: int


@dataclass(frozen=True)
class RetentionPolicy:
    """Delete samples older than `retain_ms`; thin those older than `downsample_after_ms` to
    the last sample per `bucket_ms` per group (None disables a step)."""

    retain_ms: int | None = 30 * 86_400_000
    downsample_after_ms: int | None = 86_400_000
    bucket_ms: int = 300_000


@dataclass(frozen=True)
class PruneResult:
    deleted: int
    downsampled: int


def redact_url(url: str) -> str:
    """The URL with any password replaced (for messages and logs): `redact.mask_url`."""
    return mask_url(url, known=url)


class HistoryStore(ABC):
    """A place samples are written to and read back from. Use as a context manager."""

    url: str

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def display_url(self) -> str:
        return redact_url(self.url)

    # -- lifecycle ---------------------------------------------------------------------------
    @abstractmethod
    def check(self) -> None:
        """Connect, create or migrate the schema; raise StoreUnavailable when unreachable."""

    @abstractmethod
    def schema_version(self) -> int: ...

    @abstractmethod
    def close(self) -> None: ...

    # -- writing -----------------------------------------------------------------------------
    @abstractmethod
    def write(self, samples: Sequence[Sample], cycle: Cycle | None = None) -> None:
        """Write one cycle's samples (idempotent: rewriting the same samples changes nothing)."""

    @abstractmethod
    def write_gap(self, gap: Gap) -> None: ...

    @abstractmethod
    def prune(self, policy: RetentionPolicy, now: int) -> PruneResult: ...

    # -- reading -----------------------------------------------------------------------------
    @abstractmethod
    def groups(self) -> list[GroupSummary]: ...

    @abstractmethod
    def at(self, group: str, ts: int) -> list[Sample]: ...

    def latest(self, group: str) -> list[Sample]:
        return self.at(group, 2**62)

    @abstractmethod
    def recent(self, group: str, cycles: int) -> list[Sample]: ...

    def recent_many(self, groups: Sequence[str], cycles: int) -> dict[str, list[Sample]]:
        """`recent(g, cycles)` for every group in `groups`, in as few round trips as the
        backend allows (the dashboard's groups page reads 1,000 groups at once). Groups without
        samples are left out; each list is ordered by ts, topic, partition like `recent`."""
        out = {}
        for g in dict.fromkeys(groups):
            samples = self.recent(g, cycles)
            if samples:
                out[g] = samples
        return out

    # -- source-connector positions (Kafka Connect) ------------------------------------------
    keeps_positions = False

    def write_positions(self, positions: Sequence[Position]) -> None:
        """Write one read of source connectors' positions (idempotent, like `write`)."""
        raise StoreError(f"history store {self.display_url} does not keep Kafka Connect "
                         "source positions (use SQLite or PostgreSQL)")

    def positions(self, connector: str | None = None, since: int | None = None,
                  until: int | None = None) -> list[Position]:
        """Positions (of one connector, or all) in a time range, ordered by time, worker,
        connector, partition."""
        return []

    # -- notification state (history/notify.py) ----------------------------------------------
    def notify_state(self) -> dict[str, str]:
        """Per group, the status last notified ("WARN"/"ERR" while an incident is open, "OK"
        once closed). Kept in memory here; the SQL stores keep it in a table, so a restarted
        sampler sends nothing twice."""
        return dict(self.__dict__.setdefault("_notified", {}))

    def save_notify_state(self, group: str, status: str) -> None:
        self.__dict__.setdefault("_notified", {})[group] = status

    def committed_peaks_many(self, groups: Sequence[str], cycles: int
                             ) -> dict[str, dict[tuple[str, int], int]]:
        """Per group and partition, the highest committed offset of its last `cycles` cycles
        (only partitions below theirs need `committed_points_many`)."""
        return {g: {tp: max(c for _, c in pts) for tp, pts in by_tp.items()}
                for g, by_tp in self.committed_points_many(groups, cycles).items()}

    def committed_points_many(self, groups: Sequence[str], cycles: int
                              ) -> dict[str, dict[tuple[str, int], list[tuple[int, int]]]]:
        """Per group and partition, the (ts, committed offset) of its last `cycles` cycles,
        oldest first: the look-back of `lag status`' rewind rule (history/status.py)."""
        out: dict[str, dict[tuple[str, int], list[tuple[int, int]]]] = {}
        for g, samples in self.recent_many(groups, cycles).items():
            for s in samples:
                out.setdefault(g, {}).setdefault((s.topic, s.partition), []).append(
                    (s.ts, s.committed))
        return out

    @abstractmethod
    def series(self, group: str, topic: str | None = None, since: int | None = None,
               until: int | None = None) -> list[Sample]: ...

    @abstractmethod
    def cycles(self, since: int | None = None, until: int | None = None) -> list[Cycle]: ...

    @abstractmethod
    def gaps(self, since: int | None = None, until: int | None = None) -> list[Gap]: ...

    @abstractmethod
    def log_end_points(self, since: int) -> dict[TopicPartition, list[tuple[int, int]]]: ...
