"""`DataFrame.mapInArrow`, the one way commit scans run a function over Arrow batches."""

from __future__ import annotations


def map_in_arrow(df, func, schema):
    """`df.mapInArrow(func, schema)`: `func` gets and yields pyarrow RecordBatches."""
    return df.mapInArrow(func, schema)
