"""Dense retrieval: chunk vectors in FAISS (IndexIDMap2 over inner product, 64-bit ids).

Vectors are stored as fp16 (IndexScalarQuantizer); cosine = inner product of unit vectors.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

FILE = "dense.faiss"


def faiss_id(chunk_id: str) -> int:
    """Stable signed 64-bit FAISS id derived from the chunk id (a 64-bit hex digest)."""
    return int(chunk_id, 16) & 0x7FFF_FFFF_FFFF_FFFF


class DenseIndex:
    def __init__(self, index: object) -> None:
        self.index = index

    @classmethod
    def build(cls, vectors: np.ndarray, ids: np.ndarray) -> DenseIndex:
        import faiss

        # fp16 storage: half the bytes of a flat index, faster scans, near-lossless for cosines.
        inner = faiss.IndexScalarQuantizer(
            int(vectors.shape[1]), faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT
        )
        index = faiss.IndexIDMap2(inner)
        if len(ids):
            index.add_with_ids(
                np.ascontiguousarray(vectors, dtype=np.float32),
                np.ascontiguousarray(ids, dtype=np.int64),
            )
        return cls(index)

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(similarities, ids) of the k nearest chunks; ids of -1 are padding."""
        sims, ids = self.index.search(query.reshape(1, -1).astype(np.float32), k)  # type: ignore[attr-defined]
        return sims[0], ids[0]

    def reconstruct(self, ids: np.ndarray) -> np.ndarray:
        return np.vstack([self.index.reconstruct(int(i)) for i in ids])  # type: ignore[attr-defined]

    @property
    def ntotal(self) -> int:
        return int(self.index.ntotal)  # type: ignore[attr-defined]

    def save(self, directory: Path) -> None:
        import faiss

        faiss.write_index(self.index, str(directory / FILE))  # type: ignore[call-overload]

    @classmethod
    def load(cls, directory: Path) -> DenseIndex:
        import faiss

        # One query at a time: OpenMP thread start-up costs more than the scan itself.
        faiss.omp_set_num_threads(1)
        # Memory-mapped: a cold search reads only the pages it scans, and processes share them.
        try:
            index = faiss.read_index(str(directory / FILE), faiss.IO_FLAG_MMAP)
        except RuntimeError:
            index = faiss.read_index(str(directory / FILE))
        return cls(index)
