"""Commit policies: when a consumer commits, with Spring Kafka's AckMode meanings.

Pure: `CommitPolicy` validates its parameters, and `commit_due` decides — from counts and times
handed in — whether the pending acknowledged offsets are to be committed now. The consumer
(`offsetkeeper.consumer.core`) calls it at two moments:

- ``"ack"``: right after a record was acknowledged (processed, or `ack()` called);
- ``"poll"``: when every record of the previous poll has been handed out and the application
  asks for more — Spring's "all the records returned by the previous poll have been processed".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from offsetkeeper.errors import ConsumerConfigError


class AckMode(StrEnum):
    """When offsets are committed (Spring Kafka ContainerProperties.AckMode, plus AUTO and
    BEFORE_PROCESSING)."""

    AUTO = "auto"
    """librdkafka auto commit every `auto_commit_interval_ms`, of the offsets of processed
    records only (enable.auto.offset.store=false; the consumer stores what was acknowledged)."""
    RECORD = "record"
    """Commit after each record is processed."""
    BATCH = "batch"
    """Commit once all records of a poll are processed (Spring's default)."""
    TIME = "time"
    """Like BATCH, when `ack_time_s` has passed since the last commit."""
    COUNT = "count"
    """Like BATCH, when `ack_count` records were processed since the last commit."""
    COUNT_TIME = "count_time"
    """Like BATCH, when either COUNT or TIME holds."""
    MANUAL = "manual"
    """The application calls ack(); acks are queued and committed when the previous poll's
    records are processed (acks may come out of order: the contiguous prefix is committed)."""
    MANUAL_IMMEDIATE = "manual_immediate"
    """The application calls ack(); committed at once when called on the consumer thread,
    otherwise queued and committed at the next poll."""
    BEFORE_PROCESSING = "before_processing"
    """At-most-once: each poll's offsets are committed synchronously before its records are
    handed to the application (a crash while processing loses the rest of that poll)."""


MANUAL_MODES = frozenset({AckMode.MANUAL, AckMode.MANUAL_IMMEDIATE})


@dataclass(frozen=True)
class CommitPolicy:
    """How and when a consumer commits. Invalid values raise ConsumerConfigError at once.

    `asynchronous` commits do not wait for the broker (results arrive in the on-commit callback);
    synchronous commits retry retriable errors `commit_retries` times with exponential backoff
    starting at `commit_backoff_s`.
    """

    mode: AckMode = AckMode.BATCH
    ack_time_s: float | None = None
    ack_count: int | None = None
    asynchronous: bool = False
    auto_commit_interval_ms: int = 5000
    commit_retries: int = 3
    commit_backoff_s: float = 0.1

    def __post_init__(self) -> None:
        try:
            mode = AckMode(self.mode)
        except ValueError:
            raise ConsumerConfigError(
                f"unknown commit mode {self.mode!r}; expected one of "
                f"{', '.join(m.value for m in AckMode)}") from None
        object.__setattr__(self, "mode", mode)
        wants_time = mode in (AckMode.TIME, AckMode.COUNT_TIME)
        wants_count = mode in (AckMode.COUNT, AckMode.COUNT_TIME)
        if wants_time:
            t = self.ack_time_s
            if t is None or isinstance(t, bool) or not isinstance(t, int | float) \
                    or not math.isfinite(t) or t <= 0:
                raise ConsumerConfigError(
                    f"ack_time_s={t!r} is invalid for {mode.name}; expected a number of seconds > 0")
        elif self.ack_time_s is not None:
            raise ConsumerConfigError(
                f"ack_time_s={self.ack_time_s!r} applies to TIME and COUNT_TIME only, not {mode.name}")
        if wants_count:
            n = self.ack_count
            if n is None or isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ConsumerConfigError(
                    f"ack_count={n!r} is invalid for {mode.name}; expected an integer >= 1")
        elif self.ack_count is not None:
            raise ConsumerConfigError(
                f"ack_count={self.ack_count!r} applies to COUNT and COUNT_TIME only, not {mode.name}")
        ms = self.auto_commit_interval_ms
        if isinstance(ms, bool) or not isinstance(ms, int) or ms < 1:
            raise ConsumerConfigError(
                f"auto_commit_interval_ms={ms!r} is invalid; expected an integer >= 1")
        if isinstance(self.commit_retries, bool) or not isinstance(self.commit_retries, int) \
                or self.commit_retries < 0:
            raise ConsumerConfigError(
                f"commit_retries={self.commit_retries!r} is invalid; expected an integer >= 0")
        b = self.commit_backoff_s
        if isinstance(b, bool) or not isinstance(b, int | float) or not math.isfinite(b) or b < 0:
            raise ConsumerConfigError(
                f"commit_backoff_s={b!r} is invalid; expected a number of seconds >= 0")
        if self.asynchronous and mode in (AckMode.AUTO, AckMode.BEFORE_PROCESSING):
            raise ConsumerConfigError(
                f"asynchronous=True does not apply to {mode.name} "
                f"({'librdkafka commits in the background' if mode is AckMode.AUTO else 'at-most-once needs the commit done before processing'})")

    # Convenience constructors read like Spring's properties.
    @classmethod
    def auto(cls, interval_ms: int = 5000) -> CommitPolicy:
        return cls(AckMode.AUTO, auto_commit_interval_ms=interval_ms)

    @classmethod
    def record(cls, *, asynchronous: bool = False) -> CommitPolicy:
        return cls(AckMode.RECORD, asynchronous=asynchronous)

    @classmethod
    def batch(cls, *, asynchronous: bool = False) -> CommitPolicy:
        return cls(AckMode.BATCH, asynchronous=asynchronous)

    @classmethod
    def time(cls, ack_time_s: float, *, asynchronous: bool = False) -> CommitPolicy:
        return cls(AckMode.TIME, ack_time_s=ack_time_s, asynchronous=asynchronous)

    @classmethod
    def count(cls, ack_count: int, *, asynchronous: bool = False) -> CommitPolicy:
        return cls(AckMode.COUNT, ack_count=ack_count, asynchronous=asynchronous)

    @classmethod
    def count_time(cls, ack_count: int, ack_time_s: float, *, asynchronous: bool = False) -> CommitPolicy:
        return cls(AckMode.COUNT_TIME, ack_count=ack_count, ack_time_s=ack_time_s,
                   asynchronous=asynchronous)

    @classmethod
    def manual(cls, *, immediate: bool = False, asynchronous: bool = False) -> CommitPolicy:
        return cls(AckMode.MANUAL_IMMEDIATE if immediate else AckMode.MANUAL, asynchronous=asynchronous)

    @classmethod
    def before_processing(cls) -> CommitPolicy:
        return cls(AckMode.BEFORE_PROCESSING)

    @property
    def is_manual(self) -> bool:
        """True when the application acknowledges records itself."""
        return self.mode in MANUAL_MODES

    @property
    def label(self) -> str:
        extra = []
        if self.ack_count is not None:
            extra.append(f"count={self.ack_count}")
        if self.ack_time_s is not None:
            extra.append(f"time={self.ack_time_s:g}s")
        if self.mode is AckMode.AUTO:
            extra.append(f"interval={self.auto_commit_interval_ms}ms")
        elif self.mode is not AckMode.BEFORE_PROCESSING:
            extra.append("async" if self.asynchronous else "sync")
        return f"{self.mode.value}({', '.join(extra)})"


def commit_due(
    policy: CommitPolicy,
    moment: Literal["ack", "poll"],
    *,
    acked_since_commit: int,
    seconds_since_commit: float,
    on_consumer_thread: bool = True,
) -> bool:
    """Whether pending acknowledged offsets must be committed at this moment.

    AUTO and BEFORE_PROCESSING never commit from here (librdkafka / the poll itself does).
    """
    mode = policy.mode
    if moment == "ack":
        if mode is AckMode.RECORD:
            return True
        return mode is AckMode.MANUAL_IMMEDIATE and on_consumer_thread
    if mode in (AckMode.BATCH, AckMode.MANUAL, AckMode.MANUAL_IMMEDIATE, AckMode.RECORD):
        # RECORD: anything acknowledged off the consumer thread is committed here.
        return True
    time_ok = policy.ack_time_s is not None and seconds_since_commit >= policy.ack_time_s
    count_ok = policy.ack_count is not None and acked_since_commit >= policy.ack_count
    if mode is AckMode.TIME:
        return time_ok
    if mode is AckMode.COUNT:
        return count_ok
    if mode is AckMode.COUNT_TIME:
        return time_ok or count_ok
    return False
