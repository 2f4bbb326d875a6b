"""The metrics of a followed backup (`follow.follow_backup`), Prometheus text in the
exporter's style (`history/exporter.py`; served by its `MetricsServer`)::

    offsetkeeper_backup_lag_records{backup_id,topic,partition}   log end (last stable offset)
                                                  minus the backed-up end: offsets to back up
    offsetkeeper_backup_lag_bytes{backup_id,topic,partition}     the same in bytes, estimated
                                                  from the bytes per offset this follower wrote
    offsetkeeper_backup_log_end_offset{backup_id,topic,partition}
    offsetkeeper_backup_end_offset{backup_id,topic,partition}    the backed-up end
    offsetkeeper_backup_last_success_timestamp_seconds{backup_id}  end of the latest increment
                                                  that succeeded (recorded or nothing new)
    offsetkeeper_backup_lag_measured_timestamp_seconds{backup_id}
    offsetkeeper_backup_increment_seconds{backup_id}  duration of the latest increment
    offsetkeeper_backup_increments_total{backup_id,result}  result: recorded|unchanged|failed
    offsetkeeper_backup_up{backup_id}            1 when the latest increment and lag
                                                  measurement reached the cluster

Lag is measured after every increment and every `lag_refresh_s` between them (scrapes never
talk to Kafka); when a measurement fails the per-partition families are left out (stale lag is
never shown as current) and ``offsetkeeper_backup_up`` is 0.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from offsetkeeper.backup.config import BackupConfig
from offsetkeeper.backup.manifest import Manifest
from offsetkeeper.backup.plan import backup_lag
from offsetkeeper.kafka.ports import AdminPort

TP = tuple[str, int]


@dataclass
class LagSnapshot:
    log_end: dict[TP, int]
    backed_up: dict[TP, int]
    records: dict[TP, int]
    measured_s: float


@dataclass
class BackupMetrics:
    """The follower's metrics, rendered as Prometheus text at scrape time (no Kafka calls)."""

    backup_id: str
    lag: LagSnapshot | None = None
    up: bool = False
    last_success_s: float | None = None
    increment_seconds: float | None = None
    results: dict[str, int] = field(default_factory=lambda: {"recorded": 0, "unchanged": 0,
                                                              "failed": 0})
    bytes_per_offset: dict[TP, tuple[int, int]] = field(default_factory=dict)  # (bytes, offsets)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def learn_sizes(self, sizes: Mapping[TP, int], offsets: Mapping[TP, int]) -> None:
        """Bytes written per offset read, per partition: the base of the bytes estimate."""
        with self.lock:
            for tp, n in offsets.items():
                b, o = self.bytes_per_offset.get(tp, (0, 0))
                self.bytes_per_offset[tp] = (b + sizes.get(tp, 0), o + n)

    def bytes_behind(self, tp: TP, offsets: int) -> float | None:
        """`offsets` in bytes at the partition's rate (else the backup's), None before any data."""
        b, o = self.bytes_per_offset.get(tp, (0, 0))
        if not o:
            b = sum(x for x, _ in self.bytes_per_offset.values())
            o = sum(y for _, y in self.bytes_per_offset.values())
        return offsets * b / o if o else None

    def families(self) -> list:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        bid = [self.backup_id]
        tp_labels = ["backup_id", "topic", "partition"]
        with self.lock:
            out = []
            if self.lag is not None:
                fams = {
                    "lag_records": GaugeMetricFamily(
                        "offsetkeeper_backup_lag_records",
                        "Log end (last stable offset) minus the backed-up end of a partition",
                        labels=tp_labels),
                    "lag_bytes": GaugeMetricFamily(
                        "offsetkeeper_backup_lag_bytes",
                        "Bytes the backup is behind, estimated from the bytes per offset written",
                        labels=tp_labels),
                    "log_end": GaugeMetricFamily("offsetkeeper_backup_log_end_offset",
                                                 "Log end (last stable offset) of a partition",
                                                 labels=tp_labels),
                    "end": GaugeMetricFamily("offsetkeeper_backup_end_offset",
                                             "Backed-up end offset of a partition",
                                             labels=tp_labels),
                }
                for tp in sorted(self.lag.log_end):
                    labels = [self.backup_id, tp[0], str(tp[1])]
                    behind = self.lag.records[tp]
                    fams["lag_records"].add_metric(labels, behind)
                    est = self.bytes_behind(tp, behind)
                    if est is not None:
                        fams["lag_bytes"].add_metric(labels, round(est))
                    fams["log_end"].add_metric(labels, self.lag.log_end[tp])
                    if tp in self.lag.backed_up:
                        fams["end"].add_metric(labels, self.lag.backed_up[tp])
                out += list(fams.values())
                g = GaugeMetricFamily("offsetkeeper_backup_lag_measured_timestamp_seconds",
                                      "When the lag was measured", labels=["backup_id"])
                g.add_metric(bid, self.lag.measured_s)
                out.append(g)
            if self.last_success_s is not None:
                g = GaugeMetricFamily("offsetkeeper_backup_last_success_timestamp_seconds",
                                      "End of the latest increment that succeeded",
                                      labels=["backup_id"])
                g.add_metric(bid, self.last_success_s)
                out.append(g)
            if self.increment_seconds is not None:
                g = GaugeMetricFamily("offsetkeeper_backup_increment_seconds",
                                      "Duration of the latest increment", labels=["backup_id"])
                g.add_metric(bid, self.increment_seconds)
                out.append(g)
            c = CounterMetricFamily("offsetkeeper_backup_increments",
                                    "Increments by result (recorded, unchanged, failed)",
                                    labels=["backup_id", "result"])
            for result, n in sorted(self.results.items()):
                c.add_metric([self.backup_id, result], n)
            out.append(c)
            g = GaugeMetricFamily("offsetkeeper_backup_up", "1 when the latest increment and "
                                  "lag measurement reached the cluster", labels=["backup_id"])
            g.add_metric(bid, 1 if self.up else 0)
            out.append(g)
        return out

    def render(self) -> bytes:
        from prometheus_client.exposition import generate_latest

        fams = self.families()

        class _Registry:
            def collect(self):
                return fams
        return generate_latest(_Registry())  # type: ignore[arg-type]

    def statuses(self, group: str | None = None) -> list[dict]:
        """No consumer-group statuses here (the exporter's /status endpoint is not served)."""
        return []


def measure_lag(admin: AdminPort, config: BackupConfig, manifest: Manifest | None) -> LagSnapshot:
    """Offsets every selected partition's log end is ahead of the backup, measured now."""
    from offsetkeeper.backup.topics import select_topics
    from offsetkeeper.models import TopicPartition

    available = admin.topic_partitions()
    topics = select_topics(available, config.include, config.exclude)
    tps = [TopicPartition(t, p) for t in topics for p in available[t]]
    ends = admin.end_offsets(tps, read_committed=True) if tps else {}
    backed_up = manifest.end_offsets() if manifest else {}
    new = [tp for tp in tps if (tp.topic, tp.partition) not in backed_up]
    starts = {(tp.topic, tp.partition): w.low for tp, w in admin.watermarks(new).items()} \
        if new else {}
    log_end = {(tp.topic, tp.partition): ends[tp] for tp in tps}
    return LagSnapshot(log_end=log_end, backed_up={k: v for k, v in backed_up.items() if k in log_end},
                records=backup_lag(backed_up, log_start=starts, log_end=log_end),
                measured_s=time.time())
