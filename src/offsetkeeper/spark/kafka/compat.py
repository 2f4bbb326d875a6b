"""Stand-ins for ``pyspark.sql.streaming.datasource`` (read limits, Trigger.AvailableNow), which
pyspark 4.0 lacks: with them the stream reader imports there and runs without admission control
(Spark 4.0 calls ``latestOffset()`` with no arguments and wraps Trigger.AvailableNow itself)."""

from __future__ import annotations

from dataclasses import dataclass


class ReadLimit:
    """A batch's read limit (never handed to a reader by pyspark 4.0)."""


@dataclass(frozen=True)
class ReadAllAvailable(ReadLimit):
    """No limit."""


@dataclass(frozen=True)
class ReadMaxRows(ReadLimit):
    """At most `max_rows` offsets per batch."""

    max_rows: int


class SupportsTriggerAvailableNow:
    """Marks a reader that fixes its end for Trigger.AvailableNow (not called by pyspark 4.0)."""

    def prepareForTriggerAvailableNow(self) -> None:
        """Remember the end to read up to."""
