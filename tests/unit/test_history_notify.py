"""Notification decisions, bodies and thresholds (history/notify.py), pure; delivery and state
across restarts are tested with a real HTTP server in tests/integration/test_history_notify.py."""

from __future__ import annotations

import json

import pytest

from offsetkeeper.errors import UsageError
from offsetkeeper.history.notify import Event, Rule, decide, level_for, parse_rules, render
from offsetkeeper.history.sample_cycle import SampleScope
from offsetkeeper.history.status import GroupStatus, Status


def st(group, status, undecided=False):
    return GroupStatus(group, Status(status), f"{status} because", total_lag=7, last_sample=1_000,
                       undecided=undecided)


RULES = parse_rules(["pay-*=err", "noisy-*=off"])


@pytest.mark.parametrize(("status", "before", "group", "expected"), [
    ("OK", None, "g", []),
    ("WARN", None, "g", [("open", "WARN")]),
    ("ERR", None, "g", [("open", "ERR")]),
    ("ERR", "WARN", "g", [("open", "ERR")]),      # worse while open: the new status
    ("ERR", "ERR", "g", []),                      # sent already (before a restart too)
    ("OK", "ERR", "g", [("close", "OK")]),
    ("OK", "OK", "g", []),
    ("WARN", None, "pay-1", []),                  # threshold err for pay-*
    ("ERR", None, "pay-1", [("open", "ERR")]),
    ("WARN", "ERR", "pay-1", [("close", "WARN")]),  # below its threshold: closed
    ("ERR", None, "noisy-1", []),
])
def test_decide(status, before, group, expected):
    notified = {} if before is None else {group: before}
    got = decide([st(group, status)], notified, RULES)
    assert [(e.event, str(e.status.status)) for e in got] == expected


def test_a_young_window_neither_opens_nor_closes():
    assert decide([st("g", "OK", undecided=True)], {"g": "ERR"}, RULES) == []


def test_rules():
    assert level_for("pay-x", RULES) == "err" and level_for("other", RULES) == "warn"
    assert RULES[-1] == Rule("*", "warn")
    with pytest.raises(UsageError) as exc:
        parse_rules(["pay-*=loud"])
    assert exc.value.message.startswith("--notify-threshold 'pay-*=loud' is not PATTERN=LEVEL")


def test_bodies(tmp_path):
    ev = Event("open", st('we"ird', "ERR"))
    slack = json.loads(render(ev, "prod", "slack"))
    assert slack["text"] == '[prod] consumer group we"ird: ERR'
    assert slack["attachments"][0]["color"] == "danger"
    assert slack["attachments"][0]["text"] == "ERR because"
    generic = json.loads(render(Event("close", st("g", "OK")), "prod", "generic"))
    assert generic["event"] == "close" and generic["status"] == "OK" and generic["total_lag"] == 7
    t = tmp_path / "t.json"
    t.write_text('{"who": "$group", "what": "$event", "lag": $total_lag}')
    assert json.loads(render(ev, "prod", str(t))) == {"who": 'we"ird', "what": "open", "lag": 7}


@pytest.mark.parametrize(("allow", "deny", "group", "tracked"), [
    ((), (), "any", True),
    (("pay-.*",), (), "pay-1", True),
    (("pay-.*",), (), "ship-1", False),
    ((), ("console-consumer-.*",), "console-consumer-42", False),
    (("pay-.*",), ("pay-test",), "pay-test", False),
])
def test_sampler_tracks(allow, deny, group, tracked):
    assert SampleScope(all_groups=True, allow=allow, deny=deny).tracks(group) is tracked
    assert SampleScope(groups=(group,), allow=allow, deny=deny).tracks(group)  # named: always
