"""Pure parts of the streaming source: rate limiting, start positions, option parsing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetkeeper.errors import UsageError
from offsetkeeper.spark.kafka.options import EARLIEST, LATEST, parse_options
from offsetkeeper.spark.kafka.planning import ClusterView
from offsetkeeper.spark.kafka.stream import (
    from_json_offsets,
    initial_offsets,
    rate_limit,
    to_json_offsets,
)

B = {"kafka.bootstrap.servers": "h:9092", "subscribe": "t"}


@given(st.dictionaries(st.integers(0, 20), st.tuples(st.integers(0, 1000), st.integers(0, 1000)),
                       min_size=1), st.integers(1, 3000))
def test_rate_limit_caps_total_and_never_passes_end(parts, limit):
    start = {("t", p): min(a, b) for p, (a, b) in parts.items()}
    end = {("t", p): max(a, b) for p, (a, b) in parts.items()}
    got = rate_limit(start, end, limit)
    backlog = sum(end[k] - start[k] for k in end)
    taken = sum(got[k] - start[k] for k in end)
    assert all(start[k] <= got[k] <= end[k] for k in end)
    assert taken == min(limit, backlog)


def test_rate_limit_is_proportional_and_new_partitions_start_at_zero():
    assert rate_limit({("t", 0): 0, ("t", 1): 0}, {("t", 0): 90, ("t", 1): 10}, 10) == \
        {("t", 0): 9, ("t", 1): 1}
    assert rate_limit({}, {("n", 0): 50}, 20) == {("n", 0): 20}


def test_offsets_json_shape_is_sparks():
    offsets = {("orders", 0): 23, ("orders", 1): 6}
    assert to_json_offsets(offsets) == {"orders": {"0": 23, "1": 6}}
    assert from_json_offsets({"orders": {"0": 23, "1": 6}}) == offsets


def test_initial_offsets_group_fallback_and_json():
    view = ClusterView({"t": [0, 1, 2]}, low={("t", p): 5 for p in range(3)},
                       high={("t", p): 50 for p in range(3)}, overrides={("t", 0): 17, ("t", 1): LATEST})
    opts = parse_options({**B, "startingOffsets": '{"t":{"2":30}}'}, streaming=True)
    assert initial_offsets(view, opts) == {("t", 0): 17, ("t", 1): 50, ("t", 2): 30}
    opts = parse_options({**B, "startingOffsets": "earliest"}, streaming=True)
    assert initial_offsets(ClusterView({"t": [0]}, {("t", 0): 5}, {("t", 0): 9}), opts) == {("t", 0): 5}


def test_streaming_options():
    o = parse_options({**B, "startingOffsets": "group:etl", "startingOffsetsFallback": "earliest",
                       "maxOffsetsPerTrigger": "100", "commitToGroup": "etl-mirror",
                       "includeHeaders": "false"}, streaming=True)
    assert o.starting_group == "etl" and o.starting_fallback == EARLIEST
    assert o.max_offsets_per_trigger == 100 and o.commit_to_group == "etl-mirror"
    assert not o.include_headers and o.fail_on_data_loss  # Spark's streaming default
    d = parse_options(B, streaming=True)
    assert d.starting == LATEST and d.starting_fallback == LATEST and d.include_headers
    assert parse_options(B).starting == EARLIEST and not parse_options(B).fail_on_data_loss


@pytest.mark.parametrize("opts,msg", [
    ({"startingOffsets": "group:"}, "group:NAME"),
    ({"startingOffsetsFallback": "none"}, "earliest or latest"),
    ({"endingOffsets": "latest"}, "not allowed for streaming"),
    ({"maxOffsetsPerTrigger": "0"}, ">= 1"),
    ({"commitToGroup": " "}, "consumer group name"),
])
def test_bad_streaming_options(opts, msg):
    with pytest.raises(UsageError, match=msg):
        parse_options({**B, **opts}, streaming=True)


# -- sink options ------------------------------------------------------------------------------
def _schema(**cols):
    from pyspark.sql.types import StructField, StructType

    return StructType([StructField(k, v) for k, v in cols.items()])


def _types():
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        DoubleType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    header = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
    return {"s": StringType(), "b": BinaryType(), "i": IntegerType(), "l": LongType(),
            "d": DoubleType(), "h": header, "as": ArrayType(StringType())}


@pytest.mark.parametrize("cols,opts,msg", [
    ({"key": "s"}, {"topic": "t"}, "needs a value column"),
    ({"value": "s"}, {}, "topic option or a topic column"),
    ({"value": "i"}, {"topic": "t"}, "value must be string or binary"),
    ({"value": "s", "partition": "l"}, {"topic": "t"}, "partition must be int"),
    ({"value": "s", "headers": "as"}, {"topic": "t"}, "headers must be"),
    ({"value": "s", "topic": "i"}, {}, "topic must be string"),
    ({"value": "s"}, {"topic": "t", "flushTimeoutMs": "soon"}, "flushTimeoutMs"),
])
def test_bad_sink_input(cols, opts, msg):
    from offsetkeeper.spark.kafka.sink import parse_sink_options

    t = _types()
    with pytest.raises(UsageError, match=msg):
        parse_sink_options({"kafka.bootstrap.servers": "h:1", **opts},
                           _schema(**{k: t[v] for k, v in cols.items()}))


def test_sink_options_accept_sparks_kafka_columns():
    from offsetkeeper.spark.kafka.sink import parse_sink_options

    t = _types()
    schema = _schema(topic=t["s"], key=t["b"], value=t["s"], headers=t["h"], partition=t["i"],
                     other=t["d"])
    o = parse_sink_options({"kafka.bootstrap.servers": "h:1", "kafka.linger.ms": "20"}, schema)
    assert o.columns == ("topic", "key", "value", "headers", "partition")
    assert o.kafka == {"bootstrap.servers": "h:1", "linger.ms": "20"} and o.topic is None
