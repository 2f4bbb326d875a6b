"""arrowbuf builds and reads the same arrays as pyarrow's own conversions (property-based)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given
from hypothesis import strategies as st

from offsetkeeper import arrowbuf as ab

int64s = st.integers(min_value=-(2**63), max_value=2**63 - 1)
int32s = st.integers(min_value=-(2**31), max_value=2**31 - 1)


@given(st.lists(st.none() | int64s, max_size=40))
def test_ints_equal_pa_array(values):
    assert ab.ints(values, pa.int64()).equals(pa.array(values, pa.int64()))


@given(st.lists(st.none() | int32s, max_size=40))
def test_int32s_equal_pa_array(values):
    assert ab.ints(values, pa.int32()).equals(pa.array(values, pa.int32()))


@given(st.lists(st.none() | st.binary(max_size=12), max_size=40))
def test_binaries_equal_pa_array(values):
    assert ab.binaries(values).equals(pa.array(values, pa.binary()))


@given(st.lists(st.none() | st.text(max_size=8), max_size=40))
def test_strings_equal_pa_array(values):
    assert ab.strings(values).equals(pa.array(values, pa.string()))


@given(st.text(max_size=10), st.integers(0, 30), int32s)
def test_repeated_values(s, n, i):
    assert ab.repeated_string(s, n).equals(pa.array([s] * n, pa.string()))
    assert ab.repeated_int(i, n).equals(pa.array([i] * n, pa.int32()))


@given(st.lists(st.none() | int64s, min_size=1, max_size=40), st.data())
def test_int_values_and_valid_mask_of_slices(values, data):
    """Sliced arrays (an offset into the buffers) read back right; nulls read as 0."""
    lo = data.draw(st.integers(0, len(values)))
    hi = data.draw(st.integers(lo, len(values)))
    arr = pa.array(values, pa.int64()).slice(lo, hi - lo)
    want = [0 if v is None else v for v in values[lo:hi]]
    assert ab.int_values(arr).tolist() == want
    assert ab.valid_mask(arr).tolist() == [v is not None for v in values[lo:hi]]


@given(st.lists(st.lists(int64s, max_size=5), max_size=5))
def test_int_values_of_chunked_arrays(chunks):
    arr = pa.chunked_array([pa.array(c, pa.int64()) for c in chunks], pa.int64())
    assert ab.int_values(arr).tolist() == [v for c in chunks for v in c]
    assert ab.int_values(arr).dtype == np.int64


@given(int64s, st.text(max_size=5))
def test_scalars_work_in_compute_functions(i, s):
    assert pc.equal(pa.array([i], pa.int64()), ab.scalar(i, pa.int64()))[0].as_py()
    assert pc.equal(pa.array([s], pa.string()), ab.scalar(s, pa.string()))[0].as_py()
    assert ab.int_scalar(i).as_py() == i
