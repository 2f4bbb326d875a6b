"""The offsetkeeper-kafka data source against the real broker and real local Spark, compared
record by record, byte for byte, with a plain confluent-kafka consumer."""

from __future__ import annotations

import pytest

from backup_support import SPECIAL, delete_records, independent_read, produce_transactions, rows_of
from kafkatools import create_topic, produce
from offsetkeeper.spark.kafka import SOURCE_NAME, register

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture
def read(spark, bootstrap):
    register(spark)

    def load(**opts):
        r = spark.read.format(SOURCE_NAME).option("kafka.bootstrap.servers", bootstrap)
        for k, v in opts.items():
            r = r.option(k, v)
        return r.load()

    return load


@pytest.mark.spark_oldest
def test_every_record_byte_for_byte_with_split_ranges(read, bootstrap, unique):
    topic = unique("src")
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, SPECIAL + [(p, f"k{i}".encode(), f"v{i}".encode(), [("n", str(i).encode())])
                                         for i in range(20) for p in (0, 1)])
    expected = independent_read(bootstrap, topic, 2)
    df = read(subscribe=topic, maxRecordsPerPartition="4")
    assert df.rdd.getNumPartitions() >= 10  # 2 partitions split into ranges of <= 4 offsets
    got = rows_of(df)
    assert got == expected
    assert len(got) == len(SPECIAL) + 40
    # schema as documented (binary key/value, headers array<struct>)
    assert df.schema.simpleString() == (
        "struct<topic:string,partition:int,offset:bigint,timestamp:bigint,timestamp_type:int,"
        "key:binary,value:binary,headers:array<struct<key:string,value:binary>>,leader_epoch:int>")


@pytest.mark.spark_oldest
def test_transactions_read_committed_by_default(read, bootstrap, unique):
    topic = unique("tx")
    create_topic(bootstrap, topic, 1)
    produce_transactions(bootstrap, topic, unique("txid"))
    got = rows_of(read(subscribe=topic))
    assert got == independent_read(bootstrap, topic, 1, "read_committed")
    assert len(got) == 9 and all(r[4].startswith(b"committed") for r in got)
    # markers occupy offsets: offsets are not contiguous
    assert got[-1][1] > len(got) - 1
    everything = rows_of(read(subscribe=topic, **{"kafka.isolation.level": "read_uncommitted"}))
    assert everything == independent_read(bootstrap, topic, 1, "read_uncommitted")
    assert len(everything) == 15


def test_compacted_topic_with_deleted_keys(read, bootstrap, unique):
    topic = unique("cmp")
    create_topic(bootstrap, topic, 1, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01",
                                       "segment.ms": "100"})
    produce(bootstrap, topic, [(0, f"k{i % 5}".encode(), f"v{i}".encode()) for i in range(30)])
    produce(bootstrap, topic, [(0, b"k1", None), (0, b"k2", None)])
    got = rows_of(read(subscribe=topic, maxRecordsPerPartition="7"))
    assert got == independent_read(bootstrap, topic, 1)
    assert {r[3] for r in got} >= {b"k0", b"k3", b"k4"}


def test_offsets_options(read, bootstrap, unique):
    topic = unique("opt")
    create_topic(bootstrap, topic, 2, {"retention.ms": "-1"})  # old timestamps would vanish
    produce(bootstrap, topic, [(p, b"k", f"{p}-{i}".encode(), None, 1_000 * (i + 1))
                               for p in (0, 1) for i in range(10)])
    df = read(assign=f'{{"{topic}":[1]}}', startingOffsets=f'{{"{topic}":{{"1":3}}}}',
              endingOffsets=f'{{"{topic}":{{"1":6}}}}')
    assert [(r[0], r[1]) for r in rows_of(df)] == [(1, 3), (1, 4), (1, 5)]
    df = read(subscribePattern=topic.replace("-", "."), startingTimestamp="8000")
    assert sorted((r[0], r[1]) for r in rows_of(df)) == [(0, 7), (0, 8), (0, 9), (1, 7), (1, 8), (1, 9)]
    assert read(subscribe=topic, startingOffsets="latest").count() == 0


def test_records_lost_to_retention_are_a_gap_not_an_error(read, bootstrap, unique, tmp_path):
    import json

    topic = unique("gap")
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, [(0, b"k", str(i).encode()) for i in range(10)])
    delete_records(bootstrap, topic, 0, 4)
    reports = tmp_path / "reports"
    got = rows_of(read(subscribe=topic, startingOffsets=f'{{"{topic}":{{"0":0}}}}',
                       reportPath=str(reports)))
    assert [r[1] for r in got] == [4, 5, 6, 7, 8, 9]
    (report,) = [json.loads(p.read_text()) for p in reports.glob("*.json")]
    assert report["gaps"] == [[0, 4]] and report["records"] == 6
    with pytest.raises(Exception, match="failOnDataLoss"):
        read(subscribe=topic, startingOffsets=f'{{"{topic}":{{"0":0}}}}',
             failOnDataLoss="true").collect()


def test_bad_options_name_the_option(read):
    with pytest.raises(Exception, match="exactly one of the options subscribe"):
        read().collect()


def test_ranges_made_only_of_aborted_records_and_markers_end(read, bootstrap, unique):
    """A task whose whole range holds aborted records and control markers ends (at its end
    position), and a partition ending in an aborted transaction is read to its end."""
    from confluent_kafka import Producer

    topic = unique("abort")
    create_topic(bootstrap, topic, 1)
    a = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("txa")})
    b = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("txb")})
    a.init_transactions(15)
    b.init_transactions(15)
    # The dev broker (unlike Kafka) marks a producer's records as aborted when a fetch starts
    # after that producer's aborted transaction, so the committed record in the middle comes
    # from a second producer.
    for p, commit_it, n in ((a, True, 2), (a, False, 6), (b, True, 1), (a, False, 3)):
        p.begin_transaction()
        for i in range(n):
            p.produce(topic, key=b"k", value=f"{commit_it}-{i}".encode(), partition=0)
        p.flush(15)
        p.commit_transaction(15) if commit_it else p.abort_transaction(15)
    got = rows_of(read(subscribe=topic, maxRecordsPerPartition="2"))
    assert got == independent_read(bootstrap, topic, 1)
    assert [r[4] for r in got] == [b"True-0", b"True-1", b"True-0"]
