"""The core install's commands work against a real broker with every extra's package missing.

`tests/core_only.py` blocks pyspark, pyarrow, pandas, numpy, matplotlib, starlette, jinja2,
uvicorn, psycopg, redis and kazoo (as an uninstalled package fails to import), then runs the
real CLI: a lazy import of one of them anywhere on these paths fails the command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kafkatools import commit, committed, create_topic, produce_n

pytestmark = [pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]


def _core(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OFFSETKEEPER_SNAPSHOT_STORE": str(tmp_path / "snapshots"),
           "OFFSETKEEPER_CONFIG": str(tmp_path / "none.yaml")}
    (tmp_path / "none.yaml").write_text("{}\n")
    return subprocess.run([sys.executable, "-m", "tests.core_only", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_core_commands_run_without_any_extra(tmp_path, bootstrap, unique):
    """Invariant: inspection, reset --execute, rollback of its snapshot, history record with
    the SQLite store and lag status need no extra's package at run time."""
    topic, group = unique("core"), unique("core-g")
    create_topic(bootstrap, topic, partitions=2)
    produce_n(bootstrap, topic, 2, 20)
    commit(bootstrap, group, {(topic, 0): 5, (topic, 1): 7})
    b = ["-b", bootstrap]

    listed = _core(tmp_path, "groups", "list", *b, "-o", "json")
    assert listed.returncode == 0, listed.stderr
    assert group in {g["group_id"] for g in json.loads(listed.stdout)}

    reset = _core(tmp_path, "offsets", "reset", *b, "-g", group, "-t", topic, "--to-latest",
                  "--execute", "-o", "json")
    assert reset.returncode == 0, reset.stderr
    assert committed(bootstrap, group, topic, 2) == {0: 20, 1: 20}

    back = _core(tmp_path, "snapshots", "rollback", "latest", *b, "--execute")
    assert back.returncode == 0, back.stderr
    assert committed(bootstrap, group, topic, 2) == {0: 5, 1: 7}

    store = str(tmp_path / "history.db")
    rec = _core(tmp_path, "history", "record", *b, "-g", group, "--once", "--store", store)
    assert rec.returncode == 0, rec.stderr
    lag = _core(tmp_path, "lag", "status", group, "--store", store, "-o", "json",
                "--fail-on", "incomplete")
    assert lag.returncode in (0, 1), lag.stderr  # one sample: too few for a verdict is fine
    assert "needs the" not in lag.stderr and "Traceback" not in lag.stderr
