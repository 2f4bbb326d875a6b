"""The helper session (kafka/jvm.HelperSession): one process answers request after request; a
request without an answer in time kills it and the next call starts afresh; a process that dies
is replaced once; secrets travel on stdin only and never reach a message. The peer here is a
small Python stand-in speaking the helper's line protocol (the real JVM helper is exercised by
every share/streams integration test, which all go through the session)."""

from __future__ import annotations

import sys
import textwrap
import threading
import time

import pytest

from offsetkeeper.errors import ConfigError, KafkaOperationError
from offsetkeeper.kafka import jvm

PEER = textwrap.dedent('''
    import json, os, sys, time
    hello = json.loads(sys.stdin.readline())
    assert hello["op"] == "session"
    if hello["config"].get("client.id") == "refuse":
        print(json.dumps({"ok": False, "error": {"code": "INVALID_CONFIG", "exception": "",
                          "message": "bad property"}}), flush=True)
        sys.exit(0)
    print("a log line on stdout that is not JSON", flush=True)
    print(json.dumps({"ok": True, "result": "ready"}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        op, args = req["op"], req["args"]
        if op == "hang":
            time.sleep(60)
        if op == "die":
            sys.stderr.write("dying with " + hello["config"]["sasl.jaas.config"] + "\\n")
            sys.stderr.flush()
            os._exit(3)
        if op.endswith("die-once") and not os.path.exists(args["marker"]):
            open(args["marker"], "w").close()
            os._exit(3)
        print(json.dumps({"ok": True, "result": {"pid": os.getpid(), "op": op, "args": args}}),
              flush=True)
    with open(os.environ["PEER_EXIT_FILE"], "w") as f:
        f.write("closed")
''')
SECRET = "s3cr3t-Value"
CONF = {"bootstrap.servers": "b:9092", "sasl.username": "u", "sasl.password": SECRET}


@pytest.fixture
def peer(monkeypatch, tmp_path):
    script = tmp_path / "peer.py"
    script.write_text(PEER)
    argv = [sys.executable, str(script)]
    monkeypatch.setattr(jvm, "helper_command", lambda: list(argv))
    monkeypatch.setenv("PEER_EXIT_FILE", str(tmp_path / "exited"))
    return tmp_path


def test_one_process_answers_every_call_and_close_ends_it(peer):
    s = jvm.HelperSession(CONF)
    first = s.call("list-groups", {"x": 1}, timeout=2)
    second = s.call("describe-share-groups", {"groups": ["g"]}, timeout=3)
    assert first["pid"] == second["pid"]
    assert (first["op"], first["args"]) == ("list-groups", {"x": 1, "timeout_ms": 2000})
    assert second["args"]["groups"] == ["g"]
    s.close()
    assert (peer / "exited").read_text() == "closed"
    assert s.call("ping", timeout=2)["pid"] != first["pid"]  # a closed session starts again
    s.close()


def test_secrets_reach_the_process_on_stdin_never_argv_nor_messages(peer, monkeypatch):
    seen = {}
    real_popen = jvm.subprocess.Popen

    def popen(argv, **kw):
        seen["argv"] = argv
        return real_popen(argv, **kw)

    monkeypatch.setattr(jvm.subprocess, "Popen", popen)
    s = jvm.HelperSession(CONF)
    with pytest.raises(KafkaOperationError) as exc:
        s.call("die", timeout=5)  # its stderr line carries the jaas config with the password
    assert not any(SECRET in a for a in seen["argv"])
    msg = str(exc.value)
    assert exc.value.code == "_HELPER_FAILED" and "exited without an answer" in msg
    assert "dying with" in msg and SECRET not in msg and "\n" not in msg
    s.close()


def test_no_answer_in_time_kills_the_process_and_the_next_call_starts_afresh(peer):
    s = jvm.HelperSession(CONF)
    before = s.call("ping", timeout=2)["pid"]
    with pytest.raises(KafkaOperationError) as exc:
        s.call("hang", timeout=0.3, grace=0.2)
    assert exc.value.code == "_TIMED_OUT" and exc.value.retriable
    assert "did not answer within 0.5 s" in str(exc.value)
    assert s.call("ping", timeout=2)["pid"] != before
    s.close()


def test_a_read_whose_process_dies_while_answering_is_tried_once_more_a_change_is_not(peer):
    s = jvm.HelperSession(CONF)
    first = s.call("ping", timeout=2)["pid"]
    answer = s.call("list-die-once", {"marker": str(peer / "died")}, timeout=5)
    assert (peer / "died").exists() and answer["pid"] != first and answer["op"] == "list-die-once"
    with pytest.raises(KafkaOperationError) as exc:  # it may have changed something already
        s.call("alter-die-once", {"marker": str(peer / "died-alter")}, timeout=5)
    assert exc.value.code == "_HELPER_FAILED" and (peer / "died-alter").exists()
    assert s.call("ping", timeout=2)["op"] == "ping"
    s.close()


def test_a_read_is_tried_once_more_when_the_first_process_of_a_session_dies(peer):
    """Invariant (issue 31 D): the documented retry of a read happens also when the process
    that died was started by this very call (the first call of a session), not only when it
    was running before."""
    s = jvm.HelperSession(CONF)
    answer = s.call("list-die-once", {"marker": str(peer / "died-first")}, timeout=5)
    assert (peer / "died-first").exists() and answer["op"] == "list-die-once"
    s.close()


def test_a_refused_start_is_the_translated_error(peer):
    s = jvm.HelperSession({**CONF, "client.id": "refuse"})
    with pytest.raises(ConfigError, match="invalid client property: bad property"):
        s.call("list-groups", timeout=2)
    s.close()


def test_the_facade_keeps_one_session_until_close(peer, monkeypatch):
    from offsetkeeper.config import Connection
    from offsetkeeper.kafka.admin import KafkaAdmin

    one_shots = []
    monkeypatch.setattr(jvm, "call", lambda conf, op, args, **kw: one_shots.append((op, kw)) or [])
    admin = KafkaAdmin(Connection(bootstrap_servers="b:9092"), timeout=3)
    a = admin.java._jvm("list-groups")
    b = admin.java._jvm("describe-share-groups", groups=["g"])
    assert a["pid"] == b["pid"] and a["args"]["timeout_ms"] == 3000
    # the state correction inside describes keeps a process of its own, 5 s at most
    assert admin.java._jvm("list-groups", quick=True) == []
    assert one_shots == [("list-groups", {"timeout": 3, "grace": 3})]
    admin.close()
    assert (peer / "exited").read_text() == "closed"


def test_a_call_waits_for_another_callers_request_no_longer_than_its_own_time(peer):
    s = jvm.HelperSession(CONF)
    s.call("ping", timeout=2)
    outcome: list[BaseException] = []

    def hang() -> None:
        try:
            s.call("hang", timeout=1.0, grace=0.5)
        except KafkaOperationError as exc:
            outcome.append(exc)

    hung = threading.Thread(target=hang)
    hung.start()
    time.sleep(0.2)  # the hanging request holds the process now
    with pytest.raises(KafkaOperationError) as exc:
        s.call("ping", timeout=0.1, grace=0.1)
    assert exc.value.code == "_TIMED_OUT"
    hung.join()
    assert [e.code for e in outcome] == ["_TIMED_OUT"]
    assert s.call("ping", timeout=2)["op"] == "ping"  # and the session recovers
    s.close()
