"""`backup run --follow` against a real broker with real Spark: increments, kill -9 in the middle
of one, resume, the lag metrics, SIGTERM, then validate --deep and a restore to a second cluster
compared record by record through the exact offset mapping."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from backup_support import independent_read, watermarks
from kafkatools import create_topic, produce
from offsetkeeper.backup.config import BackupConfig
from offsetkeeper.backup.follow import FollowOptions, follow_backup
from offsetkeeper.backup.manifest import load_manifest, manifest_exists
from offsetkeeper.backup.run import run_backup
from offsetkeeper.backup.validate import validate_backup
from offsetkeeper.config import Connection
from offsetkeeper.models import TopicPartition
from offsetkeeper.restore.config import RestoreOptions
from offsetkeeper.restore.mapping import mapping_root_for, partition_mappings, read_mapping
from offsetkeeper.restore.resume import RESTORE_HEADERS
from offsetkeeper.restore.run import run_restore
from tests.restore_support import consume_all

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTS = 3
CAP = 1500  # offsets per increment: several increments per batch, each a short Spark job


def _batch(tag: str, n: int) -> list[tuple]:
    return [(i % PARTS, f"{tag}-{i}".encode(), (f"{tag}-{i}-".encode() * 40)[:600],
             [("n", str(i).encode())] if i % 3 else None) for i in range(n)]


def _follower(bootstrap: str, dest: Path, bid: str, topic: str, *extra: str) -> subprocess.Popen:
    """The follower as a user runs it, in its own process group (its Spark JVM and Python
    workers are in it, so kill -9 of the group is the crash of the whole follower)."""
    cmd = [sys.executable, "-m", "offsetkeeper.cli.main", "backup", "run", "-b", bootstrap,
           "-t", topic, "--dest", str(dest), "--id", bid, "--follow",
           "--max-records-per-increment", str(CAP), "--metrics-listen", "127.0.0.1:0",
           "-o", "json", *extra]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)


def _manifest(dest: Path, bid: str):
    return load_manifest(str(dest), bid) if manifest_exists(str(dest), bid) else None


def _wait(what: str, cond, proc: subprocess.Popen | None = None, timeout: float = 240):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"follower exited ({proc.returncode}) while waiting for {what}: "
                                 f"{proc.stderr.read()[-2000:]}")
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def _unrecorded_increment(dest: Path, bid: str) -> int | None:
    """Run N of an increment under way: its files or task reports exist, the manifest does
    not list run N yet."""
    m = _manifest(dest, bid)
    n = (m.last_run if m else 0) + 1
    base = dest / bid
    for d in (base / "data" / f"run={n}", base / "_work" / f"run={n}"):
        if d.exists() and any(p.is_file() for p in d.rglob("*")):
            return n
    return None


def _log_ends(bootstrap: str, topic: str) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "follow-test-watermarks"})
    try:
        return {p: watermarks(bootstrap, c, topic, p)[1] for p in range(PARTS)}
    finally:
        c.close()


def _scrape(url: str) -> dict[tuple[str, tuple], float]:
    from prometheus_client.parser import text_string_to_metric_families

    body = urllib.request.urlopen(url, timeout=10).read().decode()
    out = {}
    for fam in text_string_to_metric_families(body):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _metrics_url(proc: subprocess.Popen) -> str:
    line = proc.stderr.readline()
    assert line.startswith("serving metrics on "), line
    return line.split()[-1]


def test_follow_kill9_resume_sigterm_lag_metrics_validate_and_exact_restore(
        bootstrap, dr_bootstrap, spark, unique, tmp_path):
    topic = unique("follow")
    create_topic(bootstrap, topic, PARTS)
    dest, bid = tmp_path / "backups", unique("live")
    produce(bootstrap, topic, _batch("a", 4000))

    # 1. follow; once an increment is recorded, produce more and kill -9 the follower in the
    # middle of an increment (its files are written, the manifest does not list them yet)
    killed_mid = False
    for _attempt in range(3):
        proc = _follower(bootstrap, dest, bid, topic, "--interval", "1s")
        try:
            _wait("an increment", lambda: (m := _manifest(dest, bid)) and m.last_run >= 1, proc)
            produce(bootstrap, topic, _batch(f"b{_attempt}", 4000))
            run = _wait("an increment under way", lambda: _unrecorded_increment(dest, bid), proc)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
        # the kill may lose the race against the increment's last step: try again then
        if _manifest(dest, bid).last_run < run:
            killed_mid = True
            break
    assert killed_mid, "no kill landed in the middle of an increment in 3 tries"
    quick = validate_backup(str(dest), bid)  # the killed increment's files: noted, not counted
    assert quick.ok and quick.unfinished_runs == [run], (quick.problems, quick.unfinished_runs)
    print(f"killed in run {run} after {_attempt + 1} attempt(s)")
    for line in proc.stdout.read().splitlines():  # -o json: JSON lines only, no progress
        assert json.loads(line)["event"] == "increment"
    status = json.loads((dest / bid / "follow.json").read_text())
    assert status["state"] == "following"  # as the kill left it: the next follower takes over

    # 2. restart: it resumes (the killed run is redone, nothing skipped or doubled) and catches
    # up with back-to-back capped increments although the interval is an hour
    proc = _follower(bootstrap, dest, bid, topic, "--interval", "1h")
    try:
        url = _metrics_url(proc)
        ends = _log_ends(bootstrap, topic)
        _wait("the backup to catch up", lambda: (m := _manifest(dest, bid)) and all(
            m.end_offsets().get((topic, p)) == ends[p] for p in range(PARTS)), proc)
        produce(bootstrap, topic, _batch("c", 300))  # 100 a partition, not yet backed up
        ends = _log_ends(bootstrap, topic)
        backed = _manifest(dest, bid).end_offsets()

        def lag_seen():
            s = _scrape(url)
            lag = {p: s.get(("offsetkeeper_backup_lag_records",
                             (("backup_id", bid), ("partition", str(p)), ("topic", topic))))
                   for p in range(PARTS)}
            return s if all(lag[p] == ends[p] - backed[(topic, p)] for p in range(PARTS)) else None
        scraped = _wait("the lag metric to show the new records", lag_seen, proc, timeout=90)
        lab = (("backup_id", bid),)
        for p in range(PARTS):
            labels = (("backup_id", bid), ("partition", str(p)), ("topic", topic))
            assert ends[p] - backed[(topic, p)] == 100
            assert scraped[("offsetkeeper_backup_log_end_offset", labels)] == ends[p]
            assert scraped[("offsetkeeper_backup_end_offset", labels)] == backed[(topic, p)]
            assert scraped[("offsetkeeper_backup_lag_bytes", labels)] > 0
        assert scraped[("offsetkeeper_backup_up", lab)] == 1
        assert time.time() - 600 < scraped[("offsetkeeper_backup_last_success_timestamp_seconds",
                                            lab)] <= time.time()
        assert scraped[("offsetkeeper_backup_increments_total",
                        (("backup_id", bid), ("result", "recorded")))] >= 1

        # 3. SIGTERM: stops at once between increments, exit 0, status "stopped"
        proc.send_signal(signal.SIGTERM)
        out, _err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    assert proc.returncode == 0
    last = json.loads(out.splitlines()[-1])
    assert last["event"] == "stopped" and last["stopped_by"] == "stop"
    assert json.loads((dest / bid / "follow.json").read_text())["state"] == "stopped"

    # 4. stop (what SIGTERM sets) while an increment is under way: it is finished and recorded,
    # never left half done (in process, on the test's Spark session; small increments of c)
    cfg = BackupConfig(connection=Connection(bootstrap), include=(topic,), destination=str(dest),
                       backup_id=bid)
    stop, done = threading.Event(), []
    follower = threading.Thread(target=lambda: done.append(follow_backup(
        cfg, FollowOptions(interval_s=3600, max_offsets=60), stop=stop, spark=spark)))
    follower.start()
    try:
        run = _wait("an increment under way", lambda: _unrecorded_increment(dest, bid))
    finally:
        stop.set()
        follower.join(300)
    assert done and done[0].stopped_by == "stop" and done[0].recorded >= 1
    after = validate_backup(str(dest), bid)
    assert after.ok and after.unfinished_runs == [], after.unfinished_runs
    assert _manifest(dest, bid).last_run >= run
    assert 0 < sum(_manifest(dest, bid).end_offsets().values()) - sum(backed.values()) < 300

    # 5. a plain incremental run continues a followed backup (the rest of batch c)
    res = run_backup(cfg, spark=spark)
    assert 0 < res.records < 300
    m = res.manifest
    assert m.end_offsets() == {(topic, p): e for p, e in _log_ends(bootstrap, topic).items()}
    r = run_cli_json("backups", "list", "--dest", str(dest))
    row = next(x for x in r if x["backup_id"] == bid)
    assert row["runs"] == len(m.runs) and row["follow"] == "stopped"

    # 6. validate --deep: counts, checksums, ranges and no duplicate offset, per run
    report = validate_backup(str(dest), bid, deep=True)
    assert report.ok, report.problems
    source = independent_read(bootstrap, topic, PARTS)
    assert report.records_checked == len(source) >= 8300

    # 7. restore to the second cluster: every source record once, in order, at the mapped offset
    target = unique("follow-dr")
    run_restore(RestoreOptions(str(dest), bid, Connection(dr_bootstrap), restore_id="r1",
                               rename={topic: target}), spark=spark)
    got = consume_all(dr_bootstrap, target, range(PARTS))
    maps = partition_mappings(read_mapping(mapping_root_for(str(dest), bid, "r1")))
    for p in range(PARTS):
        src = [r for r in source if r[0] == p]
        mp = maps[TopicPartition(topic, p)]  # keyed by the source partition
        assert list(mp.source_offsets) == [r[1] for r in src]
        assert list(mp.target_offsets) == [x.offset() for x in got[p]]
        assert len(got[p]) == len(src)
        for x, s in zip(got[p], src, strict=True):
            assert (x.key(), x.value(), x.timestamp()[1]) == (s[3], s[4], s[2])
            assert [h for h in (x.headers() or []) if h[0] not in RESTORE_HEADERS] == s[5]
            assert dict(x.headers())["x-kafka-backup-offset"] == str(s[1]).encode()


def run_cli_json(*args: str):
    """The command line in a subprocess (the test's capsys is not at hand here), as JSON."""
    done = subprocess.run([sys.executable, "-m", "offsetkeeper.cli.main", *args, "-o", "json"],
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)
