"""Benchmark: the dashboard's groups page for G groups (server time), against yardsticks.

Creates G groups with committed offsets on a broker (a fresh local Apache Kafka (dev-broker) unless
--bootstrap-server is given) and a SQLite history store with C cycles per group, then times in
the same run, each the median of --repeat runs:
  (a) the groups page: GET /c/default/groups through the ASGI app in-process (server time only:
      cluster reads, history status + sparklines, filter/sort, rendering 1 row per group),
      with every group's history read again (as after a new sampling cycle) — the new way (one
      `recent_many` store call for all groups, issue 15) and the old way (one `recent` query
      per group) in the same run on the same store; also between
      cycles, when the history view's cache (invalidated by each group's last sample) is warm,
      and after a new cycle once the background warmer of `offsetkeeper ui` has caught up,
  (b) the same page without a history store,
  (c) yardstick: the data gathering of `offsetkeeper groups describe --all-groups` (the CLI's
      ops.list_groups + ops.describe_offsets for the same groups), no history, no HTML,
  (d) yardstick: rendering the page's rows as a plain Jinja2 table (no cluster, no history).
Prints one JSON document with the times and ratios.

    .venv/bin/python bench/ui_groups.py --groups 1000
    .venv/bin/python bench/ui_groups.py --groups 1000 --history-store postgresql://…/db   # or redis://…
    .venv/bin/python bench/ui_groups.py --history-store redis://… --store-rtt-ms 1   # a store across a network

With --store-rtt-ms R the dashboard reaches the store through a TCP proxy that delays each
chunk of bytes by R/2 in each direction (this kernel has no netem): a shared store is usually on
another host, where one query per group costs a round trip per group.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
import warnings
from pathlib import Path

from confluent_kafka import ConsumerGroupTopicPartitions, Producer
from confluent_kafka import TopicPartition as CkTP
from confluent_kafka.admin import AdminClient, NewTopic

from offsetkeeper import devbroker
from offsetkeeper.config import ConfigFile, Connection
from offsetkeeper.history.model import Cycle, Sample
from offsetkeeper.history.store import open_store
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.ops.history_view import open_history
from offsetkeeper.ops.reset import ExecuteOptions
from offsetkeeper.web.app import UiSettings, create_app
from offsetkeeper.web.clusters import Clusters

warnings.filterwarnings("ignore", category=DeprecationWarning)
from starlette.testclient import TestClient  # noqa: E402


class DelayProxy:
    """127.0.0.1:port -> upstream (TCP host:port or a unix socket), each chunk delayed by
    `one_way_s`, order kept; runs an asyncio loop in a thread."""

    def __init__(self, upstream, one_way_s: float) -> None:
        import asyncio
        import threading

        self.upstream, self.delay = upstream, one_way_s
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.port = 0

        async def start():
            server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
            self.port = server.sockets[0].getsockname()[1]
            ready.set()
            await server.serve_forever()

        threading.Thread(target=lambda: self.loop.run_until_complete(start()), daemon=True).start()
        ready.wait(10)

    async def _pipe(self, reader, writer) -> None:
        import asyncio

        queue: asyncio.Queue = asyncio.Queue()

        async def send():
            while True:
                due, data = await queue.get()
                if data is None:
                    writer.close()
                    return
                await asyncio.sleep(max(0.0, due - self.loop.time()))
                writer.write(data)
                await writer.drain()
        task = asyncio.ensure_future(send())
        while data := await reader.read(65536):
            queue.put_nowait((self.loop.time() + self.delay, data))
        queue.put_nowait((0, None))
        await task

    async def _handle(self, cr, cw) -> None:
        import asyncio

        if isinstance(self.upstream, str):
            ur, uw = await asyncio.open_unix_connection(self.upstream)
        else:
            ur, uw = await asyncio.open_connection(*self.upstream)
        await asyncio.gather(self._pipe(cr, uw), self._pipe(ur, cw), return_exceptions=True)


def via_proxy(url: str, rtt_ms: float) -> tuple[str, DelayProxy]:
    """The store URL rewritten to go through a DelayProxy (redis://h:p, postgresql on TCP or on
    a unix socket given as ?host=/dir)."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    if parts.scheme.startswith("postgres") and query.get("host", "").startswith("/"):
        upstream = f"{query.pop('host')}/.s.PGSQL.{query.pop('port', '5432')}"
    else:
        upstream = (parts.hostname or "127.0.0.1", parts.port or 6379)
    proxy = DelayProxy(upstream, rtt_ms / 2000)
    user = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
    return urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{proxy.port}",
                                     query=urlencode(query))), proxy


