"""The files of one segment on disk: their names, the format number, the text-column and
compressed-text encodings, and the digest every file is listed with in `segment.json`.

A segment holds, for its files in path order: the chunk store (one JSON metadata line and the
text of each chunk, with offsets and per-chunk digests), per-chunk columns (FAISS id, file,
flags, symbol, kind, module-level names), the table of the names each chunk defines, the BM25
postings with RAW term frequencies and document lengths (scores need the statistics of every
live segment, so they are computed at query time: indexer/index/lexical_view.py), the chunk
vectors as 8-bit codes and 4-bit compact codes (indexer/index/dense.py), and the files' graph
facts. Tables with one entry per chunk, file or term are .npy arrays or newline-separated text
columns (memory-mapped, read lazily), never per-entry JSON. `segment.json` lists every file
with its size and sha256; loading never executes code (no pickle).
"""

from __future__ import annotations

import itertools
import mmap
import os
import sys
import weakref
import zlib
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..digests import sha256
from ..errors import CorruptIndexError
from .defined_names import FILES as DEFINED_FILES
from .dense import FILES as DENSE_FILES
from .graph.fact_files import FACTS_FILE_NAMES
from .integrity import REBUILD

# 4: vectors as plain uint8 codes (dense_codes.npy), no FAISS file; 5: + 4-bit compact codes
# (dense_pq.npy), and each text column's line starts beside it (`<column>_lines.npy`); 6: graph
# facts as one zlib block per file (graph_facts_z.bin); 7: the defined names' table
# (defined_keys.npy, defined_rows.npy: indexer/index/defined_names.py)
SEGMENT_FORMAT = 7
SEGMENT_MANIFEST = "segment.json"
TEXTS = "texts_z.bin"  # chunk texts, one zlib block per file (code compresses ~5x)
TEXT_BLOCKS = "text_blocks.npy"  # int64 (files + 1): where each file's block starts in TEXTS
LINE_STARTS = "_lines.npy"  # beside `<column>.txt`: where each line starts (uint32, n + 1)
TEXT_LEVEL = 6  # zlib level of the blocks (a build worker compresses its file's block)
TEXT_COLUMNS = ("symbols", "kinds", "defines", "file_paths", "file_blobs", "file_languages")
REQUIRED_FILES = frozenset(
    {
        *(f"{name}.txt" for name in TEXT_COLUMNS),
        *(f"{name}{LINE_STARTS}" for name in (*TEXT_COLUMNS, "bm25_terms")),
        *(f"{name}.npy" for name in ("file_times", "chunk_file", "chunk_flags", "chunk_fids")),
        *(f"{name}.npy" for name in ("chunk_sums", "meta_sums", "chunk_offsets", "text_offsets")),
        TEXT_BLOCKS,
        *(f"bm25_{name}.npy" for name in ("indptr", "docs", "tfs", "doclen", "scores")),
        "bm25_terms.txt",
        "file_extras.json",
        "chunks.jsonl",
        TEXTS,
        *DENSE_FILES,
        *DEFINED_FILES,
        *FACTS_FILE_NAMES,
    }
)


def line_starts_path(path: Path) -> Path:
    return path.with_name(path.stem + LINE_STARTS)


def write_lines(path: Path, values: list[str]) -> None:
    """A text column: one value per line (values never hold a newline: it becomes a space),
    and where each line starts (the last entry is the file's size + 1, as if it ended with a
    newline), so a reader opens it without scanning it."""
    text = "\n".join(values)
    if text.count("\n") != max(len(values) - 1, 0):  # a value holds a newline (rare)
        text = "\n".join(v.replace("\n", " ") for v in values)
    data = text.encode("utf-8")
    path.write_bytes(data)
    # line i starts after the i-th newline: one scan of the bytes, not a length per value
    newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    tail = [len(data) + 1] if values else []
    starts = np.concatenate([[0], newlines + 1, tail]).astype(np.int64)
    dtype = np.uint32 if len(data) < 1 << 32 else np.int64
    np.save(line_starts_path(path), starts.astype(dtype))


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
        parts.append(zlib.compress(texts[start:end], TEXT_LEVEL))
        blocks[i + 1] = blocks[i] + len(parts[-1])
    return blocks, b"".join(parts)


