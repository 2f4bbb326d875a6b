"""Snapshots against a real broker: capture, the CLI, verify/diff, corrupt and missing files."""

from __future__ import annotations

import json

import pytest

from kafkatools import LiveConsumer, commit, create_topic, produce_n
from offsetkeeper.models import CommittedOffset, TopicPartition
from offsetkeeper.snapshots.capture import take_snapshot
from offsetkeeper.snapshots.compare import verify
from offsetkeeper.snapshots.store import SnapshotStore
from tests.cli import run_cli

pytestmark = pytest.mark.integration


@pytest.fixture
def cli(capsys, monkeypatch, tmp_path, bootstrap):
    """Run `offsetkeeper snapshots ...` in-process: (exit code, stdout, stderr)."""
    store = tmp_path / "snaps"
    monkeypatch.delenv("OFFSETKEEPER_SNAPSHOT_STORE", raising=False)
    monkeypatch.setenv("OFFSETKEEPER_CONFIG", str(tmp_path / "none.yaml"))
    (tmp_path / "none.yaml").write_text("{}\n")

    def run(*args: str, connect: bool = True) -> tuple[int, str, str]:
        extra = ["--store", str(store)] + (["-b", bootstrap] if connect else [])
        r = run_cli(capsys, "snapshots", *args, *extra)
        return r.code, r.out, r.err

    run.store = SnapshotStore(str(store))
    return run


@pytest.fixture
def topic_group(bootstrap, unique):
    topic, group = unique("snap"), unique("g")
    create_topic(bootstrap, topic, partitions=3)
    produce_n(bootstrap, topic, 3, 10)
    commit(bootstrap, group, {(topic, 0): 4, (topic, 1): 7})
    return topic, group


def test_take_snapshot_reads_offsets_metadata_watermarks_and_cluster(admin, bootstrap, unique,
                                                                     topic_group):
    topic, group = topic_group
    admin.alter_result(group, admin.alter_offsets_async(
        group, {TopicPartition(topic, 2): CommittedOffset(9, "meta-9")}))
    missing = unique("nogroup")
    snap = take_snapshot(admin, [group, missing], description="d")
    assert snap.description == "d" and snap.bootstrap_servers == bootstrap
    assert snap.cluster_id == admin.cluster_id()
    offs = snap.groups[group].offsets
    assert {tp.partition: c.offset for tp, c in offs.items()} == {0: 4, 1: 7, 2: 9}
    assert offs[TopicPartition(topic, 2)].metadata == "meta-9"
    assert snap.groups[group].state == "empty"
    assert snap.groups[missing].offsets == {}
    # watermarks of every partition of the topic, as log start / log end
    assert {tp.partition: (w.low, w.high) for tp, w in snap.partitions.items()} == {
        0: (0, 10), 1: (0, 10), 2: (0, 10)}
    assert verify(admin, snap) == []


def test_all_groups_snapshot_includes_the_group(admin, topic_group):
    _, group = topic_group
    snap = take_snapshot(admin, None)
    assert group in snap.groups and snap.groups[group].offsets


def test_create_show_list_verify_diff_delete(cli, bootstrap, topic_group):
    topic, group = topic_group
    code, out, err = cli("create", "-g", group, "--description", "before change", "-o", "json")
    assert code == 0, err
    created = json.loads(out)
    sid = created["id"]
    assert created["groups"] == 1 and created["partitions"] == 2
    assert created["path"].endswith(f"{sid}.json")

    code, out, _ = cli("show", sid, "-o", "json", connect=False)
    doc = json.loads(out)
    assert doc["schema_version"] == 1 and doc["description"] == "before change"
    assert [o["offset"] for o in doc["groups"][group]["offsets"]] == [4, 7]

    code, out, _ = cli("show", sid, "-o", "csv", connect=False)
    assert out.splitlines()[0].startswith("group,state,topic,partition,offset")
    assert f"{group},empty,{topic},0,4,,0,10,6" in out

    code, out, _ = cli("list", "-o", "json", connect=False)
    assert [s["id"] for s in json.loads(out)] == [sid]

    code, out, err = cli("verify", sid)
    assert code == 0, err
    assert "match" in out

    commit(bootstrap, group, {(topic, 0): 9, (topic, 2): 1})
    code, out, err = cli("verify", sid, "-o", "json")
    assert code == 1
    assert "2 partition offset(s) differ" in err and sid in err
    rows = {(r["partition"], r["change"]): r for r in json.loads(out)}
    assert rows[(0, "changed")]["before"] == 4 and rows[(0, "changed")]["delta"] == 5
    assert rows[(2, "added")]["after"] == 1

    code, out, _ = cli("diff", sid, "--live", "-o", "csv")
    assert code == 0
    assert f"{group},{topic},0,4,9,5,changed" in out

    code, out, _ = cli("create", "-g", group, "-o", "json")
    sid2 = json.loads(out)["id"]
    code, out, _ = cli("diff", sid, sid2, "-o", "json", connect=False)
    assert code == 0 and len(json.loads(out)) == 2
    code, out, _ = cli("diff", sid2, connect=True)
    assert code == 0 and "no differences" in out
    code, _, err = cli("diff", sid, sid2, "--live", connect=False)
    assert code == 2

    code, out, _ = cli("list", "-o", "csv", connect=False)
    assert [line.split(",")[0] for line in out.splitlines()[1:]] == [sid2, sid]
    code, out, _ = cli("delete", sid, sid2, connect=False)
    assert code == 0 and cli.store.list() == []


