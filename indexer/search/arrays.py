"""Array helpers of the ranking: per-file values kept in arrays (a query looks its ~200
candidate files up with numpy instead of a Python step per file; each value is computed the
first time a query meets the file), and np.unique and np.isin without their overhead."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


class FileValues:
    """`values(files)`: `compute(file)` of each file, computed once per file."""

    def __init__(self, n_files: int, compute: Callable[[int], int], dtype: type) -> None:
        self.compute = compute
        self.values_of: np.ndarray = np.zeros(n_files, dtype=dtype)
        self.known = np.zeros(n_files, dtype=bool)

    def values(self, files: np.ndarray) -> np.ndarray:
        missing = files[~self.known[files]]
        if len(missing):
            for f in set(missing.tolist()):
                self.values_of[f] = self.compute(f)
            self.known[missing] = True
        out: np.ndarray = self.values_of[files]
        return out


def stable_order(values: np.ndarray) -> np.ndarray:
    """np.argsort(values, kind="stable") of non-negative integers (file ids, rows, positions),
    the same permutation: as 16-bit keys when they fit, which numpy sorts by radix in one pass
    (a search's ~800 file ids: 9 against 14 us, five such sorts a search)."""
    if len(values) and int(values.max()) < 1 << 16:
        values = values.astype(np.uint16)  # (non-negative: ids and positions)
    order: np.ndarray = values.argsort(kind="stable")
    return order


def unique_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values, return_inverse=True) for a small non-negative integer array."""
    unique, _, inverse = unique_first_inverse(values)
    return unique, inverse


def unique_first_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """np.unique(values, return_index=True, return_inverse=True), the same arrays, for a small
    non-negative integer array: ~10x faster (np.unique's overhead is most of its cost for a few
    hundred values) and without importing numpy.ma, which np.unique does (a cold search's cost)."""
    order = stable_order(values)
    ordered = values[order]
    first = np.ones(len(values), dtype=bool)
    if len(values):
        first[1:] = ordered[1:] != ordered[:-1]
    inverse = np.empty(len(values), dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], order[first], inverse


def member(values: np.ndarray, table: np.ndarray | list[int]) -> np.ndarray:
    """np.isin(values, table) for integer arrays, by binary search in the sorted table:
    np.isin sorts with np.unique, whose first call imports numpy.ma (~20 ms of a cold search)."""
    ordered = np.sort(np.asarray(table, dtype=values.dtype))
    if not len(ordered) or not len(values):
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(ordered.searchsorted(values), len(ordered) - 1)
    found: np.ndarray = ordered[at] == values
    return found
