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

Values come from the sampler's latest cycle at scrape time (a custom collector): scraping never
talks to Kafka. Stale lag is never presented as current: a group whose newest sample is older
than `stale_after_ms` (three sampling intervals) is left out of the lag and status families, so
lag alerts see no data while `offsetkeeper_sampler_up` is 0 and the sample age grows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from offsetkeeper.history.model import Sample
from offsetkeeper.history.status import DEFAULT_WINDOW, evaluate_status
from offsetkeeper.netaddr import parse_listen

PARTITION_LABELS = ["cluster_name", "group", "topic", "partition", "member_host", "consumer_id",
                    "client_id"]


class LagCollector(Collector):
    """Builds the metric families from `source()`: group -> its recent samples (latest cycle last)."""

    def __init__(self, source: Callable[[], Mapping[str, Sequence[Sample]]], *, cluster_name: str,
                 window: int = DEFAULT_WINDOW, allowed_lag: int = 0,
                 poll_time_ms: Callable[[], int | None] | None = None,
                 up: Callable[[], bool | None] | None = None,
                 last_success_ms: Callable[[], int | None] | None = None,
                 stale_after_ms: int | None = None) -> None:
        self.source = source
        self.poll_time_ms = poll_time_ms
        self.up = up
        self.last_success_ms = last_success_ms
        self.stale_after_ms = stale_after_ms
        self.cluster = cluster_name
        self.window = window
        self.allowed_lag = allowed_lag

    def collect(self):
        c = self.cluster
        offset = GaugeMetricFamily("kafka_consumergroup_group_offset",
                                   "Last group consumed offset of a partition", labels=PARTITION_LABELS)
        lag = GaugeMetricFamily("kafka_consumergroup_group_lag",
                                "Group offset lag of a partition", labels=PARTITION_LABELS)
        lag_s = GaugeMetricFamily("kafka_consumergroup_group_lag_seconds",
                                  "Group time lag of a partition", labels=PARTITION_LABELS)
        max_lag = GaugeMetricFamily("kafka_consumergroup_group_max_lag",
                                    "Max group offset lag", labels=["cluster_name", "group"])
        max_lag_s = GaugeMetricFamily("kafka_consumergroup_group_max_lag_seconds",
                                      "Max group time lag", labels=["cluster_name", "group"])
        sum_lag = GaugeMetricFamily("kafka_consumergroup_group_sum_lag",
                                    "Sum of group offset lag", labels=["cluster_name", "group"])
        topic_sum = GaugeMetricFamily("kafka_consumergroup_group_topic_sum_lag",
                                      "Sum of group offset lag across topic partitions",
                                      labels=["cluster_name", "group", "topic"])
        latest = GaugeMetricFamily("kafka_partition_latest_offset", "Latest offset of a partition",
                                   labels=["cluster_name", "topic", "partition"])
        earliest = GaugeMetricFamily("kafka_partition_earliest_offset",
                                     "Earliest offset of a partition",
                                     labels=["cluster_name", "topic", "partition"])
        lag_raw = GaugeMetricFamily("kafka_consumergroup_group_lag_raw",
                                    "Log end minus committed offset of a partition (counts "
                                    "transaction markers and open transactions)",
                                    labels=PARTITION_LABELS)
        tp_labels = ["cluster_name", "topic", "partition"]
        lso = GaugeMetricFamily("kafka_partition_last_stable_offset",
                                "Last stable offset of a partition (read_committed consumers "
                                "stop there)", labels=tp_labels)
        open_txn = GaugeMetricFamily("kafka_partition_open_transaction",
                                     "1 while an open transaction holds the last stable offset "
                                     "below the log end", labels=tp_labels)
        open_age = GaugeMetricFamily("kafka_partition_open_transaction_age_seconds",
                                     "Age of the open transaction holding the last stable offset",
                                     labels=tp_labels)
        gstatus = GaugeMetricFamily("kafka_consumergroup_group_status",
                                    "Burrow-style group status: 0 OK, 1 WARN, 2 ERR",
                                    labels=["cluster_name", "group"])
        pstatus = GaugeMetricFamily("kafka_consumergroup_partition_status",
                                    "Burrow-style partition status: 0 OK, 1 WARN, 3 STOP, 4 STALL, 5 REWIND",
                                    labels=["cluster_name", "group", "topic", "partition"])
        seen_tp: set[tuple[str, int]] = set()
        now_ms = int(time.time() * 1000)
        for group, samples in sorted(self.source().items()):
            if not samples:
                continue
            last_ts = max(s.ts for s in samples)
            if self.stale_after_ms is not None and now_ms - last_ts > self.stale_after_ms:
                continue  # stale: never shown as the current lag
            cur = [s for s in samples if s.ts == last_ts]
            st = evaluate_status(samples, window=self.window, allowed_lag=self.allowed_lag, group=group)
            by_topic: dict[str, int] = {}
            for s in cur:
                labels = [c, group, s.topic, str(s.partition), s.host, s.consumer_id, s.client_id]
                offset.add_metric(labels, s.committed)
                lag.add_metric(labels, s.lag)
                lag_raw.add_metric(labels, s.lag_raw)
                lag_s.add_metric(labels, s.time_lag_s)
                by_topic[s.topic] = by_topic.get(s.topic, 0) + s.lag
                if (s.topic, s.partition) not in seen_tp:
                    seen_tp.add((s.topic, s.partition))
                    latest.add_metric([c, s.topic, str(s.partition)], s.log_end)
                    earliest.add_metric([c, s.topic, str(s.partition)], s.log_start)
                    tpl = [c, s.topic, str(s.partition)]
                    if s.lso is not None:
                        lso.add_metric(tpl, s.lso)
                        open_txn.add_metric(tpl, 1 if s.open_transaction else 0)
                    if s.open_transaction and s.open_txn_since is not None:
                        open_age.add_metric(tpl, max(0.0, (s.ts - s.open_txn_since) / 1000))
            max_lag.add_metric([c, group], max(s.lag for s in cur))
            max_lag_s.add_metric([c, group], max(s.time_lag_s for s in cur))
            sum_lag.add_metric([c, group], sum(s.lag for s in cur))
            for topic, v in sorted(by_topic.items()):
                topic_sum.add_metric([c, group, topic], v)
            gstatus.add_metric([c, group], st.status.code)
            for p in st.partitions:
                pstatus.add_metric([c, group, p.topic, str(p.partition)], p.status.code)
        yield from (offset, lag, lag_s, max_lag, max_lag_s, sum_lag, topic_sum, latest, earliest,
                    gstatus, pstatus, lag_raw, lso, open_txn, open_age)
        yield from self._health(now_ms)
        took = self.poll_time_ms() if self.poll_time_ms is not None else None
        if took is not None:
            poll = GaugeMetricFamily("kafka_consumergroup_poll_time_ms",
                                     "Time of the latest sampling cycle", labels=["cluster_name"])
            poll.add_metric([c], took)
            yield poll


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


class MetricsServer:
    """An HTTP server for /metrics on its own registry (stop() when done)."""

    def __init__(self, collector: Collector, listen: str) -> None:
        from prometheus_client import start_http_server

        host, port = parse_listen(listen)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        try:
            self._server, self._thread = start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            from offsetkeeper.errors import OffsetkeeperError

            raise OffsetkeeperError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        self.port = self._server.server_address[1]
        self.host = host

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
