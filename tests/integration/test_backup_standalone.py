"""A backup through spark-submit on a standalone Spark cluster (a master and a worker started
from the pyspark installation), checked against an independent read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from backup_support import independent_read
from kafkatools import commit, create_topic, produce_n
from offsetkeeper import devbroker
from offsetkeeper.backup.manifest import load_manifest
from offsetkeeper.backup.validate import validate_backup

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _wait_for(path: Path, text: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args[2]} exited: {path.read_text()[-2000:]}")
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for '{text}' in {path}")


@pytest.fixture
def standalone(tmp_path):
    """spark://127.0.0.1:PORT with one worker (2 cores, 2g)."""
    home = _spark_home()
    env = {**os.environ, "SPARK_HOME": str(home), "PYSPARK_PYTHON": sys.executable,
           "SPARK_WORKER_DIR": str(tmp_path / "work"), "SPARK_LOCAL_IP": "127.0.0.1"}
    port = devbroker.free_port()
    url = f"spark://127.0.0.1:{port}"
    procs = []
    try:
        mlog = tmp_path / "master.log"
        with mlog.open("w") as out:
            procs.append(subprocess.Popen(
                [str(home / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master",
                 "--host", "127.0.0.1", "--port", str(port), "--webui-port",
                 str(devbroker.free_port())], stdout=out, stderr=subprocess.STDOUT, env=env))
        _wait_for(mlog, "I have been elected leader", procs[0])
        wlog = tmp_path / "worker.log"
        with wlog.open("w") as out:
            procs.append(subprocess.Popen(
                [str(home / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker", url,
                 "--cores", "2", "--memory", "2g", "--webui-port", str(devbroker.free_port())],
                stdout=out, stderr=subprocess.STDOUT, env=env))
        _wait_for(wlog, "Successfully registered with master", procs[1])
        yield url, env
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()


def test_backup_through_spark_submit_on_standalone_cluster(standalone, bootstrap, unique, tmp_path):
    url, env = standalone
    topic = unique("sa")
    create_topic(bootstrap, topic, 3)
    produce_n(bootstrap, topic, 3, 20)
    group = unique("g")
    commit(bootstrap, group, {(topic, 1): 7})
    dest = tmp_path / "backups"
    (tmp_path / "none.yaml").write_text("{}\n")
    import offsetkeeper.cli.main as entry

    cmd = [str(_spark_home() / "bin" / "spark-submit"), "--master", url,
           "--conf", "spark.executor.memory=1g", "--conf", "spark.ui.enabled=false",
           entry.__file__, "backup", "run", "-b", bootstrap, "-t", topic,
           "--dest", str(dest), "--id", "sa", "-o", "json"]
    done = subprocess.run(cmd, env={**env, "PYSPARK_DRIVER_PYTHON": sys.executable,
                                    "OFFSETKEEPER_CONFIG": str(tmp_path / "none.yaml")},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    # the session this run started is timed apart from the job (no local Python workers to start)
    timings = json.loads(done.stdout)["timings"]
    assert timings["spark_start_jvm"] > 0 and "spark_start_python_workers" not in timings
    m = load_manifest(str(dest), "sa")
    assert m.record_count == 60 == len(independent_read(bootstrap, topic, 3))
    assert m.group_offsets()[group] == {(topic, 1): 7}
    assert validate_backup(str(dest), "sa").ok
    # the app really ran on the standalone cluster (an executor on the worker ran tasks)
    assert list((tmp_path / "work").glob("app-*/*/stderr"))
