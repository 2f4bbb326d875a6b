"""Regression tests for issue 22 items 11, 13 and 25 (unit level: no broker): bounded inputs,
linear planning, sampler overruns and the exporter's speed and allow/deny lists."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offsetkeeper.history.model import Cycle, Sample
from tests.cli import run_cli

# -- item 25: the exporter ---------------------------------------------------------------------

NAMES = st.text(alphabet=st.sampled_from('ab\\"\n{}=,é-_. '), min_size=1, max_size=6)


@st.composite
def histories(draw):
    """group -> samples of up to 3 cycles over a few topics and partitions."""
    out = {}
    for group in draw(st.lists(NAMES, min_size=0, max_size=4, unique=True)):
        tps = draw(st.lists(st.tuples(NAMES, st.integers(0, 3)), min_size=1, max_size=4,
                            unique=True))
        samples = []
        for c in range(draw(st.integers(1, 3))):
            ts = 1_000 * (c + 1)
            for topic, p in tps:
                end = draw(st.integers(0, 50))
                lso = draw(st.one_of(st.none(), st.integers(0, end)))
                samples.append(Sample(
                    ts, group, topic, p, committed=draw(st.integers(0, end)), log_start=0,
                    log_end=end, state="stable", members=1,
                    consumer_id=draw(st.sampled_from(["", "m-1"])), host="h\\1", client_id="c\"",
                    time_lag_ms=draw(st.one_of(st.none(), st.integers(0, 10**7))),
                    time_lag_interp_ms=draw(st.one_of(st.none(), st.integers(0, 10**7))), lso=lso,
                    open_txn_since=draw(st.one_of(st.none(), st.integers(0, ts)))))
        out[group] = samples
    return out


def _parsed(text: str) -> dict:
    from prometheus_client.parser import text_string_to_metric_families

    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == "offsetkeeper_sample_age_seconds":
                continue  # depends on the time of the scrape
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in out, f"duplicate series {key}"
            out[key] = s.value
    return out


def _reference(collector) -> str:
    from prometheus_client.exposition import generate_latest
    from prometheus_client.registry import CollectorRegistry

    reg = CollectorRegistry(auto_describe=False)
    reg.register(collector)
    return generate_latest(reg).decode()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.sampled_from([None, "a.*", "[^b]+"]), st.sampled_from([None, "b.*"]))
def test_fast_exposition_says_what_prometheus_client_says(data, allow, deny):
    """Invariant: the exporter's own renderer (served by /metrics, cached per group) gives
    exactly the series and values prometheus-client's generate_latest gives for the same
    collector, with any names (quotes, backslashes, newlines), with and without allow/deny
    lists; the lists keep out exactly the groups and topics they deny."""
    from offsetkeeper.history.exporter import LagCollector, MetricFilter

    filt = MetricFilter.parse(group_allow=[allow] if allow else [],
                              topic_deny=[deny] if deny else [])
    col = LagCollector(lambda: data, cluster_name='c"1', window=2, up=lambda: True,
                       last_success_ms=lambda: 3_000, poll_time_ms=lambda: 5, interval_ms=1000,
                       overruns=lambda: 2, metric_filter=filt)
    col.prepare(data)
    fast = col.render().decode()
    assert _parsed(fast) == _parsed(_reference(col))
    for (name, labels), _ in _parsed(fast).items():
        lbl = dict(labels)
        if "group" in lbl:
            assert allow is None or filt.group_ok(lbl["group"]), name
        if "topic" in lbl:
            assert filt.topic_ok(lbl["topic"]), (name, lbl)


def test_allow_and_deny_lists_are_full_matches():
    """Invariant: an allow/deny regex must match the whole name (kafka-lag-exporter's
    semantics): `pay` does not allow `payments`; deny wins over allow."""
    from offsetkeeper.history.exporter import MetricFilter

    f = MetricFilter.parse(group_allow=["pay", "bill.*"], group_deny=["billing-test"])
    assert not f.group_ok("payments") and f.group_ok("pay")
    assert f.group_ok("billing") and not f.group_ok("billing-test")
    assert MetricFilter().group_ok("anything") and MetricFilter().topic_ok("x")


@pytest.mark.parametrize("option", ["--group-allow", "--group-deny", "--topic-allow", "--topic-deny"])
def test_bad_allow_deny_regex_is_bad_input(capsys, option):
    """Invariant: a regex that does not compile is refused before anything starts (exit 2,
    one line naming the option)."""
    r = run_cli(capsys, "exporter", option, "(unclosed", "-b", "127.0.0.1:1")
    assert r.code == 2 and option in r.err and "regular expression" in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_scrape_renders_each_group_once_per_new_sample():
    """Invariant: a scrape does not recompute a group whose samples did not change (the work
    is done once per sample, in `prepare`); a new sample of the group is served at once."""
    from offsetkeeper.history.exporter import LagCollector

    data = {"g": [Sample(1_000, "g", "t", 0, 5, 0, 9)]}
    col = LagCollector(lambda: data, cluster_name="c")
    col.prepare(data)
    first = col._cache["g"][1]
    col.render()
    col.render()
    assert col._cache["g"][1] is first
    data["g"] = data["g"] + [Sample(2_000, "g", "t", 0, 7, 0, 9)]
    assert 'kafka_consumergroup_group_offset{cluster_name="c",group="g"' in col.render().decode()
    assert col._cache["g"][1] is not first and ' 7.0\n' in col.render().decode()


# -- item 13: overruns -------------------------------------------------------------------------

def test_overrun_keeps_lag_status_from_calling_the_sampler_stopped(capsys, tmp_path):
    """Invariant: when cycles overrun the interval (37 s cycles at a 10 s interval), `lag
    status` judges staleness by the cycle's duration: samples 40 s old are not "is the
    sampler running?" — while they are when cycles take 1 s at that interval."""
    import time

    from offsetkeeper.history.store import open_store

    now = int(time.time() * 1000)
    for name, duration in (("slow", 37_000), ("quick", 1_000)):
        path = str(tmp_path / f"{name}.db")
        with open_store(path) as s:
            for ts in (now - 80_000, now - 40_000):
                s.write([Sample(ts, "g", "t", 0, 5, 0, 9)], Cycle(ts, 10_000, 1, 1, duration))
        r = run_cli(capsys, "lag", "status", "g", "--window", "2", "--store", path, "-o", "json")
        stale = "is the sampler running?" in r.json()[0]["reason"]
        assert stale == (name == "quick"), r.json()


