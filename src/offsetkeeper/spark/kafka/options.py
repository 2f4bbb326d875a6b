"""The options of the ``offsetkeeper-kafka`` source and sink, parsed once into frozen values.

Options follow Spark's Kafka source: ``subscribe``, ``subscribePattern``, ``assign``,
``startingOffsets`` (earliest / latest / JSON, and here also ``group:NAME``),
``startingOffsetsFallback``, ``endingOffsets`` (batch only), ``startingTimestamp``,
``startingOffsetsByTimestamp``, ``minPartitions``, ``maxRecordsPerPartition``,
``maxOffsetsPerTrigger`` (streaming), ``failOnDataLoss``, ``includeHeaders`` and ``kafka.*``
passed to librdkafka untouched (``kafka.isolation.level`` defaults to read_committed). Extra:
``commitToGroup`` and ``commitToGroupMaxFailures`` (streaming), ``reportPath``, ``batchSize``,
``pollTimeoutMs``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from offsetkeeper.errors import UsageError
from offsetkeeper.records.read import ReadOptions

EARLIEST, LATEST = -2, -1


@dataclass(frozen=True)
class SourceOptions:
    """The data source options, parsed once."""

    kafka: dict[str, str]
    subscribe: tuple[str, ...] = ()
    subscribe_pattern: str | None = None
    assign: dict[str, tuple[int, ...]] | None = None
    starting: int | dict[str, dict[int, int]] = EARLIEST
    ending: int | dict[str, dict[int, int]] = LATEST
    starting_timestamp: int | None = None
    starting_by_timestamp: dict[str, dict[int, int]] | None = None
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    fail_on_data_loss: bool = False
    report_path: str | None = None
    batch_size: int = 5000
    poll_timeout_ms: int = 120_000
    extra: dict[str, str] = field(default_factory=dict)
    # streaming
    starting_group: str | None = None  # startingOffsets=group:NAME
    starting_fallback: int = LATEST  # for partitions the group never committed
    max_offsets_per_trigger: int | None = None
    commit_to_group: str | None = None
    # consecutive failed commits to the group after which the query fails (0: never)
    commit_to_group_max_failures: int = 3
    include_headers: bool = True

    def reading(self) -> ReadOptions:
        """How the executors read a range (the record reader's part of these options)."""
        return ReadOptions(kafka=self.kafka, batch_size=self.batch_size,
                           poll_timeout_ms=self.poll_timeout_ms,
                           fail_on_data_loss=self.fail_on_data_loss,
                           include_headers=self.include_headers)

    @property
    def read_committed(self) -> bool:
        return self.kafka.get("isolation.level", "read_committed") == "read_committed"


def _json_offsets(name: str, text: str, *, allow: set[int]) -> dict[str, dict[int, int]]:
    try:
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError
        out: dict[str, dict[int, int]] = {}
        for topic, parts in raw.items():
            if not isinstance(parts, dict):
                raise ValueError
            out[topic] = {int(p): int(o) for p, o in parts.items()}
    except (ValueError, TypeError):
        raise UsageError(f"option {name}: expected earliest, latest or JSON like "
                         f'{{"topic":{{"0":23,"1":-2}}}}, got {text!r}') from None
    for topic, parts in out.items():
        for p, o in parts.items():
            if o < 0 and o not in allow:
                raise UsageError(f"option {name}: offset {o} for {topic}:{p} is not allowed "
                                 f"(use an offset >= 0 or {sorted(allow)})")
    return out


def _int_opt(opts: Mapping[str, str], name: str, *, minimum: int = 1) -> int | None:
    v = opts.get(name.lower())
    if v is None or v == "":
        return None
    try:
        n = int(v)
    except ValueError:
        raise UsageError(f"option {name}: expected an integer, got {v!r}") from None
    if n < minimum:
        raise UsageError(f"option {name}: must be >= {minimum}, got {n}")
    return n


def _bool_opt(opts: Mapping[str, str], name: str, default: bool) -> bool:
    v = opts.get(name.lower())
    if v is None:
        return default
    if v.strip().lower() in ("true", "1", "yes"):
        return True
    if v.strip().lower() in ("false", "0", "no"):
        return False
    raise UsageError(f"option {name}: expected true or false, got {v!r}")


_KNOWN = {"subscribe", "subscribepattern", "assign", "startingoffsets", "endingoffsets",
          "startingtimestamp", "startingoffsetsbytimestamp", "minpartitions",
          "maxrecordsperpartition", "failondataloss", "reportpath", "batchsize", "polltimeoutms",
          "path", "startingoffsetsfallback", "maxoffsetspertrigger", "committogroup",
          "committogroupmaxfailures", "includeheaders"}


def parse_options(options: Mapping[str, str], *, streaming: bool = False) -> SourceOptions:
    """Parse data source options (names case-insensitive, values strings) into SourceOptions.

    `streaming` selects Spark's streaming defaults and rules: startingOffsets defaults to
    latest, endingOffsets is not allowed.
    """
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    kafka = {k[len("kafka."):]: v for k, v in opts.items() if k.startswith("kafka.")}
    if not kafka.get("bootstrap.servers"):
        raise UsageError("option kafka.bootstrap.servers is required (HOST:PORT[,HOST:PORT])")
    kafka.setdefault("isolation.level", "read_committed")
    if kafka["isolation.level"] not in ("read_committed", "read_uncommitted"):
        raise UsageError(f"option kafka.isolation.level: expected read_committed or "
                         f"read_uncommitted, got {kafka['isolation.level']!r}")

    chosen = [k for k in ("subscribe", "subscribepattern", "assign") if opts.get(k)]
    if len(chosen) != 1:
        raise UsageError("give exactly one of the options subscribe, subscribePattern, assign")
    subscribe: tuple[str, ...] = ()
    pattern = None
    assign = None
    if opts.get("subscribe"):
        subscribe = tuple(t.strip() for t in opts["subscribe"].split(",") if t.strip())
        if not subscribe:
            raise UsageError("option subscribe: expected a comma-separated list of topics")
    elif opts.get("subscribepattern"):
        pattern = opts["subscribepattern"]
        try:
            re.compile(pattern)
        except re.error as exc:
            raise UsageError(f"option subscribePattern: invalid regex {pattern!r}: {exc}") from None
    else:
        try:
            raw = json.loads(opts["assign"])
            assign = {t: tuple(sorted(int(p) for p in ps)) for t, ps in raw.items()}
        except (ValueError, TypeError, AttributeError):
            raise UsageError(f'option assign: expected JSON like {{"topic":[0,1]}}, '
                             f"got {opts['assign']!r}") from None

    def spec(name: str, default: int, allow: set[int]) -> int | dict[str, dict[int, int]]:
        v = opts.get(name)
        if v is None or v.strip() == "":
            return default
        if v.strip().lower() == "earliest":
            if EARLIEST not in allow:
                raise UsageError(f"option {name}: earliest is not allowed here")
            return EARLIEST
        if v.strip().lower() == "latest":
            return LATEST
        return _json_offsets(name, v, allow=allow)

    starting_group = None
    raw_start = (opts.get("startingoffsets") or "").strip()
    if raw_start.lower().startswith("group:"):
        starting_group = raw_start[len("group:"):]
        if not starting_group:
            raise UsageError("option startingOffsets: expected group:NAME with a group name, "
                             f"got {raw_start!r}")
        starting: int | dict[str, dict[int, int]] = EARLIEST
    else:
        starting = spec("startingoffsets", LATEST if streaming else EARLIEST, {EARLIEST, LATEST})
    fallback = (opts.get("startingoffsetsfallback") or "latest").strip().lower()
    if fallback not in ("earliest", "latest"):
        raise UsageError(f"option startingOffsetsFallback: expected earliest or latest, got "
                         f"{opts['startingoffsetsfallback']!r}")
    if streaming and opts.get("endingoffsets"):
        raise UsageError("option endingOffsets is not allowed for streaming queries "
                         "(use Trigger.AvailableNow for a bounded run)")
    ending = spec("endingoffsets", LATEST, {LATEST})
    ts = _int_opt(opts, "startingTimestamp", minimum=0)
    by_ts = None
    if opts.get("startingoffsetsbytimestamp"):
        by_ts = _json_offsets("startingOffsetsByTimestamp", opts["startingoffsetsbytimestamp"],
                              allow=set())
    commit_group = opts.get("committogroup")
    if commit_group is not None and not commit_group.strip():
        raise UsageError("option commitToGroup: expected a consumer group name, got ''")
    max_failures = _int_opt(opts, "commitToGroupMaxFailures", minimum=0)
    extra = {k: v for k, v in opts.items() if not k.startswith("kafka.") and k not in _KNOWN}
    return SourceOptions(
        kafka=kafka,
        subscribe=subscribe,
        subscribe_pattern=pattern,
        assign=assign,
        starting=starting,
        ending=ending,
        starting_timestamp=ts,
        starting_by_timestamp=by_ts,
        min_partitions=_int_opt(opts, "minPartitions"),
        max_records_per_partition=_int_opt(opts, "maxRecordsPerPartition"),
        # Spark's default for streaming; the batch source keeps its documented default (false)
        fail_on_data_loss=_bool_opt(opts, "failOnDataLoss", streaming),
        report_path=opts.get("reportpath") or None,
        batch_size=_int_opt(opts, "batchSize") or 5000,
        poll_timeout_ms=_int_opt(opts, "pollTimeoutMs") or 120_000,
        extra=extra,
        starting_group=starting_group,
        starting_fallback=EARLIEST if fallback == "earliest" else LATEST,
        max_offsets_per_trigger=_int_opt(opts, "maxOffsetsPerTrigger"),
        commit_to_group=commit_group or None,
        commit_to_group_max_failures=3 if max_failures is None else max_failures,
        include_headers=_bool_opt(opts, "includeHeaders", True),
    )


def connection(opts: SourceOptions):
    """The `Connection` for the admin facade (librdkafka properties passed through)."""
    from offsetkeeper.config import Connection

    props = {k: v for k, v in opts.kafka.items()
             if k not in ("bootstrap.servers", "isolation.level", "group.id")}
    return Connection(bootstrap_servers=opts.kafka["bootstrap.servers"], properties=props)
