"""Offset history: record samples (`history record`, `exporter`), read them back (`history
show|at|plot|export`, `lag status`), and the daily report on Spark (`history report`).

A request checks its settings when it is made (UsageError naming the option), before any
connection or store is opened; the operations then open the store, run, and close it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from offsetkeeper.errors import UsageError
from offsetkeeper.history.read import (
    AT_COLUMNS,
    PARTITION_STATUS_COLUMNS,
    SHOW_COLUMNS,
    STATUS_COLUMNS,
    AtResult,
)
from offsetkeeper.history.status import GroupStatus, Status
from offsetkeeper.times import iso_ms

if TYPE_CHECKING:
    from offsetkeeper.config import Connection
    from offsetkeeper.history.service import RecordSummary
    from offsetkeeper.history.spark_report import REPORT_COLUMNS, ExportResult
    from offsetkeeper.kafka.ports import KafkaPort

# Imported on first use (PEP 562): `lag status` reads a store and needs neither the sampler's
# Kafka client nor the report's Parquet code.
_LAZY = {"RecordSummary": "offsetkeeper.history.service",
         "REPORT_COLUMNS": "offsetkeeper.history.spark_report",
         "ExportResult": "offsetkeeper.history.spark_report"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'offsetkeeper.ops.history' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value

__all__ = ["AT_COLUMNS", "POSITION_COLUMNS", "REPORT_COLUMNS", "SHOW_COLUMNS", "AtResult", "ExportResult",
           "ExporterRequest", "FailOn", "LagStatus", "NotifySettings", "RecordOutcome", "RecordRequest",
           "SamplerSettings", "TimeRange", "export_history", "history_at", "history_positions",
           "history_report", "history_rows", "lag_status", "plot_history", "record_history", "serve_exporter"]


# -- recording ------------------------------------------------------------------------------
@dataclass(frozen=True)
class SamplerSettings:
    """What the sampler samples and keeps, as the options give it (durations as text)."""

    groups: tuple[str, ...] = ()
    all_groups: bool = False
    interval: str = "30s"
    retain: str = "30d"                 # a duration, or "forever"
    time_lag: bool = True
    window: int = 10
    group_allow: tuple[str, ...] = ()   # regexes of the metrics' allow/deny lists
    group_deny: tuple[str, ...] = ()
    topic_allow: tuple[str, ...] = ()
    topic_deny: tuple[str, ...] = ()
    track_allow: tuple[str, ...] = ()   # regexes: which groups the sampler tracks (all groups)
    track_deny: tuple[str, ...] = ()
    # Kafka Connect workers (http[s]://[user:password@]host:port) whose source connectors'
    # positions are sampled too; sink connectors' groups are consumer groups, sampled as such
    connect_urls: tuple[str, ...] = ()
    connect_user: str | None = None     # basic auth for every worker (else the URL's userinfo)
    connect_password: str | None = field(default=None, repr=False)
    connect_ca: str | None = None       # CA certificates (PEM) for https workers
    connect_verify: bool = True

    def position_reader(self):
        """The sampler's reader of source connectors' positions (None without --connect-url;
        UsageError naming a malformed URL, masked)."""
        if not self.connect_urls:
            return None
        from offsetkeeper.ops.connect import connect_client, connect_target

        clients = [connect_client(connect_target(u, username=self.connect_user,
                                                 password=self.connect_password,
                                                 ca_file=self.connect_ca,
                                                 verify=self.connect_verify), timeout=10.0)
                   for u in dict.fromkeys(self.connect_urls)]
        return lambda ts: read_positions(clients, ts)

    def config(self):
        """The sampler's SamplerConfig (UsageError naming the option on a bad value)."""
        from offsetkeeper.history.sample_cycle import SampleScope
        from offsetkeeper.history.sampler import SamplerConfig
        from offsetkeeper.history.store import RetentionPolicy
        from offsetkeeper.times import parse_duration_ms

        groups = tuple(dict.fromkeys(g.strip() for g in self.groups if g.strip()))
        if groups and self.all_groups:
            raise UsageError("--group and --all-groups are mutually exclusive")
        if not groups and not self.all_groups:
            raise UsageError("no group given: use --group GROUP (repeatable) or --all-groups")
        if self.window < 2:
            raise UsageError(f"--window {self.window} is too small (expected at least 2 samples)")
        # 'forever' keeps every sample at full resolution (no deletion, no thinning).
        retention = None if self.retain.strip().lower() == "forever" else \
            RetentionPolicy(retain_ms=parse_duration_ms(self.retain, what="--retain"))
        import re

        for flag, values in (("--track-allow", self.track_allow), ("--track-deny", self.track_deny)):
            for v in values:
                try:
                    re.compile(v)
                except re.error as exc:
                    raise UsageError(f"{flag} '{v}' is not a regular expression ({exc})") from None
        return SamplerConfig(
            scope=SampleScope(groups=groups, all_groups=self.all_groups,
                              allow=tuple(self.track_allow), deny=tuple(self.track_deny)),
            interval_ms=parse_duration_ms(self.interval, what="--interval"),
            time_lag=self.time_lag, retention=retention, window=self.window)

    def metric_filter(self):
        """The exporter's allow/deny lists (UsageError naming the option for a bad regex)."""
        from offsetkeeper.history.exporter import MetricFilter

        return MetricFilter.parse(group_allow=self.group_allow, group_deny=self.group_deny,
                                  topic_allow=self.topic_allow, topic_deny=self.topic_deny)


