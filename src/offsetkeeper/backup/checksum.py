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


# -- the same checksum over Arrow record batches (no Spark) --------------------------------------
# Spark's xxhash64(key, value, headers) is XXH64 chained through its columns: the seed starts at
# 42, each non-null binary or string is hashed (standard XXH64 of its bytes, UTF-8 for strings)
# with the previous result as seed, and an array of structs hashes its elements' fields in order;
# nulls leave the hash unchanged. Below, XXH64 is computed for many byte strings at once with
# numpy (uint64 arithmetic wraps modulo 2^64 like Java's long), so a backup task can checksum
# what it writes without another Spark job. tests/integration/test_backup_checksum.py checks it
# against Spark's own xxhash64.
SEED = 42
_P1, _P2, _P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_P4, _P5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5


def _u(x: int):
    import numpy as np

    return np.uint64(x)


def _rotl(x, r: int):
    import numpy as np

    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


class _Words:
    """Little-endian 64-bit words of a byte buffer at byte positions of the given alignments
    (one shifted copy per alignment, flattened, so a word is one `take`), and its bytes."""

    def __init__(self, buf, starts) -> None:
        import numpy as np

        raw = np.frombuffer(buf, np.uint8) if buf is not None else np.zeros(0, np.uint8)
        self.raw = padded = np.concatenate([raw, np.zeros(16, np.uint8)])
        self.k = k = (len(padded) - 8) // 8
        aligns = np.unique(np.asarray(starts, np.int64) & 7)
        self.row = np.zeros(8, np.int64)
        if len(aligns) <= 1:
            # one alignment (e.g. equal-sized values): the words are a view, not a copy
            self.flat = np.frombuffer(padded, "<u8", count=k, offset=int(aligns[0]) if len(aligns) else 0)
            return
        v = np.empty((len(aligns), k), np.uint64)
        for i, a in enumerate(aligns.tolist()):
            self.row[a] = i
            v[i] = np.frombuffer(padded, "<u8", count=k, offset=a)
        self.flat = v.ravel()

    def index(self, pos):
        """Flat index of the word at byte position `pos` (numpy int64 array); `pos` must have
        the alignment of one of the starts given."""
        return self.row.take(pos & 7) * self.k + (pos >> 3)

    def at(self, pos):
        return self.flat.take(self.index(pos))


def xxh64_many(words: _Words, starts, lengths, seeds):
    """Standard XXH64 of the byte strings ``[starts[i], starts[i] + lengths[i])`` of one buffer,
    each with its own seed (numpy arrays; returns uint64)."""
    import numpy as np

    n = len(starts)
    if n == 0:
        return np.zeros(0, np.uint64)
    p1, p2, p3, p4, p5 = _u(_P1), _u(_P2), _u(_P3), _u(_P4), _u(_P5)
    r31, r33 = _u(31), _u(33)
    order = np.argsort(-lengths, kind="stable")
    st = starts[order].astype(np.int64)
    ln = lengths[order].astype(np.int64)
    sd = seeds[order].astype(np.uint64)
    ns = ln // 32
    h = np.empty(n, np.uint64)
    m = int(np.count_nonzero(ns))
    if m:
        s = sd[:m]
        # the four lanes side by side: v[:, 0..3]
        v = np.empty((m, 4), np.uint64)
        v[:, 0], v[:, 1], v[:, 2], v[:, 3] = s + p1 + p2, s + p2, s, s - p1
        base = words.index(st[:m])[:, None] + np.arange(4, dtype=np.int64)
        neg = -ns[:m]
        for k in range(int(ns[0])):
            a = int(np.searchsorted(neg, -k, side="left"))  # records with more than k stripes
            x = v[:a] + words.flat.take(base[:a] + 4 * k) * p2
            v[:a] = ((x << r31) | (x >> r33)) * p1
        v1, v2, v3, v4 = v[:, 0], v[:, 1], v[:, 2], v[:, 3]
        hb = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        for lane in (v1, v2, v3, v4):
            hb ^= _rotl(lane * p2, 31) * p1
            hb = hb * p1 + p4
        h[:m] = hb
    h[m:] = sd[m:] + p5
    h += ln.astype(np.uint64)
    pos = st + ns * 32
    rem = ln - ns * 32
    for _ in range(3):
        sel = np.nonzero(rem >= 8)[0]
        if not len(sel):
            break
        k1 = _rotl(words.at(pos[sel]) * p2, 31) * p1
        hs = h[sel] ^ k1
        h[sel] = _rotl(hs, 27) * p1 + p4
        pos[sel] += 8
        rem[sel] -= 8
    sel = np.nonzero(rem >= 4)[0]
    if len(sel):
        k1 = words.at(pos[sel]) & _u(0xFFFFFFFF)
        hs = h[sel] ^ (k1 * p1)
        h[sel] = _rotl(hs, 23) * p2 + p3
        pos[sel] += 4
        rem[sel] -= 4
    for _ in range(3):
        sel = np.nonzero(rem >= 1)[0]
        if not len(sel):
            break
        b = words.raw.take(pos[sel]).astype(np.uint64)
        hs = h[sel] ^ (b * p5)
        h[sel] = _rotl(hs, 11) * p1
        pos[sel] += 1
        rem[sel] -= 1
    h ^= h >> _u(33)
    h *= p2
    h ^= h >> _u(29)
    h *= p3
    h ^= h >> _u(32)
    out = np.empty(n, np.uint64)
    out[order] = h
    return out