def decompress_texts(packed: bytes, blocks: np.ndarray) -> bytes:
    """Every file block of a segment's texts, in row order (provenance checks read them all)."""
    bounds = blocks.tolist()
    return b"".join(zlib.decompress(packed[a:b]) for a, b in itertools.pairwise(bounds))


def sha256_file(path: Path) -> str:
    if path.stat().st_size > 1 << 20:  # OpenSSL's is several times faster on big files
        import hashlib

        digest = hashlib.sha256()
    else:
        digest = sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return str(digest.hexdigest())


def map_file(path: Path) -> Any:
    with path.open("rb") as fh:
        if path.stat().st_size == 0:
            return b""
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def release_pages(data: Any) -> None:
    """Drop a mapped file's pages (a map or a np.memmap's) from this process (they stay in the
    page cache): after a pass over a whole column, a long-lived process keeps only the pages
    it reads again."""
    data = getattr(data, "_mmap", data)
    if isinstance(data, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        data.madvise(mmap.MADV_DONTNEED)


def random_access(data: Any) -> None:
    """Tell the kernel a mapped file is read at random: a fault maps the page asked for alone,
    not the 64 KB around it (nor reads ahead)."""
    data = getattr(data, "_mmap", data)
    if isinstance(data, mmap.mmap) and hasattr(mmap, "MADV_RANDOM"):
        data.madvise(mmap.MADV_RANDOM)


class FileSlices:
    """A file read by slices with pread: `data[a:b]` and `len(data)` as of bytes. The chunk
    store and the compressed texts are read a few records at a time; through a memory map
    every page a query touched would stay resident in a long-lived process."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.size = path.stat().st_size
        self.fd: int | None = os.open(path, os.O_RDONLY) if self.size else None
        # closed with the object at the latest: an index opened and dropped leaks no fd
        self._closer = weakref.finalize(self, os.close, self.fd) if self.fd is not None else None

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, span: slice) -> bytes:
        start, stop, step = span.indices(self.size)
        if step != 1 or stop <= start:
            return b"" if stop <= start else bytes(self[start:stop])[::step]
        if self.fd is None:
            raise ValueError(f"{self.path.name} is closed")
        data = os.pread(self.fd, stop - start, start)
        if len(data) != stop - start:
            raise CorruptIndexError(f"index file {self.path.name} is truncated; {REBUILD}")
        return data

    def close(self) -> None:
        if self._closer is not None:
            self._closer()  # closes the fd once
        self.fd = None


class StoredInts:
    """Values of a 1-d integer array stored as .npy (`array`: its np.memmap), read one at a
    time with pread: a search checks a few rows' digests, and a long-lived process holds none
    of the file (4.5 MB of digests at 163k rows, read whole, stayed in memory)."""

    def __init__(self, array: np.ndarray) -> None:
        self.file = FileSlices(Path(array.filename))  # type: ignore[attr-defined]
        self.offset, self.dtype, self.n = int(array.offset), array.dtype, len(array)  # type: ignore[attr-defined]
        order = {"<": "little", ">": "big"}.get(self.dtype.byteorder, sys.byteorder)
        self.order: Literal["little", "big"] = "big" if order == "big" else "little"
        self.signed = self.dtype.kind == "i"

    def __len__(self) -> int:
        return self.n

    def close(self) -> None:
        self.file.close()

    def __getitem__(self, i: int) -> int:
        if not 0 <= i < self.n:
            raise IndexError(i)
        at = self.offset + i * self.dtype.itemsize
        data = self.file[at : at + self.dtype.itemsize]
        return int.from_bytes(data, self.order, signed=self.signed)
