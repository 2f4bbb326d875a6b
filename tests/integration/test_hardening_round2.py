"""Regression tests for issue 22, "Hardening, round two", against the real broker."""

from __future__ import annotations

import json

import pytest

from kafkatools import commit, committed, create_topic, produce_n
from tests.cli import run_cli

pytestmark = pytest.mark.integration

NONE = -1001  # librdkafka's "no committed offset"


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """No config file or store of the user's leaks into the test."""
    (tmp_path / "none.yaml").write_text("{}\n")
    monkeypatch.setenv("OFFSETKEEPER_CONFIG", str(tmp_path / "none.yaml"))
    monkeypatch.setenv("OFFSETKEEPER_SNAPSHOT_STORE", str(tmp_path / "snaps"))
    return tmp_path


# -- item 4: rollback restores "no committed offset" --------------------------------------------

def test_rollback_restores_no_committed_offset(capsys, bootstrap, unique, isolated):
    """Invariant: a reset's undo leaves the group exactly as before: partitions that had no
    committed offset before the reset have none after the rollback (OffsetDelete), the others
    are back at their offsets, and the rollback plan says which commits it deletes."""
    topic, group = unique("nocommit"), unique("g")
    create_topic(bootstrap, topic, partitions=3)
    produce_n(bootstrap, topic, 3, 10)
    commit(bootstrap, group, {(topic, 0): 7})

    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "-g", group, "-t", topic,
                "--to-earliest", "--execute")
    assert r.code == 0, r.err
    assert committed(bootstrap, group, topic, 3) == {0: 0, 1: 0, 2: 0}
    sid = next(w for w in r.err.split() if w.startswith("snap-"))
    snap = json.loads(run_cli(capsys, "snapshots", "show", sid, "-o", "json").out)
    assert snap["schema_version"] == 2
    assert sorted(u["partition"] for u in snap["groups"][group]["uncommitted"]) == [1, 2]

    r = run_cli(capsys, "snapshots", "rollback", sid, "-b", bootstrap, "-o", "json")
    assert r.code == 0, r.err
    parts = {p["partition"]: p for p in r.json()["groups"][0]["partitions"]}
    assert parts[1]["delete"] and parts[2]["delete"] and "OffsetDelete" in parts[1]["note"]
    assert parts[0]["target"] == 7 and not parts[0]["delete"]

    r = run_cli(capsys, "snapshots", "rollback", sid, "-b", bootstrap, "--execute")
    assert r.code == 0, r.err
    assert "SUCCESS" in r.err
    assert committed(bootstrap, group, topic, 3) == {0: 7, 1: NONE, 2: NONE}

    # ... and the rollback of the rollback puts the reset's offsets back (nothing is lost).
    undo = next(w for w in r.err.split() if w.startswith("snap-"))
    r = run_cli(capsys, "snapshots", "rollback", undo, "-b", bootstrap, "--execute")
    assert r.code == 0, r.err
    assert committed(bootstrap, group, topic, 3) == {0: 0, 1: 0, 2: 0}


# -- item 5: names read back exactly; a file naming a missing group says so ---------------------
# librdkafka strips leading whitespace from a consumer's group.id, so groups whose names start
# with a space are created and read here through the admin API (independent of offsetkeeper).

def admin_commit(bootstrap: str, group: str, offsets: dict) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    a = AdminClient({"bootstrap.servers": bootstrap})
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p, o)
                                               for (t, p), o in offsets.items()])
    a.alter_consumer_group_offsets([req])[group].result(timeout=30)


def admin_committed(bootstrap: str, group: str) -> dict:
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    a = AdminClient({"bootstrap.servers": bootstrap})
    res = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
    return {(tp.topic, tp.partition): tp.offset for tp in res.result(timeout=30).topic_partitions
            if tp.offset >= 0}

