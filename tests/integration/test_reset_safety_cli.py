"""Safety of offset changes end to end (issue 8 items 3, 5, 6, 26; issue 9 deletes through the
executor): every test checks the cluster afterwards with an independent client."""

from __future__ import annotations

import pytest

from cli import run_cli
from kafkatools import LiveConsumer, commit, committed, create_topic, produce_n
from offsetkeeper.config import Connection
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.ops import ExecuteOptions, ResetRequest, TargetKind, TargetSpec, execute_plan
from offsetkeeper.ops import delete as ops_delete
from offsetkeeper.ops.reset import DeleteRequest, plan_reset_request
from offsetkeeper.reset.plan import ResetScope, TopicSpec

pytestmark = pytest.mark.integration


@pytest.fixture
def topic(bootstrap, unique):
    t = unique("safe")
    create_topic(bootstrap, t, 2)
    produce_n(bootstrap, t, 2, 10)
    return t


@pytest.fixture
def group(bootstrap, topic, unique):
    g = unique("grp")
    commit(bootstrap, g, {(topic, 0): 5, (topic, 1): 5})
    return g


def group_ids(bootstrap):
    with KafkaAdmin(Connection(bootstrap)) as a:
        return {g.group_id for g in a.list_groups()}


def test_offsets_moved_by_another_writer_after_planning_refuse_the_group(admin, bootstrap, topic, group):
    """Invariant: two concurrent resets of one group cannot both succeed — right before
    committing, the executor compares the live offsets with the plan's CURRENT and refuses the
    group (exit 1) when another writer moved them; the other writer's offsets stay."""
    req = ResetRequest(target=TargetSpec(TargetKind.TO_EARLIEST),
                       scope=ResetScope(groups=(group,), topics=(TopicSpec(topic),)),
                       options=ExecuteOptions(snapshot=False))
    plan, _ = plan_reset_request(admin, req)
    commit(bootstrap, group, {(topic, 0): 7})          # the "other" run wins the race
    report = execute_plan(admin, plan, req.options)
    assert report.status == "FAILED"
    [r] = report.results
    assert r.status == "refused" and "changed since planning" in r.error and f"{topic}:0" in r.error
    assert committed(bootstrap, group, topic, 2) == {0: 7, 1: 5}


def test_misspelled_group_is_not_created(capsys, bootstrap, topic, group):
    """Invariant: --execute never creates a group nobody asked for: exit 2, nothing committed,
    the group does not appear; --create-groups creates it on purpose."""
    typo = group + "x"
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "-g", typo, "-t", topic,
                "--to-earliest", "--execute")
    assert r.code == 2 and f"consumer group '{typo}' does not exist" in r.err and "--create-groups" in r.err
    assert typo not in group_ids(bootstrap)
    assert committed(bootstrap, typo, topic, 2) == {0: -1001, 1: -1001}
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "-g", typo, "-t", topic,
                "--to-earliest", "--execute", "--create-groups", "--no-snapshot")
    assert r.code == 0, r.err
    assert committed(bootstrap, typo, topic, 2) == {0: 0, 1: 0}


def test_groups_named_by_a_file_may_be_created(capsys, bootstrap, topic, unique, tmp_path):
    """Invariant: a several-group CSV names its groups, so executing it may create them, and
    --all-groups means every group the file names (not every group of the cluster)."""
    g1, g2 = unique("new"), unique("new")
    f = tmp_path / "plan.csv"
    f.write_text(f"{g1},{topic},0,3\n{g2},{topic},1,4\n")
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "--all-groups", "--from-file", f,
                "--execute", "--no-snapshot", "-o", "json")
    assert r.code == 0, r.err
    assert {g["group"] for g in r.json()["plan"]["groups"]} == {g1, g2}
    assert committed(bootstrap, g1, topic, 2) == {0: 3, 1: -1001}
    assert committed(bootstrap, g2, topic, 2) == {0: -1001, 1: 4}


def test_snapshot_onto_a_fresh_cluster_with_all_groups_commits_the_snapshot_groups(
        capsys, bootstrap, dr_bootstrap, topic, group, tmp_path, unique):
    """Invariant (issue 8.6): --from-snapshot --all-groups on a cluster where the groups do not
    exist yet commits every group of the snapshot instead of "SUCCESS: 0/0 groups". The other
    cluster has its own cluster id (Apache Kafka), so it takes --allow-cluster-mismatch and
    without it is refused with exit 2, nothing committed."""
    store = str(tmp_path / "snaps")
    r = run_cli(capsys, "snapshots", "create", "-b", bootstrap, "-g", group, "--store", store, "-o", "json")
    assert r.code == 0, r.err
    snap_id = r.json()["id"]
    create_topic(dr_bootstrap, topic, 2)
    produce_n(dr_bootstrap, topic, 2, 10)
    args = ["offsets", "reset", "-b", dr_bootstrap, "--all-groups", "--from-snapshot", snap_id,
            "--snapshot-store", store, "--execute", "--no-snapshot", "-o", "json"]
    r = run_cli(capsys, *args)
    assert r.code == 2 and "taken on cluster" in r.err and "--allow-cluster-mismatch" in r.err
    assert committed(dr_bootstrap, group, topic, 2) == {0: -1001, 1: -1001}
    r = run_cli(capsys, *args, "--allow-cluster-mismatch")
    assert r.code == 0, r.err
    assert r.json()["report"]["groups_succeeded"] == 1
    assert committed(dr_bootstrap, group, topic, 2) == {0: 5, 1: 5}


