"""Regression tests for issue 8: hostile names in scripts and CSV files, times, durations,
integers (items 1, 2, 9, 16, 23)."""

from __future__ import annotations

import os
import stat
import subprocess
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetkeeper.errors import UsageError
from offsetkeeper.models import TopicPartition
from offsetkeeper.reset.parse import (
    csv_line,
    decode_utf8,
    parse_int,
    parse_offsets_csv,
    parse_topic_spec,
)
from offsetkeeper.reset.plan import GroupPlan, PartitionPlan, ResetPlan
from offsetkeeper.reset.render import comment_text, plan_csv, plan_script
from offsetkeeper.times import duration_start_ms, parse_time

HOSTILE = [
    "act\ntouch {mark}-newline #",
    "$(touch {mark}-dollar)",
    "`touch {mark}-backtick`",
    "'; touch {mark}-quote; '",
    '"; touch {mark}-dquote; "',
    "a\rb\x1b[31mred",
    " lead-trail ",
    "#hash",
    "comma,group",
    "[/]",
    "\ufeffpay2",
    "OFFSETKEEPER_CSV_x\nOFFSETKEEPER_CSV_y",
]


def _plan(groups: dict[str, dict[tuple[str, int], int]], refused: dict[str, str] | None = None,
          target: str = "x") -> ResetPlan:
    refused = refused or {}
    return ResetPlan(target=target, groups=tuple(
        GroupPlan(g, "empty", 0, tuple(PartitionPlan(g, t, p, None, o, 0, o)
                                       for (t, p), o in sorted(m.items())), refused=refused.get(g))
        for g, m in sorted(groups.items())))


# -- item 1: the --script is shell-safe -------------------------------------------------------

