"""The output contract (issue 21) on the commands that need a broker: the same rules as
tests/unit/test_output_contract.py — JSON keeps epoch ms and adds `<column>_iso`, tables show
words and names escaped exactly once, durations in the one grammar — over a group named like
Rich markup. Commands that also need Spark or ZooKeeper are checked by their own tests."""

from __future__ import annotations

import re

import pytest

from kafkatools import commit, create_topic, produce_n
from tests.cli import run_cli
from tests.unit.test_output_contract import _check_times

pytestmark = pytest.mark.integration


@pytest.fixture
def world(tmp_path, bootstrap, unique, monkeypatch):
    topic, group = unique("contract"), f"[{unique('g')}/b]"
    create_topic(bootstrap, topic, partitions=2)
    produce_n(bootstrap, topic, 2, 5)
    commit(bootstrap, group, {(topic, 0): 2, (topic, 1): 3})
    monkeypatch.setenv("OFFSETKEEPER_CONFIG", str(tmp_path / "none.yaml"))
    (tmp_path / "none.yaml").write_text("{}\n")
    # `snapshots create` runs first in _commands: verify, diff and rollback then use it
    return {"b": bootstrap, "t": topic, "g": group, "store": str(tmp_path / "snaps")}


def _commands(w):
    b, t, g, s = w["b"], w["t"], w["g"], w["store"]
    return {
        "groups list": ["groups", "list", "-b", b],
        "groups describe": ["groups", "describe", g, "-b", b],
        "groups describe --state": ["groups", "describe", g, "--state", "-b", b],
        "offsets show": ["offsets", "show", "--topic", t, "-b", b],
        "offsets reset": ["offsets", "reset", "-g", g, "-t", t, "--by-duration", "1d2h", "-b", b],
        "offsets reset iso": ["offsets", "reset", "-g", g, "-t", t, "--by-duration", "P1DT2H", "-b", b],
        "offsets delete": ["offsets", "delete", "-g", g, "-t", t, "-b", b],
        "groups delete": ["groups", "delete", g, "-b", b],
        "snapshots create": ["snapshots", "create", "-g", g, "--store", s, "-b", b],
        "snapshots verify": ["snapshots", "verify", "latest", "--store", s, "-b", b],
        "snapshots diff": ["snapshots", "diff", "latest", "--live", "--store", s, "-b", b],
        "snapshots rollback": ["snapshots", "rollback", "latest", "--store", s, "-b", b],
    }


def test_cluster_commands_keep_the_output_contract(capsys, world):
    """Rules: JSON times as epoch ms plus `_iso`; tables in words; `[g/b]` shown as written
    (never `\\[g/b]`); `--by-duration` in the short and the ISO form plan the same offsets."""
    problems = []
    for key, args in _commands(world).items():
        j = run_cli(capsys, *args, "-o", "json")
        if j.code not in (0, 1):
            problems.append(f"{key} -o json: exit {j.code}: {j.err}")
            continue
        problems += [f"{key}: {p}" for p in _check_times(j.json())]
        r = run_cli(capsys, *args)
        text = r.out + r.err
        if re.search(r"\b(True|False)\b", r.out):
            problems.append(f"{key}: Python words in the table:\n{r.out}")
        if "\\[" in text:
            problems.append(f"{key}: a name escaped twice:\n{text}")
        if re.search(r"(?<![\d.])1 [a-z]+s\b(?! (ago|old))", text):
            problems.append(f"{key}: '1 ...s':\n{text}")
        if key.startswith(("groups describe", "offsets reset")) and world["g"] not in r.out:
            problems.append(f"{key}: the group name is not shown as written:\n{r.out}")
    assert problems == []
    short = run_cli(capsys, *_commands(world)["offsets reset"], "-o", "json").json()
    iso = run_cli(capsys, *_commands(world)["offsets reset iso"], "-o", "json").json()
    assert [p["target"] for g in short["groups"] for p in g["partitions"]] == \
        [p["target"] for g in iso["groups"] for p in g["partitions"]]
