"""Pure logic of `backup run --follow`: capping an increment, the backup lag, the follower
claim, the metrics text, and the option checks (no broker, no Spark)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetkeeper.backup.follow import FollowOptions, other_follower
from offsetkeeper.backup.follow_metrics import BackupMetrics, LagSnapshot
from offsetkeeper.backup.plan import PartitionPlan, RunPlan, backup_lag, cap_plan
from offsetkeeper.errors import UsageError
from tests.cli import run_cli


def _plan(sizes: list[int], start: int = 10) -> RunPlan:
    return RunPlan(3, tuple(PartitionPlan("t", p, start + p, start + p + n, 0)
                            for p, n in enumerate(sizes)))


@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=12), st.integers(1, 20_000))
def test_cap_plan_is_contiguous_bounded_and_max_min_fair(sizes, budget):
    """Invariant: a capped increment starts every range where the previous run ended (so the
    part left out is read by the next increment: nothing skipped), never passes the log end,
    reads exactly min(budget, offsets behind) in all (it always makes progress), and no
    partition gets less than another unless it needed less (max-min fairness)."""
    plan = _plan(sizes)
    capped = cap_plan(plan, budget)
    assert capped.run == plan.run
    got = []
    for before, after in zip(plan.partitions, capped.partitions, strict=True):
        assert (after.topic, after.partition, after.start) == (before.topic, before.partition,
                                                                before.start)
        assert before.start <= after.end <= before.end
        got.append(after.size)
    assert sum(got) == min(budget, sum(sizes))
    for need, take in zip(sizes, got, strict=True):
        if take < need:  # held back: nobody got more than one offset above its share
            assert all(other <= take + 1 for other in got)


def test_cap_plan_examples():
    assert cap_plan(_plan([5, 100, 100]), 50).partitions[0].size == 5  # needs less: all of it
    assert [p.size for p in cap_plan(_plan([5, 100, 100]), 50).partitions] == [5, 22, 23]
    assert cap_plan(_plan([5, 5]), None) == _plan([5, 5])
    assert cap_plan(_plan([5, 5]), 10) == _plan([5, 5])
    assert [p.size for p in cap_plan(_plan([0, 7, 0]), 3).partitions] == [0, 3, 0]


@given(st.dictionaries(st.tuples(st.sampled_from("ab"), st.integers(0, 3)),
                       st.tuples(st.integers(0, 100), st.integers(0, 100), st.integers(0, 100)),
                       max_size=8))
def test_backup_lag_is_log_end_minus_backed_up_end(facts):
    """Invariant: the lag of a partition is its log end minus the backup's end (its whole log
    when the backup does not have it yet), never negative."""
    log_start = {tp: lo for tp, (lo, _, _) in facts.items()}
    log_end = {tp: lo + n for tp, (lo, n, _) in facts.items()}
    backed = {tp: lo + b for tp, (lo, _, b) in facts.items() if b % 3}
    lag = backup_lag(backed, log_start=log_start, log_end=log_end)
    assert set(lag) == set(log_end)
    for tp, n in lag.items():
        expect = log_end[tp] - backed.get(tp, log_start[tp])
        assert n == max(0, expect)


@pytest.mark.parametrize(("status", "alive", "blocked"), [
    (None, True, False),
    ({"state": "stopped", "host": "h", "pid": 7}, True, False),
    ({"state": "following", "host": "h", "pid": 7}, True, True),       # live process here
    ({"state": "following", "host": "h", "pid": 7}, False, False),     # killed: resume
    ({"state": "following", "host": "h", "pid": 42}, True, False),     # that is us
    ({"state": "following", "host": "other", "pid": 7, "interval_s": 30,
      "heartbeat_ms": 1_000_000 - 60_000}, False, True),               # recent heartbeat elsewhere
    ({"state": "following", "host": "other", "pid": 7, "interval_s": 30,
      "heartbeat_ms": 1_000_000 - 200_000}, True, False),              # silent elsewhere: gone
    ({"state": "following", "host": "h", "pid": "7"}, True, False),     # malformed: advisory
])
def test_other_follower(status, alive, blocked):
    why = other_follower(status, host="h", pid=42, now_ms=1_000_000, pid_alive=lambda _p: alive)
    assert (why is not None) is blocked
    if blocked:
        assert "follow.json" in why


def test_metrics_text_names_values_and_staleness():
    """The lag families carry log end minus backed-up end per partition, the bytes estimate
    uses the bytes per offset written; without a measurement no lag series is served."""
    m = BackupMetrics("live")
    text = m.render().decode()
    assert "offsetkeeper_backup_lag_records" not in text
    assert 'offsetkeeper_backup_up{backup_id="live"} 0.0' in text
    m.learn_sizes({("t", 0): 1000}, {("t", 0): 10})
    m.lag = LagSnapshot(log_end={("t", 0): 50, ("t", 1): 7}, backed_up={("t", 0): 40},
                 records={("t", 0): 10, ("t", 1): 7}, measured_s=1.0)
    m.up = True
    m.results["recorded"] = 2
    text = m.render().decode()
    assert 'offsetkeeper_backup_lag_records{backup_id="live",partition="0",topic="t"} 10.0' in text
    assert 'offsetkeeper_backup_lag_bytes{backup_id="live",partition="0",topic="t"} 1000.0' in text
    # no data of t:1 yet: the backup-wide rate
    assert 'offsetkeeper_backup_lag_bytes{backup_id="live",partition="1",topic="t"} 700.0' in text
    assert 'offsetkeeper_backup_end_offset{backup_id="live",partition="0",topic="t"} 40.0' in text
    assert 'offsetkeeper_backup_increments_total{backup_id="live",result="recorded"} 2.0' in text
    assert 'offsetkeeper_backup_up{backup_id="live"} 1.0' in text


@pytest.mark.parametrize(("kw", "message"), [
    ({"interval_s": 0}, "--interval"),
    ({"max_offsets": 0}, "--max-records-per-increment 0"),
    ({"max_failures": 0}, "--max-failures 0"),
    ({"metrics_listen": "9309"}, "--metrics-listen '9309' is not HOST:PORT"),
])
def test_follow_options_rejected(kw, message):
    with pytest.raises(UsageError, match=message):
        FollowOptions(**kw)


@pytest.mark.parametrize(("args", "message"), [
    (["--interval", "30s"], "--interval needs --follow"),
    (["--metrics-listen", "127.0.0.1:0"], "--metrics-listen needs --follow"),
    (["--follow", "--interval", "0.5s"], "--interval"),
    (["--follow", "--metrics-listen", "nowhere"], "--metrics-listen 'nowhere' is not HOST:PORT"),
])
def test_follow_flags_usage_errors(capsys, tmp_path, args, message):
    """Bad follow options: one line naming the value, exit 2, nothing written."""
    r = run_cli(capsys, "backup", "run", "-b", "127.0.0.1:1", "-t", "x", "--dest",
                str(tmp_path), "--id", "b", *args)
    assert r.code == 2, r
    assert message in r.err
    assert "Traceback" not in r.err
    assert list(tmp_path.iterdir()) == []


def test_an_increment_with_nothing_new_is_not_recorded():
    """Invariant: an idle interval writes nothing (no manifest generation), but new offsets, a
    new partition or changed group offsets are always recorded."""
    from offsetkeeper.backup.manifest import (
        GroupOffset,
        GroupOffsets,
        Manifest,
        PartitionEntry,
        SourceInfo,
        TopicEntry,
    )
    from offsetkeeper.backup.plan import plan_run
    from offsetkeeper.backup.run import _Facts, _unchanged

    def groups(offset: int) -> list[GroupOffsets]:
        return [GroupOffsets(group="g", captured_at="x", run=1,
                             offsets=[GroupOffset(topic="t", partition=0, offset=offset)])]
    prev = Manifest(backup_id="b", created_at="x", updated_at="x", source=SourceInfo(
        bootstrap_servers="k:9092"), topics=[TopicEntry(name="t", partition_count=1, partitions=[
            PartitionEntry(partition=0, start_offset=0, end_offset=10)])], groups=groups(5))

    def facts(parts: list[int], end: int, group_offset: int) -> tuple[_Facts, object]:
        f = _Facts(partitions={"t": parts}, log_start={("t", p): 0 for p in parts},
                   log_end={("t", p): end if p == 0 else 0 for p in parts}, configs={},
                   groups=groups(group_offset), cluster_id="")
        return f, plan_run(prev, f.partitions, log_start=f.log_start, log_end=f.log_end)

    assert _unchanged(prev, *facts([0], 10, 5))
    assert not _unchanged(prev, *facts([0], 11, 5))      # new offsets
    assert not _unchanged(prev, *facts([0, 1], 10, 5))   # a new (empty) partition
    assert not _unchanged(prev, *facts([0], 10, 7))      # a group committed
    assert not _unchanged(None, *facts([0], 10, 5))      # a first run is always recorded


@pytest.mark.parametrize("output", ["table", "json"])
def test_follow_command_renders_increments_and_exit_codes(capsys, tmp_path, monkeypatch, output):
    """The command's rendering of what the operation reports (the operation itself runs against
    a real broker and Spark in tests/integration/test_backup_follow.py): a line (or a JSON line)
    per recorded or failed increment on stdout, the metrics address on stderr, exit 1 when the
    follow gave up after --max-failures."""
    from offsetkeeper.backup.follow import FollowSummary, Increment
    from offsetkeeper.ops import backup as ops_backup

    seen = {}

    def fake_follow(req, *, on_increment, on_listen, **kw):
        seen.update(kw, backup_id=req.backup_id)
        on_listen("http://127.0.0.1:9309/metrics")
        on_increment(Increment(4, True, 1200, 3, 81234, 2.1, 0, "2026-11-27T08:00:00.000Z"))
        on_increment(Increment(5, False, 0, 0, 0, 0.4, None, "2026-11-27T08:01:00.000Z",
                               error="orders:1: broker down"))
        return FollowSummary("b", recorded=1, failed=2, records=1200, last_run=4,
                             stopped_by="failures", last_error="orders:1: broker down")
    monkeypatch.setattr(ops_backup, "follow_backup", fake_follow)
    r = run_cli(capsys, "backup", "run", "-b", "127.0.0.1:1", "-t", "orders", "--dest",
                str(tmp_path), "--id", "b", "--follow", "--interval", "30s", "--max-failures",
                "2", "-o", output)
    assert r.code == 1
    assert seen["interval_s"] == 30 and seen["max_failures"] == 2 and seen["backup_id"] == "b"
    assert "serving metrics on http://127.0.0.1:9309/metrics" in r.err
    if output == "json":
        lines = [json.loads(x) for x in r.out.splitlines()]
        assert [x["event"] for x in lines] == ["increment", "failed", "stopped"]
        assert lines[0]["records"] == 1200 and lines[1]["error"] == "orders:1: broker down"
        assert lines[2]["stopped_by"] == "failures"
    else:
        assert r.out.splitlines() == [
            "2026-11-27T08:00:00.000Z run 4: 1200 records from 3 partitions, 81,234 bytes in "
            "2.1 s; 0 offsets behind"]
        assert "increment 5 failed" in r.err and "stopped after 2 failed increments" in r.err
