"""The embedded development broker: the pinned `noida-db` Kafka-protocol broker, run locally.

Used by `offsetkeeper dev-broker`, the demo and the test suite. One broker per data directory;
its pid and port live in ``DATA_DIR/offsetkeeper-broker.json``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from platformdirs import user_data_dir

from offsetkeeper.errors import OffsetkeeperError, UsageError
from offsetkeeper.storage import write_text_atomic

DEFAULT_PORT = 9092
STATE_FILE = "offsetkeeper-broker.json"


@dataclass(frozen=True)
class BrokerStatus:
    """Where a development broker runs and whether it answers."""

    running: bool
    pid: int | None
    port: int | None
    data_dir: str

    @property
    def bootstrap(self) -> str | None:
        return f"127.0.0.1:{self.port}" if self.port else None


def default_data_dir() -> Path:
    return Path(user_data_dir("offsetkeeper")) / "dev-broker"


def noida_executable() -> str:
    """Path of the noida-db server binary (installed with the package's dev extra).

    The `noida-db` console script is a Python wrapper that runs the binary as a child; signals
    sent to the wrapper do not reach the server cleanly (it would not save its state), so the
    binary inside the noida_db package is run directly.
    """
    try:
        import noida_db

        binary = Path(noida_db.__file__).parent / "noida-db"
        if binary.is_file():
            if not os.access(binary, os.X_OK):
                binary.chmod(0o755)
            return str(binary)
    except ImportError:
        pass
    found = shutil.which("noida-db")
    if not found:
        raise OffsetkeeperError(
            "noida-db is not installed; run: pip install 'noida-db==0.2.3' (or scripts/setup.sh)"
        )
    return found


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still "exists"; treat it as gone.
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.split(")")[-1].split()[0] == "Z":
            return False
    return True


def status(data_dir: str | Path | None = None) -> BrokerStatus:
    """Report whether the broker of `data_dir` is running."""
    d = Path(data_dir or default_data_dir()).expanduser()
    state = d / STATE_FILE
    if not state.exists():
        return BrokerStatus(False, None, None, str(d))
    try:
        info = json.loads(state.read_text())
        pid, port = int(info["pid"]), int(info["port"])
    except (ValueError, KeyError, TypeError):
        return BrokerStatus(False, None, None, str(d))
    return BrokerStatus(_pid_alive(pid) and _port_open(port), pid, port, str(d))


def start(port: int = DEFAULT_PORT, data_dir: str | Path | None = None, *, wait: float = 30.0) -> BrokerStatus:
    """Start noida-db in the background (Kafka only) and wait until it accepts connections."""
    if not 0 < port < 65536:
        raise UsageError(f"--port {port} is not a TCP port (expected 1-65535)")
    d = Path(data_dir or default_data_dir()).expanduser()
    current = status(d)
    if current.running:
        return current
    if _port_open(port):
        raise OffsetkeeperError(f"port {port} is already in use by another process; choose --port")
    d.mkdir(parents=True, exist_ok=True)
    log = open(d / "broker.log", "ab")  # noqa: SIM115 - handed to the child process
    proc = subprocess.Popen(
        [noida_executable(), "start", "--only", "kafka", "--data-dir", str(d),
         "--kafka-port", str(port)],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
    )
    write_text_atomic(str(d / STATE_FILE), json.dumps({"pid": proc.pid, "port": port}))
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise OffsetkeeperError(f"noida-db exited with code {proc.returncode}; see {d / 'broker.log'}")
        if _port_open(port):
            return BrokerStatus(True, proc.pid, port, str(d))
        time.sleep(0.1)
    stop(d)
    raise OffsetkeeperError(f"noida-db did not open port {port} within {wait:.0f}s; see {d / 'broker.log'}")


def stop(data_dir: str | Path | None = None, *, timeout: float = 20.0) -> BrokerStatus:
    """Stop the broker cleanly (SIGINT lets it save state), SIGKILL only after `timeout`."""
    d = Path(data_dir or default_data_dir()).expanduser()
    st = status(d)
    if st.pid and _pid_alive(st.pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(st.pid, signal.SIGINT)  # started in its own session: pgid == pid
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _pid_alive(st.pid):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(st.pid, os.WNOHANG)
            time.sleep(0.1)
        if _pid_alive(st.pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(st.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(st.pid, 0)
    with contextlib.suppress(FileNotFoundError):
        (d / STATE_FILE).unlink()
    return BrokerStatus(False, None, st.port, str(d))


@contextlib.contextmanager
def running_broker(port: int | None = None, data_dir: str | Path | None = None) -> Iterator[str]:
    """Run a broker for the duration of a `with` block; yields its bootstrap address."""
    st = start(port or free_port(), data_dir)
    try:
        yield st.bootstrap or ""
    finally:
        stop(st.data_dir)


def as_dict(st: BrokerStatus) -> dict:
    return {**asdict(st), "bootstrap": st.bootstrap}
