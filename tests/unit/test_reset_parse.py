"""Parsing of reset input: topic specs, datetimes, durations, offsets, CSV files."""

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetkeeper.errors import UsageError
from offsetkeeper.models import TopicPartition
from offsetkeeper.reset.parse import (
    parse_offset,
    parse_offsets_csv,
    parse_topic_spec,
)
from offsetkeeper.reset.plan import GroupPlan, PartitionPlan, Refusal, RefusalReason, ResetPlan
from offsetkeeper.reset.render import plan_csv, plan_script
from offsetkeeper.times import parse_duration_ms
from offsetkeeper.times import parse_time as parse_datetime  # the one point-in-time parser

topic_names = st.from_regex(r"[A-Za-z0-9._-]{1,20}", fullmatch=True)


@pytest.mark.parametrize("text,expected", [
    ("orders", ("orders", None)),
    ("orders:0", ("orders", (0,))),
    ("orders:2,0,2", ("orders", (0, 2))),
    ("my.topic-1:10", ("my.topic-1", (10,))),
])
def test_topic_spec(text, expected):
    assert parse_topic_spec(text) == expected


@pytest.mark.parametrize("text", [":0", "orders:", "orders:a", "orders:-1", "orders:1,x"])
def test_topic_spec_rejects(text):
    with pytest.raises(UsageError, match="--topic"):
        parse_topic_spec(text)


@given(topic_names, st.lists(st.integers(0, 1000), min_size=1, max_size=10))
def test_topic_spec_round_trip(topic, parts):
    assert parse_topic_spec(f"{topic}:{','.join(map(str, parts))}") == (topic, tuple(sorted(set(parts))))


@pytest.mark.parametrize("text,ms", [
    ("2026-11-20T09:40:00", 1795167600000),
    ("2026-11-20T09:40:00Z", 1795167600000),
    ("2026-11-20T09:40:00.250Z", 1795167600250),
    ("2026-11-20T11:40:00+02:00", 1795167600000),
    ("2026-11-20", 1795132800000),
])
def test_datetime_utc_default(text, ms):
    assert parse_datetime(text) == ms


@pytest.mark.parametrize("text", ["yesterday", "2026-13-01T00:00:00", "", "09:40"])
def test_datetime_rejects(text):
    with pytest.raises(UsageError, match="is not a time"):
        parse_datetime(text)


@pytest.mark.parametrize("text,delta", [
    ("PT1H", timedelta(hours=1)),
    ("PT1H30M", timedelta(hours=1, minutes=30)),
    ("P1DT2H", timedelta(days=1, hours=2)),
    ("PT0.5S", timedelta(seconds=0.5)),
    ("p2d", timedelta(days=2)),
])
def test_duration(text, delta):
    assert parse_duration_ms(text) == delta // timedelta(milliseconds=1)


@pytest.mark.parametrize("text", ["P", "PT", "1X", "PT1X", "P1DT", "", "PT-1H", "-PT10M", "+PT1H"])
def test_duration_rejects(text):
    with pytest.raises(UsageError, match="is not a duration"):
        parse_duration_ms(text, what="--by-duration", allow_zero=True)