def _stub(tmp_path):
    """A kafka-consumer-groups.sh on PATH that logs its arguments and its --from-file CSV."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "calls.log"
    stub = bindir / "kafka-consumer-groups.sh"
    stub.write_text(
        "#!/usr/bin/env bash\n"
        f"log={str(log)!r}\n"
        'printf "CALL" >> "$log"\n'
        'for a in "$@"; do printf " [%s]" "$a" >> "$log"; done\n'
        'printf "\\n" >> "$log"\n'
        'while [ $# -gt 0 ]; do if [ "$1" = --from-file ]; then cat "$2" >> "$log"; '
        'printf "END-CSV\\n" >> "$log"; fi; shift; done\n')
    stub.chmod(0o755)
    return bindir, log


def test_script_is_shell_safe_with_hostile_names(tmp_path):
    """Invariant: running a generated --script runs kafka-consumer-groups.sh once per group and
    nothing else, whatever bytes the group, topic, refusal and plan label hold (comments too)."""
    mark = str(tmp_path / "PWNED")
    groups = {g.format(mark=mark): {(f"orders-{i}", 0): 5, (f"orders-{i}", 1): 7}
              for i, g in enumerate(HOSTILE)}
    hostile_refused = "act\ntouch " + mark + "-refused #"
    groups[hostile_refused] = {("orders", 0): 1}
    plan = _plan(groups, refused={hostile_refused: f"group {hostile_refused} is active\ntouch {mark}-why"},
                 target=f"--from-file /tmp/x\ntouch {mark}-label\n.csv")
    script = plan_script(plan, bootstrap_servers="k:9092; touch " + mark + "-bootstrap",
                         command_config=f"/etc/$(touch {mark}-cc)")
    path = tmp_path / "reset.sh"
    path.write_text(script)
    bindir, log = _stub(tmp_path)
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    res = subprocess.run(["bash", str(path)], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert not [p for p in os.listdir(tmp_path) if p.startswith("PWNED")]
    calls = log.read_bytes().decode()
    expected = sorted(g for g in groups if g != hostile_refused)
    assert calls.count("CALL ") == len(expected)
    for g in expected:
        assert f" [--group] [{g}] [--reset-offsets]" in calls
    assert f"[--bootstrap-server] [k:9092; touch {mark}-bootstrap]" in calls
    assert f"[--command-config] [/etc/$(touch {mark}-cc)]" in calls
    # Each call got its group's partitions as CSV that reads back exactly.
    for i in range(len(HOSTILE)):
        assert f"orders-{i},0,5\norders-{i},1,7\nEND-CSV" in calls
    # Comments hold no raw control characters at all.
    for line in script.splitlines():
        if line.startswith("#"):
            assert line.isprintable(), line


def test_comment_text_escapes_control_characters():
    """Invariant: text put into a script comment never holds a newline or other control byte."""
    assert comment_text("a\nb\r\x1b\\") == "a\\nb\\r\\x1b\\\\"


# -- item 2: --export / --from-file round trip -------------------------------------------------

names = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                min_size=1, max_size=12)


@settings(max_examples=300)
@given(st.dictionaries(names, st.dictionaries(st.tuples(names, st.integers(0, 50)),
                                              st.integers(0, 10**12), min_size=1, max_size=3),
                       min_size=1, max_size=4))
def test_export_round_trips_any_names(groups):
    """Invariant: --from-file reads back exactly the groups, topics and offsets --export wrote,
    whatever the names hold (commas, quotes, newlines, '#', spaces, a BOM)."""
    parsed = parse_offsets_csv(plan_csv(_plan(groups)))
    if len(groups) == 1:
        (g, m), = groups.items()
        assert parsed.for_group(g) == {TopicPartition(t, p): o for (t, p), o in m.items()}
    else:
        assert parsed.groups() == sorted(groups)
        for g, m in groups.items():
            assert dict(parsed.offsets[g]) == {TopicPartition(t, p): o for (t, p), o in m.items()}


def test_export_quotes_names_that_would_change():
    """Invariant: names that read back differently unquoted are written quoted (RFC 4180)."""
    assert csv_line([" lead-trail ", "#hash", 'a"b', "c,d", "plain"]) == \
        '" lead-trail ","#hash","a""b","c,d",plain'


@pytest.mark.parametrize("text,line,msg", [
    ("\ufeffpay2,orders,0,5\n", 1, "byte order mark"),
    ("g1,orders,0,5\n g2,orders,0,5\n", 2, "leading or trailing whitespace"),
    ("g1,orders ,0,5\n", 1, "leading or trailing whitespace"),
    ("orders,0,5\norders,0,6\n", 2, "already given on line 1"),
    ("g,orders,0,5\n\ng,orders,0,6\n", 3, "already given on line 1"),
    ("orders,0,1_000\n", 1, "ASCII digits"),
    ("orders,٣,5\n", 1, "ASCII digits"),
    ('"unclosed,0,5\n', 1, "not closed"),
    ('or"ders,0,5\n', 1, "quote inside"),
])
def test_from_file_refuses_with_line_number(text, line, msg):
    """Invariant: a BOM, unquoted whitespace around a name, a repeated group/partition and
    non-ASCII digits are refused with the line number (exit 2), never guessed."""
    with pytest.raises(UsageError, match=f"line {line}: .*{msg}"):
        parse_offsets_csv(text, source="f.csv")


def test_from_file_keeps_quoted_whitespace_and_hash():
    """Invariant: a quoted field is the name exactly, leading '#' and spaces included."""
    t = parse_offsets_csv('" lead-trail ",orders,0,5\n"#hash",orders,0,6\n# a comment\n')
    assert t.groups() == sorted([" lead-trail ", "#hash"])
    assert t.for_group("#hash") == {TopicPartition("orders", 0): 6}


def test_from_file_must_be_utf8():
    """Invariant: a file that is not UTF-8 is refused with the line of the bad byte."""
    with pytest.raises(UsageError, match="line 2: not UTF-8"):
        decode_utf8(b"orders,0,1\n\xff\xfe,0,1\n", source="f.csv")


# -- items 9, 16, 23: one time parser --------------------------------------------------------

@pytest.mark.parametrize("text", ["1969-12-31T23:59:59.999Z", "0001-01-01T00:00:00Z",
                                  "0001-01-01T00:00:00+02:00", "-1", "-1000"])
def test_times_before_1970_are_refused(text):
    """Invariant: a time before the epoch is refused (Kafka reads negative timestamps as
    latest/earliest), naming the option."""
    with pytest.raises(UsageError, match="--to-datetime .* before 1970"):
        parse_time(text)


@pytest.mark.parametrize("text,ms", [
    ("2026-11-20T09:40:00Z", 1795167600000),
    ("1795167600000", 1795167600000),
    ("2026-11-20T09:40:00.2504Z", 1795167600251),  # rounded up: .250 is before .2504
    ("2026-11-20T09:40:00.250999+00:00", 1795167600251),
    ("1970-01-01T00:00:00Z", 0),
])
def test_one_time_parser_for_at_and_from_time(text, ms):
    """Invariant: --to-datetime, --at and --from-time accept the same forms (ISO-8601 or epoch
    ms) and resolve sub-millisecond times the same way (up: 'at or after')."""
    assert parse_time(text, what="--at") == ms
    assert parse_time(text, what="--from-time") == ms


def test_time_errors_name_the_option():
    """Invariant: the error names the option the user gave (`offsets show --at garbage`)."""
    with pytest.raises(UsageError, match="^--at 'garbage' is not a time"):
        parse_time("garbage", what="--at")
    with pytest.raises(UsageError, match="^--to-datetime '２０２６-11-20' is not a time"):
        parse_time("２０２６-11-20")


@pytest.mark.parametrize("text", ["1_000", "١٠", " 5", "+5", "-5", "0x10", ""])
def test_integers_are_ascii_digits_only(text):
    """Invariant: integers are ASCII digits only; Python's int() leniency is not inherited."""
    with pytest.raises(UsageError, match="ASCII digits"):
        parse_int(text, what="--to-offset")