def setup(bootstrap: str, topic: str, groups: list[str], partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)
    time.sleep(0.5)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for part in range(partitions):
        for _ in range(50):
            p.produce(topic, value=b"x" * 16, partition=part)
    p.flush(60)
    futures = []
    for i, g in enumerate(groups):
        tps = [CkTP(topic, i % partitions, 10 + i % 40)]
        futures.append(admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, tps)])[g])
    for f in futures:
        f.result(60)


def fill_history(url: str, topic: str, groups: list[str], partitions: int, cycles: int) -> int:
    now = int(time.time() * 1000)
    n = 0
    with open_store(url) as st:
        for c in range(cycles):
            ts = now - (cycles - 1 - c) * 60_000
            samples = [Sample(ts=ts, group=g, topic=topic, partition=i % partitions,
                              committed=10 + c, log_start=0, log_end=50 + c + (i + c) % 7,
                              state="empty", time_lag_ms=1000 * ((i + c) % 7))
                       for i, g in enumerate(groups)]
            st.write(samples, Cycle(ts, 60_000, len(groups), len(groups), 10))
            n += len(samples)
    return n


def write_cycle(url: str, topic: str, groups: list[str], partitions: int, c: int) -> int:
    """One more sampling cycle of every group (as the sampler writes it); returns its time."""
    ts = int(time.time() * 1000)
    with open_store(url) as st:
        st.write([Sample(ts=ts, group=g, topic=topic, partition=i % partitions, committed=10 + c,
                         log_start=0, log_end=50 + c + (i + c) % 7, state="empty",
                         time_lag_ms=1000 * ((i + c) % 7)) for i, g in enumerate(groups)],
                 Cycle(ts, 60_000, len(groups), len(groups), 10))
    return ts


def wait_warm(view, groups: list[str], ts: int, timeout: float = 120) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if all(view._cache.get(g, (0,))[0] == ts for g in groups):
            return time.monotonic() - t0
        time.sleep(0.05)
    raise SystemExit("the history warmer did not catch up")


