"""Messages → Arrow record batch (`records.read._Batch.to_arrow`), built from buffers."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetkeeper.records.read import _Batch, arrow_schema


class _Msg:
    """The accessors of a confluent_kafka.Message that `to_arrow` uses."""

    def __init__(self, offset, ts, key, value, headers, epoch):
        self._o, self._ts, self._k, self._v, self._h, self._e = offset, ts, key, value, headers, epoch

    def offset(self):
        return self._o

    def timestamp(self):
        return self._ts

    def key(self):
        return self._k

    def value(self):
        return self._v

    def headers(self):
        return self._h

    def leader_epoch(self):
        return self._e


_bytes = st.one_of(st.none(), st.binary(max_size=40))
_headers = st.one_of(st.none(), st.lists(st.tuples(st.text(max_size=8), _bytes), max_size=3))
_msgs = st.lists(st.tuples(st.sampled_from([(0, 0), (1, 1700000000000), (2, 5)]), _bytes, _bytes,
                           _headers, st.one_of(st.none(), st.integers(0, 2**31 - 1))),
                 min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(_msgs)
def test_to_arrow_equals_pyarrows_own_conversion(rows):
    """Every column equals what ``pa.array`` makes of the same values: null keys, tombstones,
    empty values, headers with null values or none at all, unknown leader epochs."""
    schema = arrow_schema(True)
    b = _Batch()
    for i, (ts, k, v, h, e) in enumerate(rows):
        b.add(_Msg(10 + i, ts, k, v, h, e))
    got = b.to_arrow(schema, "t\u00e9", 3)
    got.validate(full=True)
    ts_col = [t if tt else -1 for (tt, t), *_ in rows]
    want = pa.RecordBatch.from_pydict({
        "topic": ["t\u00e9"] * len(rows), "partition": [3] * len(rows),
        "offset": [10 + i for i in range(len(rows))], "timestamp": ts_col,
        "timestamp_type": [{0: -1, 1: 0, 2: 1}[tt] for (tt, _), *_ in rows],
        "key": [r[1] for r in rows], "value": [r[2] for r in rows],
        "headers": [[{"key": hk, "value": hv} for hk, hv in r[3]] if r[3] else [] for r in rows],
        "leader_epoch": [r[4] for r in rows]}, schema=schema)
    assert got.equals(want)
    assert b.offsets == [10 + i for i in range(len(rows))] and b.ts == ts_col


def test_the_records_arrow_schema_is_what_spark_makes_of_the_source_schema():
    """Invariant: the range reader's Arrow schema (built with pyarrow alone, so records/ needs no
    Spark) equals pyspark's Arrow form of the data source's record schema, with and without
    headers: the source yields batches Spark accepts, and backup files keep their schema."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from offsetkeeper.spark.kafka.schema import record_schema

    for headers in (True, False):
        assert arrow_schema(headers) == to_arrow_schema(record_schema(headers)), headers
