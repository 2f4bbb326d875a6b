"""The JSON seam to Kafka's Java Admin client (kafka/jvm.py): answers parsed into values,
errors translated, librdkafka properties mapped to the Java client's, secrets kept out of argv
and messages, and a missing Java or jar reported in one line."""

from __future__ import annotations

import json

import pytest

from offsetkeeper.errors import (
    ConfigError,
    GroupActiveError,
    KafkaOperationError,
    UnknownGroupError,
)
from offsetkeeper.kafka import jvm
from offsetkeeper.kafka.group_types import state_key
from offsetkeeper.models import TopicPartition

SHARE = {"group": "sg", "state": "Stable", "coordinator": "h:9092 (1)", "group_epoch": 3,
         "target_assignment_epoch": 3,
         "members": [{"member_id": "m1", "client_id": "c", "host": "/10.0.0.1", "rack": None,
                      "member_epoch": 3, "assignment": [{"topic": "t", "partition": 1},
                                                        {"topic": "t", "partition": 0}]}]}
STREAMS = {"group": "app", "state": "NotReady", "coordinator": "h:9092 (1)", "group_epoch": 2,
           "target_assignment_epoch": 2, "topology_epoch": 0,
           "subtopologies": [
               {"subtopology": "0", "source_topics": ["in"], "repartition_sink_topics": ["app-rep"],
                "repartition_source_topics": [], "state_changelog_topics": []},
               {"subtopology": "1", "source_topics": ["app-rep"], "repartition_sink_topics": [],
                "repartition_source_topics": ["app-rep"], "state_changelog_topics": ["app-cl"]}],
           "members": [{"member_id": "m", "member_epoch": 2, "instance_id": None, "rack": None,
                        "client_id": "c", "host": "/127.0.0.1", "topology_epoch": 0,
                        "process_id": "p", "endpoint": None, "is_classic": False,
                        "assignment": {"active": [{"subtopology": "0", "partitions": [1, 0]}],
                                       "standby": [], "warmup": []},
                        "target_assignment": {"active": [{"subtopology": "0", "partitions": [0, 1]}],
                                              "standby": [], "warmup": []}}]}


def test_share_group_answer_parses():
    d = jvm.parse_share_group(SHARE)
    assert d.state == "Stable" and d.group_epoch == 3
    (m,) = d.members
    assert m.host == "10.0.0.1" and m.assignment == (TopicPartition("t", 0), TopicPartition("t", 1))


def test_share_offsets_keep_partitions_without_a_start_offset():
    offs = jvm.parse_share_offsets({"group": "sg", "partitions": [
        {"topic": "t", "partition": 1, "start_offset": 10, "leader_epoch": 0, "lag": 20},
        {"topic": "t", "partition": 0, "start_offset": None, "leader_epoch": None, "lag": None}]})
    assert [(o.partition, o.start_offset, o.lag) for o in offs] == [(0, None, None), (1, 10, 20)]


def test_streams_group_answer_parses_and_input_topics_skip_repartition_topics():
    d = jvm.parse_streams_group(STREAMS)
    assert d.state == "NotReady" and state_key(d.state) == "notready"
    assert d.input_topics == ("in",)
    (m,) = d.members
    assert m.assignment.active == (("0", (0, 1)),) == m.target_assignment.active
    assert m.host == "127.0.0.1" and not m.is_classic


def test_consumer_group_answer_keeps_kip_1099_fields_and_classic_nulls():
    d = jvm.parse_consumer_group({
        "group": "g", "type": "Consumer", "state": "Reconciling", "coordinator": "", "assignor":
        "uniform", "group_epoch": 5, "target_assignment_epoch": 5,
        "members": [{"member_id": "m", "instance_id": None, "client_id": "c", "host": "/h",
                     "member_epoch": 4, "assignment": [{"topic": "t", "partition": 0}],
                     "target_assignment": [{"topic": "t", "partition": 0},
                                           {"topic": "t", "partition": 1}], "upgraded": True}]})
    assert (d.state, d.group_epoch) == ("Reconciling", 5)
    (m,) = d.members
    assert m.member_epoch == 4 and len(m.target_assignment) == 2 and m.upgraded is True
    classic = jvm.parse_consumer_group({"group": "g", "type": "Classic", "state": "Stable",
                                        "members": [{"member_id": "m", "assignment": [],
                                                     "target_assignment": None}]})
    assert classic.group_epoch is None and classic.members[0].target_assignment is None


@pytest.mark.parametrize("name,key", [("Stable", "stable"), ("PreparingRebalance", "preparingrebalance"),
                                      ("NotReady", "notready"), ("Assigning", "assigning"),
                                      ("", "unknown")])
