"""The dense scan of a one-shot process, in numpy: no FAISS import, no copy of the codes.

`indexer search` run once pays for everything a long-lived process pays once: importing FAISS
(~35 ms) and copying every live row's codes into a FAISS index (reader.DenseView) cost more
than scanning the memory-mapped codes with numpy. The arithmetic is FAISS's `QT_8bit` inner
product, rearranged: with x = vmin + (c + 0.5) / 255 * vdiff per dimension,

    q . x = q . vmin + 0.5 * sum(w) + c . w,   w = q * vdiff / 255,

so a block of codes costs one uint8 -> float32 conversion and one matrix-vector product. Sums
are float32 like FAISS's, in another order: similarities agree to ~1e-7, and the ranking to the
same rows (tests/test_cold_start.py compares the two on real queries).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .dense import LEVELS, DenseIndex

BLOCK_ROWS = 8192  # 2 MiB of codes, 8 MiB as float32: stays in cache


def scan(
    parts: Sequence[tuple[DenseIndex, np.ndarray | None]], query: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """(similarities, global rows) of the k best live rows, by (similarity, row). `parts`: each
    segment's codes with its local -> global row map (None: the identity; -1: not live)."""
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    all_sims, all_rows = [], []
    for dense, to_global in parts:
        n = dense.ntotal
        if n == 0:
            continue
        vdiff = (2 * dense.ranges).astype(np.float32)
        w = (q * vdiff / LEVELS).astype(np.float32)
        base = np.float32(np.dot(q, -dense.ranges.astype(np.float32))) + np.float32(0.5) * w.sum()
        sims = np.empty(n, dtype=np.float32)
        codes = dense.codes
        for start in range(0, n, BLOCK_ROWS):
            block = np.asarray(codes[start : start + BLOCK_ROWS], dtype=np.float32)
            np.dot(block, w, out=sims[start : start + len(block)])
        sims += base
        rows = np.arange(n, dtype=np.int64) if to_global is None else to_global
        if to_global is not None:
            live = rows >= 0
            sims, rows = sims[live], rows[live]
        if len(sims) > k:
            best = np.argpartition(-sims, k - 1)[:k]
            sims, rows = sims[best], rows[best]
        all_sims.append(sims)
        all_rows.append(rows)
    if not all_sims:
        return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.int64)
    sims, rows = np.concatenate(all_sims), np.concatenate(all_rows)
    order = np.lexsort((rows, -sims))[:k]
    return sims[order], rows[order]
