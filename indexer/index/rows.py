"""Collects finished files into a snapshot's row files, in path order, as they arrive.

Texts and metadata go straight to disk; per row the collector keeps only numbers (lengths, ids,
sums, postings as integer arrays, float16 vectors) and the short columns, so the main process of
a build holds a fraction of what the workers produced. Rows of files kept from a base snapshot
are copied as bytes and their postings remapped, never recomputed: an updated snapshot is the
snapshot a full build would write.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

import numpy as np

from .dense import DenseIndex
from .integrity import CHUNK_SUMS
from .lexical import LexicalIndex
from .pipeline import FileResult

_EMPTY = np.zeros(0, dtype=np.int64)


class RowCollector:
    """Appends files to the row files of `directory`; `finish` writes the rest."""

    def __init__(self, directory: Path, dims: int) -> None:
        self.directory = directory
        self.dims = dims
        self._meta: IO[bytes] = (directory / "chunks.jsonl").open("wb")
        self._texts: IO[bytes] = (directory / "texts.bin").open("wb")
        self.rows = 0
        self.files = 0
        self.meta_lengths: list[np.ndarray] = []
        self.text_lengths: list[np.ndarray] = []
        self.fids: list[np.ndarray] = []
        self.sums: list[np.ndarray] = []
        self.chunk_file: list[np.ndarray] = []
        self.flags: list[np.ndarray] = []
        self.symbols: list[str] = []
        self.kinds: list[str] = []
        self.defines: list[str] = []
        # fresh rows: postings against a vocabulary in arrival order, vectors per file
        self.vocab: dict[str, int] = {}
        self.posting_terms: list[np.ndarray] = []
        self.posting_docs: list[np.ndarray] = []
        self.posting_tfs: list[np.ndarray] = []
        self.lengths: list[tuple[int, np.ndarray]] = []
        self.vectors: list[tuple[int, np.ndarray]] = []
        # kept rows: where they were in the base snapshot and where they go
        self.base_rows: list[np.ndarray] = []
        self.kept_rows: list[np.ndarray] = []

    def _append(self, n: int, flags: int) -> None:
        self.chunk_file.append(np.full(n, self.files, dtype=np.int32))
        self.flags.append(np.full(n, flags, dtype=np.uint8))
        self.rows += n
        self.files += 1

    def add(self, result: FileResult) -> None:
        """A freshly indexed file."""
        n, row = result.n_chunks, self.rows
        self._meta.write(result.meta)
        self._texts.write(result.texts)
        self.meta_lengths.append(result.meta_lengths)
        self.text_lengths.append(result.text_lengths)
        self.fids.append(result.fids)
        self.sums.append(result.sums)
        self.symbols.extend(result.symbols)
        self.kinds.extend(result.kinds)
        self.defines.extend(result.defines)
        vocab = self.vocab
        new_terms = [t for t in result.terms if t not in vocab]  # a file's terms are distinct
        vocab.update(zip(new_terms, range(len(vocab), len(vocab) + len(new_terms)), strict=True))
        ids = np.fromiter(
            map(vocab.__getitem__, result.terms), dtype=np.int64, count=len(result.terms)
        )
        self.posting_terms.append(ids[result.posting_terms])
        self.posting_docs.append(result.posting_chunks.astype(np.int64) + row)
        self.posting_tfs.append(result.posting_tfs)
        self.lengths.append((row, result.doc_lengths))
        if result.vectors is not None and n:
            self.vectors.append((row, result.vectors))
        self._append(n, result.flags)

    def add_kept(self, base: Any, path: str) -> None:
        """A file copied from the base snapshot (build.BaseSnapshot)."""
        start, end = base.rows[path]
        n = end - start
        self._meta.write(base.meta_bytes(start, end))
        self._texts.write(base.text_bytes(start, end))
        self.meta_lengths.append(np.diff(base.meta_offsets[start : end + 1]))
        self.text_lengths.append(np.diff(base.text_offsets[start : end + 1]))
        self.fids.append(base.fids[start:end])
        self.sums.append(base.sums_of(start, end))
        self.symbols.extend(base.columns["symbols"][start:end])
        self.kinds.extend(base.columns["kinds"][start:end])
        self.defines.extend(base.columns["defines"][start:end])
        self.base_rows.append(np.arange(start, end))
        self.kept_rows.append(np.arange(self.rows, self.rows + n))
        self._append(n, int(base.flags[start]) if n else 0)

    def finish(self, table_ranges: np.ndarray, base: Any) -> None:
        """Offsets, sums, ids, columns, the dense index and BM25 into the directory."""
        self._meta.close()
        self._texts.close()
        directory, n_rows = self.directory, self.rows
        for lengths_, offsets_name in (
            (self.meta_lengths, "chunk_offsets.npy"),
            (self.text_lengths, "text_offsets.npy"),
        ):
            offsets = np.zeros(n_rows + 1, dtype=np.int64)
            if lengths_:
                np.cumsum(np.concatenate(lengths_), out=offsets[1:])
            np.save(directory / offsets_name, offsets)
        np.save(directory / CHUNK_SUMS, _concat(self.sums, np.int64))
        fids = _concat(self.fids, np.int64)
        np.save(directory / "chunk_fids.npy", fids)
        np.save(directory / "chunk_file.npy", _concat(self.chunk_file, np.int32))
        np.save(directory / "chunk_flags.npy", _concat(self.flags, np.uint8))
        columns = {"symbols": self.symbols, "kinds": self.kinds, "defines": self.defines}
        (directory / "columns.json").write_text(
            json.dumps(columns, ensure_ascii=False), encoding="utf-8"
        )

        # Dense: decoded vectors of kept rows (they re-encode to the same codes), fresh ones.
        vectors = np.zeros((n_rows, self.dims), dtype=np.float16)
        if self.base_rows:
            vectors[np.concatenate(self.kept_rows)] = base.vectors[np.concatenate(self.base_rows)]
        for row, part in self.vectors:
            vectors[row : row + len(part)] = part
        self.vectors = []
        DenseIndex.build(vectors.astype(np.float32), fids, table_ranges).save(directory)
        del vectors
        self._lexical(base).save(directory)

    def _lexical(self, base: Any) -> LexicalIndex:
        """Postings sorted by (term, row), identical to what a full build would produce."""
        n_rows = self.rows
        lengths = np.zeros(n_rows, dtype=np.float32)
        for row, part in self.lengths:
            lengths[row : row + len(part)] = part
        fresh_terms = list(self.vocab)
        term_ids_new = _concat(self.posting_terms, np.int64)
        docs_new = _concat(self.posting_docs, np.int64)
        tfs_new = _concat(self.posting_tfs, np.float32)
        self.posting_terms, self.posting_docs, self.posting_tfs = [], [], []
        vocab_parts: list[str] = list(fresh_terms)
        kept_term_ids = kept_docs = kept_tfs = _EMPTY
        old_terms: list[str] = []
        if base is not None and self.base_rows:
            old_rows = np.concatenate(self.base_rows)
            new_of_old = np.full(base.lexical.n_docs, -1, dtype=np.int64)
            new_of_old[old_rows] = np.concatenate(self.kept_rows)
            lengths[new_of_old[old_rows]] = np.asarray(base.lexical.doc_lengths)[old_rows]
            term_ids = base.lexical.term_ids()
            docs = np.asarray(base.lexical.docs, dtype=np.int64)
            mask = new_of_old[docs] >= 0
            kept_term_ids, kept_docs = term_ids[mask], new_of_old[docs[mask]]
            kept_tfs = np.asarray(base.lexical.tfs)[mask]
            old_terms = base.lexical.terms
            used = np.unique(kept_term_ids)
            vocab_parts.extend(old_terms[i] for i in used.tolist())
        vocab = sorted(set(vocab_parts))
        ids = {t: i for i, t in enumerate(vocab)}
        if len(old_terms):
            remap = np.zeros(len(old_terms), dtype=np.int64)
            used = np.unique(kept_term_ids)
            remap[used] = [ids[old_terms[i]] for i in used.tolist()]
            kept_term_ids = remap[kept_term_ids]
        sorted_of_fresh = np.fromiter(
            (ids[t] for t in fresh_terms), dtype=np.int64, count=len(fresh_terms)
        )
        fresh_ids = sorted_of_fresh[term_ids_new]
        order = np.lexsort((docs_new, fresh_ids))
        fresh_ids, docs_new, tfs_new = fresh_ids[order], docs_new[order], tfs_new[order]
        if len(kept_docs) == 0:
            return LexicalIndex.from_postings(vocab, fresh_ids, docs_new, tfs_new, lengths)
        # Kept postings stay sorted by (term, row): both remaps are monotonic. Merge the fresh
        # ones in by position instead of sorting millions of postings again.
        stride = n_rows + 1
        positions = np.searchsorted(
            kept_term_ids * stride + kept_docs, fresh_ids * stride + docs_new
        )
        return LexicalIndex.from_postings(
            vocab,
            np.insert(kept_term_ids, positions, fresh_ids),
            np.insert(kept_docs, positions, docs_new),
            np.insert(np.asarray(kept_tfs, dtype=np.float32), positions, tfs_new),
            lengths,
        )

    def abort(self) -> None:
        self._meta.close()
        self._texts.close()


def _concat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)
