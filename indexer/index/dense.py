"""Dense retrieval: chunk vectors in FAISS (IndexIDMap2 over inner product, 64-bit ids).

Vectors are stored as 8-bit codes (IndexScalarQuantizer, QT_8bit): a quarter of float32, and
a scan reads half the bytes of fp16. The per-dimension ranges are not trained on the corpus but
come from the static vector table (`StaticVectors.quantizer_ranges`), so a vector's code does
not depend on the other chunks: decoding and re-adding a kept vector gives the same code, and an
incremental update stays byte-identical to a full build. Cosine = inner product of unit vectors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

FILE = "dense.faiss"


def faiss_id(chunk_id: str) -> int:
    """Stable signed 64-bit FAISS id derived from the chunk id (a 64-bit hex digest)."""
    return int(chunk_id, 16) & 0x7FFF_FFFF_FFFF_FFFF


class DenseIndex:
    def __init__(self, index: object) -> None:
        self.index = index

    @classmethod
    def build(cls, vectors: np.ndarray, ids: np.ndarray, ranges: np.ndarray) -> DenseIndex:
        """`ranges`: per-dimension half-width of the code range (values are clipped to it)."""
        import faiss

        dim = int(vectors.shape[1])
        inner = faiss.IndexScalarQuantizer(
            dim, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        trained = np.concatenate([-ranges, 2 * ranges]).astype(np.float32)  # (vmin, vdiff)
        faiss.copy_array_to_vector(trained, inner.sq.trained)
        inner.is_trained = True
        index = faiss.IndexIDMap2(inner)
        if len(ids):
            index.add_with_ids(
                np.ascontiguousarray(vectors, dtype=np.float32),
                np.ascontiguousarray(ids, dtype=np.int64),
            )
        return cls(index)

    def search(self, query: np.ndarray, k: int, skip: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """(similarities, ids) of the k nearest chunks; ids of -1 are padding. `skip`: from
        `skipping`, ids the scan passes over (the k nearest of the others, exactly)."""
        q = query.reshape(1, -1).astype(np.float32)
        if skip is None:
            sims, ids = self.index.search(q, k)  # type: ignore[attr-defined]
        else:
            sims, ids = self.index.search(q, k, params=skip[0])  # type: ignore[attr-defined]
        return sims[0], ids[0]

    @staticmethod
    def skipping(ids: np.ndarray) -> Any:
        """Search parameters that skip `ids` (deleted or masked rows) during the scan."""
        import faiss

        batch = faiss.IDSelectorBatch(np.ascontiguousarray(ids, dtype=np.int64))
        selector = faiss.IDSelectorNot(batch)
        params = faiss.SearchParameters()
        params.sel = selector
        return params, selector, batch  # FAISS keeps no references: these keep them alive

    def reconstruct(self, ids: np.ndarray) -> np.ndarray:
        keys = np.ascontiguousarray(ids, dtype=np.int64)
        return np.asarray(self.index.reconstruct_batch(keys), dtype=np.float32)  # type: ignore[attr-defined]

    def stored(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids, fp16 vectors) in insertion order, decoded from the index's codes."""
        import faiss

        ids = faiss.vector_to_array(self.index.id_map).astype(np.int64)  # type: ignore[attr-defined]
        inner = faiss.downcast_index(self.index.index)  # type: ignore[attr-defined]
        codes = faiss.vector_to_array(inner.codes).reshape(len(ids), -1)  # type: ignore[attr-defined]
        if not len(ids):
            return ids, np.zeros((0, inner.d), dtype=np.float16)
        return ids, np.asarray(inner.sa_decode(codes), dtype=np.float16)

    def code_ranges(self) -> np.ndarray:
        """The per-dimension ranges the codes were made with (`build`'s `ranges`)."""
        import faiss

        inner = faiss.downcast_index(self.index.index)  # type: ignore[attr-defined]
        trained = faiss.vector_to_array(inner.sq.trained)  # type: ignore[attr-defined]
        return np.asarray(-trained[: len(trained) // 2], dtype=np.float32)  # vmin = -ranges

    @property
    def ntotal(self) -> int:
        return int(self.index.ntotal)  # type: ignore[attr-defined]

    def save(self, directory: Path) -> None:
        import faiss

        faiss.write_index(self.index, str(directory / FILE))  # type: ignore[call-overload]

    @classmethod
    def load(cls, directory: Path, mmap: bool = True) -> DenseIndex:
        import faiss

        # One query at a time: OpenMP thread start-up costs more than the scan itself.
        faiss.omp_set_num_threads(1)
        # Memory-mapped: a cold search reads only the pages it scans, and processes share them.
        try:
            flags = faiss.IO_FLAG_MMAP if mmap else 0
            index = faiss.read_index(str(directory / FILE), flags)
        except RuntimeError:
            index = faiss.read_index(str(directory / FILE))
        return cls(index)
