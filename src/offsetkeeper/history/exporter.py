"""Prometheus metrics with kafka-lag-exporter's names, so its dashboards and alerts keep working.

    kafka_consumergroup_group_offset{cluster_name,group,topic,partition,member_host,consumer_id,client_id}
    kafka_consumergroup_group_lag{...same}
    kafka_consumergroup_group_lag_seconds{...same}     exact time lag, else interpolated; never NaN
    kafka_consumergroup_group_max_lag{cluster_name,group}
    kafka_consumergroup_group_max_lag_seconds{cluster_name,group}
    kafka_consumergroup_group_sum_lag{cluster_name,group}
    kafka_consumergroup_group_topic_sum_lag{cluster_name,group,topic}
    kafka_partition_latest_offset{cluster_name,topic,partition}
    kafka_partition_earliest_offset{cluster_name,topic,partition}
  transactions (offsetkeeper's addition; `group_lag` is what a read_committed consumer still has
  to read: against the last stable offset, 0 behind transaction markers only):
    kafka_consumergroup_group_lag_raw{...partition labels}   log end - committed offset
    kafka_partition_last_stable_offset{cluster_name,topic,partition}
    kafka_partition_open_transaction{cluster_name,topic,partition}   1 while an open
                                                  transaction holds the LSO below the log end
    kafka_partition_open_transaction_age_seconds{cluster_name,topic,partition}
                                                  how long it has been open (when known)
    kafka_consumergroup_poll_time_ms{cluster_name}     duration of the latest sampling cycle
  plus the Burrow-style status (offsetkeeper's addition):
    kafka_consumergroup_group_status{cluster_name,group}            0 OK, 1 WARN, 2 ERR
    kafka_consumergroup_partition_status{cluster_name,group,topic,partition}
                                                  0 OK, 1 WARN, 3 STOP, 4 STALL, 5 REWIND

  and the sampler's health (offsetkeeper's addition), so an outage is never hidden:
    offsetkeeper_sampler_up{cluster_name}          1 when the latest cycle reached the cluster
    offsetkeeper_sampler_last_success_timestamp_seconds{cluster_name}
    offsetkeeper_sample_age_seconds{cluster_name}  age of the newest sample at scrape time
    offsetkeeper_sampler_cycle_seconds{cluster_name}     duration of the latest cycle
    offsetkeeper_sampler_interval_seconds{cluster_name}  the sampling interval
    offsetkeeper_sampler_overruns_total{cluster_name}    cycles that took longer than the interval

  and Kafka Connect source connectors' positions (with `--connect-url`; offsetkeeper's addition):
    offsetkeeper_connect_source_offset{cluster_name,worker,connector,partition,field}
                          each numeric value of a source connector's offset map (`field` its
                          key) per partition; `partition` is the connector's partition map as
                          canonical JSON (sorted keys, non-ASCII and control characters as
                          \\uXXXX), cut to 200 characters with a hash when longer
    offsetkeeper_connect_source_offset_skipped{cluster_name,worker,connector}
                          offset values that are not numbers (strings, ...): not gauges
    offsetkeeper_connect_worker_up{cluster_name,worker}  1 when the worker answered the latest read

Values come from the sampler's latest samples at scrape time: scraping never talks to Kafka.
Stale lag is never presented as current: a group whose newest sample is older than
`stale_after_ms` (three sampling intervals, or three cycle durations when cycles overrun) is
left out of the lag and status families, so lag alerts see no data while
`offsetkeeper_sampler_up` is 0 and the sample age grows.

Speed (issue 22 item 25: 10,000 groups gave 11 MB at 2.6-6 s a scrape): a group's series are
computed and rendered as exposition text once per new sample of the group (`prepare`, called by
the sampler as each chunk of a cycle is published), not at every scrape; a scrape joins the
rendered blocks of the groups that are not stale. `collect()` gives the same series as
prometheus-client metric families (for a registry; `tests/unit/test_hardening_exporter.py`
checks that both say the same). `MetricFilter` keeps per-group series to the groups and topics
allowed by regexes (kafka-lag-exporter's allow/deny lists).

Size: over 500 lines because the metric names above are its contract, shared by the
pre-rendered text, the prometheus-client collector and the HTTP server; the server is the
part to move out.
"""

from __future__ import annotations

