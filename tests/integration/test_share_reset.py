"""Share-group start offsets through the one executor (plan, snapshot, re-check, apply, read back)
on Apache Kafka 4.4.0, checked with the release's kafka-share-groups.sh.

Most tests make their share group without a consumer: AlterShareGroupOffsets on a new group id
creates an empty share group with those start offsets (as an offset commit creates a consumer
group), so each test has its own group and only the refusal tests run a KafkaShareConsumer.
"""

from __future__ import annotations

import csv
import io
import os
import shlex
import subprocess
import time
from datetime import UTC, datetime

import pytest

from offsetkeeper.config import Connection
from offsetkeeper.devbroker import dist
from offsetkeeper.kafka import jvm
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.models import TopicPartition
from tests.cli import run_cli
from tests.jvm_apps import JvmApp
from tests.kafkatools import create_topic, produce

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not jvm.available(), reason="the JVM admin helper is not built "
                                 "(scripts/setup.sh)")]

T0 = int(datetime(2026, 11, 20, 9, 0, tzinfo=UTC).timestamp() * 1000)
MINUTE = 60_000
N = 10  # records per partition, one a minute from T0


def tool(bootstrap: str, *args: str) -> str:
    proc = subprocess.run(dist.tool_command("kafka-share-groups", "--bootstrap-server", bootstrap,
                                            *args),
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    return proc.stdout + proc.stderr


def rows(text: str) -> list[list[str]]:
    lines = [ln.split() for ln in text.splitlines() if ln.strip()]
    for i, ln in enumerate(lines):
        if ln[0] == "GROUP":
            return [r for r in lines[i + 1:] if r[0] != "GROUP"]
    return []


def start_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int | None]:
    """kafka-share-groups.sh --describe: (topic, partition) -> START-OFFSET (None for '-');
    partitions without any offset information are absent."""
    return {(r[1], int(r[2])): None if r[3] == "-" else int(r[3])
            for r in rows(tool(bootstrap, "--describe", "--group", group))}


def tool_dry_run(bootstrap: str, group: str, *args: str) -> dict[tuple[str, int], int]:
    """kafka-share-groups.sh --reset-offsets --dry-run: (topic, partition) -> NEW-OFFSET."""
    return {(r[1], int(r[2])): int(r[3])
            for r in rows(tool(bootstrap, "--reset-offsets", "--group", group, *args, "--dry-run"))}


@pytest.fixture(scope="module")
def topic(bootstrap, tmp_path_factory):
    """3 partitions of N records, one a minute from T0."""
    import uuid

    name = f"sq-{uuid.uuid4().hex[:8]}"
    # kept forever: with the broker's 7-day retention, records stamped from T0 (a fixed date)
    # were deleted a week later and every start offset clamped to the log end
    create_topic(bootstrap, name, 3, {"retention.ms": "-1"})
    produce(bootstrap, name, ((p, b"k", f"v{i}".encode(), None, T0 + i * MINUTE)
                              for p in range(3) for i in range(N)))
    return name


@pytest.fixture
def admin(bootstrap):
    with KafkaAdmin(Connection(bootstrap)) as a:
        yield a


def make_group(admin, name: str, offsets: dict[tuple[str, int], int]) -> str:
    res = admin.alter_share_group_offsets(name, {TopicPartition(t, p): o
                                                 for (t, p), o in offsets.items()})
    assert not any(res.values()), res
    return name


def planned(r) -> dict[tuple[str, int], int | None]:
    doc = r.json()
    plan = doc.get("plan", doc)
    assert plan["group_type"] == "share"
    return {(p["topic"], p["partition"]): p["target"]
            for g in plan["groups"] for p in g["partitions"]}


def test_targets_match_kafka_share_groups_dry_run(capsys, bootstrap, topic, admin, unique):
    """--to-earliest, --to-latest and --to-datetime plan the NEW-OFFSET kafka-share-groups.sh
    plans for the same group, both with --topic and without (every partition with a start
    offset, the tool's --all-topics)."""
    g = make_group(admin, unique("sq"), {(topic, 0): 3, (topic, 1): 5})
    for ours, theirs in (
            (["--to-earliest"], ["--to-earliest"]),
            (["--to-latest"], ["--to-latest"]),
            (["--to-datetime", "2026-11-20T09:04:30Z"], ["--to-datetime", "2026-11-20T09:04:30.000Z"]),
            (["--to-datetime", "2999-01-01T00:00:00Z"], ["--to-datetime", "2999-01-01T00:00:00.000Z"])):
        for scope_ours, scope_theirs in ((["-t", f"{topic}:0,2"], ["--topic", f"{topic}:0,2"]),
                                         ([], ["--all-topics"])):
            r = run_cli(capsys, "share-groups", "reset-offsets", "-g", g, *scope_ours, *ours,
                        "-b", bootstrap, "-o", "json")
            assert r.code == 0, r.err
            assert planned(r) == tool_dry_run(bootstrap, g, *scope_theirs, *theirs), (ours, scope_ours)
    assert start_offsets(bootstrap, g) == {(topic, 0): 3, (topic, 1): 5}  # dry runs changed nothing


