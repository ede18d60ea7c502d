"""The ranking's array helpers give exactly what numpy's general functions give."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from indexer.search.arrays import (
    FileValues,
    member,
    stable_order,
    unique_first_inverse,
    unique_inverse,
)
from indexer.search.rerank import best_positions


@given(
    st.lists(st.integers(min_value=0, max_value=40), max_size=300), st.sampled_from([0, 1 << 17])
)
def test_unique_first_inverse_is_np_unique(values: list[int], offset: int) -> None:
    values = [v + offset for v in values]  # ids under and over 16 bits (two sorts)
    array = np.asarray(values, dtype=np.int64)
    expected = np.unique(array, return_index=True, return_inverse=True)
    for got, want in zip(unique_first_inverse(array), expected, strict=True):
        np.testing.assert_array_equal(got, want.reshape(-1))
    unique, inverse = unique_inverse(array)
    np.testing.assert_array_equal(unique[inverse], array)


@given(
    st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=50),
    st.lists(st.integers(min_value=-5, max_value=5), max_size=50),
)
def test_member_is_np_isin(table: list[int], values: list[int]) -> None:
    array = np.asarray(values + table[:10], dtype=np.int64)
    assert member(array, table).tolist() == np.isin(array, table).tolist()


def test_file_values_compute_each_file_once() -> None:
    calls: list[int] = []

    def compute(f: int) -> int:
        calls.append(f)
        return f * 10

    values = FileValues(6, compute, np.int64)
    assert values.values(np.asarray([3, 1, 3])).tolist() == [30, 10, 30]
    assert values.values(np.asarray([1, 5, 0, 3])).tolist() == [10, 50, 0, 30]
    assert sorted(calls) == [0, 1, 3, 5]


@given(st.lists(st.integers(min_value=0, max_value=(1 << 16) + 5), max_size=400))
def test_stable_order_is_a_stable_argsort(values: list[int]) -> None:
    """Ids that fit 16 bits are sorted as such (numpy's radix sort): the same permutation."""
    for dtype in (np.int64, np.int32, np.uint32):
        array = np.asarray(values, dtype=dtype)
        assert stable_order(array).tolist() == np.argsort(array, kind="stable").tolist()


@given(
    st.lists(st.integers(min_value=0, max_value=6), max_size=120),
    st.integers(min_value=1, max_value=60),
)
def test_best_positions_are_the_best_ties_by_position(values: list[int], n: int) -> None:
    scores = np.asarray(values, dtype=np.float64) / 7  # many ties
    got = sorted(best_positions(scores, n).tolist())
    # the reference: a stable sort by decreasing score, its first n positions
    assert got == sorted(np.argsort(-scores, kind="stable")[:n].tolist())
