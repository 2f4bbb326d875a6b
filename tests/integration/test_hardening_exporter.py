"""Regression tests for issue 22 items 11, 13 and 25 against the real broker: the sampler
publishes chunk by chunk, warns on overruns, stops at once on SIGTERM; bounded reset plans."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from offsetkeeper.config import Connection
from offsetkeeper.history.exporter import LagCollector
from offsetkeeper.history.sample_cycle import FIRST_CHUNK, SampleScope
from offsetkeeper.history.sampler import Sampler, SamplerConfig
from offsetkeeper.history.store import open_store
from offsetkeeper.kafka.admin import KafkaAdmin
from tests.kafkatools import commit, create_topic, produce_n
from tests.services import free_port

pytestmark = pytest.mark.integration


def _groups(bootstrap, unique, n):
    topic = unique("t")
    create_topic(bootstrap, topic, 1)
    produce_n(bootstrap, topic, 1, 10)
    groups = [f"{unique('g')}-{i:03d}" for i in range(n)]
    for i, g in enumerate(groups):
        commit(bootstrap, g, {(topic, 0): i % 10})
    return topic, groups


def test_metrics_are_served_chunk_by_chunk_and_stop_ends_the_cycle(bootstrap, unique, caplog):
    """Invariant: the sampler publishes each chunk of a cycle as soon as it is read, so the
    exporter serves the first groups while the cycle still runs (not an empty /metrics until
    it ends); a stop requested during a cycle ends it after the current chunk (what was read
    is kept) and no further cycle starts; a cycle longer than the interval is warned about
    and counted (offsetkeeper_sampler_overruns_total)."""
    _topic, groups = _groups(bootstrap, unique, FIRST_CHUNK + 8)
    stop = threading.Event()
    seen: list[str] = []
    with KafkaAdmin(Connection(bootstrap)) as admin, open_store("memory://") as store:
        # 1 ms: every real cycle overruns it
        sampler = Sampler(admin, store, SamplerConfig(scope=SampleScope(groups=tuple(groups)),
                                                      interval_ms=1, window=3))
        col = LagCollector(sampler.recent, cluster_name="c", overruns=lambda: sampler.overruns,
                           interval_ms=1, poll_time_ms=lambda: sampler.last_cycle_ms)
        sampler.listeners.append(col.prepare)

        def first_chunk(_views):
            if sampler.cycles == 1 and not seen:
                seen.append(col.render().decode())   # a scrape in the middle of cycle 1
                assert sampler.last_success_ms is None  # the cycle has not finished

        sampler.listeners.append(first_chunk)
        with caplog.at_level(logging.INFO, logger="offsetkeeper.history"):
            sampler.run(stop, max_cycles=1)   # cycle 1 overruns the interval
            sampler.listeners.append(lambda _v: stop.set())   # stop during cycle 2
            sampler.run(stop)
        overruns = sampler.overruns
        text = col.render().decode()
    mid = seen[0]
    served = [g for g in groups if f'kafka_consumergroup_group_lag{{cluster_name="c",group="{g}"' in mid]
    assert served == groups[:FIRST_CHUNK]
    assert sampler.cycles == 2 and overruns == 1
    assert f'offsetkeeper_sampler_overruns_total{{cluster_name="c"}} {float(overruns)}' in text
    assert "offsetkeeper_sampler_cycle_seconds" in text
    assert any("overrun: sampling" in r.message and r.levelno == logging.WARNING
               for r in caplog.records)
    cycle2 = [r.message for r in caplog.records if r.message.startswith("cycle 2:")]
    assert cycle2 and f"{FIRST_CHUNK} groups" in cycle2[0] and "stopped before" in cycle2[0]


def test_exporter_stops_at_once_on_sigterm(bootstrap, unique):
    """Invariant: `offsetkeeper exporter` serves metrics, and SIGTERM ends it during the wait
    between cycles without another cycle (the interval here is an hour: a process that waited
    for it, or ran a cycle, would not exit 0 with one cycle logged)."""
    _topic, groups = _groups(bootstrap, unique, 3)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    args = [sys.executable, "-m", "offsetkeeper.cli.main", "exporter", "--listen",
            f"127.0.0.1:{port}", "--interval", "1h", "-b", bootstrap,
            "--group-deny", groups[1]]
    for g in groups:
        args += ["-g", g]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    text = ""
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and f'group="{groups[2]}"' not in text:
            time.sleep(0.2)
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
            except OSError:
                continue
    finally:
        p.send_signal(signal.SIGTERM)
        _out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert f'group="{groups[0]}"' in text and f'group="{groups[1]}"' not in text  # denied
    assert "received SIGTERM" in err and "cycle 1:" in err and "cycle 2" not in err
    assert "Traceback" not in err


@pytest.mark.parametrize("limit, value, says", [
    ("MAX_PLAN_BYTES", 100, "is larger than 100 bytes (the limit of a plan file)"),
    ("MAX_PLAN_RECORDS", 5, "holds more than 5 offset lines (8 lines; the limit of a plan file)"),
])
def test_oversized_plan_file_is_one_line_exit_2(capsys, bootstrap, unique, tmp_path, monkeypatch,
                                                limit, value, says):
    """Invariant: a --from-file plan beyond the size or line limit is refused before planning
    (nothing read from the cluster, nothing changed) in one line naming the file and the
    limit, exit 2."""
    from offsetkeeper.reset import parse
    from tests.cli import run_cli

    monkeypatch.setattr(parse, limit, value)
    topic, group = unique("t"), unique("g")
    create_topic(bootstrap, topic, 8)
    plan = tmp_path / "plan.csv"
    plan.write_text("".join(f"{topic},{p},0\n" for p in range(8)))
    r = run_cli(capsys, "offsets", "reset", "-g", group, "--from-file", str(plan), "-b", bootstrap,
                "--execute")
    assert r.code == 2 and says in r.err and str(plan) in r.err, r.err
    assert len(r.err.strip().splitlines()) == 1