def test_export_then_from_file_keeps_names_exactly(capsys, bootstrap, unique, isolated):
    """Invariant: `--export` then `--from-file` changes exactly the groups and topics exported,
    names read back byte for byte (RFC 4180: quotes, leading/trailing spaces), and creates no
    group nobody named."""
    topic = unique("names")
    create_topic(bootstrap, topic, partitions=1)
    produce_n(bootstrap, topic, 1, 10)
    quoted, lead = f' "q{unique("")}" ', f" lead{unique('')}"
    for g in (quoted, lead):
        admin_commit(bootstrap, g, {(topic, 0): 5})
    plan = isolated / "plan.csv"
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "-g", quoted, "-g", lead, "-t", topic,
                "--to-offset", "2", "--export", str(plan))
    assert r.code == 0, r.err
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "--from-file", str(plan),
                "--all-groups", "-o", "json")
    assert r.code == 0, r.err
    assert sorted(g["group"] for g in r.json()["groups"]) == sorted([quoted, lead])
    assert not any(g["new_group"] for g in r.json()["groups"]), [(g["group"], g["state"], g["partitions"]) for g in r.json()["groups"]]
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "--from-file", str(plan),
                "--all-groups", "--execute")
    assert r.code == 0, r.err
    for g in (quoted, lead):
        assert admin_committed(bootstrap, g) == {(topic, 0): 2}
    for wrong in (quoted.strip(), lead.strip()):
        assert admin_committed(bootstrap, wrong) == {}


def test_file_plan_naming_a_missing_group_says_so_loudly(capsys, bootstrap, unique, isolated):
    """Invariant: a plan read from a file that names a group the cluster does not have says so
    in the plan (every partition's note) and on stderr as a warning, in the dry run and when
    executing, even though the file's groups may be created."""
    topic, missing = unique("missing"), unique("nosuchgroup")
    create_topic(bootstrap, topic, partitions=1)
    produce_n(bootstrap, topic, 1, 10)
    plan = isolated / "plan.csv"
    plan.write_text(f"{missing},{topic},0,3\n{unique('other')},{topic},0,3\n")
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "--from-file", str(plan),
                "--all-groups")
    assert r.code == 0, r.err
    assert "do not exist" in r.err and missing in r.err and "warning" in r.err.lower()
    assert "DOES NOT EXIST" in r.out
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "--from-file", str(plan),
                "--all-groups", "--execute")
    assert r.code == 0 and "warning" in r.err and missing in r.err, r.err


# -- item 6: garbage offsets from ZooKeeper are refused; '#' names survive the CSV --------------

@pytest.fixture
def zk(zookeeper_hosts):
    import uuid

    from kazoo.client import KazooClient

    client = KazooClient(hosts=zookeeper_hosts)
    client.start(timeout=20)
    chroot = f"/kafka-{uuid.uuid4().hex[:8]}"
    try:
        yield client, chroot, f"{zookeeper_hosts}{chroot}"
    finally:
        client.stop()
        client.close()


def test_zookeeper_garbage_offsets_are_refused(zk, capsys, bootstrap, unique, isolated):
    """Invariant: a ZooKeeper offset node holding a negative number or one of 2^63 or more is
    never exported as an offset nor migrated: `zk export` reports the node and exits 1,
    `--from-zookeeper --execute` refuses it by path (exit 1) and commits nothing."""
    client, chroot, address = zk
    topic, group = unique("zkbad"), unique("legacy")
    create_topic(bootstrap, topic, partitions=2)
    produce_n(bootstrap, topic, 2, 10)
    client.create(f"{chroot}/consumers/{group}/offsets/{topic}/0", b"-5", makepath=True)
    client.create(f"{chroot}/consumers/{group}/offsets/{topic}/1", str(2**63).encode(),
                  makepath=True)
    client.ensure_path(f"{chroot}/consumers/{group}/ids")
    r = run_cli(capsys, "zk", "export", "-z", address, "-g", group, "-o", "csv")
    assert r.code == 1 and r.out == "", r
    assert f"{topic}/0" in r.err and "negative" in r.err and "2^63" in r.err
    r = run_cli(capsys, "offsets", "reset", "--from-zookeeper", address, "-g", group,
                "-b", bootstrap, "--execute")
    assert r.code == 1 and f"{topic}/" in r.err, r
    assert committed(bootstrap, group, topic, 2) == {0: NONE, 1: NONE}


