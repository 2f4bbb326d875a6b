"""The pure model of a Structured Streaming checkpoint's files (no I/O).

Spark 4 (and 3.x) writes, per micro-batch N:

- ``offsets/N``: a version line (``v1``), one JSON line of batch metadata (watermark, batch
  time, session conf), then one line per source of the query: that source's END offsets for
  batch N, or ``-`` for none. Kafka sources (Spark's JVM one and offsetkeeper's) write
  ``{"orders":{"0":23,"1":6}}``: per partition the offset of the next record to read.
- ``commits/N``: ``v1`` and ``{"nextBatchWatermarkMs":0}``; present once batch N is done.
- ``metadata``: ``{"id":"<query id>"}``; ``sources/<i>/0``: a JVM Kafka source's initial
  offsets (a NUL byte, ``v1``, the JSON); ``state/``: state stores of stateful queries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from offsetkeeper.errors import StoreError
from offsetkeeper.models import TopicPartition, offset_problem, short_number

_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")

VOID_OFFSET = "-"
_VERSION = re.compile(r"^v(\d+)$")
# The newest file versions this offsetkeeper understands (Spark 3.x and 4 write v1): a newer
# one may mean something else, so it is refused rather than read, shown or rewritten.
OFFSET_LOG_VERSION = 1


def _check_version(line: str, newest: int, where: str, what: str) -> None:
    m = _VERSION.match(line.strip())
    if m and not 1 <= int(m.group(1)) <= newest:
        raise StoreError(f"{where}: {what} version {line.strip()!r} is not one offsetkeeper reads "
                         f"(v1 to v{newest}); nothing was changed")

KafkaOffsets = dict[TopicPartition, int]


@dataclass(frozen=True)
class OffsetLogEntry:
    """One ``offsets/N`` file: version, batch metadata, one raw line per source."""

    batch_id: int
    version: str
    metadata: dict
    sources: tuple[str, ...]  # raw JSON lines ("-" for a source without an offset)

    def kafka_offsets(self, index: int) -> KafkaOffsets | None:
        """Source `index`'s offsets when it is a Kafka source (None otherwise)."""
        if index >= len(self.sources):
            return None
        return parse_kafka_offsets(self.sources[index])

    def kafka_sources(self) -> list[int]:
        """Indexes of the sources whose offsets have Spark's Kafka shape."""
        return [i for i in range(len(self.sources)) if parse_kafka_offsets(self.sources[i]) is not None]

    def with_source(self, index: int, offsets: Mapping[TopicPartition, int]) -> OffsetLogEntry:
        """A copy with source `index` replaced by `offsets` (other sources untouched)."""
        lines = list(self.sources)
        lines[index] = render_kafka_offsets(offsets)
        return OffsetLogEntry(self.batch_id, self.version, self.metadata, tuple(lines))


def parse_offset_log(batch_id: int, text: str, *, where: str = "") -> OffsetLogEntry:
    """Parse the text of ``offsets/N``; StoreError naming the file when it is malformed."""
    where = where or f"offsets/{batch_id}"
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    if len(lines) < 2 or not _VERSION.match(lines[0].strip()):
        raise StoreError(f"{where} is not a Spark offset log file (expected a line like 'v1', "
                         "a metadata line and one line per source)")
    _check_version(lines[0], OFFSET_LOG_VERSION, where, "offset log")
    try:
        meta = json.loads(lines[1])
    except (ValueError, RecursionError):  # RecursionError: absurdly nested JSON
        raise StoreError(f"{where}: the metadata line is not JSON") from None
    if not isinstance(meta, dict):
        raise StoreError(f"{where}: the metadata line is not a JSON object")
    for line in lines[2:]:
        parse_kafka_offsets(line, where=where)  # an invalid offset refuses the file
    return OffsetLogEntry(batch_id, lines[0].strip(), meta, tuple(lines[2:]))


def render_offset_log(entry: OffsetLogEntry) -> str:
    """The file text Spark reads back (no trailing newline, as Spark writes it)."""
    meta = json.dumps(entry.metadata, separators=(",", ":"))
    return "\n".join([entry.version, meta, *entry.sources])


