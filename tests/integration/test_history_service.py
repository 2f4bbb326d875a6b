"""The sampler as a service: broker restart, store outage, SIGTERM, the exporter over HTTP, plots."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from offsetkeeper import devbroker
from offsetkeeper.config import Connection
from offsetkeeper.history.sample_cycle import SampleScope
from offsetkeeper.history.sampler import Sampler, SamplerConfig
from offsetkeeper.history.service import record
from offsetkeeper.history.store import open_store
from offsetkeeper.kafka.admin import KafkaAdmin
from tests.cli import run_cli
from tests.kafkatools import commit, create_topic, produce_n
from tests.services import free_port

pytestmark = pytest.mark.integration


def _wait(pred, timeout=60.0, step=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return False


@pytest.mark.slow
def test_sampler_survives_a_broker_restart(tmp_path, unique):
    """Invariant: the sampler keeps running through a broker outage, records it as one gap,
    and samples again after the broker is back (its own broker: the shared one is untouched)."""
    data = tmp_path / "broker"
    port = devbroker.free_port()
    st = devbroker.start(port, data, tied=True)
    topic, group = unique("t"), unique("g")
    try:
        create_topic(st.bootstrap, topic, 2)
        produce_n(st.bootstrap, topic, 2, 10)
        commit(st.bootstrap, group, {(topic, 0): 3, (topic, 1): 4})
        store = open_store(str(tmp_path / "h.db"))
        outcomes = []
        stop = threading.Event()
        # as `history record` builds it: a daemon facade, whose committed-offset reads cannot
        # crash the process during the coordinator's move (librdkafka #5040 did, in CI)
        with KafkaAdmin(Connection(st.bootstrap), timeout=3, daemon=True) as admin:
            sampler = Sampler(admin, store, SamplerConfig(scope=SampleScope(groups=(group,)),
                                                          interval_ms=300))
            t = threading.Thread(target=sampler.run, args=(stop,), kwargs={"on_cycle": outcomes.append})
            t.start()
            try:
                assert _wait(lambda: sum(o.ok for o in outcomes) >= 2)
                devbroker.stop(data)
                assert _wait(lambda: outcomes and not outcomes[-1].ok)
                n_failed = len(outcomes)
                devbroker.start(port, data, tied=True)
                assert _wait(lambda: len(outcomes) > n_failed and outcomes[-1].ok, timeout=90)
                assert _wait(lambda: sum(o.ok for o in outcomes[n_failed:]) >= 2, timeout=30)
            finally:
                stop.set()
                t.join(60)
            assert not t.is_alive()
        gaps = store.gaps()
        assert len(gaps) == 1 and gaps[0].reason.startswith("cluster unreachable")
        ts = sorted({s.ts for s in store.series(group)})
        assert any(x < gaps[0].start for x in ts) and any(x >= gaps[0].end for x in ts)
        assert store.latest(group)[0].committed == 3
    finally:
        devbroker.stop(data)


def test_store_outage_keeps_samples_in_memory_and_writes_them_later(bootstrap, admin, unique, tmp_path):
    """Mid-run store outage: cycles go on, samples stay in memory (bounded), and are written,
    oldest first, when the store answers again — nothing in between is lost."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed")
    port = free_port()

    def start_redis():
        p = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no", "--dir", str(tmp_path)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis
        assert _wait(lambda: _ping(redis.Redis(port=port)), 20)
        return p

    topic, group = unique("t"), unique("g")
    create_topic(bootstrap, topic, 1)
    produce_n(bootstrap, topic, 1, 10)
    commit(bootstrap, group, {(topic, 0): 1})
    proc = start_redis()
    try:
        store = open_store(f"redis://127.0.0.1:{port}/0")
        sampler = Sampler(admin, store, SamplerConfig(scope=SampleScope(groups=(group,)),
                                                      interval_ms=200, buffer_limit=3))
        assert sampler.run_once().stored
        proc.terminate()
        proc.wait(10)
        outs = [sampler.run_once() for _ in range(5)]
        assert all(o.ok and not o.stored for o in outs)
        assert outs[-1].buffered == 3                       # bounded: the oldest were dropped
        proc = start_redis()                                # empty again (no persistence)
        out = sampler.run_once()
        assert out.stored and out.buffered == 0
        kept = store.series(group)
        # the newest cycles holding at most 3 samples (a cycle whose group read failed holds 0)
        expected, total = [], 0
        for o in reversed([*outs, out]):
            if total + o.samples > 3:
                break
            total += o.samples
            expected[:0] = [o.ts] * o.samples
        assert [s.ts for s in kept] == expected and len(kept) >= 2
        gaps = store.gaps()
        assert len(gaps) == 1 and "dropped" in gaps[0].reason
        sampler.finish()
    finally:
        proc.terminate()
        proc.wait(10)


def _ping(r):
    try:
        return r.ping()
    except Exception:
        return False


