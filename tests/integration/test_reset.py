"""`offsets reset` against a real broker: every target, scopes, notes, safety, files, errors.

Each test checks the cluster afterwards with an independent confluent-kafka consumer.
"""

from __future__ import annotations

import time

import pytest

from tests.cli import run_cli
from tests.kafkatools import LiveConsumer, commit, committed, create_topic, produce_n

pytestmark = pytest.mark.integration

BASE_MS = 1_700_000_000_000  # fixed record timestamps: record i of a partition at BASE + i s


@pytest.fixture
def topic(bootstrap, unique):
    """A 3-partition topic with 10 records per partition, record i at BASE_MS + i*1000."""
    name = unique("orders")
    create_topic(bootstrap, name, 3, {"retention.ms": "-1"})
    produce_n(bootstrap, name, 3, 10, timestamp_ms=lambda p, i: BASE_MS + i * 1000)
    return name


@pytest.fixture
def group(bootstrap, unique, topic):
    """A group with committed offsets 5, 5, 5 on the topic."""
    g = unique("grp")
    commit(bootstrap, g, {(topic, p): 5 for p in range(3)})
    return g


def reset(capsys, bootstrap, *args):
    return run_cli(capsys, "offsets", "reset", "-b", bootstrap, *args)


@pytest.mark.parametrize("args,expected", [
    (["--to-earliest"], {0: 0, 1: 0, 2: 0}),
    (["--to-latest"], {0: 10, 1: 10, 2: 10}),
    (["--to-current"], {0: 5, 1: 5, 2: 5}),
    (["--to-offset", "7"], {0: 7, 1: 7, 2: 7}),
    (["--shift-by", "-2"], {0: 3, 1: 3, 2: 3}),
    (["--shift-by", "3"], {0: 8, 1: 8, 2: 8}),
    (["--to-datetime", "2023-11-14T22:13:23Z"], {0: 3, 1: 3, 2: 3}),  # BASE_MS = 22:13:20
    (["--to-datetime", "2023-11-14T22:13:23.001"], {0: 4, 1: 4, 2: 4}),
])
def test_targets_execute(capsys, bootstrap, topic, group, args, expected):
    r = reset(capsys, bootstrap, "-g", group, "-t", topic, *args, "--execute", "--no-snapshot")
    assert r.code == 0, r.err
    assert committed(bootstrap, group, topic, 3) == expected


def test_by_duration(capsys, bootstrap, unique):
    """Records 2 h old and fresh ones: --by-duration PT1H lands on the first fresh record."""
    t = unique("dur")
    create_topic(bootstrap, t, 1, {"retention.ms": "-1"})
    now = int(time.time() * 1000)
    produce_n(bootstrap, t, 1, 6, timestamp_ms=lambda p, i: now - 7_200_000 if i < 4 else now)
    g = unique("grp")
    r = reset(capsys, bootstrap, "-g", g, "-t", t, "--by-duration", "PT1H", "--execute", "--no-snapshot",
              "--create-groups")
    assert r.code == 0, r.err
    assert committed(bootstrap, g, t, 1) == {0: 4}


def test_dry_run_is_default_and_changes_nothing(capsys, bootstrap, topic, group):
    r = reset(capsys, bootstrap, "-g", group, "-t", topic, "--to-earliest", "-o", "json")
    assert r.code == 0
    plan = r.json()
    assert [p["target"] for g in plan["groups"] for p in g["partitions"]] == [0, 0, 0]
    assert committed(bootstrap, group, topic, 3) == {0: 5, 1: 5, 2: 5}


def test_partition_scope_and_repeatable_topics(capsys, bootstrap, topic, group, unique):
    other = unique("other")
    create_topic(bootstrap, other, 2)
    produce_n(bootstrap, other, 2, 4)
    r = reset(capsys, bootstrap, "-g", group, "-t", f"{topic}:0,2", "-t", other, "--to-latest",
              "--execute", "--no-snapshot")
    assert r.code == 0, r.err
    assert committed(bootstrap, group, topic, 3) == {0: 10, 1: 5, 2: 10}
    assert committed(bootstrap, group, other, 2) == {0: 4, 1: 4}


