"""pyspark 4.0 hands a stream writer Spark Rows: the sink turns them into the Arrow batches its
producer loop reads (`rows_as_batches`)."""

from __future__ import annotations

from pyspark.sql import Row

from offsetkeeper.records.write import rows_as_batches


def test_rows_become_batches_with_binary_values_and_header_structs():
    rows = [Row(topic="t", key=None, value=bytearray(b"v%d" % i), partition=i % 2,
                headers=[Row(key="h", value=bytearray(b"x"))] if i % 2 else [])
            for i in range(5)]
    batches = list(rows_as_batches(iter(rows), ("topic", "key", "value", "partition", "headers"),
                                   size=2))
    assert [b.num_rows for b in batches] == [2, 2, 1]
    got = [r for b in batches for r in b.to_pylist()]
    assert [r["value"] for r in got] == [b"v%d" % i for i in range(5)]
    assert [r["partition"] for r in got] == [0, 1, 0, 1, 0]
    assert got[1]["headers"] == [{"key": "h", "value": b"x"}] and got[0]["headers"] == []
    assert all(r["key"] is None and r["topic"] == "t" for r in got)