def _binary_parts(arr):
    """(words, starts, lengths, valid) of a binary/string Arrow array (int32 offsets); only the
    part of the data buffer the (possibly sliced) array uses is copied."""
    import numpy as np

    n = len(arr)
    bufs = arr.buffers()
    offs = np.frombuffer(bufs[1], np.int32)[arr.offset:arr.offset + n + 1].astype(np.int64) \
        if bufs[1] is not None else np.zeros(n + 1, np.int64)
    from offsetkeeper.arrowbuf import valid_mask

    valid = valid_mask(arr)
    lo, hi = int(offs[0]), int(offs[-1])
    data = bufs[2][lo:hi] if bufs[2] is not None and hi > lo else None
    starts = offs[:-1] - lo
    return _Words(data, starts[valid]), starts, offs[1:] - offs[:-1], valid


def _chain(h, rows, arr) -> None:
    """h[rows] = xxh64(arr[i], seed=h[rows]) for the non-null elements of `arr` (aligned with rows)."""
    import numpy as np

    words, starts, lengths, valid = _binary_parts(arr)
    sel = np.nonzero(valid)[0]
    if len(sel):
        r = rows[sel]
        h[r] = xxh64_many(words, starts[sel], lengths[sel], h[r])


def record_hashes(batch):
    """Spark's ``xxhash64(key, value, headers)`` of every record of an Arrow batch or table
    (columns key binary, value binary, headers list<struct<key string, value binary>>), as
    uint64 (the signed long's bits)."""
    import numpy as np
    import pyarrow as pa

    if isinstance(batch, pa.Table):
        batch = batch.combine_chunks().to_batches()[0] if batch.num_rows else None
        if batch is None:
            return np.zeros(0, np.uint64)
    n = batch.num_rows
    h = np.full(n, SEED, np.uint64)
    allrows = np.arange(n)
    _chain(h, allrows, batch.column("key"))
    _chain(h, allrows, batch.column("value"))
    hdr = batch.column("headers")
    if len(hdr) and hdr.null_count < n:
        offs = np.frombuffer(hdr.buffers()[1], np.int32)[hdr.offset:hdr.offset + n + 1].astype(np.int64)
        counts = offs[1:] - offs[:-1]
        if hdr.null_count:
            from offsetkeeper.arrowbuf import valid_mask

            counts[~valid_mask(hdr)] = 0
        elems = hdr.values  # the struct child, indexed by the offsets
        hkeys, hvals = elems.field("key"), elems.field("value")
        for j in range(int(counts.max()) if n else 0):
            rows = np.nonzero(counts > j)[0]
            idx = offs[rows] + j
            # an index array from its buffer: `pa.array` would import pandas in a new worker
            take = pa.Array.from_buffers(pa.int64(), len(idx), [None, pa.py_buffer(idx)])
            _chain(h, rows, hkeys.take(take))
            _chain(h, rows, hvals.take(take))
    return h


def batch_checksum(batch) -> int:
    """Sum of `record_hashes` modulo 2^64 (add such sums, then `to_hex`)."""
    import numpy as np

    h = record_hashes(batch)
    return int(np.sum(h, dtype=np.uint64)) if len(h) else 0
