"""Parsing of user input for resets: topic specs, datetimes, durations, offset CSV files.

Every function raises UsageError with a one-line message naming the bad value.
"""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from offsetkeeper.errors import UsageError
from offsetkeeper.models import TopicPartition
from offsetkeeper.reset.targets import FromOffsets

_DURATION = re.compile(
    r"^(?P<sign>[-+])?P(?:(?P<days>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<hours>\d+(?:\.\d+)?)H)?(?:(?P<minutes>\d+(?:\.\d+)?)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$",
    re.IGNORECASE,
)


def parse_topic_spec(text: str) -> tuple[str, tuple[int, ...] | None]:
    """`topic` -> (topic, None); `topic:0,2` -> (topic, (0, 2))."""
    topic, sep, parts = text.partition(":")  # Kafka topic names cannot contain ':'
    if not topic.strip():
        raise UsageError(f"--topic '{text}' has no topic name (expected TOPIC or TOPIC:P[,P...])")
    if not sep:
        return topic, None
    try:
        partitions = tuple(sorted({int(p) for p in parts.split(",") if p.strip() != ""}))
    except ValueError:
        raise UsageError(
            f"--topic '{text}': partitions must be integers (expected TOPIC:P[,P...])") from None
    if not partitions or any(p < 0 for p in partitions):
        raise UsageError(f"--topic '{text}': expected non-negative partition numbers after ':'")
    return topic, partitions


def parse_datetime(text: str) -> int:
    """ISO-8601 datetime -> epoch milliseconds; no zone means UTC (like kafka-consumer-groups)."""
    s = text.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(s)
    except ValueError:
        raise UsageError(
            f"--to-datetime '{text}' is not an ISO-8601 datetime "
            "(expected e.g. 2026-11-20T09:40:00, 2026-11-20T09:40:00.000Z or ...+02:00)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


def parse_duration(text: str) -> timedelta:
    """ISO-8601 duration `PnDTnHnMnS` (as --by-duration takes it); the sign is ignored."""
    m = _DURATION.match(text.strip())
    if not m or not any(m.group(k) for k in ("days", "hours", "minutes", "seconds")) or \
            text.strip().upper().endswith("T"):
        raise UsageError(f"--by-duration '{text}' is not an ISO-8601 duration (expected e.g. PT1H30M, P1DT2H)")
    return timedelta(
        days=float(m.group("days") or 0), hours=float(m.group("hours") or 0),
        minutes=float(m.group("minutes") or 0), seconds=float(m.group("seconds") or 0),
    )


def parse_offset(text: str, *, what: str = "--to-offset") -> int:
    """A non-negative integer offset."""
    try:
        value = int(text.strip())
    except (ValueError, AttributeError):
        raise UsageError(f"{what} '{text}' is not a number (expected a non-negative integer)") from None
    if value < 0:
        raise UsageError(f"{what} {value} is negative (expected a non-negative integer)")
    return value


def parse_offsets_csv(text: str, *, source: str = "file") -> FromOffsets:
    """Parse `topic,partition,offset` (one group) or `group,topic,partition,offset` lines.

    No header. The form is detected from the first data line; mixing forms is an error.
    """
    offsets: dict[str | None, dict[TopicPartition, int]] = defaultdict(dict)
    width: int | None = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = [f.strip() for f in line.split(",")]
        if width is None:
            width = len(fields)
            if width not in (3, 4):
                raise UsageError(
                    f"{source} line {lineno}: expected topic,partition,offset or "
                    f"group,topic,partition,offset, got '{line}'")
        elif len(fields) != width:
            raise UsageError(f"{source} line {lineno}: expected {width} fields like the first line, got '{line}'")
        group = fields[0] if width == 4 else None
        topic, part, off = fields[-3:]
        if (width == 4 and not group) or not topic:
            raise UsageError(f"{source} line {lineno}: empty group or topic in '{line}'")
        try:
            partition = int(part)
            offset = int(off)
        except ValueError:
            raise UsageError(f"{source} line {lineno}: partition and offset must be integers, got '{line}'") from None
        if partition < 0 or offset < 0:
            raise UsageError(f"{source} line {lineno}: partition and offset must be non-negative, got '{line}'")
        offsets[group][TopicPartition(topic, partition)] = offset
    if width is None:
        raise UsageError(f"{source} holds no offsets (expected topic,partition,offset lines)")
    return FromOffsets(offsets=dict(offsets), source=source)