def test_overrun_message_says_what_to_do():
    """Invariant: the overrun warning names the duration, the interval and the remedies."""
    from offsetkeeper.history.sampler import overrun_message

    msg = overrun_message(24_100, 10_000, 307, 3, True)
    assert "24.1s" in msg and "10s interval" in msg and "307 groups" in msg
    assert "--no-time-lag" in msg and "--interval" in msg
    assert "--no-time-lag" not in overrun_message(24_100, 10_000, 307, 3, False)


@given(st.lists(st.text(max_size=3), max_size=3000))
def test_chunks_cover_every_group_once_in_growing_chunks(groups):
    """Invariant: a cycle's chunks hold every group exactly once, in order; the first chunk
    is small (the first metrics come early) and sizes double up to the cap (few rounds)."""
    from offsetkeeper.history.sample_cycle import FIRST_CHUNK, MAX_CHUNK, chunked

    chunks = list(chunked(groups))
    assert [g for c in chunks for g in c] == groups
    sizes = [len(c) for c in chunks]
    if sizes:
        assert sizes[0] <= FIRST_CHUNK
        for a, b in itertools.pairwise(sizes[:-1]):  # the last chunk holds the rest
            assert b == min(2 * a, MAX_CHUNK)


# -- item 11: bounded inputs, linear planning ---------------------------------------------------

BILLION_LAUGHS = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


@pytest.mark.parametrize("text, says", [
    (BILLION_LAUGHS, "YAML nodes once its aliases are expanded"),
    ("a: &a [1]\nb: [" + ",".join(["*a"] * 1_001) + "]\n", "YAML aliases"),
    ("a: &a [*a]\n", "recursive"),
    ("x: " + "[" * 5_000 + "]" * 5_000 + "\n", "nested too deeply"),
])
def test_yaml_bombs_are_refused_before_they_expand(capsys, tmp_path, text, says):
    """Invariant: a config file whose aliases would expand past the bounds (billion laughs,
    1,000+ aliases, a recursive alias, absurd nesting) is refused in one line naming the file
    (exit 2) before anything is built from it — never gigabytes of memory."""
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    r = run_cli(capsys, "groups", "list", "--config", str(path), "--cluster", "x")
    assert r.code == 2 and says in r.err and str(path) in r.err, r.err
    assert len(r.err.strip().splitlines()) == 1


