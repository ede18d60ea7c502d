"""The ranking's array helpers give exactly what numpy's general functions give."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from indexer.search.arrays import FileValues, member, unique_first_inverse, unique_inverse


@given(st.lists(st.integers(min_value=0, max_value=40), max_size=300))
def test_unique_first_inverse_is_np_unique(values: list[int]) -> None:
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
