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