import gzip
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from offsetkeeper.errors import OffsetkeeperError, UsageError
from offsetkeeper.history.model import Position, Sample
from offsetkeeper.history.status import (
    DEFAULT_WINDOW,
    CommitPeak,
    GroupStatus,
    advance_peak,
    evaluate_status,
)
from offsetkeeper.netaddr import parse_listen

PARTITION_LABELS = ["cluster_name", "group", "topic", "partition", "member_host", "consumer_id",
                    "client_id"]
GROUP_LABELS = ["cluster_name", "group"]
TP_LABELS = ["cluster_name", "topic", "partition"]
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LABEL_LIMIT = 200  # a partition map longer than this as a label is cut, a hash keeps it unique


@dataclass(frozen=True)
class Family:
    name: str
    help: str
    labels: list[str]


# The per-group families, in the order they are served.
FAMILIES = (
    Family("kafka_consumergroup_group_offset", "Last group consumed offset of a partition",
           PARTITION_LABELS),
    Family("kafka_consumergroup_group_lag", "Group offset lag of a partition", PARTITION_LABELS),
    Family("kafka_consumergroup_group_lag_seconds", "Group time lag of a partition",
           PARTITION_LABELS),
    Family("kafka_consumergroup_group_max_lag", "Max group offset lag", GROUP_LABELS),
    Family("kafka_consumergroup_group_max_lag_seconds", "Max group time lag", GROUP_LABELS),
    Family("kafka_consumergroup_group_sum_lag", "Sum of group offset lag", GROUP_LABELS),
    Family("kafka_consumergroup_group_topic_sum_lag",
           "Sum of group offset lag across topic partitions", ["cluster_name", "group", "topic"]),
    Family("kafka_partition_latest_offset", "Latest offset of a partition", TP_LABELS),
    Family("kafka_partition_earliest_offset", "Earliest offset of a partition", TP_LABELS),
    Family("kafka_consumergroup_group_status", "Burrow-style group status: 0 OK, 1 WARN, 2 ERR",
           GROUP_LABELS),
    Family("kafka_consumergroup_partition_status",
           "Burrow-style partition status: 0 OK, 1 WARN, 3 STOP, 4 STALL, 5 REWIND",
           ["cluster_name", "group", "topic", "partition"]),
    Family("kafka_consumergroup_group_lag_raw",
           "Log end minus committed offset of a partition (counts transaction markers and open "
           "transactions)", PARTITION_LABELS),
    Family("kafka_partition_last_stable_offset",
           "Last stable offset of a partition (read_committed consumers stop there)", TP_LABELS),
    Family("kafka_partition_open_transaction",
           "1 while an open transaction holds the last stable offset below the log end",
           TP_LABELS),
    Family("kafka_partition_open_transaction_age_seconds",
           "Age of the open transaction holding the last stable offset", TP_LABELS),
)
(OFFSET, LAG, LAG_S, MAX_LAG, MAX_LAG_S, SUM_LAG, TOPIC_SUM, LATEST, EARLIEST, GSTATUS, PSTATUS,
 LAG_RAW, LSO, OPEN_TXN, OPEN_AGE) = range(len(FAMILIES))
# Per-partition-of-the-topic families: served once per partition whichever groups read it.
TP_FAMILIES = (LATEST, EARLIEST, LSO, OPEN_TXN, OPEN_AGE)

Row = tuple[tuple[str, ...], float]


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r'\"')


def partition_label(text: str, limit: int = LABEL_LIMIT) -> str:
    """A source connector's partition map (canonical JSON) as a stable, bounded label value:
    as is up to `limit` characters; longer, its start, "…" and 16 hex digits of its SHA-256
    (two maps with the same start stay two series)."""
    if len(text) <= limit:
        return text
    import hashlib

    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return f"{text[:limit - 18]}…{digest}"


def _header(f: Family, kind: str = "gauge") -> str:
    doc = f.help.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {f.name} {doc}\n# TYPE {f.name} {kind}\n"


def _lines(f: Family, rows: Iterable[Row], memo: dict | None = None) -> str:
    """Exposition lines of one family; `memo` keeps label texts shared between families."""
    names = f.labels
    memo = {} if memo is None else memo
    out = []
    space = id(names)
    for labels, value in rows:
        lbl = memo.get((space, labels))
        if lbl is None:
            lbl = memo[(space, labels)] = ",".join(f'{k}="{_escape(v)}"'
                                          for k, v in zip(names, labels, strict=True))
        out.append(f"{f.name}{{{lbl}}} {floatToGoString(value)}\n")
    return "".join(out)


