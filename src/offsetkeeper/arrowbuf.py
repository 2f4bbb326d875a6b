"""Arrow arrays to and from plain buffers, without pyarrow's pandas shim.

In a process where pandas is installed, the first ``pa.array(...)``, ``pa.scalar(...)``,
``Array.to_numpy()`` or compute call given a Python scalar imports pandas: 0.3-0.5 CPU s in every
new Spark Python worker, which backup and restore tasks do not otherwise need. These helpers
build and read arrays from their buffers instead (as fast as pyarrow's own conversion for the
lists the tasks have); `tests/integration/test_worker_imports.py` checks that a backup and a
restore task never import pandas.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

INT32, INT64, BINARY, STRING = pa.int32(), pa.int64(), pa.binary(), pa.string()
_NUMPY = {INT32: np.int32, INT64: np.int64}


def validity(values: Sequence[Any]) -> tuple[pa.Buffer | None, int]:
    """(validity bitmap buffer or None, null count) of a list that may hold None."""
    if None not in values:
        return None, 0
    valid = np.fromiter((v is not None for v in values), bool, len(values))
    return pa.py_buffer(np.packbits(valid, bitorder="little")), len(values) - int(valid.sum())


def ints(values: Sequence[int | None], typ: pa.DataType = INT64) -> pa.Array:
    """An int32/int64 Arrow array of a list of ints (None = null)."""
    bitmap, nulls = validity(values)
    if nulls:
        values = [0 if v is None else v for v in values]
    data = np.asarray(values, dtype=_NUMPY[typ])
    return pa.Array.from_buffers(typ, len(data), [bitmap, pa.py_buffer(data)], null_count=nulls)


def int_scalar(value: int, typ: pa.DataType = INT64) -> pa.Scalar:
    """An int32/int64 Arrow scalar (for compute functions: a Python int there imports pandas)."""
    return ints([value], typ)[0]


def scalar(value: int | str, typ: pa.DataType) -> pa.Scalar:
    """An int32/int64 or string Arrow scalar."""
    return strings([value])[0] if typ == STRING else ints([value], typ)[0]


def binaries(values: Sequence[bytes | None], typ: pa.DataType = BINARY) -> pa.Array:
    """A binary (or, for `typ` string, UTF-8 string) Arrow array of a list of bytes (None =
    null): the values joined into one buffer, offsets from their lengths."""
    n = len(values)
    given = values
    bitmap, nulls = validity(values)
    if nulls:
        values = [b"" if v is None else v for v in values]
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(np.fromiter(map(len, values), np.int64, n), out=offsets[1:])
    if offsets[-1] > 2**31 - 1:  # more than int32 offsets address: pyarrow's own conversion
        return pa.array(given, typ)
    return pa.Array.from_buffers(typ, n, [bitmap, pa.py_buffer(offsets.astype(np.int32)),
                                          pa.py_buffer(b"".join(values))], null_count=nulls)


def strings(values: Sequence[str | None]) -> pa.Array:
    """A UTF-8 string Arrow array of a list of str (None = null)."""
    return binaries([None if v is None else v.encode() for v in values], pa.string())


def repeated_string(s: str, n: int) -> pa.Array:
    """`s` n times, as a string array."""
    b = s.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(b)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(b * n)])


def repeated_int(value: int, n: int, typ: pa.DataType = INT32) -> pa.Array:
    """`value` n times, as an int32/int64 array."""
    return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(np.full(n, value, dtype=_NUMPY[typ]))])


def int_values(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The values of an int32/int64 array as numpy (a view where possible); nulls read as 0."""
    if isinstance(arr, pa.ChunkedArray):
        parts = [int_values(c) for c in arr.chunks]
        return np.concatenate(parts) if parts else np.zeros(0, _NUMPY[arr.type])
    if not len(arr):
        return np.zeros(0, _NUMPY[arr.type])
    values = np.frombuffer(arr.buffers()[1], dtype=_NUMPY[arr.type])[arr.offset:arr.offset + len(arr)]
    if arr.null_count:
        values = np.where(valid_mask(arr), values, 0)
    return values


def valid_mask(arr: pa.Array) -> np.ndarray:
    """Which entries of `arr` are not null, as a numpy bool array."""
    n = len(arr)
    if not arr.null_count:
        return np.ones(n, bool)
    bits = np.unpackbits(np.frombuffer(arr.buffers()[0], np.uint8), bitorder="little")
    return bits[arr.offset:arr.offset + n].astype(bool)