def test_a_reset_that_selects_nothing_is_exit_2(capsys, bootstrap, topic, group, unique, tmp_path):
    """Invariant: a scope that selects no partition is bad input, never a success."""
    other = unique("other")
    create_topic(bootstrap, other, 1)
    f = tmp_path / "one.csv"
    f.write_text(f"{topic},0,1\n")
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "-g", group, "--from-file", f, "-t", other,
                "--execute")
    assert r.code == 2 and "selects no partition" in r.err
    assert committed(bootstrap, group, topic, 2) == {0: 5, 1: 5}


def test_from_group_copies_another_groups_offsets(capsys, bootstrap, topic, group, unique):
    """`--from-group G` (Redpanda Console's copy offsets) through the same planner/executor."""
    target = unique("copy")
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "-g", target, "--from-group", group,
                "--execute", "--create-groups", "--no-snapshot")
    assert r.code == 0, r.err
    assert committed(bootstrap, target, topic, 2) == {0: 5, 1: 5}
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "-g", target, "--from-group", unique("none"))
    assert r.code == 2 and "no committed offsets to copy" in r.err


def test_offsets_delete_goes_through_the_executor(capsys, bootstrap, topic, group, tmp_path):
    """Invariant: deleting offsets takes a snapshot first (undo = rollback), re-checks the
    group, and reports per partition; the snapshot restores what was deleted."""
    store = str(tmp_path / "snaps")
    r = run_cli(capsys, "offsets", "delete", "-b", bootstrap, "-g", group, "-t", f"{topic}:0",
                "--execute", "--snapshot-store", store, "-o", "json")
    assert r.code == 0, r.err
    report = r.json()["report"]
    assert report["status"] == "SUCCESS" and report["partitions_changed"] == 1 and report["snapshot_id"]
    assert committed(bootstrap, group, topic, 2) == {0: -1001, 1: 5}
    r = run_cli(capsys, "snapshots", "rollback", report["snapshot_id"], "-b", bootstrap,
                "--store", store, "--execute", "--no-snapshot")
    assert r.code == 0, r.err
    assert committed(bootstrap, group, topic, 2) == {0: 5, 1: 5}


def test_groups_delete_refuses_active_and_unknown(capsys, bootstrap, topic, group, unique):
    """Invariant: `groups delete nosuch` is exit 2 (as describe); an active group is refused
    (exit 1) and keeps its offsets; an idle group is deleted after a snapshot."""
    r = run_cli(capsys, "groups", "delete", "-b", bootstrap, unique("nosuch"), "--execute")
    assert r.code == 2 and "does not exist" in r.err
    live = unique("live")
    commit(bootstrap, live, {(topic, 0): 1})
    consumer = LiveConsumer(bootstrap, live, [topic])
    try:
        r = run_cli(capsys, "groups", "delete", "-b", bootstrap, live, "--execute", "--no-snapshot")
        assert r.code == 1 and f"group {live} has 1 active member" in r.err
        assert committed(bootstrap, live, topic, 1) == {0: 1}
    finally:
        consumer.stop()
    r = run_cli(capsys, "groups", "delete", "-b", bootstrap, group, "--execute", "--no-snapshot", "-o", "json")
    assert r.code == 0, r.err
    assert group not in group_ids(bootstrap)
    assert committed(bootstrap, group, topic, 2) == {0: -1001, 1: -1001}


def test_offset_delete_on_a_broker_without_the_api_fails_with_one_line(admin, bootstrap, topic, group):
    """Invariant (issue 8.26): OffsetDelete is only sent to brokers that list it in their API
    versions; otherwise one clear error and nothing changes (librdkafka would abort the process)."""
    assert 47 in next(iter(admin.api_versions().values()))  # the real broker supports it
    admin.rd._api_versions = {"old-broker:9092/1": {0: (0, 9)}}  # what a pre-2.4 broker answers
    with pytest.raises(Exception) as exc:
        ops_delete(admin, DeleteRequest(ResetScope(groups=(group,), topics=(TopicSpec(topic),)),
                                        execute=True,
                                        options=ExecuteOptions(snapshot=False)))
    assert "OffsetDelete" in str(exc.value) and "upgrade the broker" in str(exc.value)
    assert committed(bootstrap, group, topic, 2) == {0: 5, 1: 5}


def test_bulk_run_has_an_overall_deadline(admin, bootstrap, topic, group):
    """Invariant: a run against an unreachable cluster ends after its deadline with a reason per
    group instead of retrying for many minutes."""
    req = ResetRequest(target=TargetSpec(TargetKind.TO_EARLIEST),
                       scope=ResetScope(groups=(group,), topics=(TopicSpec(topic),)),
                       options=ExecuteOptions(snapshot=False, retries=50, deadline_s=2))
    plan, _ = plan_reset_request(admin, req)
    with KafkaAdmin(Connection("127.0.0.1:1"), timeout=0.5) as dead:
        report = execute_plan(dead, plan, req.options)
    [r] = report.results
    assert r.status == "failed" and "deadline of 2s" in r.error
    assert committed(bootstrap, group, topic, 2) == {0: 5, 1: 5}
