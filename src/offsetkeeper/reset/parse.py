"""Parsing of user input: topic specs, integers, offsets, offset CSV files.

Every function raises UsageError with a one-line message naming the option (or file and line)
and the bad value. Times and durations are parsed in the foundations, by
`offsetkeeper.times.parse_time` and `parse_duration_ms` (the one grammar of each).

Decisions written down here because the issue left them open:
- Integers are ASCII digits only: `1_000`, `١٠` (Arabic-Indic) and ` 5` are refused, although
  Python's `int()` accepts them — a Kafka operator types `1000`, and anything else is a typo.
- The CSV of `--export`/`--from-file` is RFC 4180: a field holding `,`, `"`, a line break,
  leading/trailing whitespace, a leading `#` or a BOM is written quoted and read back exactly.
  Unquoted lines starting with `#` and blank lines are skipped (comments, as before).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from offsetkeeper.errors import UsageError
from offsetkeeper.models import OFFSET_LIMIT, TopicPartition, short_number
from offsetkeeper.progress import ProgressEvent, ProgressFn, no_progress
from offsetkeeper.reset.targets import FromOffsets

_ASCII_INT = re.compile(r"[0-9]+")
_SIGNED_ASCII_INT = re.compile(r"[-+]?[0-9]+")


def show(text: object) -> str:
    """A value quoted for an error message, with control characters escaped (never raw)."""
    return repr(str(text))


# No integer offsetkeeper takes has more digits than this (2^63 has 19); longer input is
# refused before int() (which refuses 4,300+ digits with a ValueError) and never echoed whole.
MAX_INT_DIGITS = 30


def parse_int(text: str, *, what: str, signed: bool = False, minimum: int | None = 0) -> int:
    """An integer written with ASCII digits only (and a sign when `signed`)."""
    s = str(text)
    if not (_SIGNED_ASCII_INT if signed else _ASCII_INT).fullmatch(s):
        expected = "an integer" if signed else "a non-negative integer"
        shown = show(s if len(s) <= 60 else s[:40] + f"… ({len(s)} characters)")
        raise UsageError(f"{what} {shown} is not {expected} (ASCII digits only)")
    if len(s.lstrip("+-")) > MAX_INT_DIGITS:
        raise UsageError(f"{what} {short_number(s)} is out of range (at most 19 digits: "
                         "offsets are below 2^63)")
    value = int(s)
    if minimum is not None and value < minimum:
        raise UsageError(f"{what} {short_number(value)} is less than {minimum}")
    return value


def parse_topic_spec(text: str, *, what: str = "--topic") -> tuple[str, tuple[int, ...] | None]:
    """`topic` -> (topic, None); `topic:0,2` -> (topic, (0, 2))."""
    topic, sep, parts = text.partition(":")  # Kafka topic names cannot contain ':'
    from offsetkeeper.models import check_names

    check_names([topic], what=what)
    if not topic.strip():
        raise UsageError(f"{what} {show(text)} has no topic name (expected TOPIC or TOPIC:P[,P...])")
    if not sep:
        return topic, None
    items = [p for p in parts.split(",") if p != ""]
    if not items or any(not _ASCII_INT.fullmatch(p) for p in items):
        raise UsageError(f"{what} {show(text)}: expected non-negative partition numbers "
                         "(ASCII digits) after ':', as in TOPIC:0,1,2")
    return topic, tuple(sorted({int(p) for p in items}))


def parse_offset(text: str, *, what: str = "--to-offset") -> int:
    """An offset: ASCII digits, 0 <= offset < 2^63."""
    value = parse_int(str(text), what=what)
    if value >= OFFSET_LIMIT:
        raise UsageError(f"{what} {short_number(value)} is not below 2^63 (the largest Kafka "
                         "offset)")
    return value


# -- CSV (RFC 4180) ----------------------------------------------------------------------------

def csv_field(value: str) -> str:
    """One CSV field, quoted when reading it back unquoted would change or split it."""
    if (value == "" or value != value.strip() or value.startswith("#")
            or any(c in value for c in ',"\r\n\ufeff')):
        return '"' + value.replace('"', '""') + '"'
    return value


def csv_line(fields: list[str]) -> str:
    """A CSV record (no line terminator)."""
    return ",".join(csv_field(f) for f in fields)


_LINE_END = re.compile(r"[\r\n]")


def _records(text: str, source: str) -> Iterator[tuple[int, list[tuple[str, bool]]]]:
    """(line number, [(value, was_quoted)]) per record; blank and `#` comment lines skipped."""
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c in "\r\n":
            i += 2 if text.startswith("\r\n", i) else 1
            line += 1
            continue
        if c == "#":
            while i < n and text[i] not in "\r\n":
                i += 1
            continue
        # The common case: a line without quotes is its fields split at commas (no loop over
        # characters in Python).
        end = _LINE_END.search(text, i)
        j = end.start() if end else n
        if '"' not in text[i:j]:
            yield line, [(v, False) for v in text[i:j].split(",")]
            i = j
            continue
        start = line
        fields: list[tuple[str, bool]] = []
        while True:
            if i < n and text[i] == '"':
                i += 1
                buf = []
                while True:
                    if i >= n:
                        raise UsageError(f"{source} line {start}: a quoted field is not closed")
                    ch = text[i]
                    if ch == '"':
                        if text.startswith('""', i):
                            buf.append('"')
                            i += 2
                            continue
                        i += 1
                        break
                    if ch == "\n" or (ch == "\r" and not text.startswith("\r\n", i)):
                        line += 1
                    buf.append(ch)
                    i += 1
                fields.append(("".join(buf), True))
                if i < n and text[i] not in ",\r\n":
                    raise UsageError(f"{source} line {line}: unexpected text after a closing quote")
            else:
                j = i
                while j < n and text[j] not in ",\r\n":
                    j += 1
                value = text[i:j]
                if '"' in value:
                    raise UsageError(f"{source} line {line}: a quote inside an unquoted field "
                                     f"{show(value)} (quote the whole field: \"a\"\"b\")")
                fields.append((value, False))
                i = j
            if i < n and text[i] == ",":
                i += 1
                continue
            break
        yield start, fields


# Bounds of a `--from-file` plan, checked before and while parsing (one line, exit 2): a
# 1,000,000-line file once ran for 12 minutes at 3.9 GB. Split larger plans into several files.
MAX_PLAN_BYTES = 64 * 1024 * 1024
MAX_PLAN_RECORDS = 500_000
PROGRESS_EVERY = 50_000  # records between progress events


def parse_offsets_csv(text: str, *, source: str = "file", max_records: int | None = None,
                      progress: ProgressFn = no_progress) -> FromOffsets:
    """Parse `topic,partition,offset` (one group) or `group,topic,partition,offset` records.

    No header; RFC 4180 quoting. The form is detected from the first record; mixing forms, a
    byte order mark, unquoted leading/trailing whitespace in a name, non-ASCII digits and two
    records for the same group/partition are refused with the line number; more than
    `max_records` records (default MAX_PLAN_RECORDS) are refused naming the limit.
    `progress` hears the records read.
    """
    if max_records is None:
        max_records = MAX_PLAN_RECORDS
    if text.startswith("\ufeff"):
        raise UsageError(f"{source} line 1: starts with a UTF-8 byte order mark (BOM), which "
                         "would become part of the first name; save the file without a BOM")
    _refuse_too_many_lines(text, source, max_records)
    offsets: dict[str | None, dict[TopicPartition, int]] = {}
    seen: dict[tuple[str | None, TopicPartition], int] = {}
    width: int | None = None
    count = 0
    for lineno, fields in _records(text, source):
        count += 1
        if count > max_records:
            raise UsageError(f"{source} holds more than {max_records:,} offset lines (the limit "
                             "of a plan file); split it into several files")
        if count % PROGRESS_EVERY == 0:
            progress(ProgressEvent("reading the plan file", count, None, "lines"))

        if width is None:
            width = len(fields)
            if width not in (3, 4):
                raise UsageError(
                    f"{source} line {lineno}: expected topic,partition,offset or "
                    f"group,topic,partition,offset, got {_shown(fields)}")
        elif len(fields) != width:
            raise UsageError(f"{source} line {lineno}: expected {width} fields like the first "
                             f"line, got {len(fields)}: {_shown(fields)}")
        names = fields[:-2]
        for (value, quoted), what in zip(names, _NAME_FIELDS[width], strict=True):
            if not value:
                raise UsageError(f"{source} line {lineno}: empty {what} name in {_shown(fields)}")
            if not quoted and value != value.strip():
                raise UsageError(
                    f"{source} line {lineno}: {what} {show(value)} has leading or trailing "
                    "whitespace; remove it, or quote the field if it is part of the name")
        group = names[0][0] if width == 4 else None
        topic = names[-1][0]
        nums = []
        for (value, _), what in zip(fields[-2:], ("partition", "offset"), strict=True):
            v = value.strip()
            if not _ASCII_INT.fullmatch(v):
                raise UsageError(f"{source} line {lineno}: {what} {show(value[:60])} is not a "
                                 "non-negative integer (ASCII digits)")
            if len(v) > MAX_INT_DIGITS:
                raise UsageError(f"{source} line {lineno}: {what} {short_number(v)} is out of "
                                 "range (offsets are below 2^63, partitions below 2^31)")
            nums.append(int(v))
        if nums[1] >= OFFSET_LIMIT:
            raise UsageError(f"{source} line {lineno}: offset {short_number(nums[1])} is not "
                             "below 2^63 (the largest Kafka offset)")
        tp = TopicPartition(topic, nums[0])
        key = (group, tp)
        if key in seen:
            who = f"group {show(group)} " if group is not None else ""
            raise UsageError(f"{source} line {lineno}: {who}{tp.topic}:{tp.partition} is already "
                             f"given on line {seen[key]}")
        seen[key] = lineno
        offsets.setdefault(group, {})[tp] = nums[1]
    if width is None:
        raise UsageError(f"{source} holds no offsets (expected topic,partition,offset lines)")
    progress(ProgressEvent("reading the plan file", count, count, "lines"))
    return FromOffsets(offsets=offsets, source=source)


_NAME_FIELDS = {3: ("topic",), 4: ("group", "topic")}


def _refuse_too_many_lines(text: str, source: str, max_records: int) -> None:
    """Refuse a file over the record limit before parsing any of it (a 1,000,000-line file
    was parsed to line 500,000 first: 38 s, 430 MB). Counted in C: lines that hold anything.
    Without quotes a line is a record; quoted names may span lines, so then only a file with
    more than twice the limit is refused early (the parser counts the rest exactly)."""
    lines = text.count("\n") + 1 - len(_BLANK_LINES.findall(text))
    bound = max_records if '"' not in text else 2 * max_records
    if lines > bound:
        raise UsageError(f"{source} holds more than {max_records:,} offset lines ({lines:,} "
                         "lines; the limit of a plan file); split it into several files")


_BLANK_LINES = re.compile(r"^[ \t\r]*$", re.MULTILINE)


def _shown(fields: list[tuple[str, bool]]) -> str:
    """A record as the user wrote it, for an error message."""
    return show(csv_line([v for v, _ in fields]))


def decode_utf8(data: bytes, *, source: str) -> str:
    """Strict UTF-8 text of a file, or a UsageError naming the line of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise UsageError(f"{source} line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} "
                         f"at offset {exc.start})") from None
