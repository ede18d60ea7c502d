"""Dense retrieval: chunk vectors as 8-bit codes, scanned by FAISS at query time.

On disk a segment's vectors are two plain arrays: `dense_codes.npy` (uint8, one row of `dim`
codes per chunk, in row order) and `dense_ranges.npy` (float32 per-dimension half-width of the
code range). The ranges are not trained on the corpus but come from the static vector table
(`StaticVectors.quantizer_ranges`), so a vector's code does not depend on the other chunks:
decoding and re-encoding a kept vector gives the same code, and an incremental update stays
byte-identical to a full build. Encoding is numpy alone, bit for bit FAISS's `QT_8bit` scalar
quantizer with those ranges, so writing a segment (an `indexer update`) never imports FAISS.

The query side (indexer/index/dense_view.py `DenseView`) hands the codes of every live row, in
global row order, to one FAISS `IndexScalarQuantizer` (SIMD scan of the codes as they are):
one scan per query whatever the number of segments. Cosine = inner product of unit vectors.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

CODES = "dense_codes.npy"
RANGES = "dense_ranges.npy"
FILES = (CODES, RANGES)
LEVELS = np.float32(255.0)  # QT_8bit: codes 0..255


def faiss_id(chunk_id: str) -> int:
    """Stable signed 64-bit id derived from the chunk id (a 64-bit hex digest)."""
    return int(chunk_id, 16) & 0x7FFF_FFFF_FFFF_FFFF


def encode(vectors: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    """uint8 codes of float vectors: FAISS QT_8bit's arithmetic (float32, clip, truncate)."""
    vmin = -ranges.astype(np.float32)
    vdiff = (2 * ranges).astype(np.float32)
    x = np.asarray(vectors, dtype=np.float32)
    safe = np.where(vdiff != 0, vdiff, np.float32(1))
    unit = np.where(vdiff != 0, (x - vmin) / safe, np.float32(0))
    np.clip(unit, 0, 1, out=unit)
    return np.asarray(LEVELS * unit, dtype=np.float32).astype(np.uint8)


