"""Dense retrieval: chunk vectors as 8-bit codes, and 4-bit compact codes to find candidates.

On disk a segment's vectors are four plain arrays: `dense_codes.npy` (uint8, one row of `dim`
codes per chunk, in row order), `dense_ranges.npy` (float32 per-dimension half-width of the
code range), `dense_pq.npy` (uint8 compact codes, `dim / 8` bytes a row, stored one byte
position after the other: indexer/index/dense_pq.py) and `dense_pq_centroids.npy` (what the
compact codes stand for). Neither the ranges nor the centroids are trained on the corpus: both
come with the static vector table (`StaticVectors.quantizer_ranges`, `pq_centroids`), so a
vector's codes do not depend on the other chunks: decoding and re-encoding a kept vector gives
the same codes, and an incremental update stays byte-identical to a full build. Encoding is
numpy alone (the 8-bit codes bit for bit FAISS's `QT_8bit` scalar quantizer with those
ranges), so writing a segment (an `indexer update`) never imports FAISS.

The query side (indexer/index/dense_view.py `DenseView`) finds candidates by the compact codes
and ranks them by the 8-bit codes, read from the segment files (`DenseIndex.rows`): the
similarities a search returns are always the stored codes' cosines (inner products of unit
vectors).
"""

from __future__ import annotations

import mmap
import os
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from ..errors import CorruptIndexError
from . import dense_pq, npy
from .integrity import REBUILD

CODES = "dense_codes.npy"
RANGES = "dense_ranges.npy"
COMPACT = "dense_pq.npy"
CENTROIDS = "dense_pq_centroids.npy"
FILES = (CODES, RANGES, COMPACT, CENTROIDS)
COMPACT_BLOCK_ROWS = 1 << 15  # rows of compact codes a long-lived process copies at a time
LEVELS = np.float32(255.0)  # QT_8bit: codes 0..255
_REFETCHED: set[str] = set()  # codes files dropped from the page cache by this process
# Rows: wanted rows closer than this are read with one preadv. Every page read into is a fresh
# page to fault in a one-shot process (~1 us each here): a 4 KB gap read costs more than a
# call (at 16, a cold search at 38k chunks read its 1,200 rows in 1.8 ms, 450 faults; at 4 and
# into one buffer, 0.9 ms, 140 faults).
RUN_GAP = 4
SIMILARITY_ROWS = 256  # rows `similarities` converts to float at a time


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


@dataclass(frozen=True)
class Codec:
    """What codes are made with: the table's ranges, and its compact-code centroids (None: no
    compact codes, every search scans exactly; only in memory, for a table without them)."""

    ranges: np.ndarray
    centroids: np.ndarray | None


