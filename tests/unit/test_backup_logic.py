"""Pure logic of backup and of the Kafka data source: options, ranges, topics, manifest, gaps."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetkeeper.backup import checksum as ck
from offsetkeeper.backup.config import BackupConfig, build_backup_config
from offsetkeeper.backup.manifest import (
    GroupOffset,
    GroupOffsets,
    Manifest,
    PartitionEntry,
    Segment,
    SourceInfo,
    TopicEntry,
    load_manifest,
    parse_manifest,
    save_manifest,
)
from offsetkeeper.backup.plan import plan_run
from offsetkeeper.backup.topics import select_topics
from offsetkeeper.backup.validate import check_manifest
from offsetkeeper.config import Connection
from offsetkeeper.errors import StoreError, UsageError
from offsetkeeper.records.ranges import OffsetRange, detect_gap, split_ranges
from offsetkeeper.spark.kafka import (
    EARLIEST,
    LATEST,
    parse_options,
    resolve_ranges,
)
from offsetkeeper.spark.kafka import select_topics as source_topics

B = {"kafka.bootstrap.servers": "h:9092"}


# -- data source options -------------------------------------------------------------------
def test_options_defaults_and_passthrough():
    o = parse_options({**B, "subscribe": "a, b", "kafka.security.protocol": "SSL",
                       "minPartitions": "4"})
    assert o.subscribe == ("a", "b")
    assert o.starting == EARLIEST and o.ending == LATEST
    assert o.kafka == {"bootstrap.servers": "h:9092", "security.protocol": "SSL",
                       "isolation.level": "read_committed"}
    assert o.min_partitions == 4 and o.read_committed and not o.fail_on_data_loss


def test_options_arrive_lower_cased():
    o = parse_options({**B, "subscribepattern": "or.*", "startingoffsets": "latest",
                       "failondataloss": "true", "maxrecordsperpartition": "10"})
    assert o.subscribe_pattern == "or.*" and o.starting == LATEST
    assert o.fail_on_data_loss and o.max_records_per_partition == 10


def test_options_json_offsets():
    o = parse_options({**B, "assign": '{"t":[1,0]}', "startingOffsets": '{"t":{"0":5,"1":-2}}',
                       "endingOffsets": '{"t":{"0":9,"1":-1}}', "startingTimestamp": "1000"})
    assert o.assign == {"t": (0, 1)}
    assert o.starting == {"t": {0: 5, 1: EARLIEST}} and o.ending == {"t": {0: 9, 1: LATEST}}
    assert o.starting_timestamp == 1000


@pytest.mark.parametrize("opts, message", [
    ({"subscribe": "t"}, "kafka.bootstrap.servers is required"),
    ({**B}, "exactly one of"),
    ({**B, "subscribe": "t", "assign": '{"t":[0]}'}, "exactly one of"),
    ({**B, "subscribePattern": "("}, "invalid regex"),
    ({**B, "assign": "[0]"}, "option assign"),
    ({**B, "subscribe": "t", "startingOffsets": "{nope"}, "startingoffsets"),
    ({**B, "subscribe": "t", "endingOffsets": "earliest"}, "not allowed"),
    ({**B, "subscribe": "t", "endingOffsets": '{"t":{"0":-2}}'}, "not allowed"),
    ({**B, "subscribe": "t", "minPartitions": "x"}, "expected an integer"),
    ({**B, "subscribe": "t", "failOnDataLoss": "maybe"}, "true or false"),
    ({**B, "subscribe": "t", "kafka.isolation.level": "dirty"}, "isolation.level"),
])
def test_options_rejected(opts, message):
    with pytest.raises(UsageError, match=message):
        parse_options(opts)


def test_source_topic_selection():
    avail = {"orders": [0, 1], "ordersx": [0], "pay": [0]}
    assert source_topics(parse_options({**B, "subscribePattern": "orders.*"}), avail) == {
        "orders": [0, 1], "ordersx": [0]}
    with pytest.raises(UsageError, match="unknown topic 'nope'"):
        source_topics(parse_options({**B, "subscribe": "nope"}), avail)
    with pytest.raises(UsageError, match="no partition 5"):
        source_topics(parse_options({**B, "assign": '{"pay":[5]}'}), avail)


# -- ranges ----------------------------------------------------------------------------------
def test_resolve_ranges_clamps_and_specs():
    parts = {"t": [0, 1, 2]}
    low = {("t", 0): 10, ("t", 1): 0, ("t", 2): 5}
    high = {("t", 0): 20, ("t", 1): 7, ("t", 2): 5}
    r = resolve_ranges(parts, low=low, high=high, starting={"t": {0: 3, 1: 4}},
                       ending={"t": {0: 99}}, start_overrides={("t", 1): 6})
    # start below log start is kept (the reader reports the gap); end is clamped to the log end
    assert r == [OffsetRange("t", 0, 3, 20), OffsetRange("t", 1, 6, 7), OffsetRange("t", 2, 5, 5)]
    r = resolve_ranges(parts, low=low, high=high, starting=LATEST, ending=LATEST)
    assert [x.size for x in r] == [0, 0, 0]


def test_split_by_max_records_and_min_partitions():
    rs = [OffsetRange("t", 0, 0, 100), OffsetRange("t", 1, 5, 5)]
    out = split_ranges(rs, max_records=30)
    assert [(x.start, x.end) for x in out if x.partition == 0] == [(0, 25), (25, 50), (50, 75), (75, 100)]
    assert OffsetRange("t", 1, 5, 5) in out
    out = split_ranges([OffsetRange("t", 0, 0, 90), OffsetRange("t", 1, 0, 10)], min_partitions=10)
    assert len([x for x in out if x.partition == 0]) == 9
    assert len([x for x in out if x.partition == 1]) == 1


@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 5000)), min_size=1, max_size=6),
       st.one_of(st.none(), st.integers(1, 700)), st.one_of(st.none(), st.integers(1, 20)))
def test_split_covers_exactly(spec, max_records, min_partitions):
    rs = [OffsetRange("t", i, s, s + n) for i, (s, n) in enumerate(spec)]
    out = split_ranges(rs, max_records=max_records, min_partitions=min_partitions)
    for r in rs:
        pieces = sorted((x for x in out if x.partition == r.partition), key=lambda x: x.start)
        assert pieces[0].start == r.start and pieces[-1].end == r.end
        assert all(a.end == b.start for a, b in itertools.pairwise(pieces))
        if max_records:
            assert all(p.size <= max_records for p in pieces)


# -- gaps ------------------------------------------------------------------------------------
@pytest.mark.parametrize("start, end, first, low, gap", [
    (0, 10, 0, 0, None),          # read from the start
    (0, 10, 4, 0, None),          # compaction / markers: offsets skipped, not lost
    (0, 10, 4, 3, (0, 3)),        # log start moved to 3; 3 was compacted away
    (0, 10, 4, 6, (0, 4)),        # log start moved past what we read: lost up to what we read
    (0, 10, None, 20, (0, 10)),   # everything lost
    (0, 10, None, 0, None),       # nothing readable in range, nothing lost (markers only)
    (5, 10, 5, 7, None),
])
def test_detect_gap(start, end, first, low, gap):
    assert detect_gap(start, end, first, low) == gap


# -- topic selection -------------------------------------------------------------------------
@pytest.mark.parametrize("include, exclude, expected", [
    (["orders"], [], ["orders"]),
    (["orders*"], [], ["orders", "orders-eu", "orders-tmp"]),
    (["orders*"], ["*-tmp"], ["orders", "orders-eu"]),
    (["~orders(-eu)?"], [], ["orders", "orders-eu"]),
    (["~ord"], [], []),                      # regexes match the whole name
    (["*"], ["~.*s"], ["audit-1", "orders-eu", "orders-tmp"]),
    (["*"], [], ["audit-1", "orders", "orders-eu", "orders-tmp", "payments"]),  # no __internal
    (["__consumer_offsets"], [], ["__consumer_offsets"]),
])
def test_select_topics(include, exclude, expected):
    avail = ["orders", "orders-eu", "orders-tmp", "payments", "audit-1", "__consumer_offsets"]
    assert select_topics(avail, include, exclude) == expected


def test_select_topics_errors():
    with pytest.raises(UsageError, match="no topics given"):
        select_topics(["a"], [])
    with pytest.raises(UsageError, match="not a valid regex"):
        select_topics(["a"], ["~("])


# -- config ----------------------------------------------------------------------------------
def test_backup_config_from_yaml_and_flags(tmp_path, monkeypatch):
    monkeypatch.setenv("DEST_DIR", str(tmp_path / "b"))
    f = tmp_path / "b.yaml"
    f.write_text("source: {bootstrap_servers: 'k:9092', properties: {client.id: x}}\n"
                 "topics: {include: [orders, '~pay.*'], exclude: ['*-tmp']}\n"
                 "destination: ${DEST_DIR}\nbackup_id: nightly\n"
                 "spark: {master: 'local[2]', conf: {spark.x: 1}}\n")
    c = build_backup_config(file=f)
    assert c.connection.bootstrap_servers == "k:9092" and c.connection.properties == {"client.id": "x"}
    assert c.include == ("orders", "~pay.*") and c.exclude == ("*-tmp",)
    assert c.destination == str(tmp_path / "b") and c.master == "local[2]"
    assert c.spark_conf == {"spark.x": "1"}
    c2 = build_backup_config(file=f, bootstrap_server="o:1", include=["x"], backup_id="other",
                             spark_conf={"spark.y": "2"})
    assert c2.connection.bootstrap_servers == "o:1" and c2.include == ("x",)
    assert c2.backup_id == "other" and c2.spark_conf == {"spark.x": "1", "spark.y": "2"}


@pytest.mark.parametrize("text, message", [
    ("topics: {include: [a]}\nbogus: 1\n", "unknown key 'bogus'"),
    ("- a\n", "mapping"),
    ("topics: [\n", "not valid YAML"),
])
def test_backup_file_errors(tmp_path, text, message):
    f = tmp_path / "b.yaml"
    f.write_text(text)
    with pytest.raises(UsageError, match=message):
        build_backup_config(file=f, bootstrap_server="h:1")


@pytest.mark.parametrize("kw, message", [
    ({"backup_id": "bad/id"}, "backup id 'bad/id' is invalid"),
    ({"destination": ""}, "no destination"),
    ({"include": ()}, "no topics given"),
    ({"include": ("~(",)}, "not a valid regex"),
])
def test_backup_config_errors(kw, message):
    base = {"connection": Connection("h:1"), "include": ("t",), "destination": "/x",
            "backup_id": "b"}
    with pytest.raises(UsageError, match=message):
        BackupConfig(**{**base, **kw})


# -- manifest --------------------------------------------------------------------------------
def _manifest() -> Manifest:
    seg1 = Segment(run=1, start_offset=0, end_offset=10, record_count=8, checksum="00000000000000ff",
                   first_offset=0, last_offset=9, first_timestamp=1, last_timestamp=5,
                   files=["data/run=1/topic=t/partition=0/a.parquet"])
    seg2 = Segment(run=2, start_offset=10, end_offset=12, record_count=2,
                   checksum="ffffffffffffff01", first_offset=10, last_offset=11,
                   first_timestamp=6, last_timestamp=7, gaps=[{"start": 10, "end": 11}],
                   files=["data/run=2/topic=t/partition=0/b.parquet"])
    p = PartitionEntry(partition=0, start_offset=0, end_offset=0, segments=[seg2, seg1])
    p.recompute_totals()
    return Manifest(backup_id="b1", created_at="x", updated_at="y",
                    source=SourceInfo(bootstrap_servers="h:1"),
                    topics=[TopicEntry(name="t", partition_count=1, configs={"cleanup.policy": "compact"},
                                       partitions=[p])],
                    groups=[GroupOffsets(group="g", captured_at="x", run=2,
                                         offsets=[GroupOffset(topic="t", partition=0, offset=11)])])


def test_partition_totals_from_segments():
    p = _manifest().topics[0].partitions[0]
    assert (p.start_offset, p.end_offset, p.record_count) == (0, 12, 10)
    assert p.checksum == "0000000000000000"  # 0xff + 0x...ff01 wraps modulo 2^64
    assert (p.first_timestamp, p.last_timestamp) == (1, 7)
    assert [(g.start, g.end) for g in p.gaps] == [(10, 11)]
    assert check_manifest(_manifest()) == []


def test_manifest_roundtrip_atomic(tmp_path):
    m = _manifest()
    where = save_manifest(str(tmp_path), m)
    assert where.endswith("b1/manifest.json")
    assert [p.name for p in (tmp_path / "b1").iterdir()] == ["manifest.json"]  # no temp left
    back = load_manifest(str(tmp_path), "b1")
    assert back == m
    assert back.files() == ["data/run=1/topic=t/partition=0/a.parquet",
                            "data/run=2/topic=t/partition=0/b.parquet"]
    assert back.end_offsets() == {("t", 0): 12}
    assert back.group_offsets() == {"g": {("t", 0): 11}}
    assert json.loads((tmp_path / "b1" / "manifest.json").read_text())["format_version"] == 1


def test_manifest_load_errors(tmp_path):
    with pytest.raises(StoreError, match="backup 'nope' not found"):
        load_manifest(str(tmp_path), "nope")
    with pytest.raises(StoreError, match="not valid JSON"):
        parse_manifest("{")
    with pytest.raises(StoreError, match="format_version 7"):
        parse_manifest('{"format_version": 7}')
    with pytest.raises(StoreError, match="field 'backup_id'"):
        parse_manifest('{"format_version": 1}')


def test_check_manifest_finds_tampering():
    m = _manifest()
    p = m.topics[0].partitions[0]
    p.record_count = 11
    p.segments[1].start_offset = 9
    probs = [str(x) for x in check_manifest(m)]
    assert any("record_count 11 differs" in x for x in probs)
    assert any("run 1 ends at 10 but run 2 starts at 9" in x for x in probs)


# -- planning --------------------------------------------------------------------------------
def test_plan_first_and_incremental_runs():
    parts = {"t": [0, 1]}
    p1 = plan_run(None, parts, log_start={("t", 0): 3, ("t", 1): 0},
                  log_end={("t", 0): 10, ("t", 1): 0})
    assert p1.run == 1 and [(x.start, x.end) for x in p1.partitions] == [(3, 10), (0, 0)]
    assert [x.partition for x in p1.to_read] == [0]
    m = _manifest()  # t:0 ends at 12, last run 2
    p3 = plan_run(m, {"t": [0, 1]}, log_start={("t", 0): 0, ("t", 1): 0},
                  log_end={("t", 0): 15, ("t", 1): 4})
    assert p3.run == 3 and [(x.start, x.end) for x in p3.partitions] == [(12, 15), (0, 4)]
    with pytest.raises(StoreError, match="below the end 12"):
        plan_run(m, {"t": [0]}, log_start={("t", 0): 0}, log_end={("t", 0): 5})


# -- checksum --------------------------------------------------------------------------------
@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=20))
def test_checksum_sum_is_additive(hashes):
    half = len(hashes) // 2
    assert ck.add(ck.to_hex(sum(hashes[:half])), ck.to_hex(sum(hashes[half:]))) == ck.to_hex(sum(hashes))
    assert len(ck.to_hex(sum(hashes))) == 16