def test_record_stops_cleanly_on_sigterm(bootstrap, unique, tmp_path):
    topic, group = unique("t"), unique("g")
    create_topic(bootstrap, topic, 1)
    produce_n(bootstrap, topic, 1, 5)
    commit(bootstrap, group, {(topic, 0): 2})
    db = str(tmp_path / "h.db")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    p = subprocess.Popen([sys.executable, "-m", "offsetkeeper.cli.main", "history", "record",
                          "-g", group, "--interval", "0.2s", "--store", db, "-b", bootstrap],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert _wait(lambda: os.path.exists(db) and len(_ts(db, group)) >= 3, 60)
    finally:
        p.send_signal(signal.SIGTERM)
        _out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    lines = [x for x in err.splitlines() if " cycle " in x]
    assert len(lines) == len(_ts(db, group)) and "received SIGTERM" in err
    assert "Traceback" not in err


def _ts(db, group):
    with open_store(db) as s:
        return sorted({x.ts for x in s.series(group)})


def test_exporter_is_scraped_over_http(bootstrap, unique, tmp_path):
    topic, group = unique("t"), unique("g")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 10)
    commit(bootstrap, group, {(topic, 0): 4, (topic, 1): 10})
    servers = []
    stop = threading.Event()
    cfg = SamplerConfig(scope=SampleScope(groups=(group,)), interval_ms=200, window=3)
    t = threading.Thread(target=record, args=(Connection(bootstrap, name="prod"), "memory://", cfg),
                         kwargs={"listen": "127.0.0.1:0", "stop": stop, "on_ready": servers.append})
    t.start()
    try:
        assert _wait(lambda: servers, 30)
        url = f"http://127.0.0.1:{servers[0].port}/metrics"

        def scrape():
            return urllib.request.urlopen(url, timeout=5).read().decode()

        assert _wait(lambda: "kafka_consumergroup_group_lag{" in scrape(), 30)
        assert _wait(lambda: 'kafka_consumergroup_group_status{cluster_name="prod"' in scrape()
                     and _metric(scrape(), "kafka_consumergroup_group_status", group) == 2.0, 30)
        text = scrape()
    finally:
        stop.set()
        t.join(30)
    lbl = f'group="{group}",topic="{topic}",partition="0"'
    assert _line(text, "kafka_consumergroup_group_offset", lbl) == 4.0
    assert _line(text, "kafka_consumergroup_group_lag", lbl) == 6.0
    assert _line(text, "kafka_consumergroup_group_lag_seconds", lbl) > 0
    assert _metric(text, "kafka_consumergroup_group_sum_lag", group) == 6.0
    assert _metric(text, "kafka_consumergroup_group_max_lag", group) == 6.0
    assert _metric(text, "kafka_consumergroup_group_max_lag_seconds", group) > 0
    assert _metric(text, "kafka_consumergroup_group_topic_sum_lag", group) == 6.0
    assert _line(text, "kafka_partition_latest_offset", f'topic="{topic}",partition="1"') == 10.0
    assert _line(text, "kafka_partition_earliest_offset", f'topic="{topic}",partition="1"') == 0.0
    assert "NaN" not in text
    assert _line(text, "kafka_consumergroup_poll_time_ms", 'cluster_name="prod"') >= 0
    # a group that stopped (no member, log end moving away): partition STOP, group ERR
    assert _line(text, "kafka_consumergroup_partition_status", lbl) == 3.0


def _line(text, name, contains):
    """Value of the sample of `name` whose labels include those in `contains` (k="v",...)."""
    from prometheus_client.parser import text_string_to_metric_families

    want = dict(kv.split("=", 1) for kv in contains.split(","))
    want = {k: v.strip('"') for k, v in want.items()}
    for fam in text_string_to_metric_families(text):
        for smp in fam.samples:
            if smp.name == name and all(smp.labels.get(k) == v for k, v in want.items()):
                return smp.value
    raise AssertionError(f"{name} with {contains} not in scrape")


def _metric(text, name, group):
    return _line(text, name, f'group="{group}"')


def test_plot_is_a_real_png(bootstrap, unique, capsys, tmp_path):
    topic, group = unique("t"), unique("g")
    create_topic(bootstrap, topic, 2)
    db = str(tmp_path / "h.db")
    for i in range(4):
        produce_n(bootstrap, topic, 2, 10)
        commit(bootstrap, group, {(topic, 0): 5 * i, (topic, 1): 8 * i})
        r = run_cli(capsys, "history", "record", "-g", group, "--once", "--store", db, "-b", bootstrap)
        assert r.code == 0, r.err
    out = tmp_path / "lag.png"
    r = run_cli(capsys, "history", "plot", group, "--since", "1h", "--out", str(out), "--store", db)
    assert r.code == 0, r.err
    import matplotlib.image as mpimg
    import numpy as np

    raw = out.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    img = mpimg.imread(str(out))
    assert img.shape[0] >= 400 and img.shape[1] >= 800
    rgb = img[..., :3]
    # not blank: many distinct colours and a good share of non-white pixels (the lines, axes)
    assert len(np.unique((rgb * 255).astype(np.uint8).reshape(-1, 3), axis=0)) > 50
    assert (rgb.mean(axis=2) < 0.9).mean() > 0.01
    shutil.copy(out, "/tmp/okh-history-plot.png")


def test_once_exits_1_naming_the_failure(capsys, tmp_path):
    """For cron: `--once` fails loudly (exit 1, one line) when nothing could be recorded."""
    r = run_cli(capsys, "history", "record", "-g", "x", "--once", "--store", str(tmp_path / "h.db"),
                "-b", f"127.0.0.1:{free_port()}")
    assert r.code == 1 and "error: nothing recorded:" in r.err and "Traceback" not in r.err
    assert open_store(str(tmp_path / "h.db")).groups() == []