@given(st.integers(0, 10**6), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
def test_duration_property(d, h, m, s):
    assert parse_duration_ms(f"P{d}DT{h}H{m}M{s}S", allow_zero=True) == (
        timedelta(days=d, hours=h, minutes=m, seconds=s) // timedelta(milliseconds=1))


@pytest.mark.parametrize("text,msg", [("-1", "not a non-negative integer"), ("abc", "not a non-negative"),
                                      ("1.5", "not a non-negative")])
def test_offset_rejects(text, msg):
    with pytest.raises(UsageError, match=msg):
        parse_offset(text)


def test_csv_one_group_form():
    t = parse_offsets_csv("orders,0,5\norders,1,7\n\n# comment\npay,0,0\n")
    assert t.groups() == []
    assert t.for_group("anything") == {TopicPartition("orders", 0): 5, TopicPartition("orders", 1): 7,
                                       TopicPartition("pay", 0): 0}


def test_csv_several_groups_form():
    t = parse_offsets_csv("g1,orders,0,5\ng2,orders,0,9\n")
    assert t.groups() == ["g1", "g2"]
    assert t.for_group("g2") == {TopicPartition("orders", 0): 9}
    assert t.for_group("g3") == {}


@pytest.mark.parametrize("text,line", [
    ("orders,0,5\norders,x,1\n", 2),
    ("orders,0,5\ng,orders,0,1\n", 2),
    ("orders,0\n", 1),
    ("orders,0,-3\n", 1),
    ("a,b,c,d,e\n", 1),
])
def test_csv_rejects_with_line_number(text, line):
    with pytest.raises(UsageError, match=f"line {line}"):
        parse_offsets_csv(text, source="f.csv")


def test_csv_empty():
    with pytest.raises(UsageError, match="holds no offsets"):
        parse_offsets_csv("\n# nothing\n")


offset_maps = st.dictionaries(
    st.sampled_from(["g1", "g-2", "g.3"]),
    st.dictionaries(st.tuples(topic_names, st.integers(0, 50)), st.integers(0, 10**12), min_size=1),
    min_size=1, max_size=3)


@given(offset_maps)
def test_export_then_from_file_round_trip(groups):
    """Invariant: what --export writes, --from-file reads back as exactly the planned offsets."""
    plan = ResetPlan(target="x", groups=tuple(
        GroupPlan(g, "empty", 0, tuple(PartitionPlan(g, t, p, None, o, 0, o) for (t, p), o in sorted(m.items())))
        for g, m in sorted(groups.items())))
    parsed = parse_offsets_csv(plan_csv(plan))
    for g, m in groups.items():
        assert parsed.for_group(g) == {TopicPartition(t, p): o for (t, p), o in m.items()}


def test_script_has_one_command_per_group_and_skips_refused():
    plan = ResetPlan(target="x", groups=(
        GroupPlan("g1", "empty", 0, (PartitionPlan("g1", "orders", 0, 1, 5, 0, 9),
                                      PartitionPlan("g1", "orders", 1, 1, 6, 0, 9))),
        GroupPlan("g2", "stable", 1, (PartitionPlan("g2", "orders", 0, 1, 5, 0, 9),), refused=Refusal(RefusalReason.ACTIVE, "active")),
    ))
    s = plan_script(plan, bootstrap_servers="k:9092")
    assert s.count("kafka-consumer-groups.sh --bootstrap-server") == 1
    assert "--group g1 --reset-offsets --from-file \"$PLAN_FILE\" --execute" in s
    assert "orders,0,5\norders,1,6\n" in s
    assert "# SKIPPED group g2: active" in s


@pytest.mark.parametrize("text", [
    "2023-11-14x22:13:20",      # any separator: fromisoformat reads it
    "2023-11-14 22:13:20",
    "2023-W46-2",               # ISO week date
    "2023-W46-2T22:13:20",
    "20231114T221320",          # basic format
    "20231114",                 # a date typed without dashes, not 1970-01-01T05:37:11.114Z
    "1700000000",               # epoch seconds, not milliseconds
    "2023-318",                 # ordinal date
    "2026-11-20T09:40:00z",
    "2026-11-20T09",
    "2026-11-20T09:40:00+05",
])
def test_datetime_accepts_only_the_documented_forms(text):
    """Invariant (issue 31 item 6): a time is one of the documented forms (YYYY-MM-DD,
    YYYY-MM-DDTHH:MM[:SS[.f]] with Z, +HH:MM or +HHMM, or 13-digit epoch milliseconds);
    anything else is refused with one line naming those forms, so a typo is never applied."""
    with pytest.raises(UsageError) as err:
        parse_datetime(text)
    msg = str(err.value)
    assert "\n" not in msg and "YYYY-MM-DDTHH:MM" in msg and "13-digit epoch" in msg


@pytest.mark.parametrize("text,ms", [
    ("2026-11-20T09:40", 1795167600000),
    ("2026-11-20T11:40:00+0200", 1795167600000),
    ("2026-11-20T09:40:00.5Z", 1795167600500),   # ISO: .5 is half a second
    ("1795167600000", 1795167600000),
])
def test_datetime_documented_forms(text, ms):
    assert parse_datetime(text) == ms


def test_cli_refuses_a_lenient_time_with_exit_2(capsys):
    """Invariant: `offsets reset --to-datetime` with a time outside the documented forms exits
    2 with one line naming the forms, before reaching any cluster (nothing is changed)."""
    from tests.cli import run_cli

    r = run_cli(capsys, "offsets", "reset", "-g", "g", "-t", "t", "--to-datetime",
                "2023-11-14x22:13:20", "-b", "127.0.0.1:1")
    assert r.code == 2, r
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "2023-11-14x22:13:20" in lines[0] and "YYYY-MM-DD" in lines[0]