@dataclass(frozen=True)
class NotifySettings:
    """Status changes to an HTTP webhook (history/notify.py): `url`, the body `template`
    (slack, generic or a template file) and `thresholds` (`PATTERN=warn|err|off`)."""

    url: str
    template: str = "slack"
    thresholds: tuple[str, ...] = ()

    def notifier(self, store, cluster: str):
        """The Notifier (UsageError naming the bad option)."""
        from offsetkeeper.history.notify import Notifier, check_template, parse_rules

        if not self.url.lower().startswith(("http://", "https://")):
            raise UsageError(f"--notify-url '{self.url}' is not an http:// or https:// URL")
        return Notifier(self.url, store, cluster, check_template(self.template),
                        parse_rules(self.thresholds))

    def check(self) -> None:
        self.notifier(None, "")


@dataclass(frozen=True)
class RecordRequest:
    """`history record`: sample into `store` (None: $OFFSETKEEPER_HISTORY_STORE's default)
    every interval until SIGTERM/SIGINT, or `once`; with `exporter` (HOST:PORT) also serve
    Prometheus metrics. `log_to_stderr`: the sampler's one line per event on stderr."""

    sampler: SamplerSettings
    store: str | None = None
    once: bool = False
    exporter: str | None = None
    log_to_stderr: bool = False
    notify: NotifySettings | None = None

    def __post_init__(self) -> None:
        self.sampler.config()
        self.sampler.metric_filter()
        self.sampler.position_reader()
        if self.notify is not None:
            self.notify.check()
        if self.exporter:
            from offsetkeeper.netaddr import parse_listen

            parse_listen(self.exporter, option="--exporter", example="127.0.0.1:9308")


@dataclass(frozen=True)
class RecordOutcome:
    """What was recorded, and the groups the principal may not read (a partial failure)."""

    summary: RecordSummary
    denied: dict[str, str] = field(default_factory=dict)  # group -> the error

    @property
    def exit_code(self) -> int:
        return 1 if self.denied else 0


def record_history(conn: Connection, req: RecordRequest, *,
                   admin: KafkaPort | None = None) -> RecordOutcome:
    """Run the sampler (see `history.service.record`); through `admin` when given (the caller
    keeps it open), else through an admin facade opened on `conn`."""
    from offsetkeeper.history.service import record
    from offsetkeeper.kafka.errors import is_denied

    if req.log_to_stderr:
        log_to_stderr()
    summary = record(conn, req.store, req.sampler.config(), once=req.once, listen=req.exporter,
                     metric_filter=req.sampler.metric_filter(), notify=req.notify,
                     positions=req.sampler.position_reader(), admin=admin)
    denied = {} if summary.last is None else \
        {g: str(e) for g, e in summary.last.group_errors.items() if is_denied(e)}
    return RecordOutcome(summary, denied)


@dataclass(frozen=True)
class ExporterRequest:
    """`exporter`: serve metrics on `listen` from samples kept in memory (or also in `store`)."""

    sampler: SamplerSettings
    listen: str = "127.0.0.1:9308"
    store: str | None = None
    allowed_lag: int = 0
    log_to_stderr: bool = False
    notify: NotifySettings | None = None

    def __post_init__(self) -> None:
        from offsetkeeper.netaddr import parse_listen

        parse_listen(self.listen, example="127.0.0.1:9308")
        self.sampler.config()
        self.sampler.metric_filter()
        self.sampler.position_reader()
        if self.notify is not None:
            self.notify.check()


def serve_exporter(conn: Connection, req: ExporterRequest) -> RecordSummary:
    """Sample and serve the metrics until SIGTERM/SIGINT."""
    from offsetkeeper.history.service import record

    if req.log_to_stderr:
        log_to_stderr()
    return record(conn, req.store or "memory://", req.sampler.config(), listen=req.listen,
                  allowed_lag=req.allowed_lag, metric_filter=req.sampler.metric_filter(),
                  notify=req.notify, positions=req.sampler.position_reader())