@pytest.mark.parametrize("text", ["orders:0_1", "orders:١", "orders: 1"])
def test_partition_lists_are_ascii_digits(text):
    """Invariant: TOPIC:P,... partitions are ASCII digits only."""
    with pytest.raises(UsageError, match="ASCII"):
        parse_topic_spec(text)


@pytest.mark.parametrize("text,msg", [("-PT1H", "no sign"), ("P99999999D", "before 1970"),
                                      ("P9999999999D", "before 1970"), ("PT１H", "is not a duration")])
def test_bad_durations_are_refused(text, msg):
    """Invariant: --by-duration with a sign, non-ASCII digits, or reaching before 1970 is exit 2."""
    with pytest.raises(UsageError, match=msg):
        duration_start_ms(text)


def test_duration_start():
    now = datetime(2026, 11, 20, 10, 40, tzinfo=UTC)
    assert duration_start_ms("PT1H", now=now) == 1795167600000
    assert duration_start_ms("P1,5D", now=now) == 1795171200000 - 36 * 3_600_000  # a comma decimal


def test_script_file_mode_is_executable(tmp_path):
    """Invariant: --script files are written 0755 (reviewable and runnable)."""
    from pathlib import Path

    from offsetkeeper.ops.reset import write_user_file

    p = Path(write_user_file(Path(tmp_path / "r.sh"), "#!/bin/sh\n", what="--script", mode=0o755))
    assert stat.S_IMODE(p.stat().st_mode) == 0o755


@pytest.mark.parametrize("where", ["missing/x.sh", "file/x.sh"])
def test_script_into_bad_directory_is_refused_and_leaves_nothing(tmp_path, where):
    """Invariant: --script/--export into a missing directory or below a file is exit 2 and
    writes nothing (no directory created, no .tmp left)."""
    from pathlib import Path

    from offsetkeeper.ops.reset import write_user_file

    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="--script .*(does not exist|is not a directory)"):
        write_user_file(Path(tmp_path / where), "x", what="--script")
    assert sorted(os.listdir(tmp_path)) == ["file"]


@pytest.mark.parametrize("value", ["ord:0_1=2", "ord:٠=1", "ord:0=1_0"])
def test_partition_map_is_ascii_digits(value):
    """Invariant: --partition-map numbers are ASCII digits only (`ord:0_1`, Arabic-Indic)."""
    from offsetkeeper.restore.config import parse_partition_map

    with pytest.raises(UsageError, match="--partition-map"):
        parse_partition_map([value])
