"""Kill a restore mid-way (SIGKILL to the whole process group: driver, JVM, Python workers),
rerun the same restore id, and compare: every backed-up record on the target exactly once,
in source order, and the mapping matching the target record for record."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from offsetkeeper.config import Connection
from offsetkeeper.models import TopicPartition
from offsetkeeper.restore.config import RestoreOptions
from offsetkeeper.restore.mapping import mapping_root_for, partition_mappings, read_mapping
from offsetkeeper.restore.run import run_restore
from offsetkeeper.restore.state import load_state
from tests.restore_support import consume_all, rec, write_backup

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]


def _chunks(root: str) -> int:
    n = 0
    for _dirpath, _dirs, files in os.walk(root):
        n += sum(f.startswith("chunk-") for f in files)
    return n


def test_killed_restore_resumes_without_duplicates_or_gaps(tmp_path, dr_bootstrap, spark, unique):
    topic = unique("kill")
    data = {topic: {p: [rec(o * 3, 1_000 + o, f"k{o}".encode(), os.urandom(40)) for o in range(700)]
                    for p in (0, 1)}}
    write_backup(str(tmp_path), "b", data, configs={topic: {"retention.ms": "-1"}})
    backup = f"{tmp_path}/b"
    target = unique("kill-dr")
    cmd = [sys.executable, "-m", "offsetkeeper.cli.main", "restore", "run", backup, "-b", dr_bootstrap,
           "--restore-id", "k1", "--rename", f"{topic}={target}", "--max-records-per-sec", "300",
           "--chunk-records", "40", "--master", "local[2]", "-o", "json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    root = mapping_root_for(str(tmp_path), "b", "k1")
    try:
        deadline = time.monotonic() + 120
        while _chunks(root) < 4 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert proc.poll() is None, "the restore finished before it could be interrupted"
        assert _chunks(root) >= 4, "the restore did not start writing"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    # produce requests already on the wire when the process died still land on the broker:
    # let them arrive before counting what the killed run left behind
    time.sleep(2)
    partial = sum(len(v) for v in consume_all(dr_bootstrap, target, [0, 1]).values())
    assert 0 < partial < 1400
    assert load_state(str(tmp_path), "b", "k1").status == "running"

    res = run_restore(RestoreOptions(str(tmp_path), "b", Connection(dr_bootstrap), restore_id="k1",
                                     rename={topic: target}, chunk_records=40), spark=spark)
    assert res.resumed
    assert load_state(str(tmp_path), "b", "k1").status == "completed"
    got = consume_all(dr_bootstrap, target, [0, 1])
    maps = partition_mappings(read_mapping(root))
    for p in (0, 1):
        src = data[topic][p]
        assert [int(dict(m.headers())["x-kafka-backup-offset"]) for m in got[p]] == [r["offset"] for r in src]
        assert [m.value() for m in got[p]] == [r["value"] for r in src]
        m = maps[TopicPartition(topic, p)]
        assert list(m.source_offsets) == [r["offset"] for r in src]
        assert list(m.target_offsets) == [x.offset() for x in got[p]]
    # the rerun produced exactly what was missing (and mapped what was written but not mapped)
    assert sum(r["records"] for r in res.partitions) == 1400 - partial
