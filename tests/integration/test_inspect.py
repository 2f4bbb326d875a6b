"""`groups list|describe` and `offsets show` against a real broker."""

from __future__ import annotations

import csv
import io

import pytest

from tests.cli import run_cli
from tests.kafkatools import LiveConsumer, commit, create_topic, produce_n

pytestmark = pytest.mark.integration


@pytest.fixture
def setup(bootstrap, unique):
    topic = unique("insp")
    create_topic(bootstrap, topic, 3)
    produce_n(bootstrap, topic, 3, 6)
    idle = unique("idle")
    commit(bootstrap, idle, {(topic, 0): 2, (topic, 1): 6})
    return topic, idle


def test_describe_offsets_columns_and_lag(capsys, bootstrap, setup):
    topic, idle = setup
    r = run_cli(capsys, "groups", "describe", idle, "-b", bootstrap, "-o", "json")
    assert r.code == 0, r.err
    rows = {(x["topic"], x["partition"]): x for x in r.json()}
    assert rows[(topic, 0)]["current_offset"] == 2 and rows[(topic, 0)]["lag"] == 4
    assert rows[(topic, 0)]["log_start_offset"] == 0 and rows[(topic, 0)]["log_end_offset"] == 6
    assert rows[(topic, 1)]["lag"] == 0 and rows[(topic, 1)]["consumer_id"] is None
    r = run_cli(capsys, "groups", "describe", idle, "-b", bootstrap)
    header = r.out.split("\n")[0].split()
    for col in ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-START-OFFSET", "LOG-END-OFFSET",
                "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]:
        assert col in header, (col, header)


def test_live_group_members_state_and_uncommitted_partitions(capsys, bootstrap, setup, unique):
    topic, _ = setup
    live = unique("live")
    commit(bootstrap, live, {(topic, 0): 1})
    consumer = LiveConsumer(bootstrap, live, [topic])
    try:
        r = run_cli(capsys, "groups", "describe", live, "-b", bootstrap, "-o", "csv")
        rows = list(csv.DictReader(io.StringIO(r.out)))
        assert len(rows) == 3
        by_p = {int(x["partition"]): x for x in rows}
        assert by_p[0]["current_offset"] == "1"
        assert by_p[1]["current_offset"] == "" and by_p[1]["lag"] == ""  # '-' in a table
        assert all(x["consumer_id"] for x in rows)
        r = run_cli(capsys, "groups", "describe", live, "-b", bootstrap, "--members", "-o", "json")
        members = r.json()
        assert len(members) == 1 and members[0]["partitions"] == 3
        assert sorted(members[0]["assignment"]) == [f"{topic}:{p}" for p in range(3)]
        r = run_cli(capsys, "groups", "describe", live, "-b", bootstrap, "--state", "-o", "json")
        st = r.json()[0]
        assert st["state"] == "stable" and st["members"] == 1 and st["coordinator"]
        r = run_cli(capsys, "groups", "list", "-b", bootstrap, "--state", "stable", "-o", "json")
        assert live in {g["group_id"] for g in r.json()}
        assert all(g["state"] == "stable" for g in r.json())
    finally:
        consumer.stop()


def test_groups_list_and_bad_state(capsys, bootstrap, setup):
    _, idle = setup
    r = run_cli(capsys, "groups", "list", "-b", bootstrap, "-o", "csv")
    assert r.code == 0 and idle in r.out and r.out.startswith("group_id,state")
    r = run_cli(capsys, "groups", "list", "-b", bootstrap, "--state", "sleepy")
    assert r.code == 2 and "--state 'sleepy' is not a group state" in r.err


def test_offsets_show_with_time(capsys, bootstrap, unique):
    t = unique("show")
    create_topic(bootstrap, t, 2, {"retention.ms": "-1"})
    base = 1_700_000_000_000
    produce_n(bootstrap, t, 2, 5, timestamp_ms=lambda p, i: base + i * 60_000)
    r = run_cli(capsys, "offsets", "show", "-b", bootstrap, "-t", f"{t}:1", "--at",
                "2023-11-14T22:15:20Z", "-o", "json")
    assert r.code == 0, r.err
    assert r.json() == [{"topic": t, "partition": 1, "log_start_offset": 0, "log_end_offset": 5,
                         "offset_at_time": 2}]
    r = run_cli(capsys, "offsets", "show", "-b", bootstrap, "-t", t, "--at", "2031-01-01", "-o", "json")
    assert [x["offset_at_time"] for x in r.json()] == [None, None]


def test_unknown_topic_and_bad_output_format(capsys, bootstrap):
    r = run_cli(capsys, "offsets", "show", "-b", bootstrap, "-t", "nope-no-topic")
    assert r.code == 2 and "unknown topic 'nope-no-topic'" in r.err
    r = run_cli(capsys, "groups", "list", "-b", bootstrap, "-o", "yaml")
    assert r.code == 2 and "yaml" in r.err


def test_unreachable_cluster_fails_with_one_line(capsys):
    r = run_cli(capsys, "groups", "list", "-b", "127.0.0.1:1", "--command-config", "/dev/null")
    assert r.code == 1
    assert len(r.err.strip().splitlines()) == 1


@pytest.mark.parametrize("view", [[], ["--members"], ["--state"]])
def test_describe_unknown_group(capsys, bootstrap, unique, view):
    g = unique("ghost")
    r = run_cli(capsys, "groups", "describe", g, *view, "-b", bootstrap)
    assert r.code == 2 and f"consumer group '{g}' does not exist" in r.err
