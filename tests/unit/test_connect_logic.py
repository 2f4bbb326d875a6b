"""Pure logic of connector offsets: validating hostile offsets JSON, planning changes,
decoding offsets-topic records, masking the worker URL."""

from __future__ import annotations

import json

import pytest

from offsetkeeper.connect.model import OffsetEntry, OffsetsFormatError, parse_entries
from offsetkeeper.connect.offsets_topic import decode_record
from offsetkeeper.connect.plan import Action, ConnectorFacts, plan_alter, plan_delete_all
from offsetkeeper.connect.rest import parse_target
from offsetkeeper.errors import UsageError

F = {"filename": "/data/a.txt"}


def _facts(state="RUNNING", type_="source", offsets=((F, {"position": 10}),)):
    return ConnectorFacts("c1", type_, state, tuple(OffsetEntry(p, o) for p, o in offsets))


@pytest.mark.parametrize("doc, message", [
    ([], 'an "offsets" list'),
    ({"offsets": [1]}, 'has no "partition"'),
    ({"offsets": [{"partition": [1]}]}, "not a JSON object"),
    ({"offsets": [{"partition": {"a": {"b": {"c": {"d": {"e": {}}}}}}}]}, "nests deeper"),
    ({"offsets": [{"partition": {"a": 2**70}}]}, "outside a 64-bit integer"),
    ({"offsets": [{"partition": {"a": "x" * 5000}}]}, "longer than"),
    ({"offsets": [{"partition": F, "offset": {"position": 1}},
                  {"partition": F, "offset": {"position": 2}}]}, "twice"),
])
def test_hostile_offsets_are_refused_with_one_line(doc, message):
    with pytest.raises(OffsetsFormatError, match=message):
        parse_entries(doc)


def test_plan_alter_lists_only_changes_and_the_expected_readback():
    plan = plan_alter(_facts(), (OffsetEntry(F, {"position": 3}),))
    assert plan.action is Action.ALTER and plan.refused is None
    assert [(c.before, c.after) for c in plan.changes] == [({"position": 10}, {"position": 3})]
    assert [e.offset for e in plan.expected] == [{"position": 3}]
    same = plan_alter(_facts(), (OffsetEntry(F, {"position": 10}),))
    assert same.action is Action.NOTHING


def test_exact_plan_removes_partitions_missing_from_the_target():
    other = {"filename": "/data/b.txt"}
    facts = _facts(offsets=((F, {"position": 10}), (other, {"position": 4})))
    plan = plan_alter(facts, (OffsetEntry(F, {"position": 10}),), exact=True)
    assert [(c.partition, c.after) for c in plan.changes] == [(other, None)]
    assert [e.partition for e in plan.expected] == [F]


@pytest.mark.parametrize("state", ["FAILED", "RESTARTING", "UNASSIGNED"])
def test_connectors_in_other_states_are_refused(state):
    assert "RUNNING, PAUSED or STOPPED" in plan_alter(_facts(state), ()).refused


def test_a_sink_entry_must_name_topic_partition_and_offset():
    plan = plan_alter(_facts(type_="sink", offsets=()), (OffsetEntry(F, {"position": 1}),))
    assert "kafka_topic" in plan.refused


def test_delete_all_changes_every_partition_to_none():
    plan = plan_delete_all(_facts())
    assert plan.action is Action.RESET and [c.after for c in plan.changes] == [None]


@pytest.mark.parametrize("key, value, want", [
    (b'["c1",{"filename":"/a"}]', b'{"position":5}', ("c1", {"position": 5})),
    (b'["c1",{"filename":"/a"}]', None, ("c1", None)),
    (b'not json', b'{}', None),
    (b'["c1"]', b'{}', None),
    (b'[1,{}]', b'{}', None),
    (b'["c1",{"filename":"/a"}]', b'[1]', None),
    (b'["c1",' + b'[' * 10000 + b']' * 10000 + b']', b'{}', None),
    (None, b'{}', None),
])
def test_offsets_topic_records_are_untrusted(key, value, want):
    got = decode_record(key, value)
    assert (None if got is None else (got[0], got[1].offset)) == want


def test_worker_url_credentials_move_to_basic_auth_and_stay_masked():
    t = parse_target("https://ops:s3cr3t@connect.example:8443/")
    assert t.url == "https://connect.example:8443" and t.username == "ops"
    assert t.password == "s3cr3t" and "s3cr3t" not in t.display_url
    with pytest.raises(UsageError, match=r"\*\*\*\*\*\*") as exc:
        parse_target("connect.example:8083?password=s3cr3t")
    assert "s3cr3t" not in str(exc.value)
    assert json.dumps(t.display_url)


def test_dev_connect_cli_bad_input_and_status_of_nothing(tmp_path, capsys):
    """dev-broker connect|mm2: an empty bootstrap is bad input (exit 2, nothing started); the
    status of a directory where nothing runs is exit 1."""
    from cli import run_cli

    r = run_cli(capsys, "dev-broker", "connect", "start", "-b", " ", "--data-dir", str(tmp_path))
    assert r.code == 2 and "--bootstrap-server is empty" in r.err
    assert not (tmp_path / "offsetkeeper-connect.json").exists()
    r = run_cli(capsys, "dev-broker", "mm2", "start", "--source-bootstrap", "",
                "--target-bootstrap", "127.0.0.1:1", "--data-dir", str(tmp_path))
    assert r.code == 2 and "--source-bootstrap is empty" in r.err
    r = run_cli(capsys, "dev-broker", "connect", "status", "--data-dir", str(tmp_path),
                "-o", "json")
    assert r.code == 1 and r.json()["running"] is False


def test_connect_cli_refuses_a_url_that_is_not_http_and_masks_it(capsys):
    from cli import run_cli

    r = run_cli(capsys, "connect", "list", "--connect-url", "ftp://ops:pa55word@host:21")
    assert r.code == 2 and "pa55word" not in r.err and "not a Connect REST URL" in r.err


def test_a_reset_without_names_or_pattern_is_bad_input_before_any_request(capsys):
    """Regression: `connect reset --to-none` with no NAME and no --pattern would have planned
    (and with --execute, applied) the change to EVERY connector of the worker. It must be bad
    input, refused before the worker is even asked."""
    from cli import run_cli

    r = run_cli(capsys, "connect", "reset", "--to-none", "--execute",
                "--connect-url", "http://127.0.0.1:1")
    assert r.code == 2 and "name the connectors to change" in r.err