def similarities(codes: np.ndarray, ranges: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Inner products of a query with the vectors of 8-bit codes: FAISS's `QT_8bit` arithmetic,
    rearranged (x = vmin + (c + 0.5) / 255 * vdiff per dimension):

        q . x = q . vmin + 0.5 * sum(w) + c . w,   w = q * vdiff / 255,

    float32 like FAISS's, summed in another order (the same to ~1e-7)."""
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    ranges = ranges.astype(np.float32)
    w = (q * (2 * ranges) / LEVELS).astype(np.float32)
    base = np.float32(np.dot(q, -ranges)) + np.float32(0.5) * w.sum()
    codes = np.asarray(codes, dtype=np.uint8)
    out = np.empty(len(codes), dtype=np.float32)
    # A block of rows in float at a time, the buffer reused: a search's 1,200 rows as one
    # float array wrote 1.2 MB (~40 us more with caches cold, as between an agent's searches).
    block = np.empty((min(len(codes), SIMILARITY_ROWS), codes.shape[1]), dtype=np.float32)
    for start in range(0, len(codes), SIMILARITY_ROWS):
        part = codes[start : start + SIMILARITY_ROWS]
        floats = block[: len(part)]
        np.copyto(floats, part)
        np.dot(floats, w, out=out[start : start + len(part)])
    out += base
    return out


class DenseIndex:
    """One segment's codes, ranges and compact codes. Read from disk, each array loads on first
    use (the codes and compact codes memory-mapped): a one-shot search of 10 segments reads
    one segment's ranges and centroids, and compares the others' by their digests."""

    def __init__(
        self,
        codes: np.ndarray,
        ranges: np.ndarray,
        compact: np.ndarray | None = None,
        centroids: np.ndarray | None = None,
    ) -> None:
        # In memory: the values stand in the instance dict, where the loaders' cache would be.
        self.__dict__.update(
            codes=codes,
            ranges=np.asarray(ranges, dtype=np.float32),
            compact=compact,  # (dim / 8, rows) uint8, or None with no centroids
            centroids=centroids,
        )
        self.directory: Path | None = None
        self.digests: dict[str, str] = {}
        self.n_rows = int(codes.shape[0])

    @classmethod
    def load(cls, directory: Path, rows: int, digests: dict[str, str] | None = None) -> DenseIndex:
        """A segment's codes in `directory`; `digests`: its files' sha256 (segment.json)."""
        dense = cls.__new__(cls)
        dense.directory, dense.digests, dense.n_rows = directory, dict(digests or {}), rows
        return dense

    def _load(self, name: str, mmap: bool) -> np.ndarray:
        assert self.directory is not None
        array: np.ndarray = npy.load(self.directory / name, "r" if mmap else None)
        return array

    def _damaged(self, name: str) -> Exception:
        from ..errors import CorruptIndexError
        from .integrity import REBUILD

        return CorruptIndexError(f"index file {name} is damaged; {REBUILD}")

    @cached_property
    def ranges(self) -> np.ndarray:
        ranges = self._load(RANGES, mmap=False)
        if ranges.dtype != np.float32 or ranges.shape != (self.dim,):
            raise self._damaged(RANGES)
        return ranges

    @cached_property
    def codes(self) -> np.ndarray:
        """Memory-mapped: a process reads only the pages it touches, and processes share them.
        A plain array over the map: indexing a np.memmap costs a subclass's Python steps."""
        return self._mapped.view(np.ndarray)

    @cached_property
    def _mapped(self) -> np.ndarray:
        codes = self._load(CODES, mmap=True)
        if (
            codes.dtype != np.uint8
            or codes.ndim != 2
            or codes.shape[0] != self.n_rows
            or codes.shape[1] % 8
            or not codes.shape[1]
        ):
            raise self._damaged(CODES)
        return codes

    @property
    def codes_offset(self) -> int:
        """Where row 0 of the codes starts in their file (0 for codes in memory)."""
        return 0 if self.directory is None else int(getattr(self._mapped, "offset", 0))

    def huge_pages(self) -> None:
        """Map the codes for 2 MB pages (a long-lived process, once): its reads from disk then
        come in 2 MB folios (Linux readahead for a VM_HUGEPAGE mapping) and one fault maps 2
        MB, not the 64 KB of fault-around: a query's 1,200 rows of 163k cost 16-18 faults
        instead of 108-175, 0.19 ms instead of 0.54 (docs/benchmarks.md, fifteenth pass).
        Pages already cached keep the folios they came in (a one-shot CLI's preads, the .npy
        header's read: small ones), so the file is dropped from the page cache once per
        process, and this process's faults read it back (~40-90 ms of reads at 163k chunks,
        spread over its first queries; pages another process maps stay)."""
        if "_huge" in self.__dict__ or self.directory is None:  # (in memory: an overlay's)
            return
        self.__dict__["_huge"] = True
        codes = self._mapped
        mapped, path = _own_map(codes), getattr(codes, "filename", None)
        if mapped is None or path is None or not hasattr(mmap, "MADV_HUGEPAGE"):
            return
        try:
            mapped.madvise(mmap.MADV_HUGEPAGE)
        except OSError:  # no transparent huge pages: the kernel's default readahead
            return
        if path not in _REFETCHED and hasattr(os, "posix_fadvise"):
            _REFETCHED.add(path)  # segments never change: once is enough
            try:
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)
            except OSError:  # only an optimisation: the search reads the map either way
                pass

    def random_reads(self) -> None:
        """Map the codes for random reads (a one-shot process, once): a row read from disk reads
        its page, not the 128 KB around it (1,200 rows at 163k chunks out of the page cache:
        ~32 ms, ~37 without, ~30 with a pread per run of rows; cached in 4 KB pages 0.9-1.2 ms,
        ~1-2 without; docs/benchmarks.md, thirty-first pass)."""
        if "_random" in self.__dict__ or self.directory is None:
            return
        self.__dict__["_random"] = True
        mapped = _own_map(self._mapped)
        if mapped is not None and hasattr(mmap, "MADV_RANDOM"):
            mapped.madvise(mmap.MADV_RANDOM)

    def release_codes(self) -> None:
        """Drop the mapped 8-bit codes' pages from this process; they stay in the page cache.
        A read maps the 64 KB around each row it touches (kernel fault-around), so without
        this a long-lived process ends up holding the whole file (DenseView._codes)."""
        # segment_format.release_pages does this for a plain map, but that module imports this one
        mapped = _own_map(self.__dict__.get("_mapped"))  # (not mapped yet: nothing to drop)
        if mapped is not None and hasattr(mmap, "MADV_DONTNEED"):
            mapped.madvise(mmap.MADV_DONTNEED)

    @cached_property
    def compact(self) -> np.ndarray | None:
        compact = self._load(COMPACT, mmap=True)
        if compact.dtype != np.uint8 or compact.shape != (self.dim // 8, self.n_rows):
            raise self._damaged(COMPACT)
        return compact

    @cached_property
    def centroids(self) -> np.ndarray | None:
        centroids = self._load(CENTROIDS, mmap=False)
        if not dense_pq.valid_codebook(centroids, self.dim):
            raise self._damaged(CENTROIDS)
        return centroids

    def same_codec(self, other: DenseIndex) -> bool:
        """Made with the same ranges and centroids (stored files: by their digests)."""
        if all(self.digests.get(n) and other.digests.get(n) for n in (RANGES, CENTROIDS)):
            return all(self.digests[n] == other.digests[n] for n in (RANGES, CENTROIDS))
        a, b = self.centroids, other.centroids
        same = a is b or (a is not None and b is not None and np.array_equal(a, b))
        return same and np.array_equal(self.ranges, other.ranges)

    @classmethod
    def build(cls, vectors: np.ndarray, codec: Codec) -> DenseIndex:
        """Vectors' codes; values outside the ranges are clipped to them."""
        ranges = np.asarray(codec.ranges, dtype=np.float32)
        vectors = np.asarray(vectors, dtype=np.float32).reshape(-1, len(ranges))
        return cls.of_codes(encode(vectors, ranges), codec)

    @classmethod
    def of_codes(cls, codes: np.ndarray, codec: Codec) -> DenseIndex:
        """8-bit codes made with `codec`, and their compact codes."""
        ranges = np.asarray(codec.ranges, dtype=np.float32)
        if codec.centroids is None:
            return cls(codes, ranges)
        compact = dense_pq.encode(codes, ranges, codec.centroids)
        return cls(codes, ranges, compact, codec.centroids)

    @property
    def ntotal(self) -> int:
        return self.n_rows

    @property
    def dim(self) -> int:
        return int(self.codes.shape[1])

    def stored(self) -> np.ndarray:
        """fp16 vectors in row order, decoded from the codes."""
        return decode(self.codes, self.ranges).astype(np.float16)

    def codec(self) -> Codec:
        """What the codes were made with (`build`'s codec)."""
        return Codec(self.ranges, self.centroids)

    def reconstruct(self, rows: np.ndarray) -> np.ndarray:
        """Decoded vectors of local rows."""
        rows = np.asarray(rows, dtype=np.int64)
        order = np.argsort(rows, kind="stable")
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        out[order] = decode(self.rows(rows[order]), self.ranges)
        return out

    @cached_property
    def file(self) -> tuple[int, int] | None:
        """(descriptor, offset of row 0) of the codes' file; None for codes in memory."""
        return mapped_file(self._mapped, self) if self.directory is not None else None

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """The 8-bit codes of local rows in ascending order (`read_rows`)."""
        rows = np.asarray(rows, dtype=np.int64)
        where = self.file
        if where is None:
            return np.asarray(self.codes[rows], dtype=np.uint8).reshape(len(rows), self.dim)
        return read_rows([where], self.dim, np.zeros(len(rows), dtype=np.int64), rows)

    def compact_blocks(self, rows: int = COMPACT_BLOCK_ROWS) -> Iterator[tuple[int, np.ndarray]]:
        """The compact codes `rows` rows at a time, each block (first row, codes (dim / 8,
        rows)) an array of its own read from the file (not the map): a long-lived process's
        copy of a 163k-row segment does not hold the whole file a second time while it fills."""
        compact = self.compact
        if compact is None:
            return
        path = getattr(compact, "filename", None)
        n = compact.shape[1]
        if path is None:
            for start in range(0, n, rows):
                yield start, np.array(compact[:, start : start + rows])
            return
        offset = int(getattr(compact, "offset", 0))
        with open(path, "rb") as fh:
            for start in range(0, n, rows):
                block = np.empty((compact.shape[0], min(rows, n - start)), dtype=np.uint8)
                for sub, line in enumerate(block):  # each subspace's row: one read
                    got = os.preadv(fh.fileno(), (line.data,), offset + sub * n + start)
                    if got != len(line):
                        name = Path(path).name
                        raise CorruptIndexError(f"index file {name} is truncated; {REBUILD}")
                yield start, block

    def save(self, directory: Path) -> None:
        assert self.compact is not None and self.centroids is not None  # the writer's codec
        np.save(directory / CODES, np.ascontiguousarray(self.codes, dtype=np.uint8))
        np.save(directory / RANGES, self.ranges)
        np.save(directory / COMPACT, np.ascontiguousarray(self.compact, dtype=np.uint8))
        np.save(directory / CENTROIDS, np.asarray(self.centroids, dtype=np.float32))


def mapped_file(array: np.ndarray, owner: object) -> tuple[int, int] | None:
    """(descriptor, offset of element 0) of the file behind a memory-mapped array, to read it
    with pread; None for an array in memory (or an empty one, which numpy does not map). The
    descriptor closes with `owner`."""
    base: object = array
    while base is not None and not isinstance(base, np.memmap):
        base = getattr(base, "base", None)  # a plain view of a memmap
    path = getattr(base, "filename", None)
    if path is None:
        return None
    fd = os.open(path, os.O_RDONLY)
    weakref.finalize(owner, os.close, fd)
    return fd, int(getattr(base, "offset", 0))


def _own_map(codes: object) -> mmap.mmap | None:
    """The map under a np.memmap of codes (None for codes in memory)."""
    mapped = getattr(codes, "_mmap", None)
    return mapped if isinstance(mapped, mmap.mmap) else None


def read_rows(
    files: list[tuple[int, int]], width: int, part: np.ndarray, rows: np.ndarray
) -> np.ndarray:
    """Rows of `width` bytes from files of codes, (part, row) in ascending order: one `preadv`
    per run of nearby rows of a file, straight into one buffer, not through the memory map (a
    map would keep every page a search ever touched resident in a long-lived process)."""
    if not len(rows):
        return np.zeros((0, width), dtype=np.uint8)
    from ..errors import CorruptIndexError
    from .integrity import REBUILD

    cut = np.flatnonzero((np.diff(rows) > RUN_GAP) | (np.diff(part) != 0)) + 1
    heads = np.concatenate([[0], cut])
    first = rows[heads]
    counts = rows[np.concatenate([cut - 1, [len(rows) - 1]])] - first + 1
    of_run = part[heads]
    fds = np.array([fd for fd, _ in files], dtype=np.int64)[of_run].tolist()
    offsets = (np.array([at for _, at in files], dtype=np.int64)[of_run] + first * width).tolist()
    run_start = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=run_start[1:])
    block = np.empty((int(run_start[-1]), width), dtype=np.uint8)
    bounds = run_start.tolist()
    for fd, at, a, b in zip(fds, offsets, bounds[:-1], bounds[1:], strict=True):
        if _read_into(fd, block[a:b], at) != (b - a) * width:
            raise CorruptIndexError(f"index file {CODES} is truncated; {REBUILD}")
    run = np.repeat(np.arange(len(first)), np.diff(np.concatenate([heads, [len(rows)]])))
    picked: np.ndarray = block[run_start[run] + rows - first[run]]
    return picked


def _read_into(fd: int, into: np.ndarray, at: int) -> int:
    """Bytes of the file at `at` read into the contiguous array `into`; how many were read."""
    if hasattr(os, "preadv"):
        return os.preadv(fd, (into.data,), at)
    data = os.pread(fd, into.nbytes, at)  # (no preadv: macOS before 11)
    into.reshape(-1)[: len(data)] = np.frombuffer(data, dtype=into.dtype)
    return len(data)