def test_zk_export_csv_quotes_a_leading_hash(zk, capsys, bootstrap, unique, isolated):
    """Invariant: `zk export -o csv` quotes a name starting with '#' (and other names the
    --from-file reader would change), so the exported file migrates every group: none is
    read back as a comment and skipped."""
    client, chroot, address = zk
    topic, group = unique("zkhash"), "#" + unique("legacy")
    create_topic(bootstrap, topic, partitions=1)
    produce_n(bootstrap, topic, 1, 10)
    client.create(f"{chroot}/consumers/{group}/offsets/{topic}/0", b"4", makepath=True)
    r = run_cli(capsys, "zk", "export", "-z", address, "-g", group, "-o", "csv")
    assert r.code == 0, r.err
    assert r.out == f'"{group}",{topic},0,4\n'
    plan = isolated / "zk.csv"
    plan.write_text(r.out)
    r = run_cli(capsys, "offsets", "reset", "--from-file", str(plan), "--all-groups",
                "-b", bootstrap, "--execute")
    assert r.code == 0, r.err
    assert admin_committed(bootstrap, group) == {(topic, 0): 4}


# -- item 8: names that are not valid UTF-8 never reach the client ------------------------------

BAD_NAMES = ["a\udcffb", "lone\ud800", "nul\x00byte"]


@pytest.mark.parametrize("name", BAD_NAMES, ids=["invalid-utf8", "lone-surrogate", "nul"])
def test_invalid_utf8_group_names_are_refused_before_the_client(name, capsys, bootstrap, unique,
                                                                 isolated):
    """Invariant: a group name that is not valid UTF-8 (bytes like $'a\\xffb' arrive as lone
    surrogates) or holds a NUL is refused with exit 2 before any Kafka client sees it — never a
    segfault (exit 139) — by `groups describe`, `offsets reset` and `snapshots create`."""
    topic = unique("utf8")
    create_topic(bootstrap, topic, partitions=1)
    for args in (["groups", "describe", name], ["groups", "describe", name, "--members"],
                 ["offsets", "reset", "-g", name, "-t", topic, "--to-earliest", "--execute"],
                 ["snapshots", "create", "-g", name]):
        r = run_cli(capsys, *args, "-b", bootstrap)
        assert r.code == 2, (args, r)
        assert "refused before reaching the Kafka client" in r.err


def test_invalid_names_in_a_snapshot_file_are_refused(capsys, bootstrap, unique, isolated):
    """Invariant: a lone surrogate in a group or topic name read from a file (a JSON escape in
    a snapshot) is refused by the rollback before the client sees it (exit 2)."""
    from offsetkeeper.snapshots.store import SnapshotStore

    sid = "snap-20261121T194501.123Z-bad0"
    doc = {"schema_version": 1, "id": sid, "created_at": "2026-11-21T19:45:01.123Z",
           "cluster_id": "", "bootstrap_servers": bootstrap, "description": "",
           "groups": {"g\ud800": {"state": "empty", "offsets": [
               {"topic": "t", "partition": 0, "offset": 1, "metadata": ""}]}},
           "partitions": []}
    store = SnapshotStore(str(isolated / "snaps"))
    store.fs.makedirs(store.root, exist_ok=True)
    (isolated / "snaps" / f"{sid}.json").write_text(json.dumps(doc))
    r = run_cli(capsys, "snapshots", "rollback", sid, "-b", bootstrap,
                "--allow-cluster-mismatch")
    assert r.code == 2 and "not valid UTF-8" in r.err, r


# -- item 16: dev-broker start with another --port than the running one ------------------------

