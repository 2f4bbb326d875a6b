"""The background Spark Connect server's state directory: start it (`start_background`, one at
a time per directory: `state_lock`), ask whether it runs (`server_status`), stop it
(`stop_background`). The server process itself is `offsetkeeper.spark.server`.

The state directory (``$OFFSETKEEPER_SPARK_SERVER_DIR``, else the user data directory's
``spark-server``; mode 0700) holds ``state.json`` (pid, port, URL, master, idle timeout, the
`identity` of the offsetkeeper that started it and the token file's path), ``token`` (mode
0600), the server's ``server.out`` (its ready line) and ``server.log``, and ``start.lock``.

Every start makes a new random token (`write_token`): the server gets it in its environment
(``SPARK_CONNECT_AUTHENTICATE_TOKEN``, which Spark Connect's PreSharedKeyAuthenticationInterceptor
reads; never on its command line, which other users can read in /proc) and refuses sessions
without it; clients read it from the token file (`read_token`) and attach to
``sc://localhost:PORT`` (pyspark's client sends a token over a plain channel to ``localhost``
only). A running server without a token file (an older offsetkeeper's) is replaced.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from offsetkeeper.procs import pid_alive

HOST = "127.0.0.1"
# the host clients name: pyspark's Connect client sends a token without TLS to `localhost` only
# (grpc local credentials), and the server listens on HOST, which `localhost` reaches
CLIENT_HOST = "localhost"
TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
TOKEN_CONF = "spark.connect.authenticate.token"
TOKEN_FILE = "token"
DEFAULT_PORT = 15002
DEFAULT_IDLE_TIMEOUT = 1800.0
STALL_SECONDS = 180.0


@dataclass(frozen=True)
class ServerStatus:
    """A background server as its state directory describes it."""

    running: bool
    url: str | None = None
    pid: int | None = None
    master: str | None = None
    idle_timeout: float | None = None
    state_dir: str = ""
    log: str = ""
    identity: dict = field(default_factory=dict)  # `identity()` of the process that started it
    started: bool = False  # `start_background` started it (rather than found it running)
    # the file holding the token clients attach with (owner-only); "" for a server that takes
    # none (an older offsetkeeper's), which is replaced rather than used
    token_file: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


STATE_DIR_ENV = "OFFSETKEEPER_SPARK_SERVER_DIR"


def default_state_dir() -> Path:
    """$OFFSETKEEPER_SPARK_SERVER_DIR, else ~/.local/share/offsetkeeper/spark-server (the
    platform's user data directory)."""
    if os.environ.get(STATE_DIR_ENV):
        return Path(os.environ[STATE_DIR_ENV])
    import platformdirs

    return Path(platformdirs.user_data_dir("offsetkeeper")) / "spark-server"


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex((HOST, port)) == 0


def identity() -> dict[str, str]:
    """What a server must share with a command that attaches to it by default: the same
    offsetkeeper (its tasks run there, in Python workers that imported its modules once — so
    the same files, not only the same version: an editable install changes under a running
    server), pyspark (client and server) and Python."""
    import hashlib
    from importlib.metadata import PackageNotFoundError, version

    def _version(dist: str) -> str:
        try:
            return version(dist)
        except PackageNotFoundError:  # a source tree: the files below still tell
            return ""

    package = Path(__file__).resolve().parents[1]
    files = hashlib.sha256()
    for f in sorted(package.rglob("*.py")):
        with contextlib.suppress(OSError):
            st = f.stat()
            files.update(f"{f}:{st.st_mtime_ns}:{st.st_size};".encode())
    return {"offsetkeeper": _version("offsetkeeper"), "code": files.hexdigest()[:16],
            "pyspark": _version("pyspark"), "python": sys.executable}


def server_status(state_dir: str | Path | None = None) -> ServerStatus:
    """Whether the background server of `state_dir` runs (its process is alive and its port
    answers), with its URL."""
    d = Path(state_dir) if state_dir else default_state_dir()
    log = str(d / "server.log")
    try:
        st = json.loads((d / "state.json").read_text())
        pid, port = int(st["pid"]), int(st["port"])
    except (OSError, ValueError, KeyError, TypeError):
        return ServerStatus(False, state_dir=str(d), log=log)
    # the pid of a server that died may have been given to another process since
    running = pid_alive(pid) and _is_server(pid) and _listening(port)
    token_file = st.get("token_file") or ""
    if token_file and not Path(token_file).is_file():
        token_file = ""
    return ServerStatus(running, st.get("url"), pid, st.get("master"),
                        st.get("idle_timeout"), str(d), log, st.get("identity") or {},
                        token_file=token_file)


def private_dir(d: Path) -> None:
    """Make the state directory (and its parents) and keep it the owner's only (0700): it holds
    the server's token and logs. A directory of another user, or a shared one (sticky, as
    /tmp), is refused (UsageError) rather than re-moded."""
    import stat

    from offsetkeeper.errors import UsageError

    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = d.stat()
    if st.st_mode & 0o777 == 0o700 and st.st_uid == os.geteuid():
        return
    if st.st_uid != os.geteuid() or st.st_mode & stat.S_ISVTX:
        raise UsageError(f"the Spark server's state directory {d} is not yours alone (owner "
                         f"uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}); choose one of "
                         f"your own with --state-dir or {STATE_DIR_ENV}")
    os.chmod(d, 0o700)  # made by an older offsetkeeper with the umask's mode


def write_token(d: Path) -> str:
    """A new random token in ``d/token``: written to a temporary file created 0600 (never
    readable by others, not for an instant), then renamed over the old one."""
    import tempfile

    token = secrets.token_urlsafe(32)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".token-")  # O_EXCL, mode 0600
    try:
        with os.fdopen(fd, "w") as f:
            f.write(token)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, d / TOKEN_FILE)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return token


