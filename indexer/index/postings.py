"""A query's BM25 postings read as one stream: every (term, segment) span end to end in a
chosen term order, handed out as chunks of consecutive terms, and the buffers a view reuses
from query to query (indexer/index/lexical_topk.py scores the stream)."""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CorruptIndexError
from .integrity import REBUILD

# Smaller postings (an update's segment) are read through their map. Larger ones are read with
# pread: through a map, each scattered part a query reads maps 64 KB around it (fault-around),
# and a long-lived process ends up holding every segment's postings (41 MB at 163k chunks).
PREAD_MIN = 1 << 16
# A view's reused buffers bigger than this are dropped after each search: a report at 163k
# chunks reads ~450k postings (buffers of 2.2 MB), a pasted log can read millions.
SCRATCH_KEEP_BYTES = 4 << 20

Span = tuple[int, int, int]  # (segment, first posting, end)


def union(*parts: np.ndarray, runs: bool = False) -> np.ndarray:
    """The sorted distinct values of `parts` (np.unique hashes first: far slower here).
    `runs`: the values come as a few sorted runs (a query's postings, term after term), which
    numpy's stable sort (timsort) merges: 15k rows in 5 runs 47 us, quicksort 287 us (random
    values: quicksort is faster)."""
    out = np.concatenate(parts) if len(parts) > 1 else np.array(parts[0])
    out.sort(kind="stable" if runs else None)
    if len(out) < 2:
        return out
    keep = np.empty(len(out), dtype=bool)
    keep[0] = True
    np.not_equal(out[1:], out[:-1], out=keep[1:])
    return out[keep]


class Source:
    """One segment's postings: docs (int32 row within the segment), values (uint16 tf, or the
    float32 precomputed score), and where its rows start once the segments are laid end to
    end. A large memory-mapped array is read with pread, not through its map, so the postings a
    query reads do not stay resident in a long-lived process."""

    def __init__(self, docs: np.ndarray, values: np.ndarray, offset: int) -> None:
        self.offset = offset
        arrays = (docs, values)
        self.views = tuple(a.view(np.ndarray) if isinstance(a, np.memmap) else a for a in arrays)
        self._files = [
            (str(a.filename), int(a.offset))
            if isinstance(a, np.memmap) and a.filename and len(a) >= PREAD_MIN
            else None
            for a in arrays
        ]
        self.mapped = self._files == [None, None] or not hasattr(os, "preadv")
        self._fds: dict[int, int] = {}

    @cached_property
    def direct(self) -> tuple[int, int, int, int] | None:
        """(fd, byte offset) of the docs and of the values when both are read with pread: a
        query's stream reads its parts with two bare preadv calls each (~150 parts a report
        at 163k chunks: the method calls cost as much as the reads)."""
        if self.mapped or None in self._files or self.views[0].dtype != np.int32:
            return None
        (_, docs_at), (_, values_at) = self._files  # type: ignore[misc]
        return self._fd(0), docs_at, self._fd(1), values_at

    def _fd(self, which: int) -> int:
        fd = self._fds.get(which)
        if fd is None:
            fd = self._fds[which] = os.open(self._files[which][0], os.O_RDONLY)  # type: ignore[index]
            weakref.finalize(self, os.close, fd)
        return fd

    def truncated(self, which: int) -> CorruptIndexError:
        """The error for a pread that came back short: the file was cut after it was opened."""
        name = Path(self._files[which][0]).name  # type: ignore[index]
        return CorruptIndexError(f"index file {name} is truncated; {REBUILD}")

    def pread(self, which: int, lo: int, hi: int, into: np.ndarray) -> np.ndarray:
        """Docs (0) or values (1) lo:hi into `into` (contiguous; values may be of a wider
        dtype than stored: tf into float32)."""
        file = self._files[which]
        if file is None:
            into[:] = self.views[which][lo:hi]
            return into
        if into.dtype != self.views[which].dtype:
            into[:] = self.pread(which, lo, hi, np.empty(hi - lo, self.views[which].dtype))
            return into
        size = (hi - lo) * into.itemsize
        if size and os.preadv(self._fd(which), (into.data,), file[1] + lo * into.itemsize) != size:
            raise self.truncated(which)
        return into