@dataclass(frozen=True)
class MetricFilter:
    """Which groups and topics get per-group series: a name is kept when it fully matches one
    `allow` regex (or `allow` is empty) and no `deny` regex (kafka-lag-exporter's
    allow/deny lists). A topic filter leaves the topic's partitions out of a group's series,
    sums and status; a group with no topic left gets no series."""

    group_allow: tuple[re.Pattern, ...] = ()
    group_deny: tuple[re.Pattern, ...] = ()
    topic_allow: tuple[re.Pattern, ...] = ()
    topic_deny: tuple[re.Pattern, ...] = ()
    _memo: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def parse(cls, *, group_allow: Iterable[str] = (), group_deny: Iterable[str] = (),
              topic_allow: Iterable[str] = (), topic_deny: Iterable[str] = ()) -> MetricFilter:
        """Compile the option values (UsageError naming the option for a bad regex)."""
        def compile_all(values: Iterable[str], option: str) -> tuple[re.Pattern, ...]:
            out = []
            for v in values or ():
                try:
                    out.append(re.compile(v))
                except re.error as exc:
                    raise UsageError(f"{option} {v!r} is not a regular expression: {exc}") from None
            return tuple(out)

        return cls(compile_all(group_allow, "--group-allow"), compile_all(group_deny, "--group-deny"),
                   compile_all(topic_allow, "--topic-allow"), compile_all(topic_deny, "--topic-deny"))

    @property
    def every_topic(self) -> bool:
        return not (self.topic_allow or self.topic_deny)

    def _ok(self, kind: str, name: str, allow, deny) -> bool:
        key = (kind, name)
        hit = self._memo.get(key)
        if hit is None:
            if len(self._memo) > 200_000:
                self._memo.clear()  # names come and go: keep memory flat
            hit = self._memo[key] = ((not allow or any(p.fullmatch(name) for p in allow))
                                     and not any(p.fullmatch(name) for p in deny))
        return hit

    def group_ok(self, group: str) -> bool:
        return self._ok("g", group, self.group_allow, self.group_deny)

    def topic_ok(self, topic: str) -> bool:
        return self._ok("t", topic, self.topic_allow, self.topic_deny)


EVERYTHING = MetricFilter()


@dataclass
class _GroupSeries:
    """One group's series from one set of samples, as rows and as rendered text."""

    key: tuple
    last_ts: int
    rows: list[list[Row]]                     # per family (TP families empty)
    tp_rows: dict[tuple[str, int], list[tuple[int, Row]]]
    text: list[str] | None = None             # per family (TP families "")
    tp_text: dict[tuple[str, int], tuple[str, ...]] | None = None
    status: GroupStatus | None = None        # the GroupStatus (`lag status`'s verdict)

    def render(self) -> None:
        if self.text is not None:
            return
        memo: dict = {}   # label texts by (label names, values)
        self.text = [_lines(f, rows, memo) if rows else "" for f, rows in zip(FAMILIES, self.rows,
                                                                               strict=True)]
        pos = {f: i for i, f in enumerate(TP_FAMILIES)}
        tp_text = {}
        for tp, rows in self.tp_rows.items():
            parts = [""] * len(TP_FAMILIES)
            for fi, row in rows:
                parts[pos[fi]] = _lines(FAMILIES[fi], [row], memo)
            tp_text[tp] = tuple(parts)
        self.tp_text = tp_text


