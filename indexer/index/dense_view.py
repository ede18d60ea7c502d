"""The vector side of a row space: one scan over the codes of every live row of its segments."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from typing import Any

import numpy as np

from ..errors import CorruptIndexError
from .dense import CodeScan, DenseIndex, decode
from .integrity import REBUILD
from .reader import RowSpace


class DenseView:
    """One FAISS scan over the codes of every live row, laid out in global row order when the
    view is first searched: the cost of a query does not depend on the number of segments, and
    deleted or masked rows are simply absent. Results are ordered by (similarity, row), so ties
    do not depend on segment order."""

    def __init__(
        self, space: RowSpace, whole: DenseIndex | None = None, one_shot: bool = False
    ) -> None:
        self.space = space
        self.whole = whole  # codes of every row of `space` in row order (a table swapped in)
        # A process that answers one command scans the mapped codes with numpy instead
        # (indexer/index/code_scan.py): no FAISS import, no copy.
        self.one_shot = one_shot

    @cached_property
    def ranges(self) -> np.ndarray:
        dense = [self.whole] if self.whole is not None else [s.dense for s in self.space.segments]
        if not dense:
            return np.zeros(0, dtype=np.float32)
        if any(not np.array_equal(d.ranges, dense[0].ranges) for d in dense[1:]):
            raise CorruptIndexError(f"segments of one index have different vector codes; {REBUILD}")
        return dense[0].ranges

    @cached_property
    def _scan(self) -> CodeScan:
        space = self.space

        def fill() -> Iterator[tuple[Any, np.ndarray]]:
            if self.whole is not None:
                for start, codes in self.whole.blocks():
                    yield slice(start, start + len(codes)), codes
                return
            for i, segment in enumerate(space.segments):
                to_global = space.local_to_global(i)
                for start, codes in segment.dense.blocks():
                    if to_global is None:
                        yield slice(start, start + len(codes)), codes
                    else:
                        rows = to_global[start : start + len(codes)]
                        live = rows >= 0
                        yield rows[live], codes[live]

        return CodeScan(space.n_rows, self.ranges, fill())

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(similarities, global rows) of the k nearest live rows, best first."""
        if self.space.n_rows == 0 or k <= 0:
            return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.int64)
        if self.one_shot and "_scan" not in self.__dict__:
            from .code_scan import scan

            parts: list[tuple[DenseIndex, np.ndarray | None]] = []
            if self.whole is not None:
                parts.append((self.whole, None))
            for i, segment in enumerate(self.space.segments if self.whole is None else ()):
                parts.append((segment.dense, self.space.local_to_global(i)))
            return scan(parts, query, k)
        sims, rows = self._scan.search(query, k)
        valid = rows >= 0
        sims, rows = sims[valid], rows[valid].astype(np.int64)
        order = np.lexsort((rows, -sims))
        return sims[order], rows[order]

    def reconstruct(self, rows: np.ndarray) -> np.ndarray:
        """Stored (decoded) vectors of global rows."""
        rows = np.asarray(rows, dtype=np.int64)
        if "_scan" in self.__dict__ or not self.one_shot:
            return decode(self._scan.codes[rows], self.ranges)
        if self.whole is not None:
            return decode(np.asarray(self.whole.codes[rows]), self.ranges)
        if self.space.identity:
            return self.space.segments[0].dense.reconstruct(rows)
        out = np.zeros((len(rows), len(self.ranges)), dtype=np.float32)
        cats = self.space.global_to_cat[rows]
        seg = np.searchsorted(self.space.seg_offsets, cats, side="right") - 1
        for i, segment in enumerate(self.space.segments):
            mine = np.flatnonzero(seg == i)
            if len(mine):
                local = cats[mine] - self.space.seg_offsets[i]
                out[mine] = segment.dense.reconstruct(local)
        return out
