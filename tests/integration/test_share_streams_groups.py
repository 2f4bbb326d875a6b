"""Share groups, streams groups and typed group listings on Apache Kafka 4.4.0, checked against
the release's own tools (kafka-groups, kafka-share-groups, kafka-streams-groups,
kafka-consumer-groups) as the oracle.

The clients are real Java ones from the tests' own jar (tests/jvm/test-apps, run by
`tests/jvm_apps.py`): Kafka's KafkaShareConsumer for share groups, and a Kafka Streams
application (a stateless topology, group.protocol=streams) for streams groups.
"""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

import pytest

from offsetkeeper.devbroker.dist import tool_command
from offsetkeeper.errors import OffsetkeeperError
from offsetkeeper.kafka import jvm
from tests.cli import run_cli
from tests.jvm_apps import JvmApp
from tests.kafkatools import commit, create_topic, produce_n
from waiting import wait_for

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not jvm.available(), reason="the JVM admin helper is not built "
                                 "(scripts/setup.sh)")]


def oracle(tool: str, bootstrap: str, *args: str) -> str:
    proc = subprocess.run(tool_command(tool, "--bootstrap-server", bootstrap, *args),
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    return proc.stdout + proc.stderr


def table(text: str, first: str = "GROUP") -> list[list[str]]:
    """Data rows (split on whitespace) of the tool's table whose header starts with `first`."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for i, ln in enumerate(lines):
        if ln.split()[0] == first:
            return [row.split() for row in lines[i + 1:] if not row.startswith(first)]
    return []


wait_until = functools.partial(wait_for, timeout=40.0, every=0.5)


def set_group_config(bootstrap: str, group: str, **config: str) -> None:
    out = oracle("kafka-configs", bootstrap, "--alter", "--entity-type", "groups",
                 "--entity-name", group, "--add-config",
                 ",".join(f"{k.replace('_', '.')}={v}" for k, v in config.items()))
    assert "Completed" in out, out


@pytest.fixture(scope="module")
def share(bootstrap, tmp_path_factory):
    """A share group with one running KafkaShareConsumer that has acknowledged every record of
    a 3-partition topic (10 per partition)."""
    import uuid

    topic, group = f"share-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 3)
    produce_n(bootstrap, topic, 3, 10)
    set_group_config(bootstrap, group, share_auto_offset_reset="earliest")
    app = JvmApp({"bootstrap.servers": bootstrap}, "share-consume",
                 {"group": group, "topics": [topic]})
    try:
        app.wait_for("acknowledged", count=30)
        yield {"topic": topic, "group": group, "app": app}
    finally:
        app.stop()


@pytest.fixture(scope="module")
def streams(bootstrap, tmp_path_factory):
    """A running Kafka Streams application (streams protocol) that has read 2 x 5 records."""
    import uuid

    src, out, app_id = (f"{p}-{uuid.uuid4().hex[:8]}" for p in ("in", "out", "app"))
    create_topic(bootstrap, src, 2)
    create_topic(bootstrap, out, 2)
    produce_n(bootstrap, src, 2, 5)
    app = JvmApp({"bootstrap.servers": bootstrap}, "streams-app",
                 {"application_id": app_id, "input": src, "output": out,
                  "state_dir": str(tmp_path_factory.mktemp("streams-state"))})
    try:
        app.wait_for("state-running")
        yield {"input": src, "output": out, "group": app_id, "app": app}
    finally:
        app.stop()


def test_groups_list_types_and_protocols_match_kafka_groups(capsys, bootstrap, share, streams, unique):
    classic, t = unique("classic"), unique("ct")
    create_topic(bootstrap, t, 1)
    commit(bootstrap, classic, {(t, 0): 0})
    r = run_cli(capsys, "groups", "list", "-b", bootstrap, "-o", "json")
    assert r.code == 0, r.err
    ours = {g["group_id"]: g for g in r.json()}
    theirs = {row[0]: row for row in table(oracle("kafka-groups", bootstrap, "--list"))}
    for g in (classic, share["group"], streams["group"]):
        assert (ours[g]["group_type"], ours[g]["protocol"]) == \
            (theirs[g][1].lower(), (theirs[g][2:] or [""])[0]), (ours[g], theirs[g])
    assert ours[share["group"]]["state"] == "stable"
    assert ours[streams["group"]]["state"] == "stable"
    # a group that only ever committed offsets (no member joined) has no protocol type
    assert ours[classic] == {"group_id": classic, "state": "empty", "group_type": "classic",
                             "protocol": ""}
    r = run_cli(capsys, "groups", "list", "-b", bootstrap, "--type", "share,streams", "-o", "csv")
    assert r.code == 0 and r.out.startswith("group_id,state,group_type,protocol")
    assert share["group"] in r.out and streams["group"] in r.out and classic not in r.out
    r = run_cli(capsys, "groups", "list", "-b", bootstrap, "--type", "sharing")
    assert r.code == 2 and "--type 'sharing' is not a group type" in r.err


def test_share_group_describe_matches_kafka_share_groups(capsys, bootstrap, share):
    g, topic = share["group"], share["topic"]

    def all_acknowledged():
        r = run_cli(capsys, "share-groups", "describe", g, "-b", bootstrap, "-o", "json")
        assert r.code == 0, r.err
        return r.json() if [x["lag"] for x in r.json()] == [0, 0, 0] else None

    # Lag (KIP-1226) counts acknowledged records at or after the start offset; the start offset
    # itself may stay behind the acknowledged records for a while (the share coordinator moves it
    # when it rewrites the share-partition's state), so the test waits for the lag.
    ours = {(x["topic"], x["partition"]): x
            for x in wait_until("start offsets at the log end", all_acknowledged)}
    rows = table(oracle("kafka-share-groups", bootstrap, "--describe", "--group", g))
    theirs = {(row[1], int(row[2])): (row[3], row[4]) for row in rows}
    assert set(ours) == set(theirs) == {(topic, p) for p in range(3)}
    for key, (start, lag) in theirs.items():
        assert (str(ours[key]["start_offset"]), str(ours[key]["lag"])) == (start, lag)
        assert ours[key]["log_end_offset"] == 10 and ours[key]["log_start_offset"] == 0

    r = run_cli(capsys, "share-groups", "describe", g, "--members", "-b", bootstrap, "-o", "json")
    (member,) = r.json()
    (row,) = table(oracle("kafka-share-groups", bootstrap, "--describe", "--group", g,
                          "--members", "--verbose"))
    # GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS MEMBER-EPOCH ASSIGNMENT
    assert [member["consumer_id"], member["client_id"], str(member["partitions"]),
            str(member["member_epoch"])] == [row[1], row[3], row[4], row[5]]
    assert member["assignment"] == [f"{topic}:{p}" for p in range(3)] and row[6] == f"{topic}:0,1,2"

    r = run_cli(capsys, "share-groups", "describe", g, "--state", "-b", bootstrap, "-o", "json")
    (st,) = r.json()
    (row,) = table(oracle("kafka-share-groups", bootstrap, "--describe", "--group", g,
                          "--state", "--verbose"))
    # GROUP COORDINATOR (ID) STATE GROUP-EPOCH ASSIGNMENT-EPOCH #MEMBERS
    # states are Kafka's names lower-cased in every view (issue 31 item 11)
    assert [st["state"], str(st["group_epoch"]), str(st["assignment_epoch"]),
            str(st["members"])] == [row[-4].lower(), *row[-3:]]

    r = run_cli(capsys, "share-groups", "list", "-b", bootstrap, "--state", "stable", "-o", "json")
    assert {"group_id": g, "state": "stable"} in r.json()


def test_share_bad_input_and_unknown_group(capsys, bootstrap, unique):
    r = run_cli(capsys, "share-groups", "reset-offsets", "-g", "x", "--to-earliest", "--to-latest",
                "-b", bootstrap)
    assert r.code == 2 and "conflicting reset targets" in r.err
    r = run_cli(capsys, "share-groups", "describe", unique("nosuch"), "-b", bootstrap)
    assert r.code == 2 and "does not exist" in r.err
    r = run_cli(capsys, "share-groups", "delete-offsets", "-g", "x", "-t", "t:0", "-b", bootstrap)
    assert r.code == 2 and "whole topics" in r.err


def test_streams_group_describe_matches_kafka_streams_groups(capsys, bootstrap, streams):
    g, src = streams["group"], streams["input"]
    r = run_cli(capsys, "streams-groups", "list", "-b", bootstrap, "-o", "json")
    assert {"group_id": g, "state": "stable"} in r.json()

    def committed():
        r = run_cli(capsys, "streams-groups", "describe", g, "-b", bootstrap, "-o", "json")
        return r.json() if [x["current_offset"] for x in r.json()] == [5, 5] else None

    rows = wait_until("the streams app to commit", committed)
    assert [(x["topic"], x["partition"], x["log_end_offset"], x["lag"]) for x in rows] == \
        [(src, 0, 5, 0), (src, 1, 5, 0)]
    theirs = table(oracle("kafka-streams-groups", bootstrap, "--describe", "--group", g))
    # GROUP TOPIC PARTITION OFFSET-LAG
    assert sorted((row[1], int(row[2]), int(row[3])) for row in theirs) == [(src, 0, 0), (src, 1, 0)]

    r = run_cli(capsys, "streams-groups", "describe", g, "--members", "-b", bootstrap, "-o", "json")
    (m,) = r.json()
    (row,) = table(oracle("kafka-streams-groups", bootstrap, "--describe", "--group", g,
                          "--members", "--verbose"))
    # GROUP TARGET-ASSIGNMENT-EPOCH TOPOLOGY-EPOCH MEMBER MEMBER-PROTOCOL MEMBER-EPOCH PROCESS
    # CLIENT-ID ASSIGNMENTS...
    assert [m["member_id"], m["member_protocol"], str(m["member_epoch"]), m["process_id"],
            m["client_id"]] == row[3:8]
    assignments = " ".join(row[8:])
    assert f"ACTIVE: {m['active_tasks']};" in assignments, (m, assignments)
    assert m["active_tasks"] == "0:[0,1]"

    r = run_cli(capsys, "streams-groups", "describe", g, "--state", "-b", bootstrap, "-o", "json")
    (st,) = r.json()
    (row,) = table(oracle("kafka-streams-groups", bootstrap, "--describe", "--group", g,
                          "--state", "--verbose"))
    # GROUP COORDINATOR (ID) STATE GROUP-EPOCH TARGET-ASSIGNMENT-EPOCH #MEMBERS
    assert [st["state"], str(st["group_epoch"]), str(st["target_assignment_epoch"]),
            str(st["members"])] == [row[-4].lower(), *row[-3:]]
    assert st["processes"] == 1

    r = run_cli(capsys, "streams-groups", "describe", g, "--topology", "-b", bootstrap, "-o", "json")
    assert r.json() == [{"group": g, "subtopology": "0", "source_topics": [src],
                         "repartition_sink_topics": [], "state_changelog_topics": []}]


def test_streams_commit_metadata_never_crashes_a_read_of_the_group(capsys, bootstrap, streams,
                                                                   tmp_path):
    """Invariant: commit metadata is untrusted bytes. Kafka Streams commits 12 characters of it
    and confluent-kafka 2.16.1 may hand over bytes past their end, which made `groups
    describe`, `offsets reset` and `snapshots create` of a Kafka Streams group fail at random
    with `unexpected UnicodeDecodeError`. Every read answers (8 times each), and a snapshot
    shows either the metadata the application committed or null (unreadable), never bytes
    invented past its end; the running application's refusal counts its one member
    (issue 31 item 7: it said "0 active members")."""
    import json

    g, src = streams["group"], streams["input"]
    wait_until("the streams app to commit", lambda: [x["current_offset"] for x in run_cli(
        capsys, "streams-groups", "describe", g, "-b", bootstrap, "-o", "json").json()] == [5, 5])
    store = str(tmp_path / "snaps")
    for _ in range(8):
        r = run_cli(capsys, "groups", "describe", g, "-b", bootstrap, "-o", "json")
        assert r.code == 0 and "Error" not in r.err, r.err
        assert sorted((x["partition"], x["current_offset"]) for x in r.json()) == [(0, 5), (1, 5)]
        r = run_cli(capsys, "offsets", "reset", "-g", g, "-t", src, "--to-earliest",
                    "-b", bootstrap, "-o", "json")
        assert r.code == 1 and "unexpected" not in r.err, r.err
        assert f"group {g} has 1 active member (state stable)" in r.out + r.err, r.out + r.err
        r = run_cli(capsys, "snapshots", "create", "-g", g, "--store", store, "-b", bootstrap,
                    "-o", "json")
        assert r.code == 0, r.err
        shown = run_cli(capsys, "snapshots", "show", r.json()["id"], "--store", store, "-o", "json")
        metas = {o["metadata"] for o in shown.json()["groups"][g]["offsets"]}
        assert len(shown.json()["groups"][g]["offsets"]) == 2
        # Kafka Streams' metadata: base64 of a version byte and the partition time, 12 chars
        assert all(m is None or (len(m) == 12 and m.isascii() and m.isprintable())
                   for m in metas), json.dumps(sorted(metas, key=str))


def test_share_groups_describe_of_a_classic_group_says_what_it_is(capsys, bootstrap, unique):
    """Invariant: `share-groups describe` / `streams-groups describe` of a group that exists
    as another type says which type it is (as kafka-share-groups.sh does), not that it does
    not exist; a group that does not exist still says so. Exit 2 either way."""
    topic, group = unique("t"), unique("classic-g")
    create_topic(bootstrap, topic, 1)
    commit(bootstrap, group, {(topic, 0): 1})
    r = run_cli(capsys, "share-groups", "describe", group, "-b", bootstrap)
    assert r.code == 2 and f"group '{group}' is a classic group, not a share group" in r.err, r.err
    r = run_cli(capsys, "streams-groups", "describe", group, "-b", bootstrap)
    assert r.code == 2 and f"group '{group}' is a classic group, not a streams group" in r.err, r.err
    nosuch = unique("nosuch")
    r = run_cli(capsys, "share-groups", "describe", nosuch, "-b", bootstrap)
    assert r.code == 2 and f"share group '{nosuch}' does not exist" in r.err, r.err


def test_consumer_protocol_group_epochs_match_kafka_consumer_groups(capsys, bootstrap, unique):
    """KIP-848 group: state and KIP-1099 epochs as kafka-consumer-groups --verbose shows them."""
    from confluent_kafka import Consumer

    topic, group = unique("kt"), unique("kg")
    create_topic(bootstrap, topic, 2)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    try:
        wait_until("an assignment", lambda: c.poll(0.2) is None and c.assignment())
        r = run_cli(capsys, "groups", "describe", group, "--state", "--epochs", "-b", bootstrap,
                    "-o", "json")
        assert r.code == 0, r.err
        (st,) = r.json()
        out = oracle("kafka-consumer-groups", bootstrap, "--describe", "--group", group, "--state",
                     "--verbose")
        (row,) = table(out)
        # GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE GROUP-EPOCH TARGET-ASSIGNMENT-EPOCH #MEMBERS
        assert [st["assignment_strategy"], st["state"], str(st["group_epoch"]),
                str(st["target_assignment_epoch"]), str(st["members"])] == \
            [row[-5], row[-4].lower(), *row[-3:]], out
        r = run_cli(capsys, "groups", "describe", group, "--members", "--epochs", "-b", bootstrap,
                    "-o", "json")
        (m,) = r.json()
        assert m["current_assignment"] == m["target_assignment"] == [f"{topic}:0", f"{topic}:1"]
        assert m["current_epoch"] == st["group_epoch"] and m["upgraded"] is True
        r = run_cli(capsys, "groups", "list", "-b", bootstrap, "--type", "consumer", "-o", "json")
        assert {"group_id": group, "state": "stable", "group_type": "consumer",
                "protocol": "consumer"} in r.json()
    finally:
        c.close()


def test_without_the_helper_only_its_commands_fail(capsys, bootstrap, monkeypatch, tmp_path):
    monkeypatch.setenv(jvm.HELPER_ENV, str(tmp_path / "nothing-here"))
    r = run_cli(capsys, "share-groups", "list", "-b", bootstrap)
    assert r.code == 1 and "JVM admin helper is not installed" in r.err
    assert len(r.err.strip().splitlines()) == 1
    r = run_cli(capsys, "streams-groups", "describe", "x", "-b", bootstrap)
    assert r.code == 1 and "scripts/setup.sh" in r.err
    r = run_cli(capsys, "groups", "list", "-b", bootstrap, "-o", "json")
    assert r.code == 0 and all(g["protocol"] is None for g in r.json())
    r = run_cli(capsys, "groups", "list", "-b", bootstrap)
    assert r.code == 0 and "note: the JVM admin helper is not installed" in r.err


def test_streams_reset_refused_while_running_then_through_the_executor(capsys, bootstrap, streams):
    """Invariant: a running Kafka Streams application's group is never taken for inactive.
    librdkafka describes a streams group as a member-less Dead classic group, so before the
    admin facade corrected that, `offsets reset` planned a reset of a running application."""
    g, src = streams["group"], streams["input"]
    r = run_cli(capsys, "offsets", "reset", "-g", g, "-t", src, "--to-earliest", "--execute",
                "-b", bootstrap, "-o", "json")
    assert r.code == 1 and "state stable" in r.out + r.err, r.out + r.err
    r = run_cli(capsys, "streams-groups", "reset-offsets", "-g", g, "--all-input-topics",
                "--to-earliest", "--execute", "-b", bootstrap)
    assert r.code == 1 and f"streams group {g} has 1 active member" in r.err
    streams["app"].stop()
    wait_until("the streams group to be empty", lambda: "Empty" in oracle(
        "kafka-streams-groups", bootstrap, "--describe", "--group", g, "--state"))
    r = run_cli(capsys, "streams-groups", "reset-offsets", "-g", g, "--all-input-topics",
                "--to-earliest", "--execute", "-b", bootstrap, "-o", "json")
    assert r.code == 0, r.err
    assert r.json()["plan"]["group_type"] == "streams"  # issue 31 item 11: it lacked the type
    # kafka-streams-groups --describe prints nothing for an empty group: read the committed
    # offsets with an independent client instead
    from tests.kafkatools import committed

    assert committed(bootstrap, g, src, 2) == {0: 0, 1: 0}
    r = run_cli(capsys, "streams-groups", "describe", g, "-b", bootstrap, "-o", "json")
    assert [(x["current_offset"], x["lag"]) for x in r.json()] == [(0, 5), (0, 5)]


def test_helper_connects_to_a_sasl_ssl_cluster_and_keeps_the_password_out(capsys, secure_cluster):
    """librdkafka's SCRAM + PEM CA properties reach Kafka's Java client (sasl.jaas.config,
    PEM truststore); a wrong password fails in one line that does not show it."""
    st = secure_cluster
    r = run_cli(capsys, "share-groups", "list", "-b", st.bootstrap, "--command-config",
                st.command_config, "-o", "json")
    assert r.code == 0 and r.json() == [], r.err
    r = run_cli(capsys, "groups", "list", "-b", st.bootstrap, "--command-config",
                st.command_config, "-o", "json")
    assert r.code == 0, r.err
    # the CLI's librdkafka probe answers first for a wrong password; the helper's own path:
    conf = dict(ln.split("=", 1) for ln in Path(st.command_config).read_text().splitlines()
                if "=" in ln and not ln.startswith("#"))
    conf.update({"bootstrap.servers": st.bootstrap, "sasl.password": "Wr0ng-Secret-Value"})
    with pytest.raises(OffsetkeeperError) as exc:
        jvm.call(conf, "list-groups", timeout=10)
    assert "Wr0ng-Secret-Value" not in str(exc.value) and "\n" not in str(exc.value)
    assert "authentication" in str(exc.value).lower(), exc.value
    session = jvm.HelperSession(conf)  # the facade's path: the same refusal, the same care
    try:
        with pytest.raises(OffsetkeeperError) as exc:
            session.call("list-groups", timeout=10)
    finally:
        session.close()
    assert "Wr0ng-Secret-Value" not in str(exc.value) and "\n" not in str(exc.value)
    assert "authentication" in str(exc.value).lower(), exc.value


def test_the_facade_serves_every_java_call_from_one_helper_process(bootstrap, share):
    """One JVM per admin facade: the listing, the describe and the offsets come from the same
    helper process, whose answers equal one-process-per-call answers; close() ends it."""
    from offsetkeeper.config import Connection
    from offsetkeeper.kafka.admin import KafkaAdmin

    g = share["group"]
    admin = KafkaAdmin(Connection(bootstrap_servers=bootstrap))
    try:
        listed = {x.group_id: x for x in admin.list_all_groups()}
        pid = admin.java._session._proc.pid
        offsets = admin.share_group_offsets([g])[g]
        described = admin.describe_share_groups([g])[g]
        assert admin.java._session._proc.pid == pid
    finally:
        admin.close()
    assert listed[g].group_type.lower() == "share" and described.group_id == g
    once = jvm.parse_share_offsets(jvm.call({"bootstrap.servers": bootstrap},
                                            "list-share-group-offsets", {"groups": [g]})[0])
    assert [(o.topic, o.partition, o.start_offset) for o in offsets] == \
        [(o.topic, o.partition, o.start_offset) for o in once]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_streams_group_not_ready_while_an_input_topic_is_missing(capsys, bootstrap, unique,
                                                                 tmp_path):
    """A real Kafka Streams member whose topology's input topic does not exist: the broker
    reports the group NotReady; list, describe and groups list show that state, as
    kafka-streams-groups does. (Kafka Streams fails its stream thread on the missing topic; the
    app replaces the thread, so a member stays in the group, as a supervised application would.)"""
    src, out, g = unique("missing-in"), unique("nr-out"), unique("nr-app")
    create_topic(bootstrap, out, 1)
    app = JvmApp({"bootstrap.servers": bootstrap}, "streams-app",
                 {"application_id": g, "input": src, "output": out, "replace_thread": True,
                  "state_dir": str(tmp_path / "state")})
    try:
        wait_until("the group to be NotReady", lambda: "NotReady" in oracle(
            "kafka-streams-groups", bootstrap, "--describe", "--group", g, "--state"), timeout=90)
        r = run_cli(capsys, "streams-groups", "list", "-b", bootstrap, "--state", "notready",
                    "-o", "json")
        assert r.code == 0 and {"group_id": g, "state": "notready"} in r.json(), r.out + r.err
        # the app replaces its failed stream thread, so on Kafka 4.4 the group goes Empty for a
        # moment now and then: compare both views once both see it NotReady
        def both_not_ready():
            r = run_cli(capsys, "streams-groups", "describe", g, "--state", "-b", bootstrap,
                        "-o", "json")
            (st,) = r.json()
            (row,) = table(oracle("kafka-streams-groups", bootstrap, "--describe", "--group", g,
                                  "--state", "--verbose"))
            return (st, row) if st["state"] == "notready" and row[-4] == "NotReady" else None

        st, _ = wait_until("both views to see the group NotReady", both_not_ready, timeout=90)
        assert st["members"] >= 1
        r = run_cli(capsys, "streams-groups", "describe", g, "--topology", "-b", bootstrap,
                    "-o", "json")
        assert [t["source_topics"] for t in r.json()] == [[src]]
        r = run_cli(capsys, "groups", "list", "-b", bootstrap, "--type", "streams", "-o", "json")
        assert {"group_id": g, "state": "notready", "group_type": "streams",
                "protocol": "streams"} in r.json()
        r = wait_until("a refusal while NotReady", lambda: (lambda r: r if r.code == 1 else None)(
            run_cli(capsys, "streams-groups", "reset-offsets", "-g", g, "-t", out,
                    "--to-earliest", "-b", bootstrap)))  # a dry run: the group may flap Empty
        assert "state notready" in r.err, r.err
    finally:
        app.stop()


def _exact(bootstrap: str, group: str) -> dict[int, tuple[int, str]]:
    """partition -> (offset, metadata) as Kafka's Java Admin client reads them (listConsumer-
    GroupOffsets through the helper): the independent reader of commit metadata."""
    [g] = jvm.call({"bootstrap.servers": bootstrap}, "list-consumer-group-offsets",
                   {"groups": [group]})
    return {int(p["partition"]): (int(p["offset"]), p["metadata"]) for p in g["partitions"]}


def test_streams_commit_metadata_kept_by_a_reset_and_restored_exactly_by_a_rollback(
        capsys, bootstrap, streams, tmp_path):
    """Invariant: commit metadata is carried exactly (issue 31 item 2). A snapshot records each
    partition's metadata as Kafka has it (Kafka Streams' 12 characters, never bytes
    confluent-kafka read past their end, never null); `groups describe` shows it; a reset
    keeps each moved partition's metadata; a rollback puts offsets AND metadata back exactly,
    including a partition whose offset is right but whose metadata was changed since;
    `--clear-metadata` commits none. Checked with Kafka's Java Admin client."""
    from offsetkeeper.config.connection import Connection
    from offsetkeeper.kafka.admin import KafkaAdmin
    from offsetkeeper.models import CommittedOffset, TopicPartition

    g, src = streams["group"], streams["input"]
    wait_until("the streams app to commit with metadata", lambda: len(
        [m for _, m in _exact(bootstrap, g).values() if m]) == 2, timeout=90)
    streams["app"].stop()
    wait_until("the streams group to be empty", lambda: "Empty" in oracle(
        "kafka-streams-groups", bootstrap, "--describe", "--group", g, "--state"))
    before = _exact(bootstrap, g)
    assert sorted(before) == [0, 1] and all(len(m) == 12 for _, m in before.values()), before
    store = str(tmp_path / "snaps")
    r = run_cli(capsys, "snapshots", "create", "-g", g, "--store", store, "-b", bootstrap,
                "-o", "json")
    assert r.code == 0, r.err
    shown = run_cli(capsys, "snapshots", "show", r.json()["id"], "--store", store, "-o", "json")
    assert {o["partition"]: (o["offset"], o["metadata"])
            for o in shown.json()["groups"][g]["offsets"]} == before
    r = run_cli(capsys, "groups", "describe", g, "-b", bootstrap, "-o", "json")
    assert {x["partition"]: x["metadata"] for x in r.json()} == {p: m for p, (_, m) in before.items()}

    r = run_cli(capsys, "offsets", "reset", "-g", g, "-t", src, "--to-offset", "2", "--execute",
                "--snapshot-store", store, "-b", bootstrap, "-o", "json")
    assert r.code == 0, r.err
    snap = r.json()["report"]["snapshot_id"]
    assert _exact(bootstrap, g) == {p: (2, m) for p, (_, m) in before.items()}
    # another writer changes partition 1's metadata (and puts its offset back where it was)
    with KafkaAdmin(Connection(bootstrap_servers=bootstrap)) as admin:
        tp1 = TopicPartition(src, 1)
        fut = admin.alter_offsets_async(g, {tp1: CommittedOffset(before[1][0], "other\x1b[31m")})
        assert admin.alter_result(g, fut) == {tp1: None}
    r = run_cli(capsys, "groups", "describe", g, "-b", bootstrap)
    assert "other\\x1b[31m" in r.out and "\x1b" not in r.out, r.out  # escaped when shown
    r = run_cli(capsys, "snapshots", "rollback", snap, "--execute", "--no-snapshot",
                "--store", store, "-b", bootstrap, "-o", "json")
    assert r.code == 0, r.out + r.err
    assert _exact(bootstrap, g) == before
    # asked to, a reset commits no metadata (as kafka-consumer-groups.sh does): --to-current
    # then clears it and moves nothing
    r = run_cli(capsys, "offsets", "reset", "-g", g, "--all-topics", "--to-current",
                "--clear-metadata", "--execute", "--no-snapshot", "-b", bootstrap)
    assert r.code == 0, r.out + r.err
    assert _exact(bootstrap, g) == {p: (o, "") for p, (o, _) in before.items()}