class LagCollector(Collector):
    """The metrics of `source()`: group -> its recent samples (latest cycle last).

    A prometheus-client `Collector` (`collect()`), and a fast text renderer (`render()`) that
    MetricsServer serves. Series of a group are computed once per new sample of the group
    and cached; `prepare(groups)` does that ahead of the next scrape (the sampler calls it as
    it publishes samples)."""

    def __init__(self, source: Callable[[], Mapping[str, Sequence[Sample]]], *, cluster_name: str,
                 window: int = DEFAULT_WINDOW, allowed_lag: int = 0,
                 poll_time_ms: Callable[[], int | None] | None = None,
                 up: Callable[[], bool | None] | None = None,
                 last_success_ms: Callable[[], int | None] | None = None,
                 stale_after_ms: int | Callable[[], int | None] | None = None,
                 interval_ms: int | None = None,
                 overruns: Callable[[], int] | None = None,
                 metric_filter: MetricFilter = EVERYTHING,
                 positions: Callable[[], tuple[Sequence[Position], Mapping[str, str]]]
                 | None = None) -> None:
        self.source = source
        self.positions = positions
        self.poll_time_ms = poll_time_ms
        self.up = up
        self.last_success_ms = last_success_ms
        self.stale_after_ms = stale_after_ms
        self.interval_ms = interval_ms
        self.overruns = overruns
        self.cluster = cluster_name
        self.window = window
        self.allowed_lag = allowed_lag
        self.filter = metric_filter
        self._cache: dict[str, tuple[tuple | None, _GroupSeries | None]] = {}
        # per group and partition, its committed offsets folded since the exporter started:
        # REWIND holds until the partition passes its offset from before the rewind, as in
        # `lag status` (which reads a look-back from the store instead)
        self._peaks: dict[str, dict[tuple[str, int], CommitPeak]] = {}
        self._lock = threading.Lock()

    # -- series of one group ----------------------------------------------------------------
    def _series(self, group: str, samples: Sequence[Sample]) -> _GroupSeries | None:
        """The cached series of a group (computed again only when its samples changed)."""
        key = (len(samples), samples[0], samples[-1]) if samples else None
        hit = self._cache.get(group)
        if hit is not None and hit[0] == key:
            return hit[1]
        series = self._compute(group, samples, key)
        self._cache[group] = (key, series)
        return series

    def _compute(self, group: str, samples: Sequence[Sample], key) -> _GroupSeries | None:
        if not samples or not self.filter.group_ok(group):
            return None
        if not self.filter.every_topic:
            samples = [s for s in samples if self.filter.topic_ok(s.topic)]
            if not samples:
                return None
        c = self.cluster
        last_ts = max(s.ts for s in samples)
        cur = [s for s in samples if s.ts == last_ts]
        peaks = self._peaks.setdefault(group, {})
        for s in sorted(samples, key=lambda x: x.ts):
            peaks[(s.topic, s.partition)] = advance_peak(peaks.get((s.topic, s.partition)),
                                                         s.ts, s.committed)
        st = evaluate_status(samples, window=self.window, allowed_lag=self.allowed_lag, group=group,
                             rewinds={tp: p.mark() for tp, p in peaks.items()})
        rows: list[list[Row]] = [[] for _ in FAMILIES]
        tp_rows: dict[tuple[str, int], list[tuple[int, Row]]] = {}
        by_topic: dict[str, int] = {}
        for s in cur:
            part = str(s.partition)
            labels = (c, group, s.topic, part, s.host, s.consumer_id, s.client_id)
            lag = s.lag
            rows[OFFSET].append((labels, s.committed))
            rows[LAG].append((labels, lag))
            rows[LAG_RAW].append((labels, s.lag_raw))
            rows[LAG_S].append((labels, s.time_lag_s))
            by_topic[s.topic] = by_topic.get(s.topic, 0) + lag
            tpk = (s.topic, s.partition)
            if tpk not in tp_rows:
                tpl = (c, s.topic, part)
                tr = tp_rows[tpk] = [(LATEST, (tpl, s.log_end)), (EARLIEST, (tpl, s.log_start))]
                if s.lso is not None:
                    tr.append((LSO, (tpl, s.lso)))
                    tr.append((OPEN_TXN, (tpl, 1 if s.open_transaction else 0)))
                if s.open_transaction and s.open_txn_since is not None:
                    tr.append((OPEN_AGE, (tpl, max(0.0, (s.ts - s.open_txn_since) / 1000))))
        g = (c, group)
        rows[MAX_LAG].append((g, max(s.lag for s in cur)))
        rows[MAX_LAG_S].append((g, max(s.time_lag_s for s in cur)))
        rows[SUM_LAG].append((g, sum(s.lag for s in cur)))
        rows[TOPIC_SUM].extend(((c, group, t), v) for t, v in sorted(by_topic.items()))
        rows[GSTATUS].append((g, st.status.code))
        rows[PSTATUS].extend(((c, group, p.topic, str(p.partition)), p.status.code)
                             for p in st.partitions)
        return _GroupSeries(key, last_ts, rows, tp_rows, status=st)

    def statuses(self, group: str | None = None) -> list[dict]:
        """`lag status -o json` of every tracked group (or of `group`: [] when unknown), from
        the same evaluation as the status metrics: dashboards and scripts need no CLI call."""
        now = int(time.time() * 1000)
        with self._lock:
            current = self._current(now)
        return [series.status.as_dict() for g, series in current
                if series.status is not None and (group is None or g == group)]

    def prepare(self, groups: Mapping[str, Sequence[Sample]]) -> None:
        """Compute and render the series of these groups now (before the next scrape)."""
        with self._lock:
            for group, samples in groups.items():
                series = self._series(group, samples)
                if series is not None:
                    series.render()

    def _stale_limit(self) -> int | None:
        s = self.stale_after_ms
        return s() if callable(s) else s

    def _current(self, now_ms: int) -> list[tuple[str, _GroupSeries]]:
        """The series of every group whose newest sample is not stale, sorted by group."""
        data = self.source()
        for gone in [g for g in self._cache if g not in data]:
            del self._cache[gone]
            self._peaks.pop(gone, None)
        limit = self._stale_limit()
        out = []
        for group in sorted(data):
            series = self._series(group, data[group])
            if series is None:
                continue
            if limit is not None and now_ms - series.last_ts > limit:
                continue  # stale: never shown as the current lag
            out.append((group, series))
        return out

    # -- prometheus-client ------------------------------------------------------------------
    def collect(self):
        now_ms = int(time.time() * 1000)
        with self._lock:
            current = self._current(now_ms)
        fams = [GaugeMetricFamily(f.name, f.help, labels=f.labels) for f in FAMILIES]
        seen_tp: set[tuple[str, int]] = set()
        for _, series in current:
            for fi, rows in enumerate(series.rows):
                for labels, value in rows:
                    fams[fi].add_metric(list(labels), value)
            for tp, rows in series.tp_rows.items():
                if tp not in seen_tp:
                    seen_tp.add(tp)
                    for fi, (labels, value) in rows:
                        fams[fi].add_metric(list(labels), value)
        yield from fams
        yield from self._health(now_ms)
        yield from self._connect(now_ms)

    # -- the fast path ----------------------------------------------------------------------
    def render(self) -> bytes:
        """The exposition text (format 0.0.4) of `collect()`, from the cached group blocks."""
        now_ms = int(time.time() * 1000)
        with self._lock:
            current = self._current(now_ms)
            for _, series in current:
                series.render()
        tp_first: dict[tuple[str, int], tuple[str, ...]] = {}
        for _, series in current:
            for tp, parts in series.tp_text.items():  # type: ignore[union-attr]
                if tp not in tp_first:
                    tp_first[tp] = parts
        tp_pos = {f: i for i, f in enumerate(TP_FAMILIES)}
        out = []
        for fi, fam in enumerate(FAMILIES):
            out.append(_header(fam))
            if fi in tp_pos:
                i = tp_pos[fi]
                out.extend(parts[i] for parts in tp_first.values())
            else:
                out.extend(series.text[fi] for _, series in current)  # type: ignore[index]
        body = "".join(out).encode()
        return body + generate_latest(_Families([*self._health(now_ms),
                                                  *self._connect(now_ms)]))

    def _connect(self, now_ms: int):
        """Kafka Connect source connectors' positions: a gauge per numeric offset value."""
        if self.positions is None:
            return
        positions, workers = self.positions()
        c = self.cluster
        up = GaugeMetricFamily("offsetkeeper_connect_worker_up", "1 when the Connect worker "
                               "answered the latest read of source connectors' positions",
                               labels=["cluster_name", "worker"])
        for w, err in sorted(workers.items()):
            up.add_metric([c, w], 0 if err else 1)
        yield up
        limit = self._stale_limit()
        off = GaugeMetricFamily("offsetkeeper_connect_source_offset",
                                "A numeric value of a Kafka Connect source connector's offset "
                                "map, per partition map (canonical JSON)",
                                labels=["cluster_name", "worker", "connector", "partition",
                                        "field"])
        skipped = GaugeMetricFamily("offsetkeeper_connect_source_offset_skipped",
                                    "Offset values of a source connector that are not numbers "
                                    "(not exported)",
                                    labels=["cluster_name", "worker", "connector"])
        seen: set[tuple[str, ...]] = set()
        skips: dict[tuple[str, str], int] = {}
        for p in positions:
            if limit is not None and now_ms - p.ts > limit:
                continue  # stale: never shown as the current position
            values, n = p.numeric_fields()
            key = (p.worker, p.connector)
            skips[key] = skips.get(key, 0) + n
            part = partition_label(p.partition)
            for field_name, v in sorted(values.items()):
                labels = (c, p.worker, p.connector, part, field_name)
                if labels not in seen:  # a cut label equal to another: one series only
                    seen.add(labels)
                    off.add_metric(list(labels), v)
        for (w, name), n in sorted(skips.items()):
            skipped.add_metric([c, w, name], n)
        yield off
        yield skipped

    def _health(self, now_ms: int):
        c = self.cluster
        up = self.up() if self.up is not None else None
        if up is not None:
            g = GaugeMetricFamily("offsetkeeper_sampler_up", "1 when the latest sampling cycle "
                                  "reached the cluster, 0 when it failed", labels=["cluster_name"])
            g.add_metric([c], 1 if up else 0)
            yield g
        last = self.last_success_ms() if self.last_success_ms is not None else None
        if last is not None:
            g = GaugeMetricFamily("offsetkeeper_sampler_last_success_timestamp_seconds",
                                  "When the latest successful sampling cycle ran (epoch seconds)",
                                  labels=["cluster_name"])
            g.add_metric([c], last / 1000)
            yield g
            g = GaugeMetricFamily("offsetkeeper_sample_age_seconds",
                                  "Age of the newest sample at scrape time", labels=["cluster_name"])
            g.add_metric([c], max(0.0, (now_ms - last) / 1000))
            yield g
        took = self.poll_time_ms() if self.poll_time_ms is not None else None
        if took is not None:
            poll = GaugeMetricFamily("kafka_consumergroup_poll_time_ms",
                                     "Time of the latest sampling cycle", labels=["cluster_name"])
            poll.add_metric([c], took)
            yield poll
            g = GaugeMetricFamily("offsetkeeper_sampler_cycle_seconds",
                                  "Duration of the latest sampling cycle", labels=["cluster_name"])
            g.add_metric([c], took / 1000)
            yield g
        if self.interval_ms is not None:
            g = GaugeMetricFamily("offsetkeeper_sampler_interval_seconds",
                                  "The sampling interval (a cycle longer than it overruns)",
                                  labels=["cluster_name"])
            g.add_metric([c], self.interval_ms / 1000)
            yield g
        if self.overruns is not None:
            n = CounterMetricFamily("offsetkeeper_sampler_overruns",
                                    "Sampling cycles that took longer than the interval",
                                    labels=["cluster_name"])
            n.add_metric([c], self.overruns())
            yield n


