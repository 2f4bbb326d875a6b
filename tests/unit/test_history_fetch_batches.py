"""Batching of the next-record fetches (history sampling, issue 10): bounded batches, nothing
lost, order kept; the native-memory release is safe to call anywhere."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from offsetkeeper.history.sample_cycle import plan_batches, release_native_memory


def test_batches_respect_the_record_budget_and_the_partition_cap():
    todo = {("t", p): 10 for p in range(10)}
    tails = {("t", p): 30 for p in range(10)}
    batches = plan_batches(todo, tails, max_parts=4, max_records=100)
    assert [len(b) for b in batches] == [3, 3, 3, 1]           # 3 x 30 <= 100 < 4 x 30
    batches = plan_batches(todo, {}, max_parts=4, max_records=100)
    assert [len(b) for b in batches] == [4, 4, 2]              # unknown tails count 1 each


def test_a_partition_larger_than_the_budget_gets_a_batch_of_its_own():
    todo = {("a", 0): 0, ("b", 0): 0, ("c", 0): 0}
    tails = {("a", 0): 5, ("b", 0): 10_000, ("c", 0): 5}
    assert plan_batches(todo, tails, max_parts=10, max_records=100) == [
        {("a", 0): 0}, {("b", 0): 0}, {("c", 0): 0}]


@given(st.dictionaries(st.tuples(st.sampled_from("abc"), st.integers(0, 50)), st.integers(0, 10**6),
                       max_size=80),
       st.lists(st.integers(0, 5000), min_size=80, max_size=80),
       st.integers(1, 20), st.integers(1, 3000))
def test_batches_cover_every_partition_once_within_bounds(todo, sizes, max_parts, max_records):
    """Invariant: every partition is in exactly one batch with its offset, in the given order;
    no batch exceeds the partition cap, and a batch exceeds the record budget only when it holds
    a single partition."""
    tails = {k: sizes[i] for i, k in enumerate(todo)}
    batches = plan_batches(todo, tails, max_parts, max_records)
    flat = [(k, o) for b in batches for k, o in b.items()]
    assert flat == list(todo.items())
    for b in batches:
        assert 1 <= len(b) <= max_parts
        assert len(b) == 1 or sum(max(1, tails[k]) for k in b) <= max_records


def test_release_native_memory_is_safe_to_call_repeatedly():
    for _ in range(3):
        release_native_memory()
