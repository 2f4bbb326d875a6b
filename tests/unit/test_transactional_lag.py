"""Lag that understands transactions, pure parts: the lag formula, when to count, how samples,
status, the exporter and the describe note show an open transaction."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetkeeper.describe import OffsetRow
from offsetkeeper.history.exporter import LagCollector
from offsetkeeper.history.model import Sample
from offsetkeeper.history.status import Status, evaluate_partition, evaluate_status
from offsetkeeper.history.store.redis import _decode, _encode
from offsetkeeper.kafka.stable import (
    PROBE_MAX_RAW_LAG,
    LogOffsets,
    raw_lag,
    readable_lag,
    stable_end,
    wants_count,
)


@pytest.mark.parametrize("committed, log_end, lso, counted, lag", [
    (9, 10, 10, 0, 0),       # only the COMMIT marker left: caught up
    (9, 10, 10, None, 1),    # not counted: LSO - committed (an upper bound)
    (3, 10, 10, 2, 2),       # counted: markers and aborted records skipped
    (10, 12, 10, None, 0),   # at the LSO, an open transaction after it: nothing readable yet
    (5, 12, 10, None, 5),    # behind the LSO: up to it, not to the log end
    (4, 10, None, None, 6),  # LSO unknown (old samples): the log end
    (12, 10, 10, None, 0),   # beyond the end: never negative here
])
def test_readable_lag(committed, log_end, lso, counted, lag):
    assert readable_lag(committed, log_end, lso, counted) == lag


@given(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6))
def test_readable_lag_is_bounded_by_raw_lag(committed, log_end, lso_back):
    lso = max(0, log_end - lso_back)
    lag = readable_lag(committed, log_end, lso)
    assert 0 <= lag <= max(0, raw_lag(committed, log_end))
    assert stable_end(log_end, lso) <= log_end


@pytest.mark.parametrize("committed, log_end, lso, want", [
    (None, 10, 10, False),            # nothing committed
    (10, 10, 10, False),              # at the end
    (10, 12, 10, False),              # at the LSO (an open transaction): nothing to count
    (9, 10, 10, True),                # one offset short: maybe a marker
    (10 - PROBE_MAX_RAW_LAG, 10 + 5, 10, True),
    (9 - PROBE_MAX_RAW_LAG, 10, 10, False),   # a real backlog: not worth a fetch
])
def test_wants_count(committed, log_end, lso, want):
    assert wants_count(committed, log_end, lso) is want


def test_log_offsets_open_transaction():
    assert LogOffsets(0, 12, 10).open_transaction
    assert not LogOffsets(0, 10, 10).open_transaction


def _s(ts, committed=10, log_end=12, lso=10, since=1_000, readable=None, consumer="c-1"):
    return Sample(ts=ts, group="g", topic="t", partition=0, committed=committed, log_start=0,
                  log_end=log_end, consumer_id=consumer, lso=lso, readable=readable,
                  open_txn_since=since if lso is not None and lso < log_end else None)


def test_sample_lag_and_raw_lag():
    s = _s(5)
    assert (s.lag, s.lag_raw, s.open_transaction) == (0, 2, True)
    old = Sample(ts=1, group="g", topic="t", partition=0, committed=3, log_start=0, log_end=9)
    assert (old.lag, old.lag_raw, old.open_transaction) == (6, 6, False)   # schema <= 3 samples
    assert _s(5, committed=9, log_end=10, lso=10, readable=0).lag == 0      # markers only


def test_status_of_a_group_held_by_an_open_transaction_is_ok_and_says_why():
    """Invariant: a group whose offset has not moved for the whole window because an open
    transaction holds the LSO is not STALL/STOP: it has read all it may; the reason says so."""
    samples = [_s(ts) for ts in range(10)]
    p = evaluate_partition(samples, window=10)
    assert p.status is Status.OK and p.lag == 0 and p.lag_raw == 2
    assert "open transaction since" in p.reason and "not the consumer's fault" in p.reason
    g = evaluate_status(samples, window=10)
    assert g.status is Status.OK and "not the consumer's fault" in g.reason
    assert g.as_dict()["partitions"][0]["open_txn_since"] == 1_000


def test_a_stalled_consumer_below_the_lso_is_still_stall():
    samples = [_s(ts, committed=4) for ts in range(10)]
    p = evaluate_partition(samples, window=10)
    assert p.status is Status.STALL and p.lag == 6 and "open transaction" in p.reason


def test_exporter_transaction_metrics():
    samples = [_s(4_000), _s(5_000)]
    got = {m.name: m.samples for m in LagCollector(lambda: {"g": samples}, cluster_name="c").collect()}
    assert [x.value for x in got["kafka_partition_open_transaction"]] == [1]
    assert [x.value for x in got["kafka_partition_last_stable_offset"]] == [10]
    assert [x.value for x in got["kafka_partition_open_transaction_age_seconds"]] == [4.0]
    assert [x.value for x in got["kafka_consumergroup_group_lag"]] == [0]
    assert [x.value for x in got["kafka_consumergroup_group_lag_raw"]] == [2]


def test_redis_members_of_schema_3_read_with_no_transaction_fields():
    s = _s(7, readable=0)
    assert _decode("g", _encode(7, [s])) == [s]
    old = ('{"members":0,"p":[["t",0,3,0,9,"","","","",null,null,null]],"state":"","ts":7}')
    [o] = _decode("g", old)
    assert (o.lso, o.readable, o.open_txn_since, o.lag) == (None, None, None, 6)


def test_describe_note_for_an_open_transaction():
    row = OffsetRow("g", "t", 0, 10, 0, 12, 0, None, None, None, 2, 10, 1_795_000_000_000)
    assert row.note.startswith("open transaction since 2026-")
    assert "last stable offset 10" in row.note and "not the consumer's fault" in row.note
    assert OffsetRow("g", "t", 0, 9, 0, 10, 0, None, None, None, 1, 10, None).note is None