def test_every_target_executes_and_reads_back(capsys, bootstrap, topic, admin, unique, tmp_path):
    """Each target is applied through the executor; kafka-share-groups.sh --describe then shows
    exactly the planned start offsets."""
    g = make_group(admin, unique("sq"), {(topic, 0): 4, (topic, 1): 6, (topic, 2): 8})
    plan_file = tmp_path / "plan.csv"
    plan_file.write_text(f"{topic},0,1\n{topic},2,9\n")
    cases = [
        (["--shift-by", "-2"], {0: 2, 1: 4, 2: 6}),
        (["--to-offset", "7", "-t", f"{topic}:1"], {0: 2, 1: 7, 2: 6}),
        (["--to-current"], {0: 2, 1: 7, 2: 6}),
        (["--by-duration", "P3650D"], {0: 0, 1: 0, 2: 0}),  # before every record: the log start
        (["--from-file", str(plan_file)], {0: 1, 1: 0, 2: 9}),
        (["--to-offset", "99", "-t", f"{topic}:0"], {0: N, 1: 0, 2: 9}),  # clamped to the log end
    ]
    for args, want in cases:
        r = run_cli(capsys, "share-groups", "reset-offsets", "-g", g, *args, "--execute",
                    "--no-snapshot", "-b", bootstrap, "-o", "json")
        assert r.code == 0, (args, r.err)
        assert r.json()["report"]["status"] == "SUCCESS", r.out
        assert start_offsets(bootstrap, g) == {(topic, p): o for p, o in want.items()}, args
    assert "clamped to log end" in r.out


def test_refused_while_members_and_when_members_join_after_planning(capsys, bootstrap, topic,
                                                                   admin, unique):
    """Invariant: a share group's start offsets are never changed while it has members — at
    planning, and again right before applying (a consumer that joined after the plan was made)."""
    from offsetkeeper.ops import ExecuteOptions, ResetRequest
    from offsetkeeper.ops.reset import execute_plan
    from offsetkeeper.ops.share_reset import reset_share_group
    from offsetkeeper.ops.targets import TargetKind, TargetSpec
    from offsetkeeper.reset.plan import ResetScope

    g = make_group(admin, unique("sq"), {(topic, p): 5 for p in range(3)})
    outcome = reset_share_group(admin, ResetRequest(TargetSpec(TargetKind.TO_EARLIEST),
                                                    ResetScope(groups=(g,))))
    assert outcome.plan.changes and not outcome.plan.refused
    # one poll (acknowledged: start offsets may move forward, never back to 0), then it idles
    # as a member
    app = JvmApp({"bootstrap.servers": bootstrap}, "share-consume",
                 {"group": g, "topics": [topic], "max_records": 1})
    try:
        app.wait_for("subscribed")
        deadline = time.monotonic() + 60
        while "Stable" not in tool(bootstrap, "--describe", "--group", g, "--state"):
            assert time.monotonic() < deadline, "the share consumer did not join"
            time.sleep(0.5)
        report = execute_plan(admin, outcome.plan, ExecuteOptions(snapshot=False))
        (res,) = report.results
        assert res.status == "refused" and "1 active member" in res.error, res
        r = run_cli(capsys, "share-groups", "reset-offsets", "-g", g, "--to-earliest",
                    "--execute", "-b", bootstrap)
        assert r.code == 1 and f"group {g} has 1 active member" in r.err, r.err
        r = run_cli(capsys, "share-groups", "delete-offsets", "-g", g, "-t", topic,
                    "--execute", "-b", bootstrap)
        assert r.code == 1 and f"group {g} has 1 active member" in r.err, r.err
    finally:
        app.stop()
    assert all(o is None or o >= 5 for o in start_offsets(bootstrap, g).values())


def test_refused_when_another_writer_moved_a_start_offset(bootstrap, topic, admin, unique):
    """The executor's second re-check: a start offset moved since planning (another tool) makes
    the plan stale; nothing is applied."""
    from offsetkeeper.ops import ExecuteOptions, ResetRequest
    from offsetkeeper.ops.reset import execute_plan
    from offsetkeeper.ops.share_reset import reset_share_group
    from offsetkeeper.ops.targets import TargetKind, TargetSpec
    from offsetkeeper.reset.plan import ResetScope

    g = make_group(admin, unique("sq"), {(topic, 0): 2, (topic, 1): 2})
    outcome = reset_share_group(admin, ResetRequest(TargetSpec(TargetKind.TO_LATEST),
                                                    ResetScope(groups=(g,))))
    make_group(admin, g, {(topic, 1): 5})  # kafka-share-groups.sh or another operator
    (res,) = execute_plan(admin, outcome.plan, ExecuteOptions(snapshot=False)).results
    assert res.status == "refused" and "changed since planning" in res.error, res
    assert start_offsets(bootstrap, g) == {(topic, 0): 2, (topic, 1): 5}


