"""Benchmark: one /metrics scrape of the exporter over G groups x P partitions (W cycles each).

Builds the samples in memory (no broker: a scrape never talks to Kafka), then in the same run
and on the same samples times
  (a) offsetkeeper: `LagCollector.prepare` (what the sampler does once per new sample, as
      chunks arrive), then a scrape (`render()`), and a scrape over HTTP through MetricsServer
      (plain and gzip), and a scrape with an allow list keeping 10% of the groups;
  (b) yardsticks: prometheus-client's own `generate_latest` over a registry holding the same
      collector (its families built by `collect()`), and the previous implementation (the
      exporter module of `--previous REV`, default `main`, read with `git show`), which built
      every family and evaluated every group's status at every scrape.
Prints one JSON document (medians of --repeat scrapes).

    .venv/bin/python bench/exporter_scrape.py --groups 10000 --partitions 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
import types
import urllib.request

from prometheus_client.exposition import generate_latest
from prometheus_client.registry import CollectorRegistry

from offsetkeeper.history.exporter import LagCollector, MetricFilter, MetricsServer
from offsetkeeper.history.model import Sample


def make_samples(groups: int, partitions: int, cycles: int) -> dict[str, list[Sample]]:
    now = int(time.time() * 1000)
    out = {}
    for g in range(groups):
        name = f"bench-consumer-group-{g:05d}"
        topic = f"bench-topic-{g % 200:03d}"
        samples = []
        for c in range(cycles):
            ts = now - (cycles - c) * 30_000
            for p in range(partitions):
                samples.append(Sample(ts, name, topic, p, 1_000 + 10 * c, 0, 1_200 + 20 * c,
                                      state="stable", members=1, consumer_id=f"consumer-{g}-{p}",
                                      client_id=f"client-{g}", host=f"/10.0.{g % 250}.{p}",
                                      time_lag_ms=4_000 + c, time_lag_interp_ms=3_900,
                                      lso=1_200 + 20 * c))
        out[name] = samples
    return out


def previous_collector(rev: str):
    """The LagCollector class of the exporter module at `rev` (None when not available)."""
    try:
        src = subprocess.run(["git", "show", f"{rev}:src/offsetkeeper/history/exporter.py"],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    mod = types.ModuleType("previous_exporter")
    exec(compile(src, f"{rev}:exporter.py", "exec"), mod.__dict__)  # our own code, from git
    return mod.LagCollector


def timed(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def registry(collector) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(collector)
    return reg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--cycles", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--previous", default="main")
    a = ap.parse_args()
    data = make_samples(a.groups, a.partitions, a.cycles)
    kw = {"cluster_name": "prod", "window": a.cycles, "up": lambda: True,
          "last_success_ms": lambda: int(time.time() * 1000), "poll_time_ms": lambda: 900}
    col = LagCollector(lambda: data, **kw, stale_after_ms=10**9)
    t0 = time.perf_counter()
    col.prepare(data)
    prepare_s = time.perf_counter() - t0
    render_s, body = timed(col.render, a.repeat)
    server = MetricsServer(col, "127.0.0.1:0")
    url = f"http://127.0.0.1:{server.port}/metrics"
    try:
        http_s, _ = timed(lambda: urllib.request.urlopen(url, timeout=60).read(), a.repeat)
        req = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
        gzip_s, gz = timed(lambda: urllib.request.urlopen(req, timeout=60).read(), a.repeat)
    finally:
        server.stop()
    some = MetricFilter.parse(group_allow=[r"bench-consumer-group-\d{4}0"])
    filtered = LagCollector(lambda: data, **kw, metric_filter=some)
    filtered.prepare(data)
    filtered_s, fbody = timed(filtered.render, a.repeat)
    pc_s, pc_body = timed(lambda: generate_latest(registry(col)), max(1, a.repeat // 2))
    result = {
        "benchmark": "exporter_scrape", "groups": a.groups, "partitions_per_group": a.partitions,
        "cycles_kept": a.cycles, "body_mb": round(len(body) / 1e6, 2),
        "prepare_once_s": round(prepare_s, 3), "scrape_s": round(render_s, 4),
        "scrape_http_s": round(http_s, 4), "scrape_http_gzip_s": round(gzip_s, 4),
        "gzip_mb": round(len(gz) / 1e6, 2),
        "scrape_allow_10pct_s": round(filtered_s, 4), "allow_10pct_body_mb": round(len(fbody) / 1e6, 2),
        "yardstick_prometheus_client_generate_latest_s": round(pc_s, 3),
        "prometheus_client_over_scrape": round(pc_s / render_s, 1),
        "prometheus_client_body_mb": round(len(pc_body) / 1e6, 2),
    }
    prev = previous_collector(a.previous)
    if prev is not None:
        old = prev(lambda: data, cluster_name="prod", window=a.cycles, up=lambda: True,
                   last_success_ms=lambda: int(time.time() * 1000), poll_time_ms=lambda: 900)
        old_s, old_body = timed(lambda: generate_latest(registry(old)), max(1, a.repeat // 2))
        result.update({f"yardstick_previous_{a.previous}_s": round(old_s, 3),
                       "previous_over_scrape": round(old_s / render_s, 1),
                       "previous_body_mb": round(len(old_body) / 1e6, 2)})
    print(json.dumps(result))


if __name__ == "__main__":
    main()
