"""`SegmentData`: a segment in memory: what the writer fills, what `save` writes (the files of
indexer/index/segment_format.py), and what the working-tree overlay (issue 13) hands to the
reader without touching the disk."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import defined_names
from .dense import DenseIndex
from .graph.facts import EncodedFacts, write_facts
from .graph.model import FileGraph
from .segment_format import (
    SEGMENT_FORMAT,
    SEGMENT_MANIFEST,
    TEXT_BLOCKS,
    TEXTS,
    compress_texts,
    sha256_file,
    write_lines,
)
from .store import fsync_files


@dataclass
class SegmentData:
    """Every table of one segment, in memory (row = chunk in the segment, file = file index)."""

    paths: list[str]
    blobs: list[str]
    languages: list[str]
    times: np.ndarray  # int64 last-change time per file
    extras: dict[str, dict[str, Any]]  # path -> {"redacted": ..., "fallback": ...} (sparse)
    chunk_file: np.ndarray  # int32 file of each row
    flags: np.ndarray  # uint8 path/content flags of each row (indexer/pathclass.py)
    fids: np.ndarray  # int64 FAISS id of each row
    sums: np.ndarray  # int64 digest of each row's metadata and text (indexer/integrity.py)
    meta_sums: np.ndarray  # int64 digest of each row's metadata alone
    meta: bytes | list[bytes]  # JSON lines (a segment to write: each file's, not joined)
    meta_offsets: np.ndarray
    texts: bytes
    text_offsets: np.ndarray
    symbols: list[str]
    kinds: list[str]
    defines: list[str]
    terms: list[str]  # sorted BM25 vocabulary of this segment
    indptr: np.ndarray  # int64 postings of term i: indptr[i]:indptr[i+1]
    docs: np.ndarray  # int32 row of each posting (sorted by term, then row)
    tfs: np.ndarray  # uint16 raw term frequency of each posting
    doc_lengths: np.ndarray  # float32 terms per row
    scores: np.ndarray  # float32 BM25 of each posting with this segment's own statistics
    dense: DenseIndex
    graph_facts: Mapping[str, dict[str, Any]] = field(default_factory=dict)  # FileGraph.to_dict
    # facts a build worker already encoded (written with graph_facts; not read in memory)
    encoded_facts: list[EncodedFacts] = field(default_factory=list)
    # the texts of a segment to write, one zlib block a file (a build's as its workers
    # compressed them, a copied file's as stored): (block offsets, blocks); `texts` is then
    # empty, and the segment is for writing only (never served from memory by Segment.of)
    packed_texts: tuple[np.ndarray, list[bytes]] | None = None

    def save(self, directory: Path) -> dict[str, Any]:
        """Write every file into `directory` (fsynced); returns the segment manifest."""
        write_lines(directory / "file_paths.txt", self.paths)
        write_lines(directory / "file_blobs.txt", self.blobs)
        write_lines(directory / "file_languages.txt", self.languages)
        np.save(directory / "file_times.npy", np.asarray(self.times, dtype=np.int64))
        (directory / "file_extras.json").write_text(json.dumps(self.extras), encoding="utf-8")
        np.save(directory / "chunk_file.npy", np.asarray(self.chunk_file, dtype=np.int32))
        np.save(directory / "chunk_flags.npy", np.asarray(self.flags, dtype=np.uint8))
        np.save(directory / "chunk_fids.npy", np.asarray(self.fids, dtype=np.int64))
        np.save(directory / "chunk_sums.npy", np.asarray(self.sums, dtype=np.int64))
        np.save(directory / "meta_sums.npy", np.asarray(self.meta_sums, dtype=np.int64))
        with (directory / "chunks.jsonl").open("wb") as fh:
            fh.writelines([self.meta] if isinstance(self.meta, bytes) else self.meta)
        np.save(directory / "chunk_offsets.npy", np.asarray(self.meta_offsets, dtype=np.int64))
        if self.packed_texts is not None:
            blocks, packed = self.packed_texts
        else:
            blocks, joined = compress_texts(
                self.texts, self.text_offsets, self.chunk_file, len(self.paths)
            )
            packed = [joined]
        with (directory / TEXTS).open("wb") as fh:
            fh.writelines(packed)
        np.save(directory / TEXT_BLOCKS, blocks)
        np.save(directory / "text_offsets.npy", np.asarray(self.text_offsets, dtype=np.int64))
        write_lines(directory / "symbols.txt", self.symbols)
        write_lines(directory / "kinds.txt", self.kinds)
        write_lines(directory / "defines.txt", self.defines)
        keys, rows, unique = defined_names.table(self.symbols, self.defines)
        np.save(directory / defined_names.KEYS, keys)
        np.save(directory / defined_names.ROWS, rows)
        write_lines(directory / "bm25_terms.txt", self.terms)
        np.save(directory / "bm25_indptr.npy", np.asarray(self.indptr, dtype=np.int64))
        np.save(directory / "bm25_docs.npy", np.asarray(self.docs, dtype=np.int32))
        np.save(directory / "bm25_tfs.npy", np.asarray(self.tfs, dtype=np.uint16))
        np.save(directory / "bm25_doclen.npy", np.asarray(self.doc_lengths, dtype=np.float32))
        np.save(directory / "bm25_scores.npy", np.asarray(self.scores, dtype=np.float32))
        self.dense.save(directory)
        write_facts(
            directory,
            [FileGraph.from_dict(p, d) for p, d in self.graph_facts.items()],
            self.encoded_facts,
        )
        items = sorted(directory.iterdir())
        fsync_files(items)
        files: dict[str, Any] = {}
        for item in items:
            files[item.name] = {"bytes": item.stat().st_size, "sha256": sha256_file(item)}
        manifest = {
            "format": SEGMENT_FORMAT,
            "files": len(self.paths),
            "chunks": len(self.fids),
            "postings": len(self.docs),
            defined_names.UNIQUE: unique,
            "artifacts": files,
        }
        (directory / SEGMENT_MANIFEST).write_text(json.dumps(manifest, indent=1), "utf-8")
        return manifest