class Scratch:
    """Buffers a view reuses from query to query: fresh memory costs a page fault per 4 KiB on
    first touch (several microseconds each on a virtual machine), more than the arithmetic."""

    def __init__(self, n_rows: int) -> None:
        self.n_rows = n_rows
        self.acc = np.zeros(n_rows)  # partial sums per row; all zero between queries
        self.stamp = np.zeros(n_rows, dtype=np.int32)  # any values (see `distinct`)
        # rows asked about; False between queries (bool: nonzero() is ~5x faster than on uint8)
        self.flags = np.zeros(n_rows, dtype=bool)
        self.lock = threading.Lock()
        self.uses = 0  # queries that read postings into these buffers (lexical_pass.py)
        self._buffers: dict[str, np.ndarray] = {}

    def trim(self, keep_bytes: int | None = None) -> None:
        """Drop the buffers above `keep_bytes` (default SCRATCH_KEEP_BYTES; a search's end): a
        huge query's buffers are made again by the next such query rather than held for the
        rest of the process."""
        limit = SCRATCH_KEEP_BYTES if keep_bytes is None else keep_bytes
        for name in [k for k, buf in self._buffers.items() if buf.nbytes > limit]:
            del self._buffers[name]

    def get(self, name: str, n: int, dtype: Any = np.int64) -> np.ndarray:
        buf = self._buffers.get(name)
        if buf is None or len(buf) < n or buf.dtype != np.dtype(dtype):
            buf = self._buffers[name] = np.empty(self._size(n), dtype=dtype)
        return buf[:n]

    def ramp(self, n: int) -> np.ndarray:
        buf = self._buffers.get("ramp")
        if buf is None or len(buf) < n:
            buf = self._buffers["ramp"] = np.arange(self._size(n), dtype=np.int32)
        return buf[:n]

    @staticmethod
    def _size(n: int) -> int:
        """A new buffer's length: a quarter above the need, so that a slightly longer query
        reuses it (doubling kept up to twice the largest query's postings resident)."""
        return max(n + n // 4, 4096)

    def compress(self, name: str, keep: np.ndarray, values: np.ndarray) -> np.ndarray:
        out = self.get(name, int(np.count_nonzero(keep)), values.dtype)
        values.compress(keep, out=out)
        return out

    def distinct(self, name: str, rows: np.ndarray) -> np.ndarray:
        """`rows` without repeats (in no particular order): each row's slot in `stamp` is
        written with the position of one of its copies, and only that copy is kept."""
        ramp = self.ramp(len(rows))
        self.stamp[rows] = ramp
        got = self.stamp.take(rows, out=self.get("got", len(rows), np.int32), mode="clip")
        same = np.equal(got, ramp, out=self.get("same", len(rows), bool))
        return self.compress(name, same, rows)


@dataclass
class Terms:
    """A query resolved against a view: its known terms in query order."""

    weights: np.ndarray  # float32: 1 + log(count in the query), times the term's boost
    idf: np.ndarray  # float32
    spans: list[list[Span]]  # each term's postings in each segment that has it
    total: float  # the coverage denominator (unknown terms count at a df=1 term's idf)


class Stream:
    """The postings of `spans` (one list per term, in the order wanted) end to end. Nothing is
    read until the postings of consecutive terms (`read`) or a part alone is asked for."""

    def __init__(
        self, sources: Sequence[Source], spans: Sequence[list[Span]], total: int, scratch: Scratch
    ) -> None:
        self.sources, self.scratch, self.total = sources, scratch, total
        self.where: list[tuple[int, int, int]] = []  # (segment, lo, hi) of each part
        parts = [0]
        for term in spans:
            self.where.extend(term)
            parts.append(len(self.where))
        self.parts = parts  # parts[k]: the first part of the k-th term
        self.segment = [seg for seg, _, _ in self.where]
        self._offsets = [sources[g].offset for g in self.segment]
        self.starts = np.zeros(len(self.where) + 1, dtype=np.int64)  # of each part
        np.cumsum([hi - lo for _, lo, hi in self.where], out=self.starts[1:])
        self.term_starts = self.starts[parts]  # of each term in the stream
        self._at = self.starts.tolist()
        kinds = {sources[g].views[1].dtype for g in set(self.segment)}
        self.dtype = np.result_type(*kinds) if kinds else np.dtype(np.uint16)
        # Each segment's (fd, offset) pairs when its parts are read by bare preadv calls (values
        # stored in the stream's dtype); None: through Source.pread.
        self._direct = [
            source.direct if source.views[1].dtype == self.dtype else None for source in sources
        ]

    def part(self, p: int, which: int) -> np.ndarray:
        """Docs (0) or values (1) of part p alone (a pread source reads it into its buffer)."""
        seg, lo, hi = self.where[p]
        source = self.sources[seg]
        if source.mapped:
            return source.views[which][lo:hi]
        dtype = source.views[which].dtype
        buf = self.scratch.get(f"pread{which}{dtype.char}", hi - lo, dtype)
        return source.pread(which, lo, hi, buf)

    def read(self, k: int, stop: int, rows: np.ndarray, values: np.ndarray) -> None:
        """The postings of the terms k..stop-1 into rows (int32: rows of the segments laid end
        to end) and values (the stream's dtype), each part read straight into its place."""
        i, j = self.parts[k], self.parts[stop]
        at, base, offsets = self._at, self._at[i], self._offsets
        width, preadv = values.itemsize, os.preadv
        for p in range(i, j):
            seg, lo, hi = self.where[p]
            x, y = at[p] - base, at[p + 1] - base
            source = self.sources[seg]
            part = rows[x:y]
            direct = self._direct[seg]
            if direct is not None:
                docs_fd, docs_at, values_fd, values_at = direct  # docs: int32
                n = y - x
                if preadv(docs_fd, (part.data,), docs_at + 4 * lo) != 4 * n:
                    raise source.truncated(0)
                if preadv(values_fd, (values[x:y].data,), values_at + width * lo) != width * n:
                    raise source.truncated(1)
            else:
                source.pread(0, lo, hi, part)
                source.pread(1, lo, hi, values[x:y])
            if offsets[p]:  # rows of the segments laid end to end (int32: far below 2**31)
                part += offsets[p]


def in_query_order(
    scratch: Scratch,
    terms: Terms,
    order: Sequence[int],
    place: np.ndarray,
    col: np.ndarray,
    value: np.ndarray,
    k: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(BM25, coverage) of k columns from (term place in `order`, column, contribution)
    triples: each column's contributions, and its terms' idf, summed term after term in query
    order."""
    m = len(terms.weights)
    term = np.asarray(order, dtype=np.int64).take(place)
    scores = scratch.get("x_scores", m * k, np.float32).reshape(m, k)
    scores.fill(0)
    scores[term, col] = value
    present = scratch.get("x_present", m * k, np.float32).reshape(m, k)
    present.fill(0)
    present[term, col] = terms.idf.take(term)
    # Reduced along the slow axis, numpy adds term after term (no pairwise summation):
    # the sum np.bincount makes of each row's postings in query-term order.
    bm25 = np.add.reduce(scores, axis=0, dtype=np.float64).astype(np.float32)
    covered = np.add.reduce(present, axis=0, dtype=np.float64)
    return bm25, (covered / max(terms.total, 1e-9)).astype(np.float32)
