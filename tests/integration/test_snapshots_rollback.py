"""Rollback against a real broker: the issue's round trip, cluster-id mismatch, active groups."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kafkatools import LiveConsumer, commit, committed, create_topic, produce_n
from offsetkeeper.snapshots.model import new_snapshot_id
from offsetkeeper.snapshots.store import SnapshotStore
from tests.cli import run_cli

pytestmark = pytest.mark.integration


@pytest.fixture
def cli(capsys, monkeypatch, tmp_path, bootstrap):
    """Run `offsetkeeper snapshots ...` in-process: (exit code, stdout, stderr)."""
    store = tmp_path / "snaps"
    monkeypatch.delenv("OFFSETKEEPER_SNAPSHOT_STORE", raising=False)
    (tmp_path / "none.yaml").write_text("{}\n")
    monkeypatch.setenv("OFFSETKEEPER_CONFIG", str(tmp_path / "none.yaml"))

    def run(*args: str, command: tuple[str, ...] = ("snapshots",),
            store_flag: str = "--store") -> tuple[int, str, str]:
        r = run_cli(capsys, *command, *args, store_flag, str(store), "-b", bootstrap)
        return r.code, r.out, r.err

    run.store = SnapshotStore(str(store))
    return run


@pytest.fixture
def setup(bootstrap, unique):
    topic, group = unique("rb"), unique("g")
    create_topic(bootstrap, topic, partitions=2)
    produce_n(bootstrap, topic, 2, 20)
    commit(bootstrap, group, {(topic, 0): 5, (topic, 1): 12})
    return topic, group


def _create(cli, group: str) -> str:
    code, out, err = cli("create", "-g", group, "-o", "json")
    assert code == 0, err
    return json.loads(out)["id"]


def test_snapshot_change_verify_rollback_verify(cli, bootstrap, setup):
    """The issue's round trip; the cluster is checked with an independent client."""
    topic, group = setup
    sid = _create(cli, group)
    commit(bootstrap, group, {(topic, 0): 18, (topic, 1): 2})

    code, _, err = cli("verify", sid)
    assert code == 1 and "differ" in err

    code, out, _ = cli("rollback", sid, "-o", "json")  # dry run: plan only
    assert code == 0
    plan = json.loads(out)
    targets = {p["partition"]: p["target"] for g in plan["groups"] for p in g["partitions"]}
    assert targets == {0: 5, 1: 12}
    assert committed(bootstrap, group, topic, 2) == {0: 18, 1: 2}

    code, out, err = cli("rollback", sid, "--execute", "-o", "json")
    assert code == 0, err
    result = json.loads(out)
    assert result["report"]["status"] == "SUCCESS"
    assert committed(bootstrap, group, topic, 2) == {0: 5, 1: 12}
    code, _, err = cli("verify", sid)
    assert code == 0, err

    # the rollback snapshotted the offsets it replaced: rolling back to that undoes it
    undo = result["report"]["snapshot_id"]
    assert undo and undo != sid
    code, _, err = cli("rollback", undo, "--execute")
    assert code == 0, err
    assert committed(bootstrap, group, topic, 2) == {0: 18, 1: 2}
    assert "snapshot taken before the change" in err


def test_rollback_with_no_snapshot_takes_none(cli, bootstrap, setup):
    topic, group = setup
    sid = _create(cli, group)
    commit(bootstrap, group, {(topic, 0): 1})
    code, _, err = cli("rollback", sid, "--execute", "--no-snapshot")
    assert code == 0, err
    assert "snapshots rollback" not in err  # --no-snapshot: nothing to undo with
    assert len(cli.store.list()) == 1
    assert committed(bootstrap, group, topic, 2)[0] == 5


def test_cluster_mismatch_is_refused_without_the_flag(cli, bootstrap, setup):
    topic, group = setup
    sid = _create(cli, group)
    other = dataclasses.replace(cli.store.load(sid), id=new_snapshot_id(),
                                cluster_id="another-cluster-id")
    cli.store.save(other)
    commit(bootstrap, group, {(topic, 0): 9})

    code, _, err = cli("rollback", other.id, "--execute")
    assert code == 2
    assert "another-cluster-id" in err and "--allow-cluster-mismatch" in err
    assert committed(bootstrap, group, topic, 2)[0] == 9

    # offsets reset --from-snapshot goes through the same check
    code, _, err = cli("--from-snapshot", other.id, "--execute", command=("offsets", "reset"),
                       store_flag="--snapshot-store")
    assert code == 2 and "--allow-cluster-mismatch" in err
    assert committed(bootstrap, group, topic, 2)[0] == 9

    code, _, err = cli("rollback", other.id, "--execute", "--allow-cluster-mismatch")
    assert code == 0, err
    assert "another-cluster-id" in err and "--allow-cluster-mismatch was given" in err
    assert committed(bootstrap, group, topic, 2)[0] == 5