def test_state_keys(name, key):
    assert state_key(name) == key


def test_listing_sorted_and_simple_groups_have_empty_protocol():
    rows = jvm.parse_listings([{"group": "b", "type": "Share", "protocol": "share", "state": "Empty"},
                               {"group": "a", "type": "Classic", "protocol": "", "state": "Empty"}])
    assert [(r.group_id, r.protocol) for r in rows] == [("a", ""), ("b", "share")]


@pytest.mark.parametrize("code,cls", [("GROUP_ID_NOT_FOUND", UnknownGroupError),
                                      ("NON_EMPTY_GROUP", GroupActiveError),
                                      ("COORDINATOR_NOT_AVAILABLE", KafkaOperationError),
                                      ("INVALID_CONFIG", ConfigError)])
def test_error_answers_are_translated(code, cls):
    answer = {"ok": False, "error": {"code": code, "exception": "X", "message": "m"}}
    with pytest.raises(cls):
        jvm.unwrap(answer, action="describe share group")


def test_per_group_errors_do_not_hide_other_groups():
    res = jvm._per_group([SHARE, {"group": "x", "error": {"code": "GROUP_ID_NOT_FOUND",
                                                          "message": "Group x not found."}}],
                         jvm.parse_share_group, action="describe share group")
    assert res["sg"].group_id == "sg" and isinstance(res["x"], UnknownGroupError)


def test_error_text_never_shows_secrets():
    answer = {"ok": False, "error": {"code": "SASL_AUTHENTICATION_FAILED",
                                     "message": "bad password s3cr3t-pw for user"}}
    with pytest.raises(KafkaOperationError) as exc:
        jvm.unwrap(answer, action="list groups", secrets={"sasl.password": "s3cr3t-pw"})
    assert "s3cr3t-pw" not in str(exc.value)
    err = jvm.item_error({"code": "WHATEVER", "message": "boom s3cr3t-pw"}, action="x",
                         secrets={"sasl.password": "s3cr3t-pw"})
    assert "s3cr3t-pw" not in err.message and "******" in err.message


def test_a_dead_process_without_answer_is_one_error():
    a = jvm.parse_answer("", stderr="Exception in thread main\njava.lang.OutOfMemoryError", returncode=1)
    with pytest.raises(KafkaOperationError) as exc:
        jvm.unwrap(a, action="list groups")
    assert "exited with code 1" in str(exc.value) and "OutOfMemoryError" in str(exc.value)
    good = jvm.parse_answer('noise\n{"ok": true, "result": []}\n')
    assert jvm.unwrap(good, action="x") == []


@pytest.mark.parametrize("mech,module", [("PLAIN", "PlainLoginModule"),
                                         ("SCRAM-SHA-512", "ScramLoginModule")])
def test_properties_map_sasl_and_pem_ca(mech, module):
    props = jvm.java_properties({"bootstrap.servers": "b:9093", "security.protocol": "sasl_ssl",
                                 "sasl.mechanisms": mech, "sasl.username": "ops",
                                 "sasl.password": 'p"w\\x', "ssl.ca.location": "/ca.pem",
                                 "ssl.endpoint.identification.algorithm": "none",
                                 "socket.timeout.ms": "1000", "logger": object()})
    assert props["security.protocol"] == "SASL_SSL" and props["sasl.mechanism"] == mech
    assert props["sasl.jaas.config"] == (f"org.apache.kafka.common.security."
                                         f"{'plain' if mech == 'PLAIN' else 'scram'}.{module} "
                                         'required username="ops" password="p\\"w\\\\x";')
    assert props["ssl.truststore.type"] == "PEM" and props["ssl.truststore.location"] == "/ca.pem"
    assert props["ssl.endpoint.identification.algorithm"] == ""
    assert "socket.timeout.ms" not in props and "logger" not in props


def test_properties_refuse_what_cannot_be_expressed():
    with pytest.raises(ConfigError, match="GSSAPI"):
        jvm.java_properties({"bootstrap.servers": "b", "sasl.mechanism": "GSSAPI",
                             "sasl.username": "u", "sasl.password": "p"})
    given = jvm.java_properties({"bootstrap.servers": "b", "sasl.mechanism": "PLAIN",
                                 "sasl.jaas.config": "x required;"})
    assert given["sasl.jaas.config"] == "x required;"