def read_token(st: ServerStatus) -> str | None:
    """The token a client attaches to the server `st` with; None when it takes none or the
    file cannot be read."""
    if not st.token_file:
        return None
    try:
        return Path(st.token_file).read_text().strip() or None
    except OSError:
        return None


def client_url(url: str, token: str | None) -> str:
    """`url` with the token as pyspark's client takes it (``sc://HOST:PORT/;token=T``). Keep it
    in memory: shown URLs are `url` itself."""
    return f"{url.rstrip('/')}/;token={token}" if token else url


@contextlib.contextmanager
def state_lock(state_dir: Path) -> Iterator[None]:
    """Hold the state directory's lock (``start.lock``, flock: released when the holder dies):
    one process at a time checks, starts or stops its server."""
    import fcntl

    private_dir(state_dir)
    with (state_dir / "start.lock").open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def free_port_near(port: int) -> int:
    """`port` when nothing listens there, else a free port the system picks."""
    import socket

    if not _listening(port):
        return port
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def start_background(port: int | None = DEFAULT_PORT, *, master: str = "local[*]",
                     idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
                     conf: Mapping[str, str] | None = None,
                     state_dir: str | Path | None = None,
                     replace_other: bool = False) -> ServerStatus:
    """Start a server in the background (or return the running one) and wait until it accepts
    sessions — as long as its log grows; OffsetkeeperError when it exits or stalls, with the
    last line of its log. `port` None: DEFAULT_PORT, or any free port when that is taken.
    `replace_other`: a running server of another `identity` is stopped and replaced; one that
    takes no token (an older offsetkeeper's) always is.
    Concurrent calls on one state directory start one server (`state_lock`)."""
    from offsetkeeper.errors import UsageError

    if conf and TOKEN_CONF in conf:
        # Spark prefers the setting to the environment, and settings reach the JVM's command line
        raise UsageError(f"--conf {TOKEN_CONF} cannot be given: offsetkeeper makes a new token "
                         f"at every start and keeps it in the state directory's {TOKEN_FILE} file")
    d = Path(state_dir) if state_dir else default_state_dir()
    with state_lock(d):
        current = server_status(d)
        if current.running and current.token_file and not (
                replace_other and current.identity != identity()):
            return current
        # another version's server, one that takes no token, or one whose process lives but
        # does not answer
        _stop(d, current)
        return _start(d, port, master, idle_timeout, conf)


