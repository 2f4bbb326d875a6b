"""A local Apache Kafka cluster in KRaft mode: one node, or three for replication and faults.

Used by `offsetkeeper dev-broker`, the demo, the test suite and the benches. Each node is a JVM
running the release's `kafka.Kafka` as a combined broker + controller with a small heap and
laptop settings (no initial rebalance delay; replication = the node count, min ISR 2 on three
nodes). One cluster per data directory; what runs where is in ``DATA_DIR/offsetkeeper-broker.json``.
Each data directory is formatted once with a new cluster id, so two clusters never share one;
a restart keeps the data, as Apache Kafka does.

Size: over 500 lines because it runs a cluster end to end (format, configs, start, readiness,
killing and restarting single nodes, stop), which the tests' fault cases need in one place.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from platformdirs import user_data_dir

from offsetkeeper.devbroker import dist
from offsetkeeper.devbroker.security import SecuritySetup, prepare_security
from offsetkeeper.errors import OffsetkeeperError, UsageError
from offsetkeeper.procs import pid_alive
from offsetkeeper.storage import write_text_atomic

DEFAULT_PORT = 9092
STATE_FILE = "offsetkeeper-broker.json"
HEAP = "384m"


@dataclass(frozen=True)
class NodeStatus:
    """One node (JVM) of a development cluster."""

    node_id: int
    pid: int
    port: int
    controller_port: int
    running: bool


@dataclass(frozen=True)
class BrokerStatus:
    """Where a development cluster runs and whether every node answers."""

    running: bool
    pid: int | None
    port: int | None
    data_dir: str
    nodes: tuple[NodeStatus, ...] = ()
    cluster_id: str | None = None
    #: client properties file for a secured cluster (SASL_SSL, admin principal), else None
    command_config: str | None = None
    kafka_version: str = dist.KAFKA_VERSION
    ports: tuple[int, ...] = field(default=())

    @property
    def bootstrap(self) -> str | None:
        ports = self.ports or ((self.port,) if self.port else ())
        return ",".join(f"127.0.0.1:{p}" for p in ports) or None


def default_data_dir() -> Path:
    return Path(user_data_dir("offsetkeeper")) / "dev-broker"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0



def _read_state(d: Path) -> dict | None:
    try:
        info = json.loads((d / STATE_FILE).read_text())
        nodes = info["nodes"]
        if not isinstance(nodes, list) or not nodes:
            return None
        for n in nodes:
            for k in ("node_id", "pid", "port", "controller_port"):
                if not isinstance(n.get(k), int):
                    return None
        return info
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def status(data_dir: str | Path | None = None) -> BrokerStatus:
    """Report whether every node of the cluster of `data_dir` is running."""
    d = Path(data_dir or default_data_dir()).expanduser()
    info = _read_state(d)
    if info is None:
        return BrokerStatus(False, None, None, str(d))
    nodes = tuple(
        NodeStatus(n["node_id"], n["pid"], n["port"], n["controller_port"],
                   pid_alive(n["pid"]) and _port_open(n["port"]))
        for n in info["nodes"])
    cc = info.get("command_config")
    return BrokerStatus(all(n.running for n in nodes), nodes[0].pid, nodes[0].port, str(d),
                        nodes, info.get("cluster_id"), cc if isinstance(cc, str) else None,
                        ports=tuple(n.port for n in nodes))


def _cluster_id() -> str:
    # Kafka's Uuid as kafka-storage random-uuid prints it: 16 random bytes, URL-safe base64 —
    # and, like Kafka's Uuid.randomUuid, never one starting with "-" (kafka-storage format
    # would take `-t -xyz...` for an option and fail: 1 start in 64).
    while True:
        cid = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def _server_properties(node_id: int, node_dir: Path, ports: list[int], cports: list[int],
                       sec: SecuritySetup | None) -> str:
    n = len(ports)
    i = node_id - 1
    voters = ",".join(f"{k + 1}@127.0.0.1:{cports[k]}" for k in range(n))
    props = {
        "process.roles": "broker,controller",
        "node.id": node_id,
        "controller.quorum.voters": voters,
        "controller.listener.names": "CONTROLLER",
        "log.dirs": node_dir / "data",
        "num.partitions": 1,
        "default.replication.factor": n,
        "min.insync.replicas": 2 if n >= 3 else 1,
        "offsets.topic.replication.factor": n,
        "offsets.topic.num.partitions": 50,
        "transaction.state.log.replication.factor": n,
        "transaction.state.log.min.isr": 2 if n >= 3 else 1,
        "share.coordinator.state.topic.replication.factor": n,
        "share.coordinator.state.topic.min.isr": 2 if n >= 3 else 1,
        # laptop settings: a group forms at once; small segments so retention tests are quick
        "group.initial.rebalance.delay.ms": 0,
        # a killed node is fenced (and its partitions led elsewhere) within 3 s, not 9 s
        "broker.heartbeat.interval.ms": 500,
        "broker.session.timeout.ms": 3000,
        "log.retention.check.interval.ms": 5000,
        "log.initial.task.delay.ms": 1000,
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": 10000,
        "group.consumer.min.session.timeout.ms": 3000,
        "group.consumer.heartbeat.interval.ms": 1000,
        "group.consumer.min.heartbeat.interval.ms": 1000,
        "group.share.min.heartbeat.interval.ms": 1000,
        "group.share.heartbeat.interval.ms": 1000,
        "group.share.min.session.timeout.ms": 3000,
        "group.share.session.timeout.ms": 10000,
        "group.streams.heartbeat.interval.ms": 1000,
        "group.streams.min.heartbeat.interval.ms": 1000,
        "group.streams.min.session.timeout.ms": 3000,
        "group.streams.session.timeout.ms": 10000,
    }
    if sec is None:
        props |= {
            "listeners": f"PLAINTEXT://127.0.0.1:{ports[i]},CONTROLLER://127.0.0.1:{cports[i]}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{ports[i]}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
        }
    else:
        props |= sec.server_properties(ports[i], cports[i])
    return "".join(f"{k}={v}\n" for k, v in props.items())


_LOG4J = """\
status = error
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = {level}
rootLogger.appenderRef.file.ref = FILE
logger.kafka.name = kafka
logger.kafka.level = {level}
logger.ak.name = org.apache.kafka
logger.ak.level = {level}
"""


_LOG4J1 = """\
log4j.rootLogger={level}, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={log}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
"""


def _jvm_args(node_dir: Path) -> list[str]:
    log4j = node_dir / "log4j2.properties"
    log4j.write_text(_LOG4J.format(log=node_dir / "server.log",
                                   level=os.environ.get("OFFSETKEEPER_BROKER_LOG_LEVEL", "INFO")))
    # A small heap and the serial collector: a laptop (or a 2-core CI machine) runs three nodes,
    # two clusters and Spark side by side.
    # Kafka 3.x logs through log4j 1 (reload4j): the same file, its own configuration syntax
    log4j1 = node_dir / "log4j.properties"
    log4j1.write_text(_LOG4J1.format(log=node_dir / "server.log",
                                     level=os.environ.get("OFFSETKEEPER_BROKER_LOG_LEVEL", "INFO")))
    return [f"-Xmx{HEAP}", "-Xms128m", "-XX:+UseSerialGC", "-XX:MaxMetaspaceSize=256m",
            "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={log4j}",
            f"-Dlog4j.configuration=file:{log4j1}", f"-Dkafka.logs.dir={node_dir}"]


def _java_argfile_line(args: list[str]) -> str:
    """Arguments as one line of a Java launcher argument file (`java @file`): each quoted,
    backslashes and quotes escaped."""
    return " ".join('"' + a.replace("\\", "\\\\").replace('"', '\\"') + '"' for a in args) + "\n"


def _format(node_dir: Path, cluster_id: str, props: Path, sec: SecuritySetup | None) -> None:
    args = ["format", "-t", cluster_id, "-c", str(props), "--ignore-formatted"]
    argfile = None
    if sec is None:
        cmd = dist.tool_command("kafka-storage", *args)
    else:
        # --add-scram carries the admin's password: on argv anyone on the machine reads it in
        # `ps` while the storage is formatted. The main class and its arguments go in a Java
        # launcher argument file instead (mode 600, removed right after).
        base = dist.tool_command("kafka-storage")
        argfile = node_dir / ".format-args"
        fd = os.open(argfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(_java_argfile_line([base[-1], *args, *sec.format_args()]))
        cmd = [*base[:-1], f"@{argfile}"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                           check=False)
    finally:
        if argfile is not None:
            argfile.unlink(missing_ok=True)
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
        raise OffsetkeeperError(f"formatting Kafka storage in {node_dir} failed: {tail[0]}")


def start(port: int = DEFAULT_PORT, data_dir: str | Path | None = None, *, brokers: int = 1,
          secure: bool = False, wait: float = 180.0,
          launcher: tuple[str, ...] = (), tied: bool = False) -> BrokerStatus:
    """Start a KRaft cluster of `brokers` nodes in the background; wait until all serve.

    `port` is the first node's client port (the others take free ports). `secure` makes the
    client listener SASL_SSL (SCRAM-SHA-512, a PEM CA made for the cluster) with ACLs enforced by
    StandardAuthorizer; the admin principal's client properties are written beside the data and
    named in the status (`command_config`). Starting a cluster that already runs from the same
    data directory returns it when it matches the request, and refuses otherwise. `launcher`
    prefixes each node's command (bench/latency_proxy.py runs the nodes in a network namespace
    behind a proxy listening on `port`, so the port is not checked for being free then).
    `tied` nodes are killed by the kernel when the calling thread's process dies, however it
    dies (the test suite and the demo: a crashed run leaves no JVMs behind). Linux sends the
    signal when the *thread* that started them ends, so start tied nodes from a thread that
    outlives them; `dev-broker start` leaves its nodes running after it exits: not tied.
    `wait` is how long the nodes may go without progress (their logs and data not growing)
    before the start is given up — not a clock for the whole start, which on a loaded machine
    takes as long as the nodes need.
    """
    if not 0 < port < 65536:
        raise UsageError(f"--port {port} is not a TCP port (expected 1-65535)")
    if brokers not in (1, 3):
        raise UsageError(f"--brokers {brokers} is not supported (expected 1 or 3)")
    d = Path(data_dir or default_data_dir()).expanduser()
    current = status(d)
    if current.running:
        if (current.port != port or len(current.nodes) != brokers
                or bool(current.command_config) != secure):
            raise UsageError(
                f"a {len(current.nodes)}-node cluster already runs from {d} at "
                f"{current.bootstrap}; stop it first (offsetkeeper dev-broker stop) or choose "
                f"another --data-dir")
        return current
    if current.nodes:  # left over from a crash: stop what still runs, then start afresh
        stop(d)
    if _port_open(port) and not launcher:
        raise OffsetkeeperError(f"port {port} is already in use by another process; choose --port")
    dist.classpath()  # not installed: one line naming the fix, before anything is written
    d.mkdir(parents=True, exist_ok=True)
    used = {port}
    ports = [port]
    while len(ports) < brokers:
        p = free_port()
        if p not in used:
            used.add(p)
            ports.append(p)
    cports: list[int] = []
    while len(cports) < brokers:
        p = free_port()
        if p not in used:
            used.add(p)
            cports.append(p)
    cluster_id = _cluster_identity(d, brokers, secure)
    sec = prepare_security(d) if secure else None
    nodes: list[dict] = []
    procs: list[subprocess.Popen] = []
    try:
        for k in range(brokers):
            node_id = k + 1
            node_dir = d / f"node-{node_id}"
            node_dir.mkdir(parents=True, exist_ok=True)
            props = node_dir / "server.properties"
            # a secured node's JAAS configs hold the admin's password: never readable by others
            fd = os.open(props, os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                         0o600 if sec is not None else 0o644)
            with os.fdopen(fd, "w") as f:
                f.write(_server_properties(node_id, node_dir, ports, cports, sec))
            if sec is not None:
                os.chmod(props, 0o600)  # an existing file keeps its mode on O_CREAT
            _format(node_dir, cluster_id, props, sec)
        for k in range(brokers):
            node_id = k + 1
            node_dir = d / f"node-{node_id}"
            out = open(node_dir / "stdout.log", "ab")  # noqa: SIM115 - handed to the child
            cmd = [*launcher, dist.java_executable(), *_jvm_args(node_dir), "-cp",
                   dist.classpath(), dist.TOOLS["kafka-server"], str(node_dir / "server.properties")]
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    preexec_fn=_die_with_parent if tied else None)
            out.close()
            procs.append(proc)
            nodes.append({"node_id": node_id, "pid": proc.pid, "port": ports[k],
                          "controller_port": cports[k]})
        state = {"version": 2, "cluster_id": cluster_id, "nodes": nodes, "tied": tied,
                 "kafka_version": dist.KAFKA_VERSION,
                 "command_config": str(sec.client_properties) if sec else None}
        write_text_atomic(str(d / STATE_FILE), json.dumps(state))
        _wait_ready(d, procs, ports, sec, wait)
    except BaseException:
        stop(d)
        raise
    return status(d)


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the parent dies (Linux prctl PR_SET_PDEATHSIG).

    Linux means the parent *thread*: a node started from a thread that then ends is killed
    with it, so tied clusters start and restart nodes from a thread that outlives them.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG


def _cluster_identity(d: Path, brokers: int, secure: bool) -> str:
    """The cluster id of the data in `d` (made on first start); refuses a different shape.

    Restarting keeps the data and the id, as a restarted Apache Kafka does; a 1-node data
    directory cannot become a 3-node cluster (its metadata log names one voter).
    """
    path = d / "cluster.json"
    try:
        known = json.loads(path.read_text())
        cid, n, sec = known["cluster_id"], known["brokers"], known.get("secure", False)
        if not isinstance(cid, str) or not isinstance(n, int):
            raise ValueError(path)
    except FileNotFoundError:
        cid = _cluster_id()
        write_text_atomic(str(path), json.dumps({"cluster_id": cid, "brokers": brokers,
                                                 "secure": secure}))
        return cid
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise OffsetkeeperError(f"{path} is not a cluster description written by offsetkeeper; "
                                f"delete {d} or choose another --data-dir") from exc
    if n != brokers or bool(sec) != secure:
        shape = f"{n}-node{' secured' if sec else ''}"
        raise UsageError(f"{d} holds a {shape} cluster; start it with the same options, "
                         f"or choose another --data-dir")
    return cid


def _node_progress(d: Path, nodes: int) -> tuple[int, ...]:
    """Bytes each starting node has written so far (its logs and its data directory): what
    grows while a node works its way up, however slowly the machine lets it."""
    out = []
    for k in range(1, nodes + 1):
        total = 0
        for f in [*(d / f"node-{k}").glob("*.log"), *(d / f"node-{k}" / "data").rglob("*")]:
            with contextlib.suppress(OSError):
                total += f.stat().st_size
        out.append(total)
    return tuple(out)


class _Progress:
    """"No progress for `stall` seconds" for a starting cluster, instead of a fixed clock (a
    fixed 180 s ran out at load 20-30 while the nodes were still starting); `cap` bounds a
    node that keeps logging without ever serving."""

    def __init__(self, d: Path, nodes: int, stall: float) -> None:
        self.d, self.nodes, self.stall = d, nodes, stall
        self.seen = _node_progress(d, nodes)
        self.last = self.started = time.monotonic()
        self.cap = max(10 * stall, 1800.0)

    def stuck(self) -> str | None:
        now, seen = time.monotonic(), _node_progress(self.d, self.nodes)
        if seen != self.seen:
            self.seen, self.last = seen, now
        if now - self.last > self.stall:
            return f"made no progress for {self.stall:.0f}s (its logs and data stopped growing)"
        if now - self.started > self.cap:
            return f"did not serve within {self.cap:.0f}s although it kept logging"
        return None


def _wait_ready(d: Path, procs: list[subprocess.Popen], ports: list[int],
                sec: SecuritySetup | None, wait: float) -> None:
    """Wait until every node answers metadata with all brokers registered and the group
    coordinator answers (the probe runs in a child process: see devbroker/probe.py), for as
    long as the nodes make progress: `wait` is how long they may go without any."""
    import sys

    progress = _Progress(d, len(ports), wait)

    def give_up() -> None:
        why = progress.stuck()
        if why:
            raise OffsetkeeperError(f"Kafka {why}; see {d}/node-*/server.log")

    while not all(_port_open(p) for p in ports):
        _check_alive(d, procs)
        give_up()
        time.sleep(0.2)
    conf = {"bootstrap.servers": ",".join(f"127.0.0.1:{p}" for p in ports)}
    if sec is not None:
        conf |= sec.client_conf()
    spec = json.dumps({"conf": conf, "brokers": len(ports), "wait": 15.0})
    while True:
        probe = subprocess.Popen([sys.executable, "-m", "offsetkeeper.devbroker.probe"],
                                 stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, text=True)
        try:
            # the probe ends itself after its 15 s; a probe stuck past that is killed
            probe.communicate(spec, timeout=60)
        except subprocess.TimeoutExpired:
            probe.kill()
            probe.communicate()
        _check_alive(d, procs)
        if probe.returncode == 0:
            return
        give_up()


def _check_alive(d: Path, procs: list[subprocess.Popen]) -> None:
    for k, proc in enumerate(procs):
        if proc.poll() is not None:
            raise OffsetkeeperError(
                f"Kafka node {k + 1} exited with code {proc.returncode}; see "
                f"{d / f'node-{k + 1}' / 'server.log'}")


def _signal_node(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)  # started in its own session: pgid == pid


def _wait_gone(pids: list[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        for pid in alive:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        alive = [p for p in alive if pid_alive(p)]
        if alive:
            time.sleep(0.1)
    return alive


def stop(data_dir: str | Path | None = None, *, timeout: float = 30.0) -> BrokerStatus:
    """Stop every node cleanly (SIGTERM: a controlled shutdown), SIGKILL after `timeout`.

    The data is kept: the next `start` from the same directory brings the same cluster back.
    """
    d = Path(data_dir or default_data_dir()).expanduser()
    st = status(d)
    pids = [n.pid for n in st.nodes if pid_alive(n.pid)]
    for pid in pids:
        _signal_node(pid, signal.SIGTERM)
    for pid in _wait_gone(pids, timeout):
        _signal_node(pid, signal.SIGKILL)
    _wait_gone(pids, 5)
    with contextlib.suppress(FileNotFoundError):
        (d / STATE_FILE).unlink()
    return BrokerStatus(False, None, st.port, str(d), cluster_id=st.cluster_id)


def kill_node(data_dir: str | Path, node_id: int) -> int:
    """SIGKILL one node (a crash, for fault tests); returns the pid that was killed."""
    st = status(data_dir)
    node = next((n for n in st.nodes if n.node_id == node_id), None)
    if node is None:
        raise UsageError(f"no node {node_id} in the cluster of {data_dir}")
    _signal_node(node.pid, signal.SIGKILL)
    _wait_gone([node.pid], 10)
    return node.pid


def restart_node(data_dir: str | Path, node_id: int, *, wait: float = 60.0) -> BrokerStatus:
    """Start a killed node again on its old ports and data (it rejoins the cluster)."""
    d = Path(data_dir).expanduser()
    info = _read_state(d)
    if info is None:
        raise UsageError(f"no cluster runs from {d}")
    node = next((n for n in info["nodes"] if n["node_id"] == node_id), None)
    if node is None:
        raise UsageError(f"no node {node_id} in the cluster of {d}")
    if pid_alive(node["pid"]):
        return status(d)
    node_dir = d / f"node-{node_id}"
    out = open(node_dir / "stdout.log", "ab")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        [dist.java_executable(), *_jvm_args(node_dir), "-cp", dist.classpath(),
         dist.TOOLS["kafka-server"], str(node_dir / "server.properties")],
        stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        preexec_fn=_die_with_parent if info.get("tied") is True else None)
    out.close()
    node["pid"] = proc.pid
    write_text_atomic(str(d / STATE_FILE), json.dumps(info))
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and not _port_open(node["port"]):
        if proc.poll() is not None:
            raise OffsetkeeperError(f"Kafka node {node_id} exited with code {proc.returncode}")
        time.sleep(0.2)
    return status(d)


def running_elsewhere(exclude: str | Path | None = None) -> list[BrokerStatus]:
    """Running dev-broker clusters found by their processes (a node runs kafka.Kafka on
    `<data dir>/node-<n>/server.properties`), other than the one in `exclude`; sorted by data
    directory. For `status`/`stop` without --data-dir: the default directory is not the only
    place a dev-broker runs (tests, demos and --data-dir start them elsewhere)."""
    skip = Path(exclude).expanduser().resolve() if exclude else None
    dirs: set[Path] = set()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        args = [a.decode("utf-8", "replace") for a in args if a]
        if dist.TOOLS["kafka-server"] not in args or not args[-1].endswith("/server.properties"):
            continue
        node_dir = Path(args[-1]).parent
        if node_dir.name.startswith("node-") and (node_dir.parent / STATE_FILE).is_file():
            dirs.add(node_dir.parent.resolve())
    found = [status(d) for d in sorted(dirs) if d != skip]
    return [st for st in found if st.running]


@contextlib.contextmanager
def running_broker(port: int | None = None, data_dir: str | Path | None = None, *,
                   brokers: int = 1) -> Iterator[str]:
    """Run a cluster for the duration of a `with` block; yields its bootstrap address."""
    st = start(port or free_port(), data_dir, brokers=brokers, tied=True)
    try:
        yield st.bootstrap or ""
    finally:
        stop(st.data_dir)


def as_dict(st: BrokerStatus) -> dict:
    """The status as plain data (for JSON output)."""
    out = asdict(st)
    out["nodes"] = [asdict(n) for n in st.nodes]
    out["ports"] = list(st.ports)
    out["bootstrap"] = st.bootstrap
    return out