def test_all_topics_and_several_groups(capsys, bootstrap, topic, group, unique):
    g2 = unique("grp")
    commit(bootstrap, g2, {(topic, 1): 2})
    r = reset(capsys, bootstrap, "-g", group, "-g", g2, "--all-topics", "--to-earliest",
              "--execute", "--no-snapshot", "-o", "json")
    assert r.code == 0, r.err
    assert r.json()["report"]["groups_succeeded"] == 2
    assert committed(bootstrap, group, topic, 3) == {0: 0, 1: 0, 2: 0}
    # --all-topics means the partitions the group has committed offsets for, nothing more
    assert committed(bootstrap, g2, topic, 3) == {0: -1001, 1: 0, 2: -1001}


def test_clamping_notes(capsys, bootstrap, topic, group):
    r = reset(capsys, bootstrap, "-g", group, "-t", topic, "--to-offset", "99", "-o", "csv")
    assert r.code == 0
    assert r.out.count("clamped to log end (asked 99)") == 3
    r = reset(capsys, bootstrap, "-g", group, "-t", topic, "--shift-by", "-50", "-o", "json")
    notes = [p["note"] for g in r.json()["groups"] for p in g["partitions"]]
    assert notes == ["clamped to log start (asked -45)"] * 3


def test_notes_no_commit_and_datetime_past_end(capsys, bootstrap, topic, unique):
    g = unique("fresh")
    r = reset(capsys, bootstrap, "-g", g, "-t", f"{topic}:0", "--to-current", "-o", "json")
    p = r.json()["groups"][0]["partitions"][0]
    assert (p["current"], p["target"]) == (None, 10)
    assert p["note"].startswith("no committed offset; log end")
    assert "group does not exist: --execute needs --create-groups" in p["note"]
    r = reset(capsys, bootstrap, "-g", g, "-t", f"{topic}:0", "--to-datetime", "2030-01-01T00:00:00",
              "-o", "json")
    p = r.json()["groups"][0]["partitions"][0]
    assert p["target"] == 10 and "no record at or after the time; log end" in p["note"]


def test_shift_without_commit_fails_that_partition(capsys, bootstrap, topic, unique):
    g = unique("partial")
    commit(bootstrap, g, {(topic, 0): 5})
    r = reset(capsys, bootstrap, "-g", g, "-t", topic, "--shift-by", "-1", "--execute", "--no-snapshot")
    assert r.code == 1
    assert "no committed offset to shift from" in r.err
    assert committed(bootstrap, g, topic, 3) == {0: 4, 1: -1001, 2: -1001}


def test_active_group_refused(capsys, bootstrap, topic, group, unique):
    live_group = unique("live")
    commit(bootstrap, live_group, {(topic, p): 5 for p in range(3)})
    consumer = LiveConsumer(bootstrap, live_group, [topic])
    try:
        r = reset(capsys, bootstrap, "-g", live_group, "-g", group, "-t", topic, "--to-earliest",
                  "--execute", "--no-snapshot", "-o", "json")
        assert r.code == 1
        report = r.json()["report"]
        assert report["status"] == "PARTIAL_SUCCESS"
        by_group = {g["group"]: g for g in report["groups"]}
        assert by_group[live_group]["status"] == "refused"
        assert "active member" in by_group[live_group]["error"]
        assert by_group[group]["status"] == "success"
        assert "active member" in r.err
        assert committed(bootstrap, live_group, topic, 3) == {0: 5, 1: 5, 2: 5}
        assert committed(bootstrap, group, topic, 3) == {0: 0, 1: 0, 2: 0}
    finally:
        consumer.stop()


def test_export_then_from_file_round_trip(capsys, bootstrap, topic, group, unique, tmp_path):
    plan_file = tmp_path / "plan.csv"
    r = reset(capsys, bootstrap, "-g", group, "-t", topic, "--shift-by", "-4", "--export", plan_file)
    assert r.code == 0
    assert plan_file.read_text().splitlines() == [f"{topic},{p},1" for p in range(3)]
    assert committed(bootstrap, group, topic, 3) == {0: 5, 1: 5, 2: 5}
    r = reset(capsys, bootstrap, "-g", group, "--from-file", plan_file, "--execute", "--no-snapshot")
    assert r.code == 0, r.err
    assert committed(bootstrap, group, topic, 3) == {0: 1, 1: 1, 2: 1}
    # several-group form: the file names the groups
    g2 = unique("grp")
    multi = tmp_path / "multi.csv"
    multi.write_text(f"{group},{topic},0,9\n{g2},{topic},2,6\n")
    r = reset(capsys, bootstrap, "--from-file", multi, "--execute", "--no-snapshot")
    assert r.code == 0, r.err
    assert committed(bootstrap, group, topic, 3) == {0: 9, 1: 1, 2: 1}
    assert committed(bootstrap, g2, topic, 3) == {0: -1001, 1: -1001, 2: 6}