def test_rollback_refuses_a_group_with_active_members(cli, bootstrap, setup):
    topic, group = setup
    sid = _create(cli, group)
    consumer = LiveConsumer(bootstrap, group, [topic])
    try:
        code, out, err = cli("rollback", sid, "--execute")
    finally:
        consumer.stop()
    assert code == 1, (out, err)
    assert "refused" in err and group in err, out


def test_rollback_of_missing_or_corrupt_snapshot(cli, setup):
    _, group = setup
    code, _, err = cli("rollback", "snap-20200101T000000.000Z-beef")
    assert code == 2 and "snap-20200101T000000.000Z-beef.json" in err  # bad input (issue 22 #20)
    sid = _create(cli, group)
    with open(cli.store.path(sid), "w") as f:
        f.write('{"schema_version": 1, "id": ')
    code, _, err = cli("rollback", sid, "--execute")
    assert code == 1 and "corrupt" in err and f"{sid}.json" in err


def test_python_api_with_a_memory_store(admin, setup):
    """The documented library path: take, save to an fsspec URL, verify, plan and apply."""
    from offsetkeeper.reset.apply import ApplyOptions, apply_plan
    from offsetkeeper.snapshots import SnapshotStore, plan_rollback, take_snapshot, verify
    from offsetkeeper.snapshots.capture import snapshot_fn

    topic, group = setup
    store = SnapshotStore(f"memory://snaps-{group}")
    snap = take_snapshot(admin, [group], description="api")
    store.save(snap)
    assert verify(admin, store.load(snap.id)) == []
    commit(admin.conn.bootstrap_servers, group, {(topic, 1): 3})
    [d] = verify(admin, snap)
    assert (d.before, d.after, d.delta) == (12, 3, -9)
    plan, note = plan_rollback(admin, snap)
    assert note is None
    report = apply_plan(admin, plan, ApplyOptions(snapshot_fn=snapshot_fn(store.url)))
    assert report.status == "SUCCESS" and report.snapshot_id in {s.id for s in store.list()}
    assert verify(admin, snap) == []


def test_every_printed_undo_hint_runs_as_pasted(capsys, monkeypatch, tmp_path, bootstrap, unique):
    """Invariant (issue 31 item 9): the undo hint a reset prints, and the one a rollback prints,
    is a complete command: pasted as is (no bootstrap in the environment or a config file, the
    snapshot in a store given by flag), it reaches the same cluster and store and undoes the
    change. It used to fail with "no cluster given"."""
    import re
    import shlex

    monkeypatch.delenv("OFFSETKEEPER_SNAPSHOT_STORE", raising=False)
    monkeypatch.delenv("OFFSETKEEPER_BOOTSTRAP_SERVER", raising=False)
    (tmp_path / "none.yaml").write_text("{}\n")
    monkeypatch.setenv("OFFSETKEEPER_CONFIG", str(tmp_path / "none.yaml"))
    topic, group = unique("undo"), unique("g")
    create_topic(bootstrap, topic, partitions=1)
    produce_n(bootstrap, topic, 1, 20)
    commit(bootstrap, group, {(topic, 0): 5})
    store = tmp_path / "my snaps"

    def hint(err: str) -> list[str]:
        m = re.search(r"\(undo: offsetkeeper (snapshots rollback .*?--execute[^)]*)\)",
                      err.replace("\n", " "))
        assert m, err
        return shlex.split(m.group(1))

    r = run_cli(capsys, "offsets", "reset", "-g", group, "-t", topic, "--to-offset", "17",
                "--execute", "--snapshot-store", store, "-b", bootstrap)
    assert r.code == 0, r.err
    assert committed(bootstrap, group, topic, 1) == {0: 17}
    undo = hint(r.err)
    r = run_cli(capsys, *undo)
    assert r.code == 0, r.err
    assert committed(bootstrap, group, topic, 1) == {0: 5}
    r = run_cli(capsys, *hint(r.err))  # the rollback's own undo hint
    assert r.code == 0, r.err
    assert committed(bootstrap, group, topic, 1) == {0: 17}
