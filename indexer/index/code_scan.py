"""The candidate scan of a one-shot process, in numpy: no FAISS import, no copy of the codes.

`indexer search` run once pays for everything a long-lived process pays once: importing FAISS
and laying every live row's compact codes out for its fast scan cost more than scoring the
memory-mapped compact codes with numpy, 32 table lookups a row, one byte position at a time
(indexer/index/dense_pq.py `scores`; ~4x faster than the 8-bit codes' matrix product this
replaced). The scores are the integers FAISS's fast scan sums in the long-lived process (the
query's quantized levels, dense_pq.tables), and the same (score, row) order picks the
candidates: both paths rank the same rows by their 8-bit codes (tests/test_dense.py compares
them).

One thread scans every part: a second thread scoring half of the rows (fourteenth pass) made
a new process slower (its allocations come from a fresh malloc arena, every page a fault: on
the 163k-chunk corpus 742-798 faults and 10.7-13.4 ms for the search, against 571-629 and
9.9-10.2 ms in one thread; seventeenth pass, docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import dense_pq
from .dense import DenseIndex


def candidates(
    parts: Sequence[tuple[DenseIndex, np.ndarray | int]], lut: np.ndarray, count: int
) -> np.ndarray:
    """Global rows of the `count` best live rows by compact-code score (ties: lower row), in no
    order. `parts`: each segment's codes with its local -> global row map (an offset: its
    rows shifted; an array: -1 not live)."""
    all_scores, all_rows = [], []
    for dense, to_global in parts:
        if not dense.ntotal or dense.compact is None:
            continue
        scores = dense_pq.scores(dense.compact, lut)
        if isinstance(to_global, int):
            rows = np.arange(to_global, to_global + len(scores), dtype=np.int64)
        else:
            live = to_global >= 0
            scores, rows = scores[live], to_global[live]
        scores, rows = dense_pq.top(scores, rows, count)
        all_scores.append(scores)
        all_rows.append(rows)
    if not all_rows:
        return np.zeros(0, dtype=np.int64)
    return dense_pq.top(np.concatenate(all_scores), np.concatenate(all_rows), count)[1]
