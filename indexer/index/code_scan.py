"""The candidate scan of a one-shot process, in numpy: no FAISS import, no copy of the codes.

`indexer search` run once pays for everything a long-lived process pays once: importing FAISS
and laying every live row's compact codes out for its fast scan cost more than scoring the
memory-mapped compact codes with numpy, 32 table lookups a row, one byte position at a time
(indexer/index/dense_pq.py `scores`; ~4x faster than the 8-bit codes' matrix product this
replaced). The scores are the very floats the long-lived process computes for FAISS's
candidates, and the same (score, row) order picks the candidates: both paths rank the same
rows by their 8-bit codes (tests/test_dense.py compares them).

With 32k rows or more, the second half of every part's rows is scored in another thread
(numpy releases the GIL in its loops, and a row's score is its own sum either way): on the
163k-chunk corpus's mapped codes the scan went 13.1 -> 11.1 ms (docs/benchmarks.md,
fourteenth pass).
"""

from __future__ import annotations

import os
import threading
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
    parts = [(d, m) for d, m in parts if d.ntotal and d.compact is not None]
    codes = [d.compact for d, _ in parts if d.compact is not None]
    all_scores, all_rows = [], []
    for (_, to_global), scores in zip(parts, _scores(codes, lut), strict=True):
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


_SPLIT_ROWS = 1 << 15  # below this a thread's start costs about what it saves


def _scores(codes: list[np.ndarray], lut: np.ndarray) -> list[np.ndarray]:
    """dense_pq.scores of every part's rows; with many rows, the second half of each part is
    scored in one other thread while this one scores the first halves."""
    if sum(c.shape[1] for c in codes) < _SPLIT_ROWS or (os.cpu_count() or 1) < 2:
        return [dense_pq.scores(packed, lut) for packed in codes]
    out = [np.empty(c.shape[1], dtype=np.float32) for c in codes]

    def score(first: bool) -> None:
        for packed, into in zip(codes, out, strict=True):
            half = packed.shape[1] // 2
            part = slice(0, half) if first else slice(half, None)
            into[part] = dense_pq.scores(packed[:, part], lut)

    worker = threading.Thread(target=score, args=(False,), daemon=True)
    worker.start()
    score(True)
    worker.join()
    return out
