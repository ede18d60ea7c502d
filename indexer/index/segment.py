"""One segment: the chunks of a set of files, immutable once renamed into place.

A segment holds, for its files in path order: the chunk store (one JSON metadata line and the
text of each chunk, with offsets and per-chunk digests), per-chunk columns (FAISS id, file,
flags, symbol, kind, module-level names), the BM25 postings with RAW term frequencies and
document lengths (scores need the statistics of every live segment, so they are computed at
query time: indexer/index/lexical_view.py), the chunk vectors as 8-bit codes
(indexer/index/dense.py), and the files' graph facts. Tables with one entry per chunk, file or
term are .npy arrays or newline-separated text columns (memory-mapped or split in one call),
never per-entry JSON. `segment.json` lists every
file with its size and sha256; loading never executes code (no pickle).

`SegmentData` is a segment in memory: what the writer fills, what `save` writes, and what the
working-tree overlay (issue 13) hands to the reader without touching the disk.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import mmap
import os
import zlib
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CorruptIndexError
from . import integrity
from .dense import FILES as DENSE_FILES
from .dense import DenseIndex
from .graph.facts import (
    FACTS_FILE_NAMES,
    EncodedFacts,
    FactsMapping,
    read_facts,
    write_facts,
)
from .graph.model import FileGraph

SEGMENT_FORMAT = 4  # 4: vectors as plain uint8 codes (dense_codes.npy), no FAISS file
SEGMENT_MANIFEST = "segment.json"
TEXTS = "texts_z.bin"  # chunk texts, one zlib block per file (code compresses ~5x)
TEXT_BLOCKS = "text_blocks.npy"  # int64 (files + 1): where each file's block starts in TEXTS
BLOCK_CACHE = 32  # decompressed file blocks kept per segment (results cluster in few files)
TEXT_COLUMNS = ("symbols", "kinds", "defines", "file_paths", "file_blobs", "file_languages")
REQUIRED_FILES = frozenset(
    {
        *(f"{name}.txt" for name in TEXT_COLUMNS),
        *(f"{name}.npy" for name in ("file_times", "chunk_file", "chunk_flags", "chunk_fids")),
        *(f"{name}.npy" for name in ("chunk_sums", "meta_sums", "chunk_offsets", "text_offsets")),
        TEXT_BLOCKS,
        *(f"bm25_{name}.npy" for name in ("indptr", "docs", "tfs", "doclen", "scores")),
        "bm25_terms.txt",
        "file_extras.json",
        "chunks.jsonl",
        TEXTS,
        *DENSE_FILES,
        *FACTS_FILE_NAMES,
    }
)
REBUILD = "run `indexer verify` for details or `indexer build` to rebuild"


def write_lines(path: Path, values: list[str]) -> None:
    """A text column: one value per line (values never hold a newline: it becomes a space)."""
    path.write_bytes("\n".join(v.replace("\n", " ") for v in values).encode("utf-8"))


def read_lines(path: Path, count: int) -> list[str]:
    data = path.read_bytes().decode("utf-8")
    values = data.split("\n") if count else []
    if len(values) != count:
        raise CorruptIndexError(f"index file {path.name} is damaged; {REBUILD}")
    return values


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
    meta: bytes  # JSON lines
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
        (directory / "chunks.jsonl").write_bytes(self.meta)
        np.save(directory / "chunk_offsets.npy", np.asarray(self.meta_offsets, dtype=np.int64))
        blocks, packed = compress_texts(
            self.texts, self.text_offsets, self.chunk_file, len(self.paths)
        )
        (directory / TEXTS).write_bytes(packed)
        np.save(directory / TEXT_BLOCKS, blocks)
        np.save(directory / "text_offsets.npy", np.asarray(self.text_offsets, dtype=np.int64))
        write_lines(directory / "symbols.txt", self.symbols)
        write_lines(directory / "kinds.txt", self.kinds)
        write_lines(directory / "defines.txt", self.defines)
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
        files: dict[str, Any] = {}
        for item in sorted(directory.iterdir()):
            with item.open("rb") as fh:
                os.fsync(fh.fileno())
            files[item.name] = {"bytes": item.stat().st_size, "sha256": sha256_file(item)}
        manifest = {
            "format": SEGMENT_FORMAT,
            "files": len(self.paths),
            "chunks": len(self.fids),
            "postings": len(self.docs),
            "artifacts": files,
        }
        (directory / SEGMENT_MANIFEST).write_text(json.dumps(manifest, indent=1), "utf-8")
        return manifest


def file_bounds(chunk_file: np.ndarray, n_files: int) -> np.ndarray:
    """int64 (n_files + 1) row boundaries: file i holds rows bounds[i]:bounds[i+1]."""
    bounds = np.zeros(n_files + 1, dtype=np.int64)
    bounds[1:] = np.searchsorted(chunk_file, np.arange(n_files), side="right")
    return bounds


def compress_texts(
    texts: bytes, offsets: np.ndarray, chunk_file: np.ndarray, n_files: int
) -> tuple[np.ndarray, bytes]:
    """(block offsets, blocks): each file's chunk texts as one zlib block."""
    rows = file_bounds(chunk_file, n_files)
    parts, blocks = [], np.zeros(n_files + 1, dtype=np.int64)
    for i in range(n_files):
        start, end = int(offsets[rows[i]]), int(offsets[rows[i + 1]])
        parts.append(zlib.compress(texts[start:end], 6))
        blocks[i + 1] = blocks[i] + len(parts[-1])
    return blocks, b"".join(parts)


