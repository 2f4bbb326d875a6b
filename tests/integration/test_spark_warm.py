"""Warm Spark by default (offsetkeeper.spark.warm): data commands with no --master/--remote
attach to the user's local Spark Connect server, starting it on first use.

One test walks the whole life of that server in its own state directory (outside pytest's base
temp, which other pytest runs re-mode): first command starts it, the next attach, two first
commands at once start one, a server of other code is replaced, the idle timeout stops it, and
a server that cannot start means one line on stderr and Spark in the command's process. On the
way it checks the server's token: clients without it (or with another) are refused, a user
attaches by hand with the token file, and the token is shown nowhere.
Commands run as child processes, as a user runs them (the test process stays without Spark).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from offsetkeeper.procs import pid_alive
from offsetkeeper.spark.server import server_status, stop_background
from tests.services import free_port
from tests.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
FALLBACK = "not using the warm Spark server"


def _cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "offsetkeeper.cli.main", *args, "-o", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=cwd)


def _done(p: subprocess.Popen, shown: list[str] | None = None) -> tuple[dict, str]:
    out, err = p.communicate(timeout=540)
    assert p.returncode == 0, err[-3000:]
    assert "Traceback" not in err
    if shown is not None:
        shown.append(out + err)
    return json.loads(out), err


# A Connect client as a user writes it, in a child process: without a token, with a wrong one,
# then as the README says (the token file's content in SPARK_CONNECT_AUTHENTICATE_TOKEN).
_BY_HAND = """
import json, os, sys
from pyspark.sql.connect.session import SparkSession

url, token_file = sys.argv[1], sys.argv[2]
os.environ.pop("SPARK_CONNECT_AUTHENTICATE_TOKEN", None)

def attempt(u):
    try:
        s = SparkSession.builder.remote(u).create()
        return s.range(5).count()
    except Exception as exc:
        return str(exc)