def read_positions(clients, ts: int):
    """One read of every worker's source connectors' positions, stamped `ts`: (positions, per
    worker URL (masked) its error, "" when it answered). A worker that fails is its error,
    never the others'."""
    from offsetkeeper.errors import OffsetkeeperError
    from offsetkeeper.history.model import Position
    from offsetkeeper.ops.connect import source_positions

    out, errors = [], {}
    for c in clients:
        worker = c.target.display_url
        try:
            got, failed = source_positions(c)
        except OffsetkeeperError as exc:
            errors[worker] = exc.message
            continue
        errors[worker] = ""
        if failed:  # deleted between the two reads, or malformed offsets: the others count
            logging.getLogger("offsetkeeper.history").warning(
                "%s: %d source connector(s) left out of this read", worker, failed)
        out += [Position(ts, worker, name, part, off) for name, part, off in got]
    return out, errors


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is now (not the one at set-up time)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


class _IsoFormatter(logging.Formatter):
    """Log times written like every other time: ISO-8601 UTC, milliseconds, Z."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return iso_ms(record.created * 1000) or ""


def log_to_stderr() -> None:
    """The sampler's log: one line per event on stderr, UTC timestamps (set up once)."""
    logger = logging.getLogger("offsetkeeper.history")
    if not any(getattr(h, "_offsetkeeper", False) for h in logger.handlers):
        h = _StderrHandler()
        h.setFormatter(_IsoFormatter("%(asctime)s %(levelname)s %(message)s"))
        h._offsetkeeper = True  # type: ignore[attr-defined]
        logger.addHandler(h)
    logger.setLevel(logging.INFO)
    logger.propagate = False


# -- reading --------------------------------------------------------------------------------
@dataclass(frozen=True)
class TimeRange:
    """`--since` / `--until` as given: ISO-8601 times or durations ago (None: open)."""

    since: str | None = None
    until: str | None = None

    def ms(self) -> tuple[int | None, int | None]:
        from offsetkeeper.times import parse_when

        lo = parse_when(self.since, what="--since") if self.since else None
        hi = parse_when(self.until, what="--until") if self.until else None
        if lo is not None and hi is not None and lo > hi:
            raise UsageError(f"--since {self.since} is after --until {self.until}")
        return lo, hi


def _open(store: str | None):
    """The store, for reading: a missing SQLite file is reported, never created."""
    from offsetkeeper.history.store import open_store

    return open_store(store, create=False)


def history_store_url(value: str | None, *, configured: str | None = None) -> str:
    """The history store: the flag, $OFFSETKEEPER_HISTORY_STORE, `configured` (the config
    file's `ui.history_store`), the default SQLite file; the rule `history record` follows,
    so the dashboard reads what it writes."""
    from offsetkeeper.history.store import resolve_store_url

    return resolve_store_url(value, configured=configured)


def open_history_store(url: str):
    """The history store the dashboard reads for as long as it runs (connected and migrated
    now, so a bad URL fails at start)."""
    from offsetkeeper.history.store import open_store

    return open_store(url)


def judge_group(samples: Sequence, *, window: int, group: str) -> GroupStatus:
    """A group's status (with reasons, per partition) from its recent samples: the samples of
    the last `window` cycles are judged; all of them give the rewind marks (a committed offset
    that moved back is not read as progress)."""
    from offsetkeeper.history.status import evaluate_status, rewind_marks

    cycle_ts = sorted({s.ts for s in samples})
    window_from = cycle_ts[-window] if len(cycle_ts) >= window else cycle_ts[0]
    points: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for s in samples:
        points.setdefault((s.topic, s.partition), []).append((s.ts, s.committed))
    return evaluate_status([s for s in samples if s.ts >= window_from], window=window,
                           group=group, rewinds=rewind_marks(points))


def history_rows(group: str, *, store: str | None = None, topic: str | None = None,
                 window: TimeRange = TimeRange()) -> list[dict]:
    """One row per partition per sample of `group` (columns SHOW_COLUMNS)."""
    from offsetkeeper.history.read import show_rows

    lo, hi = window.ms()
    with _open(store) as st:
        return show_rows(st, group, topic=topic, since=lo, until=hi)


POSITION_COLUMNS = ["time", "worker", "connector", "partition", "offset"]


