"""Restore routing and option parsing (pure)."""

from __future__ import annotations

import pytest

from offsetkeeper.config import Connection
from offsetkeeper.errors import ConfigError, UsageError
from offsetkeeper.models import TopicPartition as TP
from offsetkeeper.restore.backup_view import BackupView, PartitionMeta, TopicMeta
from offsetkeeper.restore.config import (
    RestoreOptions,
    load_restore_file,
    options_from_file,
    parse_partition_map,
    parse_rate,
    parse_rename,
    parse_source_partitions,
    parse_time_ms,
    validate_options,
)
from offsetkeeper.restore.plan import (
    Route,
    check_existing_targets,
    route_partitions,
    topics_to_create,
)

VIEW = BackupView("/b", "id", {"orders": TopicMeta(3, {"retention.ms": "-1"}), "pay": TopicMeta(2)},
                  {**{TP("orders", p): PartitionMeta(0, 10, 10) for p in range(3)},
                   **{TP("pay", p): PartitionMeta(0, 5, 5) for p in range(2)}}, {})


def opts(**kw) -> RestoreOptions:
    return RestoreOptions("/b", "id", Connection("x:1"), **kw)


def test_routes_default_all_partitions_same_names():
    routes = route_partitions(VIEW, opts())
    assert [(r.source, r.target) for r in routes][:1] == [(TP("orders", 0), TP("orders", 0))]
    assert len(routes) == 5


def test_routes_filter_rename_and_partition_map():
    o = opts(topics=("ord*",), rename={"orders": "orders-dr"}, partition_map={"orders": {0: 2, 2: 0}},
             source_partitions={"orders": (0, 2)})
    assert route_partitions(VIEW, o) == [Route(TP("orders", 0), TP("orders-dr", 2)),
                                         Route(TP("orders", 2), TP("orders-dr", 0))]


@pytest.mark.parametrize(("kw", "message"), [
    ({"topics": ("nope",)}, "topic 'nope' is not in backup"),
    ({"rename": {"nope": "x"}}, "--rename names topic 'nope'"),
    ({"partition_map": {None: {0: 1}}}, "would both be restored to orders:1"),
    ({"source_partitions": {"orders": (7,)}}, "has no backed-up partition 7"),
    ({"exclude_topics": ("*",)}, "nothing to restore"),
])
def test_routes_reject_bad_input(kw, message):
    with pytest.raises(UsageError, match=message):
        route_partitions(VIEW, opts(**kw))


def test_topics_to_create_uses_backed_up_count_and_configs():
    routes = route_partitions(VIEW, opts(rename={"orders": "o2"}, partition_map={"orders": {2: 5}},
                                         topics=("orders",)))
    [t] = topics_to_create(VIEW, routes, existing={"pay": [0, 1]})
    assert (t.name, t.partitions, t.configs) == ("o2", 6, {"retention.ms": "-1"})
    assert topics_to_create(VIEW, routes, existing={"o2": [0]}) == []
    with pytest.raises(UsageError, match="has no partition 5"):
        check_existing_targets(routes, {"o2": [0, 1, 2]})


@pytest.mark.parametrize(("text", "ms"), [
    ("1700000000123", 1700000000123),
    ("2023-11-14T22:13:20.123Z", 1700000000123),
    ("2023-11-14T22:13:20.123", 1700000000123),
    ("2023-11-15T00:13:20.123+02:00", 1700000000123),
    (None, None),
])
def test_parse_time_ms(text, ms):
    assert parse_time_ms(text, flag="--from-time") == ms


def test_parse_errors_name_the_flag():
    with pytest.raises(UsageError, match="--from-time 'yesterday'"):
        parse_time_ms("yesterday", flag="--from-time")
    with pytest.raises(UsageError, match="--rename 'a'"):
        parse_rename(["a"])
    with pytest.raises(UsageError, match="--partition-map 'x'"):
        parse_partition_map(["x"])
    with pytest.raises(UsageError, match="--source-partitions 'a:b'"):
        parse_source_partitions(["a:b"])
    with pytest.raises(UsageError, match="--max-records-per-sec '0'"):
        parse_rate("0", flag="--max-records-per-sec")


def test_parse_maps_and_rates():
    assert parse_partition_map(["orders:0=2", "1=0"]) == {"orders": {0: 2}, None: {1: 0}}
    assert parse_source_partitions(["orders:0,2", "1"]) == {"orders": (0, 2), None: (1,)}
    assert parse_rate("20k", flag="x") == 20_000
    assert parse_rate("10MB", flag="x") == 10_000_000


def test_validate_options():
    with pytest.raises(UsageError, match="must be after"):
        validate_options(opts(from_time_ms=10, to_time_ms=10))
    with pytest.raises(UsageError, match="restore id"):
        validate_options(opts(restore_id="a/b"))


def test_fingerprint_changes_with_selection_only():
    assert opts().fingerprint() == opts(chunk_records=5, records_per_second=3.0).fingerprint()
    assert opts().fingerprint() != opts(from_time_ms=1).fingerprint()


def test_yaml_file(tmp_path, monkeypatch):
    monkeypatch.setenv("DR_PASS", "s3cret")
    p = tmp_path / "r.yaml"
    p.write_text("""
backup: {path: /backups, id: nightly}
target:
  bootstrap_servers: dr:9092
  properties: {sasl.password: "${DR_PASS}"}
restore:
  restore_id: r1
  topics: [orders]
  rename: {orders: orders-dr}
  partition_map: ["orders:0=1"]
  from_time: 2023-11-14T22:13:20Z
  offset_headers: false
  records_per_second: 5k
""")
    f = load_restore_file(p)
    o = options_from_file(f, Connection("dr:9092"))
    assert (o.destination, o.backup_id, o.restore_id) == ("/backups", "nightly", "r1")
    assert o.partition_map == {"orders": {0: 1}} and o.offset_headers is False
    assert o.from_time_ms == 1700000000000 and o.records_per_second == 5000
    assert f.target.properties["sasl.password"] == "s3cret"
    p.write_text("backup: {path: /b, id: x}\nrestore: {bogus: 1}\n")
    with pytest.raises(ConfigError, match="restore.bogus"):
        load_restore_file(p)
