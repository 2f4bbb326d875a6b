"""The seam to Kafka's own Java Admin client: the one module that runs the JVM admin helper.

confluent-kafka 2.16 has no admin calls for share groups (KIP-932) or streams groups
(KIP-1071), and its describe of consumer-protocol groups (KIP-848) reads Assigning/Reconciling
as UNKNOWN and lacks the KIP-1099 epochs. Those calls go to `jvm/admin-helper`: shipped in the
wheel as ``offsetkeeper/_jvm/`` (setup.py builds it with Maven), or in a source checkout built
by scripts/setup.sh into ``~/.cache/offsetkeeper/admin-helper-<version>/``;
``$OFFSETKEEPER_ADMIN_HELPER`` points at another build and wins over both. Its line protocol: a JSON request on stdin ``{"op", "config", "args"}``,
a JSON answer on stdout ``{"ok": true, "result"}`` or ``{"ok": false, "error": {"code",
"exception", "message"}}``. `call()` runs one process for one request; `HelperSession` keeps one
process and one Java Admin client for request after request (``{"op": "session", "config"}``
first, then ``{"op", "args"}`` lines), which is what the admin facade uses.

Client properties are librdkafka's (`Connection.client_config()`); `java_properties` maps the
common ones to the Java client's. They travel on stdin only, never on argv, and error text is
passed through `redact_text` before it reaches a message.

Start-up cost (measured here: 2 cores shared with other test runs, load average ~20, Java 17,
one-node cluster on localhost, 5 runs each): a `ping` that creates no client 0.28-0.48 s
(median 0.41 s); `list-groups` (JVM start, Admin client, metadata, one ListGroups) 0.80-1.37 s
(median 1.1 s); `describe-share-groups` 0.56-1.38 s (median 0.8 s). On an idle machine the
same calls took 0.25 s and 0.7-0.8 s. A warm librdkafka client answers ListGroups in ~5 ms;
so does a warm session (bench/jvm_session.py measures both): a facade pays for the JVM start
once, not once per call.

`JavaAdmin` is the Java half of the admin facade `kafka.admin.KafkaAdmin`, which holds one
beside its librdkafka client, so the rest of offsetkeeper sees one admin facade
(`admin.list_all_groups()`, `admin.describe_share_groups(...)` ...).

Size: over 500 lines because it holds the whole Java seam: the helper's process protocol
(`call`, `HelperSession`), the parsers of every answer (share, streams and consumer-protocol
groups) and the client the facade composes (`JavaAdmin`); the parsers are the part to move out
next.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from offsetkeeper.errors import (
    ConfigError,
    JvmHelperUnavailable,
    KafkaOperationError,
    OffsetkeeperError,
)
from offsetkeeper.kafka.group_types import (
    AnyGroupListing,
    ConsumerGroupDetail,
    ConsumerMemberDetail,
    ShareGroupDetail,
    ShareMember,
    SharePartitionOffset,
    StreamsGroupDetail,
    StreamsMember,
    StreamsTasks,
    Subtopology,
)
from offsetkeeper.models import TopicPartition
from offsetkeeper.redact import redact_text

HELPER_VERSION = "5"  # = <version> of jvm/admin-helper/pom.xml
HELPER_ENV = "OFFSETKEEPER_ADMIN_HELPER"
MAIN_CLASS = "io.offsetkeeper.admin.Main"
JVM_FLAGS = ("-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto")
# the JVM start plus the Admin client's own retries on top of the request timeout
PROCESS_GRACE_S = 20.0


# -- locating the helper ----------------------------------------------------------------------

#: Where a wheel carries the helper (setup.py builds it into the package at `python -m build`).
PACKAGED = Path(__file__).resolve().parents[1] / "_jvm"


def _complete(d: Path) -> bool:
    return (d / "admin-helper.jar").is_file() and (d / "lib").is_dir()


def helper_dir() -> Path:
    """Directory of the admin helper: ``$OFFSETKEEPER_ADMIN_HELPER`` when set (another build, on
    purpose), else the one shipped in the wheel, else the developer's cache that
    scripts/setup.sh builds (a source checkout)."""
    given = os.environ.get(HELPER_ENV)
    if given:
        return Path(given).expanduser()
    if _complete(PACKAGED):
        return PACKAGED
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("offsetkeeper")) / f"admin-helper-{HELPER_VERSION}"


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise JvmHelperUnavailable(
            "java not found: share groups, streams groups and group types need Java 17+ on PATH "
            "(or JAVA_HOME) for Kafka's Java admin client")
    return found


def helper_command() -> list[str]:
    """argv of the helper (no secrets: properties go on stdin)."""
    d = helper_dir()
    jar = d / "admin-helper.jar"
    if not _complete(d):
        raise JvmHelperUnavailable(
            f"the JVM admin helper is not installed in {d}; install offsetkeeper from its wheel "
            "(which ships it), or in a source checkout run scripts/setup.sh (it builds "
            "jvm/admin-helper with Maven)")
    java = _java()
    archive = _class_archive(java)
    cds = []
    if archive is not None and archive.is_file():
        from offsetkeeper.class_archives import touch_in_use

        touch_in_use(archive)  # its last use: what pruning other installs' archives reads
        cds = [f"-XX:SharedArchiveFile={archive}", "-Xlog:disable", "-Xlog:all=off"]
    return [java, *JVM_FLAGS, *cds, "-cp", f"{jar}{os.pathsep}{d / 'lib' / '*'}", MAIN_CLASS]


# -- class data sharing: the helper's classes mapped from an archive instead of loaded ----------

ARCHIVE_ENV = "OFFSETKEEPER_HELPER_CLASS_ARCHIVE"  # "0": never use or build one
ARCHIVE_BUILD_STALE_S = 600.0


def _class_archive(java: str) -> Path | None:
    """Where the helper's class archive (JDK AppCDS) lives for this Java and this helper.

    Mapping the Admin client's classes from an archive instead of loading and verifying them
    takes about 0.5 s off every helper start (1.6 s -> 0.85 s measured here under load). The
    JVM checks the archive against its own version and the class path and ignores one that
    does not match (-Xshare:auto); its name carries both (paths and modification times), so a
    new Java or a rebuilt helper builds anew.
    """
    if os.environ.get(ARCHIVE_ENV) == "0":
        return None
    import hashlib

    from platformdirs import user_cache_dir

    try:
        real = os.path.realpath(java)
        jar = helper_dir().resolve() / "admin-helper.jar"
        key = f"{real}|{os.stat(real).st_mtime_ns}|{jar}|{jar.stat().st_mtime_ns}"
    except OSError:
        return None
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return Path(user_cache_dir("offsetkeeper")) / f"admin-helper-{HELPER_VERSION}-{digest}.jsa"


def _forget_old_archives(keep: Path) -> None:
    """Delete other installs' archives not in use (class_archives.prune: kept while used within
    the hour, and the two most recently used), and builds that never finished."""
    from offsetkeeper.class_archives import prune

    prune(keep.parent, archives="admin-helper-*.jsa",
          unfinished=("admin-helper-*.tmp", "admin-helper-*.building"), keep=keep,
          stale_s=ARCHIVE_BUILD_STALE_S)


def build_class_archive_soon() -> None:
    """Build the helper's class archive in the background when there is none yet.

    A detached JVM runs one request against an address where nothing listens (it loads the
    Admin client's classes, gets no answer, exits) and writes the archive as it exits; the
    file appears under its final name only when complete. No secret is involved: the request
    carries only that address. At most one build per 10 minutes (a marker file)."""
    try:
        argv = helper_command()
    except JvmHelperUnavailable:
        return
    archive = _class_archive(argv[0])
    if archive is None or archive.is_file():
        return
    marker = archive.with_suffix(".building")
    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
        if marker.exists() and time.time() - marker.stat().st_mtime < ARCHIVE_BUILD_STALE_S:
            return
        marker.write_text(str(os.getpid()))
        _forget_old_archives(archive)
    except OSError:
        return
    tmp = archive.with_suffix(f".{os.getpid()}.tmp")
    java_argv = [argv[0], f"-XX:ArchiveClassesAtExit={tmp}", "-Xlog:disable", "-Xlog:all=off",
                 *[a for a in argv[1:] if not a.startswith(("-XX:SharedArchiveFile", "-Xlog"))]]
    script = 'tmp=$1; out=$2; mark=$3; shift 3; "$@" >/dev/null 2>&1; ' \
             '[ -s "$tmp" ] && mv -f "$tmp" "$out"; rm -f "$tmp" "$mark"'
    request = {"op": "list-groups", "config": {"bootstrap.servers": "127.0.0.1:9"},
               "args": {"timeout_ms": 1500}}
    try:
        proc = subprocess.Popen(["sh", "-c", script, "sh", str(tmp), str(archive), str(marker),
                                 *java_argv],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True, text=True)
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.close()
    except OSError:
        pass


def available() -> bool:
    """True when Java and the helper are installed (no process is started)."""
    try:
        helper_command()
    except JvmHelperUnavailable:
        return False
    return True


# -- client properties: librdkafka -> Java ------------------------------------------------------

_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
# librdkafka names that mean the same in the Java client
_SAME = ("bootstrap.servers", "client.id", "ssl.key.password")


def _jaas_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def java_properties(conf: Mapping[str, Any]) -> dict[str, str]:
    """The Java client properties for librdkafka properties `conf` (the common ones).

    security.protocol and sasl.mechanism(s) carry over; sasl.username/password become a
    sasl.jaas.config for PLAIN or SCRAM; ssl.ca.location becomes a PEM truststore;
    ssl.certificate.location + ssl.key.location become a PEM keystore (their contents);
    ssl.endpoint.identification.algorithm=none becomes the Java client's empty value.
    Properties only librdkafka knows are dropped; a setting the helper cannot express
    (another SASL mechanism without a sasl.jaas.config) is a ConfigError.
    """
    c = {k: str(v) for k, v in conf.items() if not callable(v) and not hasattr(v, "handle")}
    out: dict[str, str] = {k: c[k] for k in _SAME if k in c}
    if "security.protocol" in c:
        out["security.protocol"] = c["security.protocol"].upper()
    mech = (c.get("sasl.mechanism") or c.get("sasl.mechanisms") or "").upper()
    if mech:
        out["sasl.mechanism"] = mech
    if "sasl.jaas.config" in c:
        out["sasl.jaas.config"] = c["sasl.jaas.config"]
    elif "sasl.username" in c or "sasl.password" in c:
        module = _LOGIN_MODULES.get(mech or "PLAIN")
        if module is None:
            raise ConfigError(f"sasl.mechanism {mech} with sasl.username/sasl.password cannot be "
                              "passed to Kafka's Java admin client; give a sasl.jaas.config")
        out["sasl.jaas.config"] = (f"{module} required username={_jaas_quote(c.get('sasl.username', ''))} "
                                   f"password={_jaas_quote(c.get('sasl.password', ''))};")
    if "ssl.ca.location" in c:
        out["ssl.truststore.type"] = "PEM"
        out["ssl.truststore.location"] = c["ssl.ca.location"]
    if "ssl.certificate.location" in c and "ssl.key.location" in c:
        try:
            out["ssl.keystore.type"] = "PEM"
            out["ssl.keystore.certificate.chain"] = Path(c["ssl.certificate.location"]).read_text()
            out["ssl.keystore.key"] = Path(c["ssl.key.location"]).read_text()
        except OSError as exc:
            raise ConfigError(f"cannot read ssl.certificate.location / ssl.key.location: "
                              f"{exc.strerror}") from None
    algo = c.get("ssl.endpoint.identification.algorithm")
    if algo is not None:
        out["ssl.endpoint.identification.algorithm"] = "" if algo.lower() == "none" else algo
    for k, v in c.items():
        if k.startswith(("ssl.truststore.", "ssl.keystore.", "ssl.protocol", "ssl.enabled.",
                         "sasl.kerberos.", "sasl.login.", "sasl.oauthbearer.")) and k not in out:
            out[k] = v
    return out


# -- running it ------------------------------------------------------------------------------

def _secrets(conf: Mapping[str, str]) -> dict[str, str]:
    return {k: str(v) for k, v in conf.items()}


def _request(conf: Mapping[str, Any], op: str, args: Mapping[str, Any] | None,
             timeout: float) -> tuple[dict, dict[str, str]]:
    props = java_properties(conf)
    request = {"op": op, "config": props,
               "args": {**(args or {}), "timeout_ms": int(timeout * 1000)}}
    return request, {**_secrets(conf), **props}


def _no_answer(op: str, waited: float) -> KafkaOperationError:
    return KafkaOperationError(f"{op}: the Java admin client did not answer within {waited:g} s; "
                               "is the cluster reachable?", code="_TIMED_OUT", retriable=True)


def call(conf: Mapping[str, Any], op: str, args: Mapping[str, Any] | None = None, *,
         timeout: float = 15.0, grace: float = PROCESS_GRACE_S) -> Any:
    """Run one helper operation with the librdkafka properties `conf` in a process of its own;
    its result.

    A cluster's error becomes the translated OffsetkeeperError (kafka/errors.translate_code),
    a missing Java or jar JvmHelperUnavailable; secret values never appear in messages.
    """
    request, secrets = _request(conf, op, args, timeout)
    argv = helper_command()
    build_class_archive_soon()
    try:
        proc = subprocess.run(argv, input=json.dumps(request) + "\n", capture_output=True,
                              text=True, timeout=timeout + grace)
    except subprocess.TimeoutExpired:
        raise _no_answer(op, timeout + grace) from None
    except OSError as exc:
        raise JvmHelperUnavailable(f"cannot start java for the admin helper: {exc.strerror}") from None
    answer = parse_answer(proc.stdout, stderr=proc.stderr, returncode=proc.returncode)
    return unwrap(answer, action=op.replace("-", " "), secrets=secrets)


class HelperSession:
    """One helper process with one Java Admin client, serving request after request.

    A JVM start and an Admin client cost about a second (see the module docstring); a share
    group reset needs some ten calls. The session starts on the first call and ends with
    `close()`. Calls are serialized (one request line, one answer line). A call that gets no
    answer in time kills the process, since its state is unknown; the next call starts a new one.
    A read whose process dies while answering is tried once more on a new process; a change is
    not. No secrets on argv: the properties go on stdin.
    """

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self._conf = dict(conf)
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=20)
        self._err_pump: threading.Thread | None = None

    def call(self, op: str, args: Mapping[str, Any] | None = None, *, timeout: float = 15.0,
             grace: float = PROCESS_GRACE_S) -> Any:
        """As `call()`, on the session's process."""
        request, secrets = _request(self._conf, op, args, timeout)
        # Another caller's request holds the process: wait no longer than this call may take.
        if not self._lock.acquire(timeout=timeout + grace):
            raise _no_answer(op, timeout + grace)
        try:
            for attempt in (1, 2):
                started = self._proc is not None and self._proc.poll() is None
                if not started:
                    self._start(request["config"], timeout + grace, op)
                try:
                    assert self._proc is not None and self._proc.stdin is not None
                    self._proc.stdin.write(json.dumps({"op": op, "args": request["args"]}) + "\n")
                    self._proc.stdin.flush()
                except OSError:
                    self._kill()
                    if attempt == 1:
                        continue
                    raise self._died(op) from None
                line = self._next_line(timeout + grace, op)
                if line is None:  # died while answering
                    self._kill()
                    # A read gets one more try on a fresh process — also when this call started
                    # the process that died (the first call of a session); a change may have
                    # been made before the death, so it fails and the executor's read-back tells.
                    if attempt == 1 and _is_read(op):
                        continue
                    raise self._died(op)
                return unwrap(parse_answer(line), action=op.replace("-", " "), secrets=secrets)
        finally:
            self._lock.release()
        raise AssertionError("unreachable")

    def _start(self, props: Mapping[str, str], wait: float, op: str) -> None:
        argv = helper_command()
        build_class_archive_soon()
        try:
            self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True, bufsize=1,
                                          encoding="utf-8", errors="replace")
        except OSError as exc:
            raise JvmHelperUnavailable(f"cannot start java for the admin helper: {exc.strerror}") from None
        self._lines = queue.Queue()
        proc, lines, errs = self._proc, self._lines, self._stderr
        threading.Thread(target=_pump, args=(proc.stdout, lines.put), kwargs={"end": True},
                         daemon=True).start()
        self._err_pump = threading.Thread(target=_pump, args=(proc.stderr, errs.append),
                                          kwargs={"end": False}, daemon=True)
        self._err_pump.start()
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"op": "session", "config": dict(props), "args": {}}) + "\n")
        proc.stdin.flush()
        hello = self._next_line(wait, op)
        if hello is None:
            self._kill()
            raise self._died(op)
        answer = parse_answer(hello)
        if answer.get("result") != "ready":
            self._kill()
            unwrap(answer, action=op.replace("-", " "), secrets={**_secrets(self._conf), **props})
            raise self._died(op)

    def _next_line(self, wait: float, op: str) -> str | None:
        """The next JSON line of the process; None when it ended first."""
        deadline = time.monotonic() + wait
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self._kill()
                raise _no_answer(op, wait) from None
            if line is None:
                return None
            if line.lstrip().startswith("{"):
                return line

    def _died(self, op: str) -> KafkaOperationError:
        if self._err_pump is not None:  # the process is gone: its last words are on their way
            self._err_pump.join(1.0)
        secrets = {**_secrets(self._conf), **java_properties(self._conf)}
        last = redact_text(self._stderr[-1][:300], secrets) if self._stderr else ""
        return KafkaOperationError(f"{op.replace('-', ' ')}: the admin helper exited without an "
                                   f"answer{': ' + last if last else ''}", code="_HELPER_FAILED")

    def _kill(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            self._proc = None

    def close(self) -> None:
        """End the process: stdin closed, the helper closes its Admin client and exits."""
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()


def _is_read(op: str) -> bool:
    return op == "ping" or op.startswith(("list-", "describe-"))


def _pump(stream: Any, put: Callable[[Any], None], *, end: bool) -> None:
    """Hand a pipe's lines to `put` (None at its end when `end`): a pipe nobody reads would
    block the helper once its buffer is full."""
    for line in stream:
        put(line.rstrip("\n"))
    if end:
        put(None)


def parse_answer(stdout: str, *, stderr: str = "", returncode: int = 0) -> dict:
    """The helper's JSON answer (the last JSON line of stdout); a KafkaOperationError when the
    process died without one."""
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                answer = json.loads(line)
            except ValueError:
                break
            if isinstance(answer, dict) and "ok" in answer:
                return answer
            break
    last = (stderr.strip().splitlines() or [""])[-1][:300]
    return {"ok": False, "error": {"code": "_HELPER_FAILED", "exception": "",
                                   "message": f"the admin helper exited with code {returncode} "
                                              f"without an answer{': ' + last if last else ''}"}}


def item_error(error: Mapping[str, Any], *, action: str, group: str | None = None,
               secrets: Mapping[str, str] | None = None) -> OffsetkeeperError:
    """The OffsetkeeperError for one error object of an answer."""
    from offsetkeeper.kafka.errors import translate_code

    code = str(error.get("code") or "UNKNOWN")
    detail = redact_text(str(error.get("message") or ""), secrets or {})
    if code == "_HELPER_FAILED":
        return KafkaOperationError(f"{action}: {detail}", code=code, group=group)
    if code == "INVALID_CONFIG":
        return ConfigError(f"{action}: invalid client property: {detail}", group=group)
    return translate_code(code, action=action, detail=detail, group=group)


def unwrap(answer: Mapping[str, Any], *, action: str,
           secrets: Mapping[str, str] | None = None) -> Any:
    if answer.get("ok"):
        return answer.get("result")
    raise item_error(answer.get("error") or {}, action=action, secrets=secrets)


# -- answers -> values (pure; unit-tested) ------------------------------------------------------

def _tps(items: Iterable[Mapping[str, Any]] | None) -> tuple[TopicPartition, ...]:
    return tuple(sorted(TopicPartition(str(i["topic"]), int(i["partition"])) for i in items or ()))


def parse_listings(result: list) -> list[AnyGroupListing]:
    return sorted((AnyGroupListing(str(g["group"]), str(g.get("type") or "Unknown"),
                                   str(g.get("protocol") or ""), str(g.get("state") or "Unknown"))
                   for g in result), key=lambda g: g.group_id)


def _per_group(result: list, parse, *, action: str, secrets=None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for g in result:
        gid = str(g["group"])
        if g.get("error"):
            out[gid] = item_error(g["error"], action=action, group=gid, secrets=secrets)
        else:
            out[gid] = parse(g)
    return out


def parse_consumer_group(g: Mapping[str, Any]) -> ConsumerGroupDetail:
    members = tuple(
        ConsumerMemberDetail(
            member_id=str(m["member_id"]), client_id=str(m.get("client_id") or ""),
            host=str(m.get("host") or "").lstrip("/"), group_instance_id=m.get("instance_id"),
            member_epoch=m.get("member_epoch"), assignment=_tps(m.get("assignment")),
            target_assignment=(None if m.get("target_assignment") is None
                               else _tps(m["target_assignment"])),
            upgraded=m.get("upgraded"))
        for m in g.get("members") or ())
    return ConsumerGroupDetail(
        group_id=str(g["group"]), group_type=str(g.get("type") or "Unknown"),
        state=str(g.get("state") or "Unknown"), coordinator=str(g.get("coordinator") or ""),
        assignor=str(g.get("assignor") or ""), group_epoch=g.get("group_epoch"),
        target_assignment_epoch=g.get("target_assignment_epoch"), members=members)


def parse_share_group(g: Mapping[str, Any]) -> ShareGroupDetail:
    members = tuple(
        ShareMember(member_id=str(m["member_id"]), client_id=str(m.get("client_id") or ""),
                    host=str(m.get("host") or "").lstrip("/"), rack=m.get("rack"),
                    member_epoch=int(m.get("member_epoch") or 0),
                    assignment=_tps(m.get("assignment")))
        for m in g.get("members") or ())
    return ShareGroupDetail(group_id=str(g["group"]), state=str(g.get("state") or "Unknown"),
                            coordinator=str(g.get("coordinator") or ""),
                            group_epoch=int(g.get("group_epoch") or 0),
                            target_assignment_epoch=int(g.get("target_assignment_epoch") or 0),
                            members=members)


def parse_share_offsets(g: Mapping[str, Any]) -> list[SharePartitionOffset]:
    return sorted((SharePartitionOffset(str(p["topic"]), int(p["partition"]), p.get("start_offset"),
                                        p.get("leader_epoch"), p.get("lag"))
                   for p in g.get("partitions") or ()), key=lambda p: (p.topic, p.partition))


def _tasks(t: Mapping[str, Any] | None) -> StreamsTasks:
    def kind(name: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
        return tuple(sorted((str(x["subtopology"]), tuple(sorted(int(p) for p in x["partitions"])))
                            for x in (t or {}).get(name) or ()))
    return StreamsTasks(kind("active"), kind("standby"), kind("warmup"))


def parse_streams_group(g: Mapping[str, Any]) -> StreamsGroupDetail:
    subs = tuple(Subtopology(str(s["subtopology"]), tuple(s.get("source_topics") or ()),
                             tuple(s.get("repartition_sink_topics") or ()),
                             tuple(s.get("repartition_source_topics") or ()),
                             tuple(s.get("state_changelog_topics") or ()))
                 for s in g.get("subtopologies") or ())
    members = tuple(
        StreamsMember(member_id=str(m["member_id"]), member_epoch=int(m.get("member_epoch") or 0),
                      client_id=str(m.get("client_id") or ""),
                      host=str(m.get("host") or "").lstrip("/"),
                      process_id=str(m.get("process_id") or ""), instance_id=m.get("instance_id"),
                      topology_epoch=int(m.get("topology_epoch") or 0), endpoint=m.get("endpoint"),
                      is_classic=bool(m.get("is_classic")), assignment=_tasks(m.get("assignment")),
                      target_assignment=_tasks(m.get("target_assignment")))
        for m in g.get("members") or ())
    return StreamsGroupDetail(group_id=str(g["group"]), state=str(g.get("state") or "Unknown"),
                              coordinator=str(g.get("coordinator") or ""),
                              group_epoch=int(g.get("group_epoch") or 0),
                              target_assignment_epoch=int(g.get("target_assignment_epoch") or 0),
                              topology_epoch=int(g.get("topology_epoch") or 0),
                              subtopologies=subs, members=members)


def parse_streams_offsets(g: Mapping[str, Any]) -> dict[TopicPartition, int]:
    return {TopicPartition(str(p["topic"]), int(p["partition"])): int(p["offset"])
            for p in g.get("partitions") or ()}


def parse_partition_errors(result: list, *, action: str, group: str,
                           secrets=None) -> dict[TopicPartition, OffsetkeeperError | None]:
    return {TopicPartition(str(r["topic"]), int(r["partition"])):
            (item_error(r["error"], action=action, group=group, secrets=secrets)
             if r.get("error") else None) for r in result}


# -- the Java-helper client: the half of the admin facade confluent-kafka cannot serve -------------

class JavaAdmin:
    """Admin calls made with Kafka's Java Admin client, through one helper process kept for
    request after request (`HelperSession`). `kafka.admin.KafkaAdmin` holds one beside its
    librdkafka client; nothing else needs to build one."""

    # the state correction is best effort: a slow or broken cluster must not stall the callers
    CORRECTION_TIMEOUT = 5.0

    def __init__(self, conn: Any, *, timeout: float) -> None:
        self.conn = conn
        self.timeout = timeout
        self._session: HelperSession | None = None

    def _jvm(self, op: str, *, quick: bool = False, **args: Any) -> Any:
        if quick:
            # The state correction inside describes runs in executors' re-checks and streaming
            # commits, often during a coordinator failover: it keeps its own short-lived process
            # (as it always had), so nothing of a failover outlives the call.
            t = min(self.timeout, self.CORRECTION_TIMEOUT)
            return call(self.conn.client_config(), op, args, timeout=t, grace=t)
        if self._session is None:
            self._session = HelperSession(self.conn.client_config())
        return self._session.call(op, args, timeout=self.timeout)

    def close(self) -> None:
        """End the helper process of this client, if one runs."""
        session, self._session = self._session, None
        if session is not None:
            session.close()

    def _jvm_secrets(self) -> dict[str, str]:
        return _secrets(self.conn.client_config())

    def with_other_group_types(self, described: dict[str, Any]) -> dict[str, Any]:
        """Correct librdkafka's describe where it cannot name a group's state, in place.

        - librdkafka 2.16 describes a streams or share group as a member-less classic group in
          state Dead, even while its application runs, so every safety check built on group
          states (reset, delete, the executor's re-check) would take a running Kafka Streams
          application for an inactive group. For member-less dead/unknown answers, one
          ListGroups through the Java client gives such groups their real type and state
          (`stable`, `empty`, `notready` ...).
        - It reads the consumer-protocol states Assigning and Reconciling as UNKNOWN: for
          `unknown` answers, the Java client's describe gives the real state.

        Only those answers cost a JVM call; without the helper, or when it fails, the answers
        stay as they were (and `unknown` stays refused by the safety checks).
        """
        from dataclasses import replace

        from offsetkeeper.kafka.group_types import state_key
        from offsetkeeper.models import GroupInfo

        infos = {g: i for g, i in described.items() if isinstance(i, GroupInfo)}
        member_less = [g for g, i in infos.items()
                       if not i.members and i.state in ("dead", "unknown")]
        unknown = [g for g, i in infos.items() if i.state == "unknown"]
        if not (member_less or unknown) or not available():
            return described
        try:
            listing = ({x.group_id: x for x in parse_listings(self._jvm("list-groups", quick=True))}
                       if member_less else {})
            active: dict[str, list[str]] = {"streams": [], "share": []}
            for g in member_less:
                x = listing.get(g)
                if x is not None and state_key(x.group_type) in ("streams", "share"):
                    described[g] = replace(infos[g], state=state_key(x.state),
                                           group_type=state_key(x.group_type))
                    if state_key(x.state) not in ("empty", "dead"):
                        active[state_key(x.group_type)].append(g)
            self._with_java_members(described, active)
            unknown = [g for g in unknown if g not in listing
                       or state_key(listing[g].group_type) not in ("streams", "share")]
            if unknown:
                answer = self._jvm("describe-consumer-groups", quick=True, groups=unknown)
                for g, d in _per_group(answer, parse_consumer_group, action="describe group").items():
                    if isinstance(d, ConsumerGroupDetail) and state_key(d.state) != "unknown":
                        described[g] = replace(infos[g], state=state_key(d.state))
        except OffsetkeeperError:
            pass
        return described

    def _with_java_members(self, described: dict[str, Any], active: Mapping[str, list[str]]) -> None:
        """Give active streams/share groups their members as Kafka's describe has them (the
        member-less answer librdkafka gives made a refusal say "0 active members" of a
        running application), in place; a failed describe leaves the answer as it was."""
        from dataclasses import replace

        from offsetkeeper.models import MemberInfo

        for kind, groups in active.items():
            if not groups:
                continue
            details = _per_group(
                self._jvm(f"describe-{kind}-groups", quick=True, groups=groups),
                parse_streams_group if kind == "streams" else parse_share_group,
                action=f"describe {kind} group")
            for g, d in details.items():
                if isinstance(d, OffsetkeeperError):
                    continue
                described[g] = replace(described[g], members=tuple(
                    MemberInfo(member_id=m.member_id, client_id=m.client_id, host=m.host,
                               assignment=getattr(m, "assignment", ()) if kind == "share" else ())
                    for m in d.members))

    def list_all_groups(self) -> list[AnyGroupListing]:
        """Every group of every type with its protocol and state (kafka-groups.sh --list)."""
        return parse_listings(self._jvm("list-groups"))

    def describe_consumer_groups_verbose(self, group_ids: Iterable[str]
                                         ) -> dict[str, ConsumerGroupDetail | OffsetkeeperError]:
        ids = list(dict.fromkeys(group_ids))
        return _per_group(self._jvm("describe-consumer-groups", groups=ids), parse_consumer_group,
                          action="describe group", secrets=self._jvm_secrets())

    def describe_share_groups(self, group_ids: Iterable[str]
                              ) -> dict[str, ShareGroupDetail | OffsetkeeperError]:
        ids = list(dict.fromkeys(group_ids))
        return _per_group(self._jvm("describe-share-groups", groups=ids), parse_share_group,
                          action="describe share group", secrets=self._jvm_secrets())

    def share_group_offsets(self, group_ids: Iterable[str]
                            ) -> dict[str, list[SharePartitionOffset] | OffsetkeeperError]:
        ids = list(dict.fromkeys(group_ids))
        return _per_group(self._jvm("list-share-group-offsets", groups=ids), parse_share_offsets,
                          action="read share group offsets", secrets=self._jvm_secrets())

    def alter_share_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]
                                  ) -> dict[TopicPartition, OffsetkeeperError | None]:
        """Set share-partition start offsets (the group must have no members: see groups/share)."""
        res = self._jvm("alter-share-group-offsets", group=group_id,
                        offsets=[{"topic": tp.topic, "partition": tp.partition, "offset": int(o)}
                                 for tp, o in sorted(offsets.items())])
        return parse_partition_errors(res, action="alter share group offsets", group=group_id,
                                      secrets=self._jvm_secrets())

    def delete_share_group_offsets(self, group_id: str, topics: Iterable[str]
                                   ) -> dict[str, OffsetkeeperError | None]:
        res = self._jvm("delete-share-group-offsets", group=group_id, topics=sorted(set(topics)))
        secrets = self._jvm_secrets()
        return {str(r["topic"]): (item_error(r["error"], action="delete share group offsets",
                                             group=group_id, secrets=secrets)
                                  if r.get("error") else None) for r in res}

    def describe_streams_groups(self, group_ids: Iterable[str]
                                ) -> dict[str, StreamsGroupDetail | OffsetkeeperError]:
        ids = list(dict.fromkeys(group_ids))
        return _per_group(self._jvm("describe-streams-groups", groups=ids), parse_streams_group,
                          action="describe streams group", secrets=self._jvm_secrets())

    def streams_group_offsets(self, group_ids: Iterable[str]
                              ) -> dict[str, dict[TopicPartition, int] | OffsetkeeperError]:
        ids = list(dict.fromkeys(group_ids))
        return _per_group(self._jvm("list-streams-group-offsets", groups=ids),
                          parse_streams_offsets, action="read streams group offsets",
                          secrets=self._jvm_secrets())

    def exact_committed_offsets(self, group_ids: Iterable[str]
                                ) -> dict[str, dict[TopicPartition, Any] | OffsetkeeperError]:
        """Committed offsets with their commit metadata exactly as Kafka holds it, read by the
        Java client (`CommittedOffset` values). confluent-kafka 2.16.1 may hand over bytes past
        the end of the metadata (seen with Kafka Streams' 12 characters), so a commit that
        carries metadata is read here (see `KafkaAdmin.committed_offsets_each`)."""
        from offsetkeeper.models import CommittedOffset

        def parse(g: Mapping[str, Any]) -> dict[TopicPartition, CommittedOffset]:
            return {TopicPartition(str(p["topic"]), int(p["partition"])):
                    CommittedOffset(int(p["offset"]), str(p.get("metadata") or ""))
                    for p in g.get("partitions") or () if int(p["offset"]) >= 0}

        ids = list(dict.fromkeys(group_ids))
        return _per_group(self._jvm("list-consumer-group-offsets", groups=ids), parse,
                          action="read committed offsets", secrets=self._jvm_secrets())

    def alter_offsets_exact(self, group_id: str, offsets: Mapping[TopicPartition, Any]
                            ) -> dict[TopicPartition, str | None]:
        """Commit offsets (`CommittedOffset` values) with their metadata exactly, through the
        Java client: confluent-kafka 2.16.1 commits a NUL byte after the metadata it is given
        (measured: "AgAAAaIcD3bt" came back as "AgAAAaIcD3bt\\x00"). Per partition, the Kafka
        error name, or None on success (as `KafkaAdmin.alter_result`)."""
        res = self._jvm("alter-consumer-group-offsets", group=group_id, offsets=[
            {"topic": tp.topic, "partition": tp.partition, "offset": int(o.offset),
             "metadata": o.metadata or ""} for tp, o in sorted(offsets.items())])
        return {TopicPartition(str(r["topic"]), int(r["partition"])):
                (str((r["error"] or {}).get("code") or "UNKNOWN") if r.get("error") else None)
                for r in res}
