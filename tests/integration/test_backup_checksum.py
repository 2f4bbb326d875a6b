"""The numpy checksum that backup tasks compute while writing equals Spark's
``xxhash64(key, value, headers)`` definition (offsetkeeper.backup.checksum), record by record."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from offsetkeeper.backup import checksum as ck
from offsetkeeper.backup.task import file_schema

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _records(n: int, seed: int) -> list[dict]:
    rnd = random.Random(seed)
    lengths = [0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000, 4099]

    def blob():
        return rnd.randbytes(rnd.choice(lengths) if rnd.random() < 0.7 else rnd.randrange(0, 300))

    out = []
    for i in range(n):
        headers = [{"key": rnd.choice(["", "a", "trace-id", "ключ-ü", "x" * rnd.randrange(0, 70)]),
                    "value": None if rnd.random() < 0.2 else blob()}
                   for _ in range(rnd.choice([0, 0, 1, 2, 5]))]
        out.append({"offset": i, "timestamp": 1_700_000_000_000 + i, "timestamp_type": 0,
                    "key": None if rnd.random() < 0.2 else blob(),
                    "value": None if rnd.random() < 0.1 else blob(),
                    "headers": headers, "leader_epoch": None})
    return out


def test_arrow_checksum_equals_spark_xxhash64(spark, tmp_path):
    from offsetkeeper.backup.manifest import RECORD_DDL

    schema = file_schema()
    table = pa.Table.from_pylist(_records(3000, 7), schema=schema)
    d = tmp_path / "data" / "topic=t" / "partition=0"
    d.mkdir(parents=True)
    pq.write_table(table, d / "part-0.zstd.parquet", compression="zstd")

    mine = ck.record_hashes(table)
    df = spark.read.schema(RECORD_DDL).parquet(str(tmp_path / "data"))
    rows = df.select("offset", ck.hash_column().alias("h")).collect()
    spark_h = {r["offset"]: r["h"] % (1 << 64) for r in rows}
    assert len(spark_h) == len(mine)
    bad = [i for i in range(len(mine)) if int(mine[i]) != spark_h[i]]
    assert not bad, f"{len(bad)} records differ, first offset {bad[0]}"

    # the per-partition checksum, batch by batch, equals record_checksums() over the files
    total = sum(ck.batch_checksum(b) for b in table.to_batches(max_chunksize=700))
    assert ck.record_checksums(df)[("t", 0)] == (3000, ck.to_hex(total))
    # slices (offsets into shared buffers) hash the same
    part = table.slice(1234, 500).to_batches()[0]
    assert [int(x) for x in ck.record_hashes(part)] == [spark_h[i] for i in range(1234, 1734)]


@pytest.mark.parametrize("size", [1000, 24])
def test_equal_sized_values_hash_like_spark(spark, tmp_path, size):
    """Equal-sized values (one word alignment: the words are a view of the buffer, not a copy)
    hash as Spark does, also in a slice of the batch."""
    from offsetkeeper.backup.manifest import RECORD_DDL

    rnd = random.Random(size)
    recs = [{"offset": i, "timestamp": i, "timestamp_type": 0, "key": rnd.randbytes(8),
             "value": rnd.randbytes(size), "headers": [], "leader_epoch": 0} for i in range(500)]
    table = pa.Table.from_pylist(recs, schema=file_schema())
    d = tmp_path / "data" / "topic=t" / "partition=0"
    d.mkdir(parents=True)
    pq.write_table(table, d / "part-0.zstd.parquet", compression="zstd")
    df = spark.read.schema(RECORD_DDL).parquet(str(tmp_path / "data"))
    spark_h = {r["offset"]: r["h"] % (1 << 64) for r in df.select("offset", ck.hash_column().alias("h")).collect()}
    assert [int(x) for x in ck.record_hashes(table)] == [spark_h[i] for i in range(500)]
    part = table.slice(37, 100).to_batches()[0]
    assert [int(x) for x in ck.record_hashes(part)] == [spark_h[i] for i in range(37, 137)]
