"""`restore three-phase --file` (YAML) from the command line, and `restore list`."""

from __future__ import annotations

import pytest

from tests.cli import run_cli
from tests.kafkatools import committed
from tests.restore_support import consume_all, rec, write_backup

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_three_phase_yaml_translates_commits_and_validates(capsys, tmp_path, dr_bootstrap, spark, unique):
    topic, target, group, other = unique("tp"), unique("tp-dr"), unique("g"), unique("g-other")
    data = {topic: {p: [rec(o, 1_000 + o, f"k{o}".encode(), f"v{o}".encode()) for o in range(0, 90, 3)]
                    for p in (0, 1)}}
    write_backup(str(tmp_path), "b3", data, configs={topic: {"retention.ms": "-1"}},
                 groups={group: {(topic, 0): 31, (topic, 1): 0}, other: {(topic, 0): 3}})
    f = tmp_path / "three-phase.yaml"
    f.write_text(f"""
backup: {{path: "{tmp_path}", id: b3}}
target: {{bootstrap_servers: "{dr_bootstrap}"}}
restore:
  restore_id: tp-1
  rename: {{{topic}: {target}}}
  chunk_records: 7
groups: {{strategy: translate, groups: [{group}]}}
""")
    r = run_cli(capsys, "restore", "three-phase", "--file", str(f), "--no-snapshot", "-o", "json")
    assert r.code == 0, r.out + r.err
    rep = r.json()
    assert rep["ok"] and [p["status"] for p in rep["phases"]] == ["skipped", "ok", "ok", "ok"]
    got = consume_all(dr_bootstrap, target, [0, 1])
    # 31 -> the first restored source offset >= 31 is 33, the 12th record (index 11)
    assert committed(dr_bootstrap, group, target, 2) == {0: got[0][11].offset(), 1: got[1][0].offset()}
    assert committed(dr_bootstrap, other, target, 2) == {0: -1001, 1: -1001}  # not asked for

    r = run_cli(capsys, "restore", "list", f"{tmp_path}/b3", "-o", "json")
    assert r.code == 0 and r.json()[0]["restore_id"] == "tp-1" and r.json()[0]["status"] == "completed"

    r = run_cli(capsys, "restore", "three-phase", "--file", str(f), "--strategy", "bogus")
    assert r.code == 2 and "bogus" in r.err


def test_three_phase_unknown_group_is_refused_before_restoring(capsys, tmp_path, dr_bootstrap):
    write_backup(str(tmp_path), "b4", {"t": {0: [rec(0, 1, b"k", b"v")]}}, groups={"known": {("t", 0): 1}})
    r = run_cli(capsys, "restore", "three-phase", f"{tmp_path}/b4", "-b", dr_bootstrap, "--group", "nope")
    assert r.code == 2 and "group 'nope' has no offsets in backup 'b4'" in r.err
    assert not (tmp_path / "b4" / "restores").exists()