def parse_kafka_offsets(line: str, *, where: str = "checkpoint") -> KafkaOffsets | None:
    """``{"orders":{"0":23}}`` -> {orders:0: 23}; None when the line is not in that shape;
    StoreError when it is but an offset is not in [0, 2^63) or a partition is negative."""
    line = line.strip()
    if not line or line == VOID_OFFSET:
        return None
    try:
        raw = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: absurdly nested JSON
        return None
    if not isinstance(raw, dict) or not raw:
        return None
    out: KafkaOffsets = {}
    for topic, parts in raw.items():
        if not isinstance(topic, str) or not isinstance(parts, dict):
            return None
        for p, o in parts.items():
            if not (isinstance(p, str) and p.lstrip("-").isascii() and p.lstrip("-").isdigit()) \
                    or isinstance(o, bool) or not isinstance(o, int):
                return None
            if len(p.lstrip("-")) > 10 or int(p) >= 2**31:
                raise StoreError(f"{where}: partition {short_number(p)} of topic {topic!r} is "
                                 "not a partition number (0 <= p < 2^31); nothing was changed")
            if int(p) < 0:
                raise StoreError(f"{where}: partition {p} of topic {topic!r} is negative")
            if (problem := offset_problem(o)) is not None:
                raise StoreError(f"{where}: {topic}:{p}: {problem} (valid offsets are "
                                 "0 <= offset < 2^63); nothing was changed")
            out[TopicPartition(topic, int(p))] = o
    return out


def check_topic_names(offsets: KafkaOffsets, *, where: str) -> None:
    """StoreError for a topic name Kafka cannot have, said from the file before the cluster
    is asked about it (it would only time out on such a name). Reading and showing a
    checkpoint does not need this; anything that asks the cluster does."""
    for topic in sorted({tp.topic for tp in offsets}):
        if not _TOPIC_NAME.fullmatch(topic) or topic in (".", ".."):
            raise StoreError(f"{where}: {str(topic)[:80]!r} is not a valid Kafka topic name "
                             "(1-249 of A-Z a-z 0-9 . _ -); nothing was changed")


def render_kafka_offsets(offsets: Mapping[TopicPartition, int]) -> str:
    """The compact JSON line Spark's Kafka source writes, topics and partitions sorted."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return json.dumps(out, separators=(",", ":"))


def parse_initial_offsets(text: str, *, where: str = "sources/<i>/0") -> KafkaOffsets | None:
    """A JVM Kafka source's ``sources/<i>/0`` file (NUL byte, ``v1``, JSON) -> offsets."""
    lines = [x for x in text.lstrip("\x00").split("\n") if x.strip()]
    if len(lines) >= 2 and _VERSION.match(lines[0].strip()):
        _check_version(lines[0], OFFSET_LOG_VERSION, where, "source offsets")
        return parse_kafka_offsets(lines[1], where=where)
    return parse_kafka_offsets(lines[0], where=where) if lines else None


@dataclass(frozen=True)
class CheckpointState:
    """What a checkpoint says about its query's progress."""

    location: str
    query_id: str | None
    offset_batches: tuple[int, ...]
    commit_batches: tuple[int, ...]
    stateful: bool = False
    newest_change_s: float | None = None  # epoch seconds of the newest offsets/commits file
    initial: dict[int, KafkaOffsets] = field(default_factory=dict)  # sources/<i>/0

    @property
    def last_planned(self) -> int | None:
        return self.offset_batches[-1] if self.offset_batches else None

    @property
    def last_committed(self) -> int | None:
        """The newest batch with both an offsets and a commits file."""
        done = set(self.commit_batches) & set(self.offset_batches)
        return max(done) if done else None

    @property
    def pending(self) -> int | None:
        """A batch planned after the last committed one (it runs again on restart)."""
        lp, lc = self.last_planned, self.last_committed
        return lp if lp is not None and (lc is None or lp > lc) else None


def batch_ids(names: list[str]) -> tuple[int, ...]:
    """Batch ids from file names in offsets/ or commits/ (ignores .crc and temp files)."""
    return tuple(sorted(int(n) for n in names if n.isdigit()))
