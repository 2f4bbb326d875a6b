"""The record checksum of the backup format, computed in Spark.

Definition (docs/design.md): the checksum of a set of records is the sum of
``xxhash64(key, value, headers)`` over the records, modulo 2^64, written as 16 lower-case hex
digits. It is order-independent and does not include offsets, timestamps or partitions, so a
restore can validate its target against it (after stripping the ``x-kafka-backup-*`` headers it
adds). Because it is a sum, the checksum of a partition is the sum of its segments' checksums.

Records without headers must carry an empty array (or null: both hash the same).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

MOD = 1 << 64
ZERO = "0" * 16


def to_hex(total: int) -> str:
    """A (possibly negative or huge) sum of signed 64-bit hashes as the 16-digit checksum."""
    return f"{int(total) % MOD:016x}"


def add(*checksums: str) -> str:
    """Combine checksums of disjoint record sets (sum modulo 2^64)."""
    return to_hex(sum(int(c, 16) for c in checksums))


def hash_column(*, strip_header_prefix: str | None = None):
    """The per-record ``xxhash64(key, value, headers)`` column (a Spark Column, long)."""
    from pyspark.sql import functions as F

    headers = F.col("headers")
    if strip_header_prefix:
        headers = F.filter(headers, lambda h: ~h["key"].startswith(strip_header_prefix))
    return F.xxhash64(F.col("key"), F.col("value"), headers)


def record_checksums(
    df: DataFrame,
    group_by: Iterable[str] = ("topic", "partition"),
    *,
    strip_header_prefix: str | None = None,
) -> dict[tuple, tuple[int, str]]:
    """Record count and checksum per group (default per (topic, partition)), computed in Spark.

    `df` needs the columns key, value, headers and the `group_by` columns. Pass
    ``strip_header_prefix="x-kafka-backup-"`` to ignore headers a restore added.
    Returns ``{(topic, partition): (count, checksum_hex)}``.
    """
    from pyspark.sql import functions as F

    keys = list(group_by)
    h = hash_column(strip_header_prefix=strip_header_prefix).cast("decimal(20,0)")
    rows = (
        df.groupBy(*keys)
        .agg(F.count(F.lit(1)).alias("_n"), F.sum(h).alias("_s"))
        .collect()
    )
    return {tuple(r[k] for k in keys): (int(r["_n"]), to_hex(int(r["_s"] or 0))) for r in rows}


def dataframe_checksum(df: DataFrame, *, strip_header_prefix: str | None = None) -> tuple[int, str]:
    """Record count and checksum of a whole DataFrame (columns key, value, headers)."""
    from pyspark.sql import functions as F

    h = hash_column(strip_header_prefix=strip_header_prefix).cast("decimal(20,0)")
    row = df.agg(F.count(F.lit(1)).alias("n"), F.sum(h).alias("s")).collect()[0]
    return int(row["n"]), to_hex(int(row["s"] or 0))