def test_snapshot_rollback_restores_start_offsets_and_their_absence(capsys, bootstrap, topic,
                                                                     admin, unique):
    """`snapshots rollback` of the snapshot a share reset took restores the start offsets, and
    deletes the one the reset created where there was none (DeleteShareGroupOffsets deletes the
    whole topic; the other partitions get theirs back)."""
    g = make_group(admin, unique("sq"), {(topic, 0): 3, (topic, 1): 4})
    r = run_cli(capsys, "share-groups", "reset-offsets", "-g", g, "-t", topic, "--to-latest",
                "--execute", "-b", bootstrap, "-o", "json")
    assert r.code == 0, r.err
    snap = r.json()["report"]["snapshot_id"]
    assert start_offsets(bootstrap, g) == {(topic, p): N for p in range(3)}
    r = run_cli(capsys, "snapshots", "show", snap, "-o", "json")
    assert r.code == 0, r.err
    r = run_cli(capsys, "snapshots", "rollback", snap, "-b", bootstrap, "-o", "json")
    assert r.code == 0, r.err
    assert planned(r) == {(topic, 0): 3, (topic, 1): 4, (topic, 2): None}
    r = run_cli(capsys, "snapshots", "rollback", snap, "-b", bootstrap, "--execute", "-o", "json")
    assert r.code == 0, r.err
    assert start_offsets(bootstrap, g) == {(topic, 0): 3, (topic, 1): 4}


def test_delete_offsets_through_the_executor_and_rolled_back(capsys, bootstrap, topic, admin,
                                                            unique):
    g = make_group(admin, unique("sq"), {(topic, 0): 1, (topic, 2): 7})
    r = run_cli(capsys, "share-groups", "delete-offsets", "-g", g, "-t", topic, "-b", bootstrap)
    assert r.code == 0 and "dry run" in r.out, r.err
    assert start_offsets(bootstrap, g) == {(topic, 0): 1, (topic, 2): 7}
    r = run_cli(capsys, "share-groups", "delete-offsets", "-g", g, "-t", topic, "--execute",
                "-b", bootstrap, "-o", "json")
    assert r.code == 0, r.err
    assert r.json()["report"]["partitions_changed"] == 2
    assert start_offsets(bootstrap, g) == {}
    assert "no offset information" in tool(bootstrap, "--describe", "--group", g)
    r = run_cli(capsys, "snapshots", "rollback", r.json()["report"]["snapshot_id"], "-b",
                bootstrap, "--execute")
    assert r.code == 0, r.err
    assert start_offsets(bootstrap, g) == {(topic, 0): 1, (topic, 2): 7}


