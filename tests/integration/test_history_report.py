"""`history export` (Parquet by day) and `history report` (daily percentiles on Spark)."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow.parquet as pq
import pytest

from offsetkeeper.history.model import Sample
from offsetkeeper.history.store import open_store
from tests.cli import run_cli

pytestmark = pytest.mark.spark

DAY1 = int(datetime(2026, 11, 20, 23, 50, tzinfo=UTC).timestamp() * 1000)


def _fill(db):
    store = open_store(db)
    samples = []
    # day 1: 10 samples a minute apart; partition 0 advances 60/min with lag 10*i,
    # partition 1 is caught up
    for i in range(10):
        ts = DAY1 + i * 60_000 - 10 * 60_000 + 60_000  # 23:41 .. 23:50
        samples += [Sample(ts, "pay", "orders", 0, 60 * i, 0, 60 * i + 10 * i, next_ts=ts - 1000 * i,
                           time_lag_ms=1000 * i),
                    Sample(ts, "pay", "orders", 1, 100, 0, 100, time_lag_ms=0)]
    # day 2: two samples, a rewind of partition 0 from 600 to 500
    for j, c in enumerate((600, 500)):
        ts = DAY1 + (20 + j) * 60_000  # 00:10, 00:11 next day
        samples += [Sample(ts, "pay", "orders", 0, c, 0, 700, time_lag_ms=5000),
                    Sample(ts, "pay", "orders", 1, 100, 0, 100, time_lag_ms=0)]
    store.write(samples)
    store.close()


def test_export_then_report(spark, capsys, tmp_path):
    db, out = str(tmp_path / "h.db"), tmp_path / "export"
    _fill(db)
    r = run_cli(capsys, "history", "export", "--to", str(out), "--store", db, "-o", "json")
    assert r.code == 0, r.err
    assert r.json()["days"] == ["2026-11-20", "2026-11-21"] and r.json()["rows"] == 24
    t = pq.read_table(out / "day=2026-11-20" / "samples.parquet")
    assert t.num_rows == 20 and "lag" in t.column_names and "day" not in t.column_names

    r = run_cli(capsys, "history", "report", "--from", str(out), "-o", "json")
    assert r.code == 0, r.err
    day1, day2 = r.json()
    assert (day1["group"], day1["day"], day1["samples"]) == ("pay", "2026-11-20", 10)
    assert day1["lag_max"] == 90 and day1["lag_p50"] == 40
    assert day1["time_lag_max_s"] == 9.0
    assert day1["commit_rate"] == pytest.approx(540 / 540)      # 540 records in 9 minutes
    assert day1["rewinds"] == 0
    assert day2["rewinds"] == 1 and day2["lag_max"] == 200

    r = run_cli(capsys, "history", "report", "--from", str(tmp_path / "nothing"))
    assert r.code == 2 and "no exported history" in r.err