def history_positions(connector: str | None = None, *, store: str | None = None,
                      window: TimeRange = TimeRange()) -> list[dict]:
    """Kafka Connect source connectors' positions over time (of `connector`, or all), one row
    per partition map per sample (columns POSITION_COLUMNS; maps as canonical JSON)."""
    lo, hi = window.ms()
    with _open(store) as st:
        return [{"time": p.ts, "worker": p.worker, "connector": p.connector,
                 "partition": p.partition, "offset": p.offset}
                for p in st.positions(connector, since=lo, until=hi)]


def history_at(group: str, when: str, *, store: str | None = None) -> AtResult:
    """The group's latest sample at or before `when` (ISO-8601 or a duration ago)."""
    from offsetkeeper.history import read
    from offsetkeeper.times import parse_when

    ts = parse_when(when, what="--time")
    with _open(store) as st:
        return read.at(st, group, ts)


def plot_history(group: str, out: str, *, store: str | None = None, topic: str | None = None,
                 window: TimeRange = TimeRange()) -> int:
    """Write a PNG of lag and time lag to `out` (path or fsspec URL); the samples plotted."""
    from offsetkeeper.history.plot import plot_history as plot

    if not out.lower().endswith(".png"):
        raise UsageError(f"--out {out} must be a .png file")
    lo, hi = window.ms()
    with _open(store) as st:
        return plot(st, group, out, since=lo, until=hi, topic=topic)


def export_history(to: str, *, store: str | None = None, groups: Sequence[str] = (),
                   window: TimeRange = TimeRange()) -> ExportResult:
    """Samples as Parquet partitioned by day under `to`."""
    from offsetkeeper.history.spark_report import export_parquet

    lo, hi = window.ms()
    with _open(store) as st:
        return export_parquet(st, to, since=lo, until=hi, groups=tuple(groups))


def history_report(source: str, *, master: str | None = None) -> list[dict]:
    """The daily report on Spark over a `history export` directory (columns REPORT_COLUMNS);
    UsageError when it holds no samples."""
    from offsetkeeper.history.spark_report import daily_report
    from offsetkeeper.spark.session import get_spark

    rows = daily_report(get_spark(master), source)
    if not rows:
        raise UsageError(f"history report: {source} holds no samples")
    return rows


# -- status ---------------------------------------------------------------------------------
# `lag status` exit code when no group fails but some group has no verdict yet (INCOMPLETE)
NO_VERDICT_EXIT = 3


class FailOn(StrEnum):
    """Which verdicts make `lag status` fail."""

    err = "err"
    warn = "warn"
    incomplete = "incomplete"  # also "not enough samples" (a lagging, young window)


@dataclass(frozen=True)
class LagStatus:
    """Burrow-style verdicts of groups, and those that fail under `fail_on`."""

    groups: list[GroupStatus]
    fail_on: FailOn = FailOn.err

    @property
    def failing(self) -> list[GroupStatus]:
        bad = {Status.ERR} | ({Status.WARN} if self.fail_on is not FailOn.err else set())
        return [g for g in self.groups
                if g.status in bad or (g.undecided and self.fail_on is FailOn.incomplete)]

    @property
    def undecided(self) -> list[GroupStatus]:
        """Groups without a verdict yet (INCOMPLETE: lag and a window not full)."""
        return [g for g in self.groups if g.status is Status.INCOMPLETE]

    @property
    def exit_code(self) -> int:
        """1 when a group fails under `fail_on`; else 3 ("no verdict") when a group is
        INCOMPLETE; else 0."""
        return 1 if self.failing else NO_VERDICT_EXIT if self.undecided else 0

    def rows(self, *, partitions: bool = False) -> list[dict]:
        from offsetkeeper.history.read import status_rows

        return status_rows(self.groups, partitions=partitions)

    @staticmethod
    def columns(*, partitions: bool = False) -> list[str]:
        return PARTITION_STATUS_COLUMNS if partitions else STATUS_COLUMNS


def lag_status(groups: Sequence[str] = (), *, all_groups: bool = False, window: int = 10,
               allowed_lag: int = 0, fail_on: FailOn = FailOn.err,
               store: str | None = None, rewind_lookback: int = 60) -> LagStatus:
    """Judge groups from their last `window` samples in the store (a rewind is looked for in
    the last `rewind_lookback` cycles: REWIND holds until the partition passes its offset from
    before the rewind)."""
    from offsetkeeper.history import read

    read.check_status_args(window, allowed_lag, rewind_lookback)  # before a store is opened
    with _open(store) as st:
        result = read.status(st, groups, all_groups=all_groups, window=window,
                             allowed_lag=allowed_lag, rewind_lookback=rewind_lookback)
    return LagStatus(result, fail_on)
