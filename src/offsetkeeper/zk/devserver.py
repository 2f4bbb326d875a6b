"""A throwaway local ZooKeeper (Debian's `zookeeper` package, on Java) for the demo."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

from offsetkeeper.errors import OffsetkeeperError

ZK_JAR = Path("/usr/share/java/zookeeper.jar")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_zookeeper(data_dir: Path, timeout: float = 60) -> tuple[subprocess.Popen, str]:
    """Start a standalone ZooKeeper on a free loopback port; returns (process, host:port)."""
    if not ZK_JAR.is_file():
        raise OffsetkeeperError(f"ZooKeeper is not installed ({ZK_JAR} is missing)")
    port = _free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    cfg = data_dir / "zoo.cfg"
    cfg.write_text(f"tickTime=2000\ndataDir={data_dir}/data\nclientPort={port}\n"
                   "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n")
    # Debian's zookeeper.jar names its dependencies in its manifest (as zkEnv.sh relies on).
    proc = subprocess.Popen(
        ["java", "-Xmx256m", "-cp", f"/etc/zookeeper/conf:{ZK_JAR}",
         "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(cfg)],
        stdout=(data_dir / "zk.out").open("wb"), stderr=subprocess.STDOUT,
        env={**os.environ, "ZOO_LOG_DIR": str(data_dir)})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise OffsetkeeperError(f"ZooKeeper exited with {proc.returncode}; see {data_dir}/zk.out")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"127.0.0.1:{port}"
        time.sleep(0.2)
    stop_zookeeper(proc)
    raise OffsetkeeperError(f"ZooKeeper did not listen on port {port} within {timeout:g} s")


def stop_zookeeper(proc: subprocess.Popen) -> None:
    """Stop it (SIGTERM, then SIGKILL after 10 s)."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