def decompress_texts(packed: bytes, blocks: np.ndarray) -> bytes:
    """Every file block of a segment's texts, in row order (provenance checks read them all)."""
    bounds = blocks.tolist()
    return b"".join(zlib.decompress(packed[a:b]) for a, b in itertools.pairwise(bounds))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _map(path: Path) -> Any:
    with path.open("rb") as fh:
        if path.stat().st_size == 0:
            return b""
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


class Segment:
    """Read access to one segment: tables load on first use (a cold search touches few).

    `Segment.of(data)` serves a `SegmentData` from memory through the same attributes."""

    def __init__(self, name: str, directory: Path | None, manifest: dict[str, Any]) -> None:
        self.name = name
        self.directory = directory
        self.manifest = manifest
        self.n_files = int(manifest["files"])
        self.n_rows = int(manifest["chunks"])

    @classmethod
    def open(cls, directory: Path, verify: bool = False) -> Segment:
        """Checks sizes of every file and hashes the small ones (every one with `verify`)."""
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
        for name, info in manifest["artifacts"].items():
            path = directory / name
            if "/" in name or not path.is_file() or path.stat().st_size != info.get("bytes"):
                raise CorruptIndexError(f"index file {name} is missing or truncated; {REBUILD}")
            if verify or info["bytes"] <= integrity.SMALL_FILE_BYTES:
                data_ok = sha256_file(path) == info.get("sha256")
                if not data_ok:
                    raise CorruptIndexError(f"index file {name} fails its checksum; {REBUILD}")
        return cls(directory.name, directory, manifest)

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
        return self.directory / name

    def _array(self, name: str, rows: int, mmap_mode: Any = None) -> np.ndarray:
        array: np.ndarray = np.load(self._path(name), allow_pickle=False, mmap_mode=mmap_mode)
        if array.ndim != 1 or len(array) != rows:
            raise CorruptIndexError(f"index file {name} is damaged; {REBUILD}")
        return array

    # -- per file --------------------------------------------------------------------------------
    @cached_property
    def paths(self) -> list[str]:
        return read_lines(self._path("file_paths.txt"), self.n_files)

    @cached_property
    def blobs(self) -> list[str]:
        return read_lines(self._path("file_blobs.txt"), self.n_files)

    @cached_property
    def languages(self) -> list[str]:
        return read_lines(self._path("file_languages.txt"), self.n_files)

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
    def sums(self) -> np.ndarray:
        return self._array("chunk_sums.npy", self.n_rows)

    @cached_property
    def meta_sums(self) -> np.ndarray:
        return self._array("meta_sums.npy", self.n_rows)

    @cached_property
    def stores(self) -> tuple[Any, Any]:
        """chunks.jsonl and the compressed texts, memory-mapped (segments never change)."""
        return _map(self._path("chunks.jsonl")), _map(self._path(TEXTS))

    @cached_property
    def text_blocks(self) -> np.ndarray:
        blocks = self._array(TEXT_BLOCKS, self.n_files + 1)
        if (
            blocks.dtype.kind not in "iu"
            or (len(blocks) and int(blocks[0]) != 0)
            or np.any(np.diff(blocks) < 0)
            or int(blocks[-1]) != len(self.stores[1])
        ):
            raise CorruptIndexError(f"index file {TEXT_BLOCKS} is damaged; {REBUILD}")
        return blocks

    @cached_property
    def _blocks(self) -> OrderedDict[int, bytes]:
        return OrderedDict()

    def _block(self, f: int) -> bytes:
        """File f's texts, decompressed (a few recent blocks are kept)."""
        cache = self._blocks
        block = cache.get(f)
        if block is None:
            blocks, text_off, rows = self.text_blocks, self.offsets[1], self.file_rows
            packed = bytes(self.stores[1][int(blocks[f]) : int(blocks[f + 1])])
            block = zlib.decompress(packed)
            expected = int(text_off[rows[f + 1]]) - int(text_off[rows[f]])
            if len(block) != expected:
                raise CorruptIndexError(f"index file {TEXTS} is damaged; {REBUILD}")
            cache[f] = block
            if len(cache) > BLOCK_CACHE:
                cache.popitem(last=False)
        else:
            cache.move_to_end(f)
        return block

    @cached_property
    def offsets(self) -> tuple[np.ndarray, np.ndarray]:
        from .integrity import check_rows

        offsets = (
            self._array("chunk_offsets.npy", self.n_rows + 1),
            self._array("text_offsets.npy", self.n_rows + 1),
        )
        # Texts are checked against their own end here, and against each block when read.
        texts = self.stores[1] if self.directory is None else range(int(offsets[1][-1]))
        check_rows(self.n_rows, self.stores[0], texts, *offsets)
        return offsets

    @cached_property
    def symbols(self) -> list[str]:
        return read_lines(self._path("symbols.txt"), self.n_rows)

    @cached_property
    def kinds(self) -> list[str]:
        return read_lines(self._path("kinds.txt"), self.n_rows)

    @cached_property
    def defines(self) -> list[str]:
        return read_lines(self._path("defines.txt"), self.n_rows)

    def meta_bytes(self, start: int, end: int) -> bytes:
        meta_off = self.offsets[0]
        return bytes(self.stores[0][int(meta_off[start]) : int(meta_off[end])])

    def text_bytes(self, start: int, end: int) -> bytes:
        text_off = self.offsets[1]
        if self.directory is None:  # in memory: plain bytes
            return bytes(self.stores[1][int(text_off[start]) : int(text_off[end])])
        if end <= start:
            return b""
        first, last = int(self.chunk_file[start]), int(self.chunk_file[end - 1])
        base = int(text_off[self.file_rows[first]])
        data = b"".join(self._block(f) for f in range(first, last + 1))
        return data[int(text_off[start]) - base : int(text_off[end]) - base]

    # -- BM25 ------------------------------------------------------------------------------------
    @cached_property
    def terms(self) -> list[str]:
        count = len(self.postings[0]) - 1
        return read_lines(self._path("bm25_terms.txt"), count)

    @cached_property
    def postings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indptr, docs, tfs); docs and tfs memory-mapped."""
        indptr: np.ndarray = np.load(self._path("bm25_indptr.npy"), allow_pickle=False)
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
        return DenseIndex.load(self.directory, self.n_rows)

    @cached_property
    def graph_facts(self) -> Mapping[str, dict[str, Any]]:
        """path -> FileGraph.to_dict() of the segment's files, each decoded when asked."""
        assert self.directory is not None
        return FactsMapping(read_facts(self.directory))

    def close(self) -> None:
        stores = self.__dict__.pop("stores", None)
        for store in stores or ():
            if hasattr(store, "close"):
                store.close()
        for name in ("dense", "postings", "offsets", "text_blocks", "_blocks"):
            self.__dict__.pop(name, None)