class _Families:
    """A few metric families as a registry for `generate_latest`."""

    def __init__(self, families: list) -> None:
        self.families = families

    def collect(self):
        return self.families


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    collector: LagCollector


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/favicon.ico":
            self.send_error(404)
            return
        if path == "/status" or path.startswith("/status/"):
            self._status(path)
            return
        body = self.server.collector.render()
        gz = "gzip" in (self.headers.get("Accept-Encoding") or "")
        if gz:
            body = gzip.compress(body, compresslevel=1)
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE)
        if gz:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _status(self, path: str) -> None:
        """/status: every group's verdict as `lag status -o json` gives it; /status/GROUP (the
        id URL-encoded): that group's, 404 with a JSON error when it is not tracked."""
        import json
        from urllib.parse import unquote

        group = unquote(path[len("/status/"):]) if path.startswith("/status/") else None
        found = self.server.collector.statuses(group)
        if group is not None and not found:
            code, doc = 404, {"error": f"group {group!r} is not tracked by this exporter"}
        else:
            code, doc = 200, (found[0] if group is not None else found)
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:  # scrapes are not logged
        pass


class MetricsServer:
    """An HTTP server for /metrics (any path but /favicon.ico) in a thread; stop() when done."""

    def __init__(self, collector: LagCollector, listen: str) -> None:
        host, port = parse_listen(listen)
        cls = _Server6 if ":" in host else _Server
        try:
            self._server = cls((host, port), _Handler)
        except OSError as exc:
            raise OffsetkeeperError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        self._server.collector = collector
        self._thread = threading.Thread(target=self._server.serve_forever, name="metrics",
                                        daemon=True)
        self._thread.start()
        self.port = self._server.server_address[1]
        self.host = host

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