def test_config_size_is_bounded_and_ordinary_anchors_still_work(tmp_path):
    """Invariant: a config file above MAX_CONFIG_BYTES is refused naming the limit without
    being parsed; anchors used the ordinary way (a shared properties block) still load."""
    from offsetkeeper.config import MAX_CONFIG_BYTES, load_config_file
    from offsetkeeper.errors import ConfigError

    big = tmp_path / "big.yaml"
    big.write_bytes(b"# " + b"x" * MAX_CONFIG_BYTES + b"\n")
    with pytest.raises(ConfigError, match="larger than 4 MiB"):
        load_config_file(big)
    ok = tmp_path / "ok.yaml"
    ok.write_text("clusters:\n  a: {bootstrap_servers: 'k:1', properties: &p {client.id: x}}\n"
                  "  b: {bootstrap_servers: 'k:2', properties: *p}\n")
    cfg = load_config_file(ok)
    b = cfg.clusters["b"]
    assert (b["properties"] if isinstance(b, dict) else b.properties) == {"client.id": "x"}


def test_plan_file_line_limit_names_the_file_and_the_limit():
    """Invariant: a plan with more records than the limit is refused (UsageError, exit 2) in
    one line naming the file and the limit; at the limit it is read."""
    from offsetkeeper.errors import UsageError
    from offsetkeeper.reset.parse import parse_offsets_csv

    text = "".join(f"t,{p},1\n" for p in range(11))
    with pytest.raises(UsageError) as exc:
        parse_offsets_csv(text, source="big.csv", max_records=10)
    assert "big.csv" in exc.value.message and "more than 10 offset lines" in exc.value.message
    assert len(parse_offsets_csv(text, source="ok.csv", max_records=11).offsets[None]) == 11


class CountingMapping(dict):
    """A dict that counts full passes over it (iteration) and lookups."""

    passes = 0
    lookups = 0

    def __iter__(self):
        CountingMapping.passes += 1
        return super().__iter__()

    def items(self):
        CountingMapping.passes += 1
        return super().items()

    def get(self, key, default=None):
        CountingMapping.lookups += 1
        return super().get(key, default)


def _plan_counts(groups: int, partitions: int) -> tuple[int, int]:
    from offsetkeeper.models import GroupInfo, TopicPartition, Watermarks
    from offsetkeeper.reset.plan import GroupFacts, ResetFacts, ResetScope, plan_reset
    from offsetkeeper.reset.targets import FromOffsets

    names = [f"g{i:05d}" for i in range(groups)]
    tps = {TopicPartition("t", p): 5 for p in range(partitions)}
    offsets = CountingMapping({g: dict(tps) for g in names})
    facts = ResetFacts(groups={g: GroupFacts(GroupInfo(g, "dead")) for g in names},
                       topic_partitions={"t": tuple(range(partitions))},
                       watermarks={tp: Watermarks(0, 10) for tp in tps},
                       may_create=frozenset(names))
    target = FromOffsets(offsets=offsets, source="plan.csv")
    CountingMapping.passes = CountingMapping.lookups = 0
    plan = plan_reset(facts, ResetScope(all_groups=True), target)
    assert sum(len(g.partitions) for g in plan.groups) == groups * partitions
    return CountingMapping.passes, CountingMapping.lookups


def test_planning_from_a_file_is_linear():
    """Invariant: planning G groups x P partitions from a file reads the input's group map a
    constant number of times and looks each group up a constant number of times — not once
    per partition (which made 20,000 groups take 26 s, quadratic)."""
    passes_1, lookups_1 = _plan_counts(200, 4)
    passes_2, lookups_2 = _plan_counts(400, 8)
    assert passes_2 == passes_1 <= 2
    assert lookups_2 <= 2 * lookups_1 and lookups_1 <= 4 * 200


def test_long_plans_report_progress():
    """Invariant: planning reports progress (groups planned of the total, first and last
    included) and reading a plan file reports the lines read, for the command line's bar."""
    from offsetkeeper.reset.parse import parse_offsets_csv

    events = []
    parse_offsets_csv("g,t,0,1\ng,t,1,1\n", source="p.csv", progress=events.append)
    assert events[-1].task == "reading the plan file" and events[-1].done == 2
    from offsetkeeper.models import GroupInfo
    from offsetkeeper.reset.plan import GroupFacts, ResetFacts, ResetScope, plan_reset
    from offsetkeeper.reset.targets import ToEarliest

    facts = ResetFacts(groups={f"g{i}": GroupFacts(GroupInfo(f"g{i}", "empty")) for i in range(2_500)},
                       topic_partitions={}, watermarks={})
    events.clear()
    plan_reset(facts, ResetScope(all_topics=True), ToEarliest(), progress=events.append)
    assert [(e.done, e.total) for e in events] == [(0, 2_500), (1_000, 2_500), (2_000, 2_500),
                                                   (2_500, 2_500)]