def _start(d: Path, port: int | None, master: str, idle_timeout: float,
           conf: Mapping[str, str] | None) -> ServerStatus:
    import subprocess

    from offsetkeeper.errors import OffsetkeeperError, UsageError

    if port is None:
        port = free_port_near(DEFAULT_PORT)
    elif _listening(port):
        raise UsageError(f"port {port} on {HOST} is taken by another process; choose --port")
    (d / "state.json").unlink(missing_ok=True)
    token = write_token(d)
    out_path, log_path = d / "server.out", d / "server.log"
    cmd = [sys.executable, "-m", "offsetkeeper.spark.server", "--port", str(port),
           "--master", master, "--idle-timeout", str(idle_timeout)]
    for k, v in (conf or {}).items():
        cmd += ["--conf", f"{k}={v}"]
    # in its state directory: the server outlives the command's working directory; the token
    # in its environment (readable by this user only), from which its JVM inherits it
    with out_path.open("w") as out, log_path.open("w") as log:
        proc = subprocess.Popen(cmd, stdout=out, stderr=log, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=d,
                                env={**os.environ, TOKEN_ENV: token})
    last, changed = -1, time.monotonic()
    while '"ready": true' not in out_path.read_text():
        if proc.poll() is not None:
            tail = [ln for ln in log_path.read_text().splitlines() if ln.strip()][-1:] or ["-"]
            raise OffsetkeeperError(f"the Spark Connect server exited with {proc.returncode} "
                                    f"before it was ready: {tail[0][:300]} (log: {log_path})")
        size = log_path.stat().st_size
        if size != last:
            last, changed = size, time.monotonic()
        elif time.monotonic() - changed > STALL_SECONDS:
            proc.terminate()
            raise OffsetkeeperError(f"the Spark Connect server made no progress for "
                                    f"{STALL_SECONDS:.0f} s; stopped it (log: {log_path})")
        time.sleep(0.3)
    url = f"sc://{CLIENT_HOST}:{port}"
    ident, token_file = identity(), str(d / TOKEN_FILE)
    (d / "state.json").write_text(json.dumps({"pid": proc.pid, "port": port, "url": url,
                                              "master": master, "idle_timeout": idle_timeout,
                                              "identity": ident, "token_file": token_file}))
    return ServerStatus(True, url, proc.pid, master, idle_timeout, str(d), str(log_path), ident,
                        started=True, token_file=token_file)


def stop_background(state_dir: str | Path | None = None) -> ServerStatus:
    """Stop the background server (SIGTERM, SIGKILL after 30 s) and forget it."""
    d = Path(state_dir) if state_dir else default_state_dir()
    with state_lock(d):
        st = server_status(d)
        _stop(d, st)
    return ServerStatus(False, st.url, st.pid, st.master, st.idle_timeout, str(d), st.log,
                        st.identity)  # no token file: it went with the server


def _is_server(pid: int) -> bool:
    """Whether `pid` is still a server process (not another one that got its pid since)."""
    try:
        return b"offsetkeeper.spark.server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return pid_alive(pid)  # no /proc: trust the pid


def _stop(d: Path, st: ServerStatus) -> None:
    if st.pid is not None and pid_alive(st.pid) and _is_server(st.pid):
        os.kill(st.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while pid_alive(st.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if pid_alive(st.pid):
            os.kill(st.pid, signal.SIGKILL)
    (d / "state.json").unlink(missing_ok=True)
    (d / TOKEN_FILE).unlink(missing_ok=True)