def test_dev_broker_start_with_another_port_is_refused(capsys, tmp_path):
    """Invariant: `dev-broker start --port P2` while a broker from the same data directory runs
    on P1 never reports the P1 broker as started (exit 0): it is refused with exit 2 naming the
    running one; the same request again returns the running broker."""
    from offsetkeeper.devbroker import free_port

    p1, p2 = free_port(), free_port()
    d = tmp_path / "b"
    r = run_cli(capsys, "dev-broker", "start", "--port", p1, "--data-dir", d, "-o", "json")
    try:
        assert r.code == 0, r.err
        r = run_cli(capsys, "dev-broker", "start", "--port", p2, "--data-dir", d, "-o", "json")
        assert r.code == 2 and f"127.0.0.1:{p1}" in r.err and "already runs" in r.err, r
        r = run_cli(capsys, "dev-broker", "start", "--port", p1, "--data-dir", d, "-o", "json")
        assert r.code == 0 and r.json()["bootstrap"] == f"127.0.0.1:{p1}"
    finally:
        run_cli(capsys, "dev-broker", "stop", "--data-dir", d)


# -- item 20: exit codes of bad input ---------------------------------------------------------

def test_missing_snapshot_and_backup_are_bad_input(capsys, bootstrap, isolated):
    """Invariant: naming a snapshot or backup that does not exist is bad input: exit 2, one
    line (`snapshots rollback nosuch`, `snapshots show nosuch`, `restore run DEST/nosuch`)."""
    for args in (["snapshots", "rollback", "nosuch", "-b", bootstrap],
                 ["snapshots", "show", "nosuch"],
                 ["snapshots", "delete", "nosuch"],
                 ["restore", "run", f"{isolated}/nosuch", "-b", bootstrap]):
        r = run_cli(capsys, *args)
        assert r.code == 2, (args, r)
        assert "not found" in r.err and len(r.err.strip().splitlines()) == 1, (args, r.err)


def test_shift_by_garbage_is_one_line_exit_2(capsys, bootstrap):
    """Invariant: an integer option that is not an integer (`--shift-by +-5`) is one line on
    stderr and exit 2, never Click's three-line usage error."""
    for args in (["offsets", "reset", "-g", "g", "-t", "t", "--shift-by", "+-5"],
                 ["streaming", "reset", "/nonexistent", "--shift-by", "+-5"]):
        r = run_cli(capsys, *args, "-b", bootstrap)
        assert r.code == 2, r
        assert r.err.strip().splitlines() == [
            "error: --shift-by '+-5' is not an integer (ASCII digits only)"], r.err


def test_dry_run_against_a_misspelled_group_exits_2_with_a_suggestion(capsys, bootstrap, unique,
                                                                      isolated):
    """Invariant: a dry run against a group that does not exist is not a success: the plan is
    shown, then exit 2 with "did you mean <the closest existing group>?" (as --execute, and as
    `groups describe` and `snapshots create`)."""
    topic, group = unique("typo"), unique("payments")
    create_topic(bootstrap, topic, partitions=1)
    produce_n(bootstrap, topic, 1, 10)
    commit(bootstrap, group, {(topic, 0): 3})
    typo = group[:3] + group[4:]  # one letter left out
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "-g", typo, "-t", topic,
                "--to-earliest", "-o", "csv")  # CSV keeps the note whole (tables shorten it)
    assert r.code == 2, r
    assert f"did you mean '{group}'?" in r.err and "--execute needs --create-groups" in r.out
    for args in (["offsets", "reset", "-g", typo, "-t", topic, "--to-earliest", "--execute"],
                 ["groups", "describe", typo], ["snapshots", "create", "-g", typo]):
        r = run_cli(capsys, *args, "-b", bootstrap)
        assert r.code == 2 and f"did you mean '{group}'?" in r.err, (args, r)
    assert committed(bootstrap, typo, topic, 1) == {0: NONE}
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "-g", typo, "-t", topic,
                "--to-earliest", "--create-groups")  # creating it on purpose: a normal dry run
    assert r.code == 0, r.err