def test_script(capsys, bootstrap, topic, group, tmp_path):
    script = tmp_path / "reset.sh"
    r = reset(capsys, bootstrap, "-g", group, "-t", f"{topic}:1", "--to-offset", "2", "--script", script)
    assert r.code == 0
    text = script.read_text()
    assert f"--group {group} --reset-offsets --from-file \"$PLAN_FILE\" --execute" in text
    assert f"\n{topic},1,2\n" in text
    assert text.startswith("#!/usr/bin/env bash")
    assert f"plan written to {script}" in r.err


@pytest.mark.parametrize("args,message", [
    (["-t", "{topic}", "--to-earliest", "--to-latest"], "conflicting reset targets"),
    (["-t", "{topic}"], "missing reset target"),
    (["-t", "{topic}", "--to-offset", "-3"], "not a non-negative integer"),
    (["-t", "{topic}", "--to-offset", "x"], "not a non-negative integer"),
    (["-t", "{topic}", "--to-datetime", "noon"], "--to-datetime 'noon' is not a time"),
    (["-t", "{topic}", "--by-duration", "1 hour"], "is not a duration"),
    (["-t", "no-such-topic-xyz", "--to-earliest"], "unknown topic 'no-such-topic-xyz'"),
    (["-t", "{topic}:7", "--to-earliest"], "has no partition 7"),
    (["--to-earliest"], "no topic given"),
])
def test_usage_errors_exit_2_and_change_nothing(capsys, bootstrap, topic, group, args, message):
    args = [a.format(topic=topic) for a in args]
    r = reset(capsys, bootstrap, "-g", group, *args, "--execute", "--no-snapshot")
    assert r.code == 2, (r.out, r.err)
    assert message in r.err
    assert len(r.err.strip().splitlines()) == 1
    assert committed(bootstrap, group, topic, 3) == {0: 5, 1: 5, 2: 5}


def test_unknown_group_when_commit_needed(capsys, bootstrap, topic, unique):
    g = unique("nobody")
    r = reset(capsys, bootstrap, "-g", g, "-t", topic, "--shift-by", "1", "--execute")
    assert r.code == 2 and f"group '{g}' has no committed offsets" in r.err
    r = reset(capsys, bootstrap, "-g", g, "--all-topics", "--to-earliest", "--execute")
    assert r.code == 2


def test_malformed_csv_line_number(capsys, bootstrap, topic, group, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text(f"{topic},0,1\n{topic},zero,1\n")
    r = reset(capsys, bootstrap, "-g", group, "--from-file", bad, "--execute")
    assert r.code == 2 and "line 2" in r.err and str(bad) in r.err
    assert committed(bootstrap, group, topic, 3) == {0: 5, 1: 5, 2: 5}


def test_all_groups_scope(capsys, bootstrap, topic, group):
    r = reset(capsys, bootstrap, "--all-groups", "-t", topic, "--to-earliest", "-o", "json")
    groups = {g["group"] for g in r.json()["groups"]}
    assert group in groups and len(groups) >= 1


def test_offsets_delete_and_groups_delete(capsys, bootstrap, topic, group, unique):
    r = run_cli(capsys, "offsets", "delete", "-b", bootstrap, "-g", group, "-t", f"{topic}:0", "-o", "json")
    assert r.code == 0, r.err
    [p] = r.json()["groups"][0]["partitions"]
    assert (p["partition"], p["current"], p["delete"], p["note"]) == (0, 5, True, "delete")
    assert committed(bootstrap, group, topic, 3)[0] == 5
    r = run_cli(capsys, "offsets", "delete", "-b", bootstrap, "-g", group, "-t", f"{topic}:0", "--execute")
    assert r.code == 0, r.err
    assert committed(bootstrap, group, topic, 3) == {0: -1001, 1: 5, 2: 5}

    live = unique("live")
    commit(bootstrap, live, {(topic, 0): 1})
    consumer = LiveConsumer(bootstrap, live, [topic])
    try:
        r = run_cli(capsys, "groups", "delete", "-b", bootstrap, group, live, "--execute")
        assert r.code == 1 and "active member" in r.err
        assert committed(bootstrap, live, topic, 1) == {0: 1}
    finally:
        consumer.stop()
    assert committed(bootstrap, group, topic, 3) == {0: -1001, 1: -1001, 2: -1001}
