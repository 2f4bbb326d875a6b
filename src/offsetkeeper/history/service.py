"""Running the sampler as a command: `history record` and `exporter` call `record(...)`."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass

from offsetkeeper.config import Connection
from offsetkeeper.errors import KafkaOperationError, StoreError, UsageError
from offsetkeeper.history.sampler import CycleOutcome, Sampler, SamplerConfig, stop_on_signals
from offsetkeeper.history.store import open_store
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.kafka.ports import KafkaPort


@dataclass(frozen=True)
class RecordSummary:
    cycles: int
    last: CycleOutcome | None
    store: str


def record(conn: Connection, store_url: str | None, config: SamplerConfig, *, once: bool = False,
           listen: str | None = None, stop: threading.Event | None = None,
           max_cycles: int | None = None, on_ready: Callable[[object], None] | None = None,
           allowed_lag: int = 0, metric_filter=None, notify=None,
           positions=None, admin: KafkaPort | None = None) -> RecordSummary:
    """Sample `conn` into the store at `store_url` until stopped (SIGTERM/SIGINT or `stop`).

    The store is checked first: unreachable -> StoreError naming it (exit 1). With `listen`,
    Prometheus metrics are served from the sampler's latest cycles in the same process (only the
    groups and topics `metric_filter`, an exporter.MetricFilter, allows get per-group series). With
    `once`, one cycle runs and a failure of the cluster or the store raises (exit 1), for cron.
    `positions` (sampler.PositionReader) reads Kafka Connect source connectors' positions after
    each cycle: stored beside the samples and exported as gauges.
    `admin`: sample through this (the caller's, left open) instead of a facade opened on `conn`.
    """
    store = open_store(store_url)
    if positions is not None and not store.keeps_positions:
        store.close()
        raise UsageError(f"history store {store.display_url} does not keep Kafka Connect source "
                         "positions (--connect-url): use SQLite or PostgreSQL")
    # librdkafka logs each failed reconnect (many lines a second during a broker outage); the
    # sampler logs one line per cycle instead, unless the user asked for a log level.
    conn = Connection(conn.bootstrap_servers, {"log_level": "2", **conn.properties}, conn.name)
    server = None
    try:
        # A sampler runs for weeks, through broker restarts: a daemon facade (see
        # KafkaAdmin.committed_offsets_each); one cycle for cron keeps the light path.
        with nullcontext(admin) if admin is not None else KafkaAdmin(conn, daemon=not once) \
                as port:
            sampler = Sampler(port, store, config, positions=positions)
            if listen:
                from offsetkeeper.history.exporter import EVERYTHING, LagCollector, MetricsServer

                collector = LagCollector(sampler.recent, cluster_name=conn.name or conn.bootstrap_servers,
                                         window=config.window, allowed_lag=allowed_lag,
                                         poll_time_ms=lambda: sampler.last_cycle_ms,
                                         up=lambda: sampler.up,
                                         last_success_ms=lambda: sampler.last_success_ms,
                                         stale_after_ms=sampler.stale_after_ms,
                                         interval_ms=config.interval_ms,
                                         overruns=lambda: sampler.overruns,
                                         metric_filter=metric_filter or EVERYTHING,
                                         positions=sampler.latest_positions
                                         if positions is not None else None)
                sampler.listeners.append(collector.prepare)  # rendered as chunks arrive
                server = MetricsServer(collector, listen)
            if on_ready is not None:
                on_ready(server)
            notifier = notify.notifier(store, conn.name or conn.bootstrap_servers) \
                if notify is not None else None
            if once:
                try:
                    out = sampler.run_once()
                finally:
                    sampler.finish()
                if not out.ok:
                    raise KafkaOperationError(f"nothing recorded: {out.error}", retriable=True)
                if not out.stored:
                    raise StoreError(f"nothing recorded: {out.error}")
                if notifier is not None:  # cron: each run judges and notifies once
                    notify_cycle(notifier, store, config.window, allowed_lag)
                return RecordSummary(1, out, store.display_url)
            last: list[CycleOutcome] = []
            stop = stop or threading.Event()

            def keep(outcome: CycleOutcome) -> None:
                last[:] = [outcome]
                if notifier is not None and outcome.stored:
                    notify_cycle(notifier, store, config.window, allowed_lag)

            with stop_on_signals(stop):
                sampler.run(stop, max_cycles=max_cycles, on_cycle=keep)
            return RecordSummary(sampler.cycles, last[-1] if last else None, store.display_url)
    finally:
        if server is not None:
            server.stop()
        store.close()


def notify_cycle(notifier, store, window: int, allowed_lag: int) -> None:
    """After a stored cycle: judge every group in the store as `lag status` does and send the
    status changes (history/notify.py). A failure is logged, never stops the sampler."""
    import logging

    from offsetkeeper.errors import OffsetkeeperError
    from offsetkeeper.history.read import status

    try:
        verdicts = status(store, all_groups=True, window=window, allowed_lag=allowed_lag,
                          rewind_lookback=max(window, 60))
        notifier.observe(verdicts)
    except OffsetkeeperError as exc:
        logging.getLogger("offsetkeeper.history").warning("notifications skipped: %s", exc.message)