def timed(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=8, help="partitions of the topic")
    ap.add_argument("--cycles", type=int, default=30, help="history cycles per group")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--bootstrap-server", default=None)
    ap.add_argument("--history-store", default=None,
                    help="store URL (default: a fresh SQLite file); this run's groups are new names")
    ap.add_argument("--store-rtt-ms", type=float, default=0.0,
                    help="reach a --history-store through a proxy adding this round-trip time")
    args = ap.parse_args()

    run = uuid.uuid4().hex[:8]
    topic = f"bench-ui-{run}"
    groups = [f"bench-ui-{run}-{i:05d}" for i in range(args.groups)]
    with tempfile.TemporaryDirectory() as d:
        if args.bootstrap_server:
            bootstrap, ctx = args.bootstrap_server, None
        else:
            ctx = devbroker.running_broker(data_dir=d)
            bootstrap = ctx.__enter__()
        try:
            setup(bootstrap, topic, groups, args.partitions)
            hist = args.history_store or str(Path(d) / "history.db")
            if args.store_rtt_ms and args.history_store:
                hist, _proxy = via_proxy(hist, args.store_rtt_ms)
            samples = fill_history(hist, topic, groups, args.partitions, args.cycles)
            settings = UiSettings(execute=ExecuteOptions(snapshot_store=str(Path(d) / "snaps")),
                                  allowed_hosts=("127.0.0.1",))

            def client(history_url):
                app = create_app(settings, Clusters(ConfigFile(), bootstrap=bootstrap),
                                 open_history(history_url))
                return TestClient(app, base_url="http://127.0.0.1")

            with_hist, no_hist = client(hist), client(None)
            # Only this run's groups (the broker may hold others): the page's own filter.
            q = f"/c/default/groups?q=bench-ui-{run}"
            first = with_hist.get(q)          # warm-up: connections, template compile
            assert first.status_code == 200, first.text[:300]
            no_hist.get(q)
            rows_shown = first.text.count('<tr data-name="')
            assert rows_shown == args.groups, rows_shown
            dash = with_hist.app.state.dash

            def cold():
                # A new sampling cycle since the last load: every group's history is read again.
                dash.history._cache.clear()
                return with_hist.get(q)
            # New and old way alternate within each repeat, so a load swing on this shared
            # machine hits both alike.
            new_t, old_t, many_t, one_t = [], [], [], []
            for _ in range(args.repeat):
                for batched, out in ((True, new_t), (False, old_t)):
                    dash.history.batched = batched  # False: one store query per group
                    out.append(timed(cold, 1)[0])
                many_t.append(timed(lambda: dash.history._store.recent_many(groups, 20), 1)[0])
                one_t.append(timed(lambda: [dash.history._store.recent(g, 20) for g in groups],
                                   1)[0])
            dash.history.batched = True
            page_s, page_old_s = statistics.median(new_t), statistics.median(old_t)
            t_many, t_one = statistics.median(many_t), statistics.median(one_t)
            page_warm_s, _ = timed(lambda: with_hist.get(q), args.repeat)

            # As `offsetkeeper ui` runs it: the history warmer recomputes the shown groups when
            # a new cycle lands; time the page once it has caught up, after each new cycle.
            dash.history.start_warming(every_s=0.2)
            warmed = []
            for r in range(args.repeat):
                ts = write_cycle(hist, topic, groups, args.partitions, args.cycles + r)
                wait_s = wait_warm(dash.history, groups, ts)
                t0 = time.perf_counter()
                with_hist.get(q)
                warmed.append((time.perf_counter() - t0, wait_s))
            page_warmed_s = statistics.median(t for t, _ in warmed)
            warmer_catch_up_s = statistics.median(w for _, w in warmed)
            page_nohist_s, _ = timed(lambda: no_hist.get(q), args.repeat)

            from offsetkeeper.ops import describe_offsets, list_groups

            with KafkaAdmin(Connection(bootstrap)) as admin:
                def cli_gather():
                    ids = [g.group_id for g in list_groups(admin) if g.group_id in wanted]
                    return describe_offsets(admin, ids)
                wanted = set(groups)
                cli_s, rows = timed(cli_gather, args.repeat)
                assert len(rows) == args.groups

            from jinja2 import Environment

            tpl = Environment(autoescape=True).from_string(
                "<table>{% for r in rows %}<tr><td>{{ r.group }}</td><td>{{ r.topic }}</td>"
                "<td>{{ r.partition }}</td><td>{{ r.current_offset }}</td><td>{{ r.lag }}</td>"
                "</tr>{% endfor %}</table>")
            plain_s, _ = timed(lambda: tpl.render(rows=rows), args.repeat)
        finally:
            if ctx is not None:
                ctx.__exit__(None, None, None)
    print(json.dumps({
        "benchmark": "ui_groups",
        "groups": args.groups,
        "history_store": hist.split("://", 1)[0] if "://" in hist else "sqlite",
        "store_rtt_ms": args.store_rtt_ms if args.history_store else 0.0,
        "history_samples": samples,
        "repeat": args.repeat,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "groups_page_s": round(page_s, 4),
        "groups_page_old_per_group_reads_s": round(page_old_s, 4),
        "ratio_page_old_vs_new": round(page_old_s / page_s, 2),
        "store_recent_many_s": round(t_many, 4),
        "store_recent_per_group_s": round(t_one, 4),
        "ratio_store_per_group_vs_many": round(t_one / t_many, 2),
        "groups_page_between_cycles_s": round(page_warm_s, 4),
        "groups_page_after_cycle_warmer_s": round(page_warmed_s, 4),
        "warmer_catch_up_after_cycle_s": round(warmer_catch_up_s, 4),
        "groups_page_no_history_s": round(page_nohist_s, 4),
        "yardstick_cli_describe_all_groups_s": round(cli_s, 4),
        "yardstick_plain_table_render_s": round(plain_s, 4),
        "ratio_page_vs_cli_gather": round(page_s / cli_s, 2),
        "ratio_page_no_history_vs_cli_gather": round(page_nohist_s / cli_s, 2),
        "ratio_page_after_cycle_warmer_vs_cli_gather": round(page_warmed_s / cli_s, 2),
        "target_page_s": 1.0,
        "meets_target_cold": page_s < 1.0,
        "meets_target_with_warmer": page_warmed_s < 1.0,
    }, indent=2))


if __name__ == "__main__":
    main()