def test_script_run_with_kafka_share_groups_reaches_what_execute_reaches(
        capsys, bootstrap, topic, admin, unique, tmp_path):
    """`--script` of a --to-earliest / --to-latest plan is kafka-share-groups.sh commands; run
    with the real tool on a twin group it leaves the start offsets --execute leaves."""
    import offsetkeeper

    bindir = tmp_path / "bin"
    bindir.mkdir()
    sh = bindir / "kafka-share-groups.sh"
    sh.write_text("#!/bin/sh\nexec " + shlex.join(dist.tool_command("kafka-share-groups")) + ' "$@"\n')
    sh.chmod(0o755)
    for target in ("--to-earliest", "--to-latest"):
        start = {(topic, 0): 4, (topic, 1): 6}
        g, twin = make_group(admin, unique("sq"), start), make_group(admin, unique("sq"), start)
        script, export = tmp_path / f"reset{target}.sh", tmp_path / f"plan{target}.csv"
        r = run_cli(capsys, "share-groups", "reset-offsets", "-g", twin, "-t", f"{topic}:0,1",
                    target, "--script", script, "--export", export, "-b", bootstrap, "-o", "csv")
        assert r.code == 0, r.err
        text = script.read_text()
        assert "kafka-share-groups.sh" in text and "offsetkeeper share-groups" not in text, text
        ran = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=300,
                             env={**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"})
        assert ran.returncode == 0, ran.stdout + ran.stderr
        r = run_cli(capsys, "share-groups", "reset-offsets", "-g", g, "-t", f"{topic}:0,1",
                    target, "--execute", "--no-snapshot", "-b", bootstrap)
        assert r.code == 0, r.err
        assert start_offsets(bootstrap, twin) == start_offsets(bootstrap, g)
        exported = {(t, int(p)): int(o) for t, p, o in csv.reader(io.StringIO(export.read_text()))}
        assert exported == start_offsets(bootstrap, g)
    # exact offsets (issue 31 item 11): kafka-share-groups.sh 4.4 sets them from a CSV file;
    # the script hands it the plan's CSV, and run with the real tool it reaches the plan
    r = run_cli(capsys, "share-groups", "reset-offsets", "-g", g, "-t", f"{topic}:0",
                "--to-offset", "5", "--script", tmp_path / "exact.sh", "-b", bootstrap)
    assert r.code == 0, r.err
    text = (tmp_path / "exact.sh").read_text()
    assert "--reset-offsets --from-file" in text and f"{topic},0,5" in text
    assert "offsetkeeper share-groups" not in text and "cannot set" not in text, text
    ran = subprocess.run(["bash", str(tmp_path / "exact.sh")], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"})
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert start_offsets(bootstrap, g)[(topic, 0)] == 5
    assert offsetkeeper


def test_bad_input(capsys, bootstrap, topic, admin, unique):
    r = run_cli(capsys, "share-groups", "reset-offsets", "-g", "x", "--to-earliest",
                "--to-latest", "-b", bootstrap)
    assert r.code == 2 and "conflicting reset targets" in r.err
    r = run_cli(capsys, "share-groups", "reset-offsets", "-g", unique("nosuch"), "--to-earliest",
                "-b", bootstrap)
    assert r.code == 2 and "does not exist" in r.err, r.err
    g = make_group(admin, unique("sq"), {(topic, 0): 1})
    admin.delete_share_group_offsets(g, [topic])
    r = run_cli(capsys, "share-groups", "reset-offsets", "-g", g, "--to-earliest", "-b", bootstrap)
    assert r.code == 2 and "no start offsets yet" in r.err, r.err
    r = run_cli(capsys, "share-groups", "delete-offsets", "-g", g, "-t", f"{topic}:0",
                "-b", bootstrap)
    assert r.code == 2 and "whole topics" in r.err


def test_share_snapshots_verify_read_start_offsets_and_a_rewind_says_what_redelivers(
        capsys, bootstrap, topic, admin, unique):
    """Invariant (issue 31 item 3): `snapshots verify`/`diff` of a share-group snapshot compare
    the live start offsets (they read consumer-group offsets, found none and called every
    partition "removed", exit 1, right after a rollback that restored them); a plan that moves
    a share group's start offset back says per partition how many records it delivers again
    (counted by reading: the whole readable range from the new start offset minus the records
    not yet acknowledged), and only --execute applies it; `snapshots show` says which lag it
    shows."""
    g = make_group(admin, unique("sq"), {(topic, 0): 3, (topic, 1): 4})
    r = run_cli(capsys, "share-groups", "reset-offsets", "-g", g, "-t", f"{topic}:0,1",
                "--to-latest", "--execute", "-b", bootstrap, "-o", "json")
    assert r.code == 0, r.err
    snap = r.json()["report"]["snapshot_id"]
    r = run_cli(capsys, "snapshots", "verify", snap, "-b", bootstrap, "-o", "json")
    assert r.code == 1, r.out + r.err
    assert sorted((x["partition"], x["before"], x["after"]) for x in r.json()
                  if x["group"] == g) == [(0, 3, N), (1, 4, N)], r.out

    r = run_cli(capsys, "snapshots", "rollback", snap, "-b", bootstrap, "-o", "json")
    assert r.code == 0, r.err
    plan = r.json().get("plan", r.json())
    parts = {p["partition"]: p for gp in plan["groups"] for p in gp["partitions"]}
    # start offset N, all acknowledged (lag 0): moving back to 3 / 4 delivers 7 / 6 again
    assert (parts[0]["redeliver"], parts[1]["redeliver"]) == (N - 3, N - 4), parts
    assert "7 record(s) will be delivered again" in parts[0]["note"]
    assert start_offsets(bootstrap, g) == {(topic, 0): N, (topic, 1): N}  # a dry run
    r = run_cli(capsys, "snapshots", "rollback", snap, "-b", bootstrap)
    assert r.code == 0 and "delivered again" in r.out, r.out

    r = run_cli(capsys, "snapshots", "rollback", snap, "-b", bootstrap, "--execute")
    assert r.code == 0, r.err
    assert start_offsets(bootstrap, g) == {(topic, 0): 3, (topic, 1): 4}
    r = run_cli(capsys, "snapshots", "verify", snap, "-b", bootstrap)
    assert r.code == 0, r.out + r.err
    r = run_cli(capsys, "snapshots", "show", snap)
    assert r.code == 0 and "not the broker's share lag" in r.err, r.err
