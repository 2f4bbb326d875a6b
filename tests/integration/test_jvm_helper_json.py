"""The admin helper reads and writes its JSON itself (jvm/admin-helper/.../Json.java, no Jackson:
2.4 MB less in the wheel). The real helper process, the real broker."""

from __future__ import annotations

import json
import subprocess

import pytest

from offsetkeeper.kafka import jvm

pytestmark = pytest.mark.integration

ODD_NAMES = ['quote " and backslash \\', "tab\tnew\nline\r\x01\x1f", "é ☃ 𝄞 \u2028 end",
             "/slash/ {braces} [brackets]: ,", " spaces "]


def test_names_round_trip_exactly_and_malformed_lines_get_one_error_each(bootstrap):
    """Invariant: every string survives the helper's JSON both ways byte for byte (quotes,
    backslashes, control characters, non-BMP characters as surrogate-pair escapes, U+2028);
    a malformed first line is an INVALID_REQUEST answer with exit 2, and a malformed line in a
    session is an error answer after which the session keeps serving."""
    got = jvm.call({"bootstrap.servers": bootstrap}, "describe-consumer-groups",
                   {"groups": ODD_NAMES}, timeout=30)
    assert sorted(g["group"] for g in got) == sorted(ODD_NAMES)
    # none exists: Kafka's answer carries each name back inside its message too
    assert all(g["error"] == {"code": "GROUP_ID_NOT_FOUND", "exception": "GroupIdNotFoundException",
                              "message": f"Group {g['group']} not found."} for g in got), got

    for line in ("not json", '{"op": 3}', "[1, 2", '{"op": "ping"} trailing', ""):
        r = subprocess.run(jvm.helper_command(), input=line + "\n", capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 2, (line, r.stdout, r.stderr)
        assert json.loads(r.stdout)["error"]["code"] == "INVALID_REQUEST"

    lines = [{"op": "session", "config": {"bootstrap.servers": bootstrap}}, {"op": "ping"},
             '{"op": "ping", "args": {"x": [1, 2.5e3, -7, true, false, null, "\\u00e9"]}}',
             '{"op": "ping", "args": {"unterminated": "abc}}', {"op": "ping"}]
    text = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    r = subprocess.run(jvm.helper_command(), input=text, capture_output=True, text=True,
                       timeout=60)
    answers = [json.loads(a) for a in r.stdout.splitlines()]
    assert [a["ok"] for a in answers] == [True, True, True, False, True], answers
    assert answers[3]["error"]["code"] == "INVALID_REQUEST"
    assert [a.get("result") for a in answers] == ["ready", "pong", "pong", None, "pong"]
