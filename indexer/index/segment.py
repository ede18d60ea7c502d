"""One segment read from disk, immutable once renamed into place: each table loads on first
use (the files are described in indexer/index/segment_format.py). `Segment.of(data)` serves an
in-memory `SegmentData` through the same attributes."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import CorruptIndexError
from . import defined_names, integrity, npy
from .columns import Lines
from .dense import FILES as DENSE_FILES
from .dense import DenseIndex
from .integrity import REBUILD
from .segment_format import (
    REQUIRED_FILES,
    SEGMENT_FORMAT,
    SEGMENT_MANIFEST,
    file_bounds,
    random_access,
    release_pages,
    sha256_file,
)
from .segment_records import SegmentRecords

if TYPE_CHECKING:
    from .segment_data import SegmentData

# Symbols a long-lived process reads before it drops the column's pages (Segment.release_symbols):
# 128 pages at most; short questions read ~6 a search, so they seldom fault them back.
SYMBOLS_READ_KEPT = 128


class Segment(SegmentRecords):
    """Read access to one segment: tables load on first use (a cold search touches few).

    `Segment.of(data)` serves a `SegmentData` from memory through the same attributes."""

    def __init__(self, name: str, directory: Path | None, manifest: dict[str, Any]) -> None:
        self.name = name
        self.directory = directory
        self.manifest = manifest
        self.n_files = int(manifest["files"])
        self.n_rows = int(manifest["chunks"])
        self._unhashed: set[str] = set()  # small files to hash before their first read

    @classmethod
    def open(cls, directory: Path, verify: bool = False, hash_small: bool = True) -> Segment:
        """Checks sizes of every file and hashes the small ones (every one with `verify`).
        Without `hash_small` a small file is hashed when it is first read instead: an update
        reads a few lines of a few files of each of its base's segments."""
        try:
            manifest = json.loads((directory / SEGMENT_MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CorruptIndexError(f"unreadable segment {directory.name}; {REBUILD}") from exc
        if not isinstance(manifest, dict) or manifest.get("format") != SEGMENT_FORMAT:
            raise CorruptIndexError(f"segment {directory.name} has another format; {REBUILD}")
        if (
            not isinstance(manifest.get("artifacts"), dict)
            or not set(manifest["artifacts"]) >= REQUIRED_FILES
        ):
            raise CorruptIndexError(f"segment {directory.name} lacks required files; {REBUILD}")
        base = os.fspath(directory)
        for name, info in manifest["artifacts"].items():
            try:  # one stat per file (opening a 10-segment index checks ~330 files)
                st = os.stat(os.path.join(base, name)) if "/" not in name else None
            except OSError:
                st = None
            if st is None or not stat.S_ISREG(st.st_mode) or st.st_size != info.get("bytes"):
                raise CorruptIndexError(f"index file {name} is missing or truncated; {REBUILD}")
        limit = integrity.SMALL_FILE_BYTES
        small = {n for n, info in manifest["artifacts"].items() if info["bytes"] <= limit}
        segment = cls(directory.name, directory, manifest)
        if verify or hash_small:
            segment._hash(*(manifest["artifacts"] if verify else small))
        else:
            segment._unhashed = small
        return segment

    def _hash(self, *names: str) -> None:
        """Check these files against their digests (each once)."""
        assert self.directory is not None
        for name in names:
            info = self.manifest["artifacts"].get(name)
            if info is None:
                continue
            self._unhashed.discard(name)
            if sha256_file(self.directory / name) != info.get("sha256"):
                raise CorruptIndexError(f"index file {name} fails its checksum; {REBUILD}")

    @classmethod
    def of(cls, data: SegmentData, name: str = "memory") -> Segment:
        manifest = {"files": len(data.paths), "chunks": len(data.fids), "artifacts": {}}
        segment = cls(name, None, manifest)
        values = {
            "paths": data.paths,
            "blobs": data.blobs,
            "languages": data.languages,
            "times": data.times,
            "extras": data.extras,
            "chunk_file": data.chunk_file,
            "flags": data.flags,
            "fids": data.fids,
            "sums": data.sums,
            "meta_sums": data.meta_sums,
            "stores": (data.meta, data.texts),
            "offsets": (data.meta_offsets, data.text_offsets),
            "symbols": data.symbols,
            "kinds": data.kinds,
            "defines": data.defines,
            "terms": data.terms,
            "postings": (data.indptr, data.docs, data.tfs),
            "doc_lengths": data.doc_lengths,
            "scores": data.scores,
            "dense": data.dense,
            "graph_facts": data.graph_facts,
        }
        segment.__dict__.update(values)  # cached_property reads the instance dict first
        return segment

    def _path(self, name: str) -> Path:
        assert self.directory is not None
        if name in self._unhashed:
            self._hash(name)
        return self.directory / name

    def _array(self, name: str, rows: int, mmap_mode: Any = None) -> np.ndarray:
        array: np.ndarray = npy.load(self._path(name), mmap_mode)
        if array.ndim != 1 or len(array) != rows:
            raise CorruptIndexError(f"index file {name} is damaged; {REBUILD}")
        return array

    # -- per file --------------------------------------------------------------------------------
    @cached_property
    def paths(self) -> Sequence[str]:
        return Lines(self._path("file_paths.txt"), self.n_files)

    @cached_property
    def blobs(self) -> Sequence[str]:
        return Lines(self._path("file_blobs.txt"), self.n_files)

    @cached_property
    def languages(self) -> Sequence[str]:
        return Lines(self._path("file_languages.txt"), self.n_files)

    @cached_property
    def times(self) -> np.ndarray:
        return self._array("file_times.npy", self.n_files)

    @cached_property
    def extras(self) -> dict[str, dict[str, Any]]:
        data: dict[str, dict[str, Any]] = json.loads(
            self._path("file_extras.json").read_text(encoding="utf-8")
        )
        return data

    @cached_property
    def file_rows(self) -> np.ndarray:
        """int64 (n_files + 1) row boundaries: file i holds rows file_rows[i]:file_rows[i+1]."""
        return file_bounds(self.chunk_file, self.n_files)

    # -- per row ---------------------------------------------------------------------------------
    @cached_property
    def chunk_file(self) -> np.ndarray:
        array = self._array("chunk_file.npy", self.n_rows)
        if self.n_rows and (int(array.min()) < 0 or int(array.max()) >= self.n_files):
            raise CorruptIndexError(f"index file chunk_file.npy is damaged; {REBUILD}")
        return array

    @cached_property
    def flags(self) -> np.ndarray:
        return self._array("chunk_flags.npy", self.n_rows)

    @cached_property
    def fids(self) -> np.ndarray:
        return self._array("chunk_fids.npy", self.n_rows)

    @cached_property
    def symbols(self) -> Sequence[str]:
        return Lines(self._path("symbols.txt"), self.n_rows, keep=False)

    @cached_property
    def kinds(self) -> Sequence[str]:
        return Lines(self._path("kinds.txt"), self.n_rows, keep=False)

    @cached_property
    def defines(self) -> Sequence[str]:
        return Lines(self._path("defines.txt"), self.n_rows, keep=False)

    @cached_property
    def defined_names(self) -> tuple[np.ndarray, np.ndarray, bool]:
        """(keys, rows, one name a key) of the names its rows define
        (indexer/index/defined_names.py)."""
        if self.directory is None:  # in memory (a working-tree overlay): made here
            return defined_names.table(self.symbols, self.defines)
        keys: np.ndarray = npy.load(self._path(defined_names.KEYS), "r")
        rows: np.ndarray = npy.load(self._path(defined_names.ROWS), "r")
        if not defined_names.valid(keys, rows):
            raise CorruptIndexError(f"index file {defined_names.KEYS} is damaged; {REBUILD}")
        return keys, rows, self.manifest.get(defined_names.UNIQUE) is True

    # -- BM25 ------------------------------------------------------------------------------------
    @cached_property
    def terms(self) -> Sequence[str]:
        """The sorted vocabulary, looked up by `Lines.find` (nothing decoded whole)."""
        count = len(self.postings[0]) - 1
        return Lines(self._path("bm25_terms.txt"), count, keep=False)

    def release_vocabulary(self) -> None:
        """Drop the pages of the vocabulary and of its postings' bounds from this process (a
        long-lived one keeps the spans of the terms it looked up, not the pages it read)."""
        terms = self.__dict__.get("terms")
        if isinstance(terms, Lines):
            release_pages(terms.data)
            release_pages(terms.starts)
        if "postings" in self.__dict__:
            release_pages(self.postings[0])

    def release_symbols(self) -> None:
        """Drop the pages of the symbols column from this process once SYMBOLS_READ_KEPT values
        were read since the last time, and map it for random reads from then on: a query reads
        a few dozen rows' symbols, scattered, and with the kernel's 64 KB around each fault a
        long-lived process came to hold the whole column (2.6 MB at 163k chunks)."""
        column = self.__dict__.get("symbols")
        if isinstance(column, Lines) and column.reads > SYMBOLS_READ_KEPT:
            random_access(column.data)
            release_pages(column.data)
            column.reads = 0

    @cached_property
    def postings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indptr, docs, tfs); docs and tfs memory-mapped."""
        indptr: np.ndarray = npy.load(self._path("bm25_indptr.npy"), "r")
        total = int(self.manifest["postings"])
        if indptr.ndim != 1 or len(indptr) < 1 or int(indptr[-1]) != total:
            raise CorruptIndexError(f"index file bm25_indptr.npy is damaged; {REBUILD}")
        docs = self._array("bm25_docs.npy", total, mmap_mode="r")
        tfs = self._array("bm25_tfs.npy", total, mmap_mode="r")
        return indptr, docs, tfs

    @cached_property
    def doc_lengths(self) -> np.ndarray:
        return self._array("bm25_doclen.npy", self.n_rows)

    @cached_property
    def scores(self) -> np.ndarray:
        """Memory-mapped: each posting's BM25 with this segment's own statistics."""
        return self._array("bm25_scores.npy", int(self.manifest["postings"]), mmap_mode="r")

    # -- vectors and graph facts -----------------------------------------------------------------
    @cached_property
    def dense(self) -> DenseIndex:
        assert self.directory is not None
        self._hash(*(n for n in DENSE_FILES if n in self._unhashed))
        digests = {name: info.get("sha256") for name, info in self.manifest["artifacts"].items()}
        return DenseIndex.load(self.directory, self.n_rows, digests)

    @cached_property
    def graph_facts(self) -> Mapping[str, dict[str, Any]]:
        """path -> FileGraph.to_dict() of the segment's files, each decoded when asked."""
        from .graph.fact_files import FACTS_FILE_NAMES
        from .graph.facts import FactsMapping, read_facts

        assert self.directory is not None
        self._hash(*(n for n in FACTS_FILE_NAMES if n in self._unhashed))
        return FactsMapping(read_facts(self.directory))

    def close(self) -> None:
        stores = self.__dict__.pop("stores", None)
        readers = [
            self.__dict__.pop(name, None) for name in ("row_sums", "row_meta_sums", "_meta_offsets")
        ]
        for store in (*(stores or ()), *readers):
            if hasattr(store, "close"):
                store.close()
        for name in ("dense", "postings", "offsets", "text_blocks", "_blocks", "meta_sums"):
            self.__dict__.pop(name, None)
