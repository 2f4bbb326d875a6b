"""`offsetkeeper streaming` commands against the real broker on checkpoints in the format of
Spark's JVM Kafka source (hand-made: v1, the metadata line, the offsets line). No Spark."""

from __future__ import annotations

import pytest

from cli import run_cli
from kafkatools import LiveConsumer, commit, committed
from offsetkeeper.models import TopicPartition
from offsetkeeper.streaming.view import load_view
from streaming_support import jvm_checkpoint, minute_topic

pytestmark = [pytest.mark.integration]


@pytest.fixture
def topic(bootstrap, unique):
    return minute_topic(bootstrap, unique("ck"))


def test_commit_to_group_through_the_executor(bootstrap, topic, unique, tmp_path, capsys):
    """Invariant: commit-to-group commits exactly the last committed batch's end offsets,
    only with --execute, and refuses a group with active members (exit 1, nothing changed)."""
    group = unique("ck-g")
    ck = jvm_checkpoint(tmp_path / "ck", {0: {topic: {"0": 5, "1": 7}}, 1: {topic: {"0": 12, "1": 9}},
                                          2: {topic: {"0": 15, "1": 15}}}, commits=[0, 1])
    b = ["-b", bootstrap, "--snapshot-store", str(tmp_path / "snaps")]
    r = run_cli(capsys, "streaming", "commit-to-group", ck, "--group", group, *b)
    assert r.code == 0 and committed(bootstrap, group, topic, 2) == {0: -1001, 1: -1001}
    r = run_cli(capsys, "streaming", "commit-to-group", ck, "--group", group, *b, "--execute")
    assert r.code == 0, r.err
    assert committed(bootstrap, group, topic, 2) == {0: 12, 1: 9}  # batch 1, not pending 2

    live = LiveConsumer(bootstrap, group, [topic])
    try:
        r = run_cli(capsys, "streaming", "commit-to-group", ck, "--group", group, *b, "--execute")
        assert r.code == 1 and "active member" in r.err
    finally:
        live.stop()


def test_commit_to_group_snapshots_the_group_first(admin, bootstrap, topic, unique, tmp_path):
    """Invariant: `ops.streaming.commit_to_group` (library and CLI alike) snapshots the group
    through the executor's snapshot_fn before committing, like every other offset change: the
    report names the snapshot, which holds the group's offsets from before (undo point); with
    snapshot=False none is taken."""
    from offsetkeeper.ops import ExecuteOptions
    from offsetkeeper.ops.streaming import CommitToGroupRequest, commit_to_group
    from offsetkeeper.snapshots.store import SnapshotStore

    group = unique("ck-snap")
    commit(bootstrap, group, {(topic, 0): 2, (topic, 1): 3})
    ck = jvm_checkpoint(tmp_path / "ck", {0: {topic: {"0": 12, "1": 9}}}, commits=[0])
    store = str(tmp_path / "snaps")
    outcome = commit_to_group(admin, CommitToGroupRequest(
        ck, group, execute=True, options=ExecuteOptions(snapshot_store=store)))
    assert outcome.ok and outcome.report.snapshot_id
    snap = SnapshotStore(store).load(outcome.report.snapshot_id)
    assert {tp.partition: c.offset for tp, c in snap.groups[group].offsets.items()} == {0: 2, 1: 3}
    assert committed(bootstrap, group, topic, 2) == {0: 12, 1: 9}

    commit(bootstrap, group, {(topic, 0): 2, (topic, 1): 3})
    outcome = commit_to_group(admin, CommitToGroupRequest(
        ck, group, execute=True, options=ExecuteOptions(snapshot=False, snapshot_store=store)))
    assert outcome.ok and outcome.report.snapshot_id is None
    assert len(SnapshotStore(store).ids()) == 1


def test_lag_and_reset_from_group_with_clamping(bootstrap, topic, unique, tmp_path, capsys):
    ck = jvm_checkpoint(tmp_path / "ck", {0: {topic: {"0": 15, "1": 20}}}, commits=[0])
    r = run_cli(capsys, "streaming", "lag", ck, "-b", bootstrap, "-o", "json")
    assert r.code == 0
    rows = {x["partition"]: x for x in r.json()}
    assert rows[0]["lag"] == 5 and rows[1]["lag"] == 0 and rows[1]["time_lag_s"] == 0
    assert 4 * 60 < rows[0]["time_lag_s"] < 6 * 60 + 60  # record 15 is ~5 minutes old

    group = unique("ck-from")
    commit(bootstrap, group, {(topic, 0): 3})
    r = run_cli(capsys, "streaming", "reset", ck, "--from-group", group, "-b", bootstrap,
                "--execute", "--alive-window", "0", "-o", "json")
    assert r.code == 0, r.err
    assert load_view(ck).committed_offsets == {TopicPartition(topic, 0): 3,
                                                   TopicPartition(topic, 1): 20}
    assert "commit-to-group" in r.err  # the group a query commits to moves at its next batch
    # The reset's own rewrite is not a live query: its rollback works at once, without
    # --alive-window 0 (it used to refuse for the whole window).
    r = run_cli(capsys, "streaming", "rollback", ck, "--execute")
    assert r.code == 0, r.err
    assert load_view(ck).committed_offsets == {TopicPartition(topic, 0): 15,
                                                   TopicPartition(topic, 1): 20}
    r = run_cli(capsys, "streaming", "reset", ck, "--from-group", group, "-b", bootstrap,
                "--execute", "--alive-window", "0", "-o", "json")
    assert r.code == 0, r.err
    r = run_cli(capsys, "streaming", "reset", ck, "--to-offset", "1000000", "-t", f"{topic}:1",
                "-b", bootstrap, "-o", "json")
    assert r.code == 0
    (p,) = r.json()["partitions"]
    assert p["target"] == 20 and "clamped to log end" in p["note"]
    r = run_cli(capsys, "streaming", "reset", ck, "--from-group", unique("nogroup"), "-b", bootstrap)
    assert r.code == 2 and "no committed offsets" in r.err