def decode(codes: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    """float32 vectors of codes (the centre of each code's bucket, as FAISS decodes)."""
    vdiff = (2 * ranges).astype(np.float32)
    unit = (np.asarray(codes, dtype=np.float32) + np.float32(0.5)) / LEVELS
    return np.asarray(-ranges.astype(np.float32) + unit * vdiff, dtype=np.float32)


class DenseIndex:
    """One segment's codes (memory-mapped when read from disk) and their ranges."""

    def __init__(self, codes: np.ndarray, ranges: np.ndarray) -> None:
        self.codes = codes
        self.ranges = np.asarray(ranges, dtype=np.float32)

    @classmethod
    def build(cls, vectors: np.ndarray, ranges: np.ndarray) -> DenseIndex:
        """`ranges`: per-dimension half-width of the code range (values are clipped to it)."""
        ranges = np.asarray(ranges, dtype=np.float32)
        vectors = np.asarray(vectors, dtype=np.float32).reshape(-1, len(ranges))
        return cls(encode(vectors, ranges), ranges)

    @property
    def ntotal(self) -> int:
        return int(self.codes.shape[0])

    @property
    def dim(self) -> int:
        return int(self.ranges.shape[0])

    def stored(self) -> np.ndarray:
        """fp16 vectors in row order, decoded from the codes."""
        return decode(self.codes, self.ranges).astype(np.float16)

    def code_ranges(self) -> np.ndarray:
        """The per-dimension ranges the codes were made with (`build`'s `ranges`)."""
        return self.ranges

    def reconstruct(self, rows: np.ndarray) -> np.ndarray:
        """Decoded vectors of local rows."""
        return decode(self.codes[np.asarray(rows, dtype=np.int64)], self.ranges)

    def blocks(self, rows: int = 16384) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, codes) of consecutive blocks of rows. Read from the file, not through
        the memory map, when the codes are on disk: a map would leave every page resident."""
        codes = self.codes
        path = getattr(codes, "filename", None)
        if path is None:
            for start in range(0, self.ntotal, rows):
                yield start, np.asarray(codes[start : start + rows])
            return
        width = self.dim
        with open(path, "rb") as fh:
            fh.seek(int(getattr(codes, "offset", 0)))
            for start in range(0, self.ntotal, rows):
                count = min(rows, self.ntotal - start)
                block = np.fromfile(fh, dtype=np.uint8, count=count * width)
                yield start, block.reshape(count, width)

    def save(self, directory: Path) -> None:
        np.save(directory / CODES, np.ascontiguousarray(self.codes, dtype=np.uint8))
        np.save(directory / RANGES, self.ranges)

    @classmethod
    def load(cls, directory: Path, rows: int) -> DenseIndex:
        """Memory-mapped: a process reads only the pages it touches, and processes share them."""
        from ..errors import CorruptIndexError
        from .integrity import REBUILD

        ranges = np.load(directory / RANGES, allow_pickle=False)
        codes = np.load(directory / CODES, allow_pickle=False, mmap_mode="r")
        if (
            ranges.ndim != 1
            or ranges.dtype != np.float32
            or codes.dtype != np.uint8
            or codes.shape != (rows, len(ranges))
        ):
            raise CorruptIndexError(f"index file {CODES} is damaged; {REBUILD}")
        return cls(codes, ranges)


# Above this many rows a query first scans the leading COARSE_DIMS codes of every row (a quarter
# of the bytes) for COARSE_FACTOR x k candidates, then ranks those by their full codes: the scan
# that grows with the corpus reads a quarter as much (docs/benchmarks.md: the recall it costs).
COARSE_ROWS = int(os.environ.get("INDEXER_DENSE_COARSE_ROWS", "20000"))
COARSE_DIMS = 96
COARSE_FACTOR = 3


def _sq8(ranges: np.ndarray, n: int) -> tuple[Any, np.ndarray]:
    """An empty FAISS QT_8bit index over n rows with these ranges, and a numpy view of its codes
    to fill in place (no second copy of the table in memory)."""
    import faiss

    dim = len(ranges)
    index = faiss.IndexScalarQuantizer(
        dim, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
    )
    trained = np.concatenate([-ranges, 2 * ranges]).astype(np.float32)  # (vmin, vdiff)
    faiss.copy_array_to_vector(trained, index.sq.trained)
    index.is_trained = True
    if not n:
        return index, np.zeros((0, dim), dtype=np.uint8)
    index.codes.resize(n * dim)
    index.ntotal = n
    return index, np.asarray(faiss.rev_swig_ptr(index.codes.data(), n * dim)).reshape(n, dim)


class CodeScan:
    """Codes of many rows in one FAISS scalar-quantizer index: `search` scans them with FAISS's
    SIMD kernel and returns positions in `codes`' row order. Exact up to COARSE_ROWS rows; above,
    a coarse scan of the leading dimensions picks the candidates the full codes rank."""

    def __init__(self, n: int, ranges: np.ndarray, fill: Iterator[tuple[Any, np.ndarray]]) -> None:
        """`fill`: (positions, codes of those positions) pairs that cover all n positions."""
        import faiss

        # One query at a time: OpenMP thread start-up costs more than the scan itself.
        faiss.omp_set_num_threads(1)
        self.index, self.codes = _sq8(ranges, n)  # codes: a view of the index's, row by row
        for positions, codes in fill:
            self.codes[positions] = codes
        self.ranges = ranges
        self.n = n
        self.coarse: Any = None
        if n > COARSE_ROWS and len(ranges) > COARSE_DIMS:
            self.coarse, leading = _sq8(ranges[:COARSE_DIMS], n)
            for start in range(0, n, 16384):
                leading[start : start + 16384] = self.codes[start : start + 16384, :COARSE_DIMS]

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(similarities, rows) of the k nearest rows, best first by (similarity, row); rows of
        -1 are padding."""
        q = np.asarray(query, dtype=np.float32).reshape(1, -1)
        wide = COARSE_FACTOR * k
        if self.coarse is None or wide >= self.n:
            sims, rows = self.index.search(q, min(k, self.n))
            return sims[0], rows[0]
        _, found = self.coarse.search(np.ascontiguousarray(q[:, :COARSE_DIMS]), wide)
        rows = found[0][found[0] >= 0]
        sims = decode(self.codes[rows], self.ranges) @ q[0]
        best = np.lexsort((rows, -sims))[:k]
        return sims[best], rows[best]