def test_secrets_go_on_stdin_never_argv(monkeypatch, tmp_path):
    helper = tmp_path / "helper"
    (helper / "lib").mkdir(parents=True)
    (helper / "admin-helper.jar").write_bytes(b"")
    monkeypatch.setenv(jvm.HELPER_ENV, str(helper))
    seen = {}

    class Done:
        stdout = '{"ok": true, "result": []}'
        stderr = ""
        returncode = 0

    def fake_run(argv, input, **kw):
        seen["argv"], seen["stdin"] = argv, json.loads(input)
        return Done()

    monkeypatch.setattr(jvm.subprocess, "run", fake_run)
    assert jvm.call({"bootstrap.servers": "b", "sasl.username": "u", "sasl.password": "topsecret"},
                    "list-groups") == []
    assert not any("topsecret" in a for a in seen["argv"])
    assert "topsecret" in seen["stdin"]["config"]["sasl.jaas.config"]
    assert seen["stdin"]["op"] == "list-groups" and seen["stdin"]["args"]["timeout_ms"] == 15000


def test_missing_helper_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv(jvm.HELPER_ENV, str(tmp_path / "absent"))
    with pytest.raises(jvm.JvmHelperUnavailable) as exc:
        jvm.helper_command()
    assert "scripts/setup.sh" in str(exc.value) and "\n" not in str(exc.value)
    assert exc.value.exit_code == 1 and not jvm.available()


def test_the_facade_gives_streams_share_and_reconciling_groups_their_real_state(monkeypatch):
    """Invariant: librdkafka's member-less Dead answer for a streams or share group, and its
    UNKNOWN for a consumer-protocol group that is reconciling, are replaced by the Java client's
    real state; ordinary answers are left alone and cost no JVM call."""
    from offsetkeeper.models import GroupInfo, MemberInfo

    calls = []

    class Fake(jvm.JavaAdmin):
        def __init__(self):
            super().__init__(None, timeout=5)

        def _jvm(self, op, *, quick=False, **args):
            assert quick
            calls.append((op, tuple(args.get("groups", ()))))
            if op == "list-groups":
                return [{"group": "app", "type": "Streams", "protocol": "streams", "state": "Stable"},
                        {"group": "sg", "type": "Share", "protocol": "share", "state": "Empty"},
                        {"group": "gone", "type": "Classic", "protocol": "", "state": "Dead"}]
            if op == "describe-streams-groups":
                return [{**STREAMS, "state": "Stable"}]
            return [{"group": g, "type": "Consumer", "state": "Reconciling", "members": []}
                    for g in args["groups"]]

    monkeypatch.setattr(jvm, "available", lambda: True)
    member = MemberInfo("m", "c", "h")
    out = Fake().with_other_group_types({
        "app": GroupInfo("app", "dead", group_type="classic"),
        "sg": GroupInfo("sg", "dead", group_type="classic"),
        "gone": GroupInfo("gone", "dead"),
        "kip848": GroupInfo("kip848", "unknown", group_type="consumer", members=(member,)),
        "fine": GroupInfo("fine", "stable", members=(member,))})
    assert (out["app"].state, out["app"].group_type) == ("stable", "streams")
    # a running streams group has its members from Kafka's describe (issue 31 item 7: a
    # refusal said "0 active members"); the empty share group needs no describe
    assert [m.member_id for m in out["app"].members] == ["m"]
    assert (out["sg"].state, out["sg"].group_type) == ("empty", "share")
    assert out["gone"].state == "dead" and out["kip848"].state == "reconciling"
    assert out["fine"].state == "stable"
    assert calls == [("list-groups", ()), ("describe-streams-groups", ("app",)),
                     ("describe-consumer-groups", ("kip848",))]
    calls.clear()
    Fake().with_other_group_types({"fine": GroupInfo("fine", "stable", members=(member,))})
    assert calls == []


def test_groups_list_falls_back_to_librdkafka_but_share_and_streams_listings_do_not():
    """Invariant: without the Java client, `groups list` still lists (with a note saying what
    is missing), while listings that only the Java client can make fail instead of showing
    an empty list."""
    from offsetkeeper.groups.listing import list_typed_groups
    from offsetkeeper.models import GroupListing

    class Fake:
        def connect(self):  # the librdkafka client, connected before the two listings run at once
            pass

        def list_groups(self):
            return [GroupListing("pay", "stable", "classic")]

        def all_group_ids(self):
            return {"pay", "sg"}  # a share group exists: only the Java client can type it

        def list_all_groups(self):
            raise KafkaOperationError("list groups: the Java admin client did not answer",
                                      code="_TIMED_OUT")

    rows, note = list_typed_groups(Fake())
    assert [(r.group_id, r.state, r.group_type, r.protocol) for r in rows] == \
        [("pay", "stable", "classic", None)]
    assert note and "did not answer" in note and "without share and streams groups" in note
    with pytest.raises(KafkaOperationError):
        list_typed_groups(Fake(), types={"share"}, strict=True)
