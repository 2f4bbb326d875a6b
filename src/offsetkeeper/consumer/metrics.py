"""Counters a consumer keeps for the application to export (Prometheus or anything else)."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class ConsumerMetrics:
    """A point-in-time copy of a consumer's counters (all monotonic except `commit_latency_max_s`)."""

    processed: int = 0  # records acknowledged as processed
    commits: int = 0  # successful commit requests (Kafka commits or store transactions)
    committed_offsets: int = 0  # partition offsets in those commits
    commit_failures: int = 0  # commit requests that failed after retries
    commit_retries: int = 0  # retriable errors retried
    commits_coalesced: int = 0  # async commits not sent: 16 in flight, a later one carries them
    commit_latency_sum_s: float = 0.0
    commit_latency_count: int = 0
    commit_latency_max_s: float = 0.0
    live_resets_applied: int = 0  # partitions moved by a live reset request
    live_reset_records_ignored: int = 0  # control records not acted on (invalid, unsigned, ...)

    def to_dict(self) -> dict:
        return asdict(self)


class Counters:
    """Thread-safe counters behind `OffsetConsumer.metrics()`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._m = ConsumerMetrics().to_dict()

    def add(self, **deltas: float) -> None:
        with self._lock:
            for k, v in deltas.items():
                self._m[k] += v

    def commit_done(self, latency_s: float, partitions: int) -> None:
        with self._lock:
            self._m["commits"] += 1
            self._m["committed_offsets"] += partitions
            self._m["commit_latency_sum_s"] += latency_s
            self._m["commit_latency_count"] += 1
            self._m["commit_latency_max_s"] = max(self._m["commit_latency_max_s"], latency_s)

    def snapshot(self) -> ConsumerMetrics:
        with self._lock:
            return ConsumerMetrics(**self._m)


def prometheus_collector(consumer, *, prefix: str = "offsetkeeper_consumer"):
    """A prometheus-client collector exposing a consumer's counters, labelled by group.

    Register it with ``prometheus_client.REGISTRY.register(prometheus_collector(consumer))``.
    """
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, SummaryMetricFamily

    class _Collector:
        def collect(self):
            m = consumer.metrics()
            labels = ["group"]
            values = [consumer.group]
            for name, value, doc in (
                ("processed", m.processed, "Records processed (acknowledged)."),
                ("commits", m.commits, "Successful offset commits."),
                ("committed_offsets", m.committed_offsets, "Partition offsets committed."),
                ("commit_failures", m.commit_failures, "Offset commits that failed after retries."),
                ("commits_coalesced", m.commits_coalesced,
                 "Asynchronous commits left to a later one (too many in flight)."),
                ("live_resets_applied", m.live_resets_applied, "Partitions moved by live resets."),
                ("live_reset_records_ignored", m.live_reset_records_ignored,
                 "Live reset control records ignored (invalid, unsigned, untrusted key)."),
            ):
                c = CounterMetricFamily(f"{prefix}_{name}", doc, labels=labels)
                c.add_metric(values, value)
                yield c
            s = SummaryMetricFamily(f"{prefix}_commit_latency_seconds", "Offset commit latency.",
                                    labels=labels)
            s.add_metric(values, m.commit_latency_count, m.commit_latency_sum_s)
            yield s
            g = GaugeMetricFamily(f"{prefix}_commit_latency_max_seconds",
                                  "Largest offset commit latency seen.", labels=labels)
            g.add_metric(values, m.commit_latency_max_s)
            yield g

    return _Collector()
