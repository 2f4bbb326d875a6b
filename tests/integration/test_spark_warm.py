"""Warm Spark by default (offsetkeeper.spark.warm): data commands with no --master/--remote
attach to the user's local Spark Connect server, starting it on first use.

One test walks the whole life of that server in its own state directory (outside pytest's base
temp, which other pytest runs re-mode): first command starts it, the next attach, two first
commands at once start one, a server of other code is replaced, the idle timeout stops it, and
a server that cannot start means one line on stderr and Spark in the command's process.
Commands run as child processes, as a user runs them (the test process stays without Spark).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from offsetkeeper.procs import pid_alive
from offsetkeeper.spark.server import server_status, stop_background
from tests.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
FALLBACK = "not using the warm Spark server"


def _cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "offsetkeeper.cli.main", *args, "-o", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=cwd)


def _done(p: subprocess.Popen) -> tuple[dict, str]:
    out, err = p.communicate(timeout=540)
    assert p.returncode == 0, err[-3000:]
    assert "Traceback" not in err
    return json.loads(out), err


def _produce(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(40):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=i % 2)
    assert p.flush(30) == 0


def test_warm_server_life_cycle(bootstrap, unique, tmp_path):
    """Without --master/--remote/SPARK_REMOTE, `backup run` starts the warm server and the next
    commands (`restore run`, `backup run`) attach to it: same server process, no start of their
    own. A dead server's stale state is replaced, and two first commands at once start one
    server (the state directory's lock). A server of other code (identity) is stopped and
    replaced. The idle timeout stops the server. When the
    server cannot start, the command says why in one line on stderr and runs Spark itself."""
    topic = unique("warm")
    _produce(bootstrap, topic)
    state = Path(tempfile.mkdtemp(prefix="offsetkeeper-warm-"))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "OFFSETKEEPER_SPARK_WARM": "1", "OFFSETKEEPER_SPARK_SERVER_DIR": str(state),
           "OFFSETKEEPER_SPARK_IDLE_TIMEOUT": "600",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH"))
                                         if p)}
    env.pop("SPARK_REMOTE", None)

    def backup(backup_id: str, extra_env: dict[str, str] | None = None) -> subprocess.Popen:
        # a relative --dest: the server's tasks write where the command's directory says
        return _cli(["backup", "run", "-b", bootstrap, "-t", topic, "--dest", "backups",
                     "--id", backup_id], {**env, **(extra_env or {})}, tmp_path)

    try:
        # first use: the command starts the server and waits for it
        first, err = _done(backup("a"))
        assert first["records"] == 40 and FALLBACK not in err
        assert "spark_start_server" in first["timings"] and "spark_start_connect" in first["timings"]
        assert (tmp_path / "backups" / "a").is_dir()
        st1 = server_status(state)
        assert st1.running and st1.pid

        # the next commands attach to it
        restored, err = _done(_cli(["restore", "run", "backups/a", "-b", bootstrap, "--rename",
                                    f"{topic}={topic}-r", "--restore-id", "r1"], env, tmp_path))
        assert restored["records"] == 40 and FALLBACK not in err
        again, _ = _done(backup("b"))
        assert "spark_start_server" not in again["timings"]
        assert "spark_start_connect" in again["timings"]
        assert server_status(state).pid == st1.pid

        # the server dies, its state stays behind (stale); then two first commands at once:
        # one starts a new server, the other waits and attaches
        os.kill(st1.pid, signal.SIGKILL)
        wait_for("the killed server to go", lambda: not pid_alive(st1.pid))
        assert (state / "state.json").exists() and not server_status(state).running
        both = [_done(p)[0] for p in [backup("c"), backup("d")]]
        assert sorted("spark_start_server" in s["timings"] for s in both) == [False, True]
        st2 = server_status(state)
        assert st2.running and st2.pid != st1.pid

        # a server of other code is replaced (and stopped); this one idles out after 2 s
        doc = json.loads((state / "state.json").read_text())
        doc["identity"] = {**doc["identity"], "code": "other"}
        (state / "state.json").write_text(json.dumps(doc))
        replaced, _ = _done(backup("e", {"OFFSETKEEPER_SPARK_IDLE_TIMEOUT": "2"}))
        assert "spark_start_server" in replaced["timings"]
        assert not pid_alive(st2.pid)
        st3 = server_status(state)
        assert st3.running and st3.pid not in (st1.pid, st2.pid) and st3.idle_timeout == 2
        wait_for("the idle server to stop", lambda: not pid_alive(st3.pid))
        assert not server_status(state).running

        # no server possible (its state directory cannot be made): one line, then local Spark
        blocked = tmp_path / "not-a-directory"
        blocked.write_text("")
        local, err = _done(backup("f", {"OFFSETKEEPER_SPARK_SERVER_DIR": str(blocked / "x")}))
        assert local["records"] == 40 and "spark_start_jvm" in local["timings"]
        assert len([line for line in err.splitlines() if FALLBACK in line]) == 1, err
    finally:
        stop_background(state)
        shutil.rmtree(state, ignore_errors=True)