got = {"none": attempt(url), "wrong": attempt(url + "/;token=not-the-token")}
os.environ["SPARK_CONNECT_AUTHENTICATE_TOKEN"] = open(token_file).read().strip()
got["token"] = attempt(url)
print(json.dumps(got))
"""


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants (the server's JVM and Python workers)."""
    children: dict[int, list[int]] = {}
    for f in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = f.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(f.parent.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def _check_token(state: Path, env: dict[str, str], cwd: Path, shown: list[str]) -> str:
    """The running server's token: in an owner-only file of an owner-only directory, on no
    command line of the server's processes and in none of its state and log files; a client
    without it or with another is refused, one with it (attached by hand) works."""
    st = server_status(state)
    token_file = Path(st.token_file)
    assert token_file == state / "token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    token = token_file.read_text().strip()
    assert len(token) >= 40
    tree = _tree(st.pid)
    assert len(tree) >= 2  # the server and its JVM at least
    for pid in tree:
        with contextlib.suppress(FileNotFoundError):  # a Python worker that ended
            assert token.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
    for f in ("state.json", "server.out", "server.log"):
        assert token not in (state / f).read_text()
    # status, as a user runs it to find the server: the URL and the token file, not the token
    status = subprocess.run([sys.executable, "-m", "offsetkeeper.cli.main", "spark-server",
                             "status"], capture_output=True, text=True, env=env, cwd=cwd,
                            timeout=120)
    assert status.returncode == 0 and str(token_file) in status.stdout, status.stderr
    assert st.url and st.url in status.stdout and "token=" not in st.url
    shown.append(status.stdout + status.stderr)
    hand = subprocess.run([sys.executable, "-c", _BY_HAND, st.url, str(token_file)],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
    assert hand.returncode == 0, hand.stderr[-3000:]
    got = json.loads(hand.stdout.splitlines()[-1])
    assert "UNAUTHENTICATED" in str(got["none"]) and "No authentication token" in str(got["none"])
    assert "UNAUTHENTICATED" in str(got["wrong"]) and "Invalid authentication" in str(got["wrong"])
    assert got["token"] == 5
    return token


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
    server (the state directory's lock). A server that takes no token (an older offsetkeeper's)
    is replaced by `spark-server start`; one of other code (identity) by the next command. The
    idle timeout stops the server. When the server cannot start, the command says why in one
    line on stderr and runs Spark itself.
    Invariant (the server's token): every start has a new token, in a 0600 file of the 0700 state
    directory and never on a command line; a client without it or with a wrong one is refused;
    no output of offsetkeeper's commands (--verbose included) shows it."""
    topic = unique("warm")
    _produce(bootstrap, topic)
    state = Path(tempfile.mkdtemp(prefix="offsetkeeper-warm-"))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "OFFSETKEEPER_SPARK_WARM": "1", "OFFSETKEEPER_SPARK_SERVER_DIR": str(state),
           "OFFSETKEEPER_SPARK_IDLE_TIMEOUT": "600",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH"))
                                         if p)}
    env.pop("SPARK_REMOTE", None)
    env.pop("SPARK_CONNECT_AUTHENTICATE_TOKEN", None)
    shown: list[str] = []  # every output of the commands, searched for the tokens at the end
    tokens: list[str] = []

    def backup(backup_id: str, extra_env: dict[str, str] | None = None) -> subprocess.Popen:
        # a relative --dest: the server's tasks write where the command's directory says
        return _cli(["backup", "run", "-b", bootstrap, "-t", topic, "--dest", "backups",
                     "--id", backup_id], {**env, **(extra_env or {})}, tmp_path)

    try:
        # first use: the command starts the server and waits for it
        first, err = _done(backup("a"), shown)
        assert first["records"] == 40 and FALLBACK not in err
        assert "spark_start_server" in first["timings"] and "spark_start_connect" in first["timings"]
        assert (tmp_path / "backups" / "a").is_dir()
        st1 = server_status(state)
        assert st1.running and st1.pid
        tokens.append(_check_token(state, env, tmp_path, shown))

        # the next commands attach to it (with --verbose: debug logs on stderr)
        restored, err = _done(_cli(["--verbose", "restore", "run", "backups/a", "-b", bootstrap,
                                    "--rename", f"{topic}={topic}-r", "--restore-id", "r1"],
                                   env, tmp_path), shown)
        assert restored["records"] == 40 and FALLBACK not in err
        again, _ = _done(backup("b"), shown)
        assert "spark_start_server" not in again["timings"]
        assert "spark_start_connect" in again["timings"]
        assert server_status(state).pid == st1.pid

        # the server dies, its state stays behind (stale); then two first commands at once:
        # one starts a new server, the other waits and attaches
        os.kill(st1.pid, signal.SIGKILL)
        wait_for("the killed server to go", lambda: not pid_alive(st1.pid))
        assert (state / "state.json").exists() and not server_status(state).running
        both = [_done(p, shown)[0] for p in [backup("c"), backup("d")]]
        assert sorted("spark_start_server" in s["timings"] for s in both) == [False, True]
        st2 = server_status(state)
        assert st2.running and st2.pid != st1.pid
        tokens.append((state / "token").read_text().strip())

        # a server that takes no token (an older offsetkeeper's state: no token file, its URL
        # on 127.0.0.1) is not used: `spark-server start` replaces it
        doc = json.loads((state / "state.json").read_text())
        doc.pop("token_file")
        (state / "state.json").write_text(json.dumps({**doc, "url": f"sc://127.0.0.1:{doc['port']}"}))
        (state / "token").unlink()
        assert server_status(state).running and not server_status(state).token_file
        started = subprocess.run([sys.executable, "-m", "offsetkeeper.cli.main", "spark-server",
                                  "start", "--port", str(free_port())], capture_output=True,
                                 text=True, env=env, cwd=tmp_path, timeout=540)
        assert started.returncode == 0, started.stderr[-3000:]
        shown.append(started.stdout + started.stderr)
        assert f"SPARK_CONNECT_AUTHENTICATE_TOKEN=\"$(cat {state / 'token'})\"" in started.stderr
        assert not pid_alive(st2.pid)
        st2b = server_status(state)
        assert st2b.running and st2b.token_file and st2b.pid != st2.pid
        tokens.append((state / "token").read_text().strip())

        # a server of other code is replaced (and stopped); this one idles out after 2 s
        doc = json.loads((state / "state.json").read_text())
        doc["identity"] = {**doc["identity"], "code": "other"}
        (state / "state.json").write_text(json.dumps(doc))
        replaced, _ = _done(backup("e", {"OFFSETKEEPER_SPARK_IDLE_TIMEOUT": "2"}), shown)
        assert "spark_start_server" in replaced["timings"]
        assert not pid_alive(st2b.pid)
        st3 = server_status(state)
        assert st3.running and st3.pid not in (st1.pid, st2.pid, st2b.pid)
        assert st3.idle_timeout == 2
        tokens.append((state / "token").read_text().strip())
        wait_for("the idle server to stop", lambda: not pid_alive(st3.pid))
        assert not server_status(state).running

        # a new token at every start, and none of them in any output
        assert len(set(tokens)) == len(tokens) == 4
        leaks = [t for t in tokens for out in shown if t in out]
        assert not leaks and len(shown) == 8

        # no server possible (its state directory cannot be made): one line, then local Spark
        blocked = tmp_path / "not-a-directory"
        blocked.write_text("")
        local, err = _done(backup("f", {"OFFSETKEEPER_SPARK_SERVER_DIR": str(blocked / "x")}))
        assert local["records"] == 40 and "spark_start_jvm" in local["timings"]
        assert len([line for line in err.splitlines() if FALLBACK in line]) == 1, err
    finally:
        stop_background(state)
        shutil.rmtree(state, ignore_errors=True)
