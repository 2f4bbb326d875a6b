"""Selecting many groups by pattern, reading a big plan, and finding the right undo after an
interrupted bulk run (issue 22, items 17 and 18)."""

from __future__ import annotations

import pytest

from tests.cli import run_cli
from tests.kafkatools import commit, committed, create_topic, produce_n

pytestmark = pytest.mark.integration


@pytest.fixture
def fleet(bootstrap, unique, tmp_path):
    """Five `<prefix>-svc-N` groups and one bystander, each committed at 4 on 2 partitions."""
    topic, prefix = unique("sel"), unique("migr")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 10)
    groups = [f"{prefix}-svc-{i}" for i in range(5)]
    bystander = f"{prefix}-other"
    for g in [*groups, bystander]:
        commit(bootstrap, g, {(topic, 0): 4, (topic, 1): 4})
    return topic, prefix, groups, bystander, tmp_path / "snaps"


def test_group_pattern_selects_exactly_the_matching_groups(capsys, bootstrap, fleet):
    """Invariant: --group-pattern changes every group whose id matches and no other; a glob
    given to -g is not expanded (a group id may contain '*') but the error says how."""
    topic, prefix, groups, bystander, store = fleet
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "--group-pattern", f"{prefix}-svc-*",
                "-t", topic, "--to-earliest", "--execute", "--snapshot-store", store, "-o", "json")
    assert r.code == 0, r.err
    assert sorted(g["group"] for g in r.json()["report"]["groups"]) == groups
    assert all(committed(bootstrap, g, topic, 2) == {0: 0, 1: 0} for g in groups)
    assert committed(bootstrap, bystander, topic, 2) == {0: 4, 1: 4}

    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "-g", f"{prefix}-svc-*", "-t", topic,
                "--shift-by", "1")
    assert r.code == 2 and f"--group-pattern '{prefix}-svc-*'" in r.err

    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "--group-pattern", f"~{prefix}-nomatch.*",
                "-t", topic, "--to-latest")
    assert r.code == 2 and "selects no group" in r.err
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "--group-pattern", "~[", "-t", topic,
                "--to-latest")
    assert r.code == 2 and "not a valid regex" in r.err
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "--group-pattern", "x*", "--all-groups",
                "-t", topic, "--to-latest")
    assert r.code == 2 and "mutually exclusive" in r.err


def test_summary_shows_one_row_per_group(capsys, bootstrap, fleet):
    """Invariant: --summary prints one row per group with its direction and size; JSON still
    holds every partition."""
    topic, prefix, groups, _, _ = fleet
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "--group-pattern", f"{prefix}-svc-*",
                "-t", topic, "--to-offset", "1", "--summary", "-o", "csv")
    assert r.code == 0, r.err
    lines = r.out.strip().splitlines()
    assert lines[0].startswith("group,state,partitions,changing,moved_back")
    rows = [line.split(",") for line in lines[1:]]
    assert [row[0] for row in rows] == groups
    assert all(row[2:8] == ["2", "2", "2", "0", "6", "0"] for row in rows), rows
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "--group-pattern", f"{prefix}-svc-*",
                "-t", topic, "--to-offset", "1", "--summary", "-o", "json")
    assert sum(len(g["partitions"]) for g in r.json()["groups"]) == 10


def test_rerun_after_an_interrupted_bulk_run_points_to_the_earlier_snapshot(capsys, bootstrap, fleet):
    """Invariant: when a rerun finds groups an earlier run of the same reset already moved, it
    names that run's snapshot (the offsets from before it), and rolling it back restores them."""
    topic, prefix, groups, _, store = fleet
    # the first run got through two groups before it was killed
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "-g", groups[0], "-g", groups[1],
                "-t", topic, "--to-latest", "--execute", "--snapshot-store", store, "-o", "json")
    assert r.code == 0, r.err
    first = r.json()["report"]["snapshot_id"]
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "--group-pattern", f"{prefix}-svc-*",
                "-t", topic, "--to-latest", "--execute", "--snapshot-store", store)
    assert r.code == 0, r.err
    warning = " ".join(r.err.split())
    assert "2 group(s) are already at the target" in warning and first in warning
    assert f"snapshots rollback {first} --execute" in warning
    r = run_cli(capsys, "snapshots", "rollback", first, "--execute", "-b", bootstrap,
                "--store", store)
    assert r.code == 0, r.err
    assert committed(bootstrap, groups[0], topic, 2) == {0: 4, 1: 4}