def test_corrupt_and_missing_snapshots_exit_1_naming_the_file(cli, topic_group):
    _, group = topic_group
    code, out, _ = cli("create", "-g", group, "-o", "json")
    sid = json.loads(out)["id"]
    path = cli.store.path(sid)
    with open(path, "r+") as f:
        f.truncate(40)
    for args, connect in ((("show", sid), False), (("verify", sid), True),
                          (("diff", sid, "--live"), True)):
        code, _, err = cli(*args, connect=connect)
        assert code == 1, args
        assert "corrupt" in err and sid in err and f"{sid}.json" in err

    # a snapshot that does not exist is bad input: exit 2 (issue 22 item 20)
    code, _, err = cli("verify", "snap-20200101T000000.000Z-dead")
    assert code == 2 and "not found" in err and "snap-20200101T000000.000Z-dead.json" in err
    code, _, err = cli("delete", "snap-20200101T000000.000Z-dead", connect=False)
    assert code == 2 and "not found" in err
    code, _, err = cli("show", "../../etc/passwd", connect=False)
    assert code == 2 and "not a snapshot id" in err


def test_create_usage_errors(cli):
    code, _, err = cli("create")
    assert code == 2 and "--all-groups" in err
    code, _, err = cli("create", "-g", "x", "--all-groups")
    assert code == 2


def test_create_all_groups_and_a_group_without_offsets(cli, unique, topic_group, bootstrap):
    topic, group = topic_group
    code, out, err = cli("create", "--all-groups", "-o", "json")
    assert code == 0, err
    sid = json.loads(out)["id"]
    assert group in cli.store.load(sid).groups

    empty = unique("never-committed")  # a live group that has not committed yet
    consumer = LiveConsumer(bootstrap, empty, [topic])
    try:
        code, out, err = cli("create", "-g", group, "-g", empty)
    finally:
        consumer.stop()
    assert code == 0, err
    assert "saved: 2 groups, 2 partitions" in out
    assert f"group {empty} has no committed offsets" in err


def test_create_of_a_group_that_does_not_exist_is_an_error(cli, unique):
    """Invariant: `snapshots create -g nosuch` is exit 2 and saves nothing (a typo is not an
    empty snapshot)."""
    nosuch = unique("nosuch")
    code, _, err = cli("create", "-g", nosuch)
    assert code == 2 and f"consumer group '{nosuch}' does not exist" in err
    assert cli.store.ids() == []


def test_library_create_snapshot_refuses_a_misspelled_group_as_the_cli_does(admin, tmp_path,
                                                                            unique, topic_group):
    """Invariant: `offsetkeeper.create_snapshot` (library, dashboard) agrees with `snapshots
    create`: a named group the cluster does not know is an UnknownGroupError and nothing is
    saved (it used to save an empty snapshot); real groups are saved."""
    import offsetkeeper

    _, group = topic_group
    store = str(tmp_path / "lib-snaps")
    nosuch = unique("nosuch")
    with pytest.raises(offsetkeeper.UnknownGroupError, match=f"'{nosuch}' does not exist"):
        offsetkeeper.create_snapshot(admin, [group, nosuch], store=store)
    assert SnapshotStore(store).ids() == []
    sid = offsetkeeper.create_snapshot(admin, [group], store=store)
    assert SnapshotStore(store).ids() == [sid]


def test_latest_against_live_is_this_clusters_in_cli_and_library(cli, admin, topic_group):
    """Invariant: `latest` compared with a live cluster is the newest snapshot taken on that
    cluster, in `snapshots diff/verify` and in `ops.diff_with_live` (the dashboard) alike: a
    newer snapshot of another cluster is never the one compared."""
    import dataclasses

    from offsetkeeper.ops import diff_with_live

    _, group = topic_group
    code, _, err = cli("create", "-g", group)
    assert code == 0, err
    (own,) = cli.store.ids()
    taken = take_snapshot(admin, [group])  # newer, then made another cluster's, offsets moved
    moved = dataclasses.replace(taken.groups[group], offsets={
        tp: CommittedOffset(0) for tp in taken.groups[group].offsets})
    cli.store.save(dataclasses.replace(taken, cluster_id="another-cluster",
                                       bootstrap_servers="elsewhere:9092", groups={group: moved}))
    assert cli.store.ids()[0] != own
    assert diff_with_live(admin, "latest", store=cli.store.url) == []
    code, out, err = cli("verify", "latest")
    assert code == 0 and own in out, err
    code, out, err = cli("diff", "latest")
    assert code == 0 and f"no differences between {own} and live" in out, err
