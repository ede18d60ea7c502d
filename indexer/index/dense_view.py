"""The vector side of a row space: candidates by compact codes, ranked by the 8-bit codes.

A search for k rows takes the candidate_factor() x k live rows whose 4-bit compact codes score
best (indexer/index/dense_pq.py), reads those rows' 8-bit codes from the segment files and
returns the k best by their cosines, ordered by (similarity, row): the similarities are the
stored codes' own, and ties do not depend on segment order. With fewer live rows than that,
every row is a candidate (the search is exact).

A long-lived process (`Index` in the MCP server, `indexer serve`, a notebook) holds the compact
codes of every live row once, in global row order, in a FAISS `IndexPQFastScan` (4-bit SIMD
lookups, ~0.1 ms for 38k rows). A row's score is an integer on both paths, the sum of its
groups' quantized levels (dense_pq.tables: FAISS's own quantization of its lookup tables), so
FAISS's top rows, with their scores read back from its distances, are the one-shot numpy
scan's (indexer/index/code_scan.py) with nothing rescored: both pick the same candidates.
Nothing else of the vectors is held: FAISS's 32 bytes a row (once), where a copy of
the 8-bit codes was 256 plus a 96-byte coarse table.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from functools import cached_property
from typing import Any

import numpy as np

from ..errors import CorruptIndexError, env_number, env_whole_number
from . import dense_pq
from .dense import Codec, DenseIndex, decode, read_rows, similarities
from .integrity import REBUILD
from .reader import RowSpace

# Rows ranked by their 8-bit codes per row returned. At 3 (1,200 for the fusion's 400) the top
# 400 holds 0.92-0.96 of the exact scan's at 163k chunks, the top 10 all of it, and the dev sets'
# fused and dense recall equal the exact scan's (docs/benchmarks.md); the fetch of the 8-bit
# codes grows with it. A large value makes every search exact.
DEFAULT_CANDIDATE_FACTOR = 3
# Mapped 8-bit codes read before their pages are dropped: 4 MB, two huge pages
# (DenseIndex.huge_pages), the windows aligned to the file's 4 MB boundaries: what a long-lived
# process holds of them at most, in the middle of a query. A drop costs ~10 us whatever it
# holds, a huge page's fault ~3: at 163k chunks a search's 1,200 rows took 506 us with 2 MB
# windows, 464 with 4 MB, 452 with 6 MB; the peak RSS grows by ~2 MB a step.
_WINDOW_BYTES = 4 << 20
# Up to this many bytes of 8-bit codes in all (65k rows at 256 dimensions), a long-lived
# process keeps the pages it read mapped instead: the whole of them costs it no more than a
# few windows, and a search then neither drops windows nor faults them back (sympy, 38k rows:
# five windows a question, ~0.06 ms warm, ~0.09 with caches cold).
_RESIDENT_BYTES = 16 << 20


# Rows FAISS returns beyond the candidates (at least; or an eighth of them): rows tied with the
# last candidate past them make it ask again for twice as many.
CANDIDATE_MARGIN = 64


def candidate_factor() -> int:
    """$INDEXER_DENSE_CANDIDATES, else DEFAULT_CANDIDATE_FACTOR (read per search: a few us)."""
    return env_whole_number("INDEXER_DENSE_CANDIDATES", DEFAULT_CANDIDATE_FACTOR, minimum=1)


# A long-lived process gathers the candidates' 8-bit codes through the segments' memory maps,
# ~5x faster than pread. Every page a search touches stays mapped (the kernel maps 64 KB around
# each fault), so after a few queries all of the codes count in the process's RSS (40 MB at 163k
# chunks; page cache that every process of the index shares and the kernel can drop).
# INDEXER_MAPPED_CODES_MB caps what is read that way: above it the rows are read with pread, as
# a one-shot CLI reads them (measured at 163k chunks: RSS 163 -> 120 MB, warm p50 +4-15 %).
def mapped_codes_max() -> int | None:
    """Bytes from $INDEXER_MAPPED_CODES_MB; None (no cap) when unset."""
    megabytes = env_number("INDEXER_MAPPED_CODES_MB")
    return None if megabytes is None else int(megabytes * (1 << 20))


class FastScan:
    """Compact codes of n rows in a FAISS fast-scan index: `candidates` returns the same rows
    as code_scan.candidates over the same codes (or None: see there).

    FAISS's index has one dimension per group (16 centroids of one value each) and is searched
    with a query of ones: its lookup table is then the query's own `groups` table, set as the
    centroids before each search, which FAISS quantizes to the very levels `dense_pq.tables`
    makes. Its distances are bias + (sum of levels) / scale, so each candidate's exact score is
    read back from them, and FAISS's top rows need no rescoring (a 4-bit lookup of 2 x 1,200
    rows cost ~0.25 ms of a sympy question)."""

    def __init__(self, n: int, centroids: np.ndarray, fill: Iterator[tuple[Any, np.ndarray]]):
        """`fill`: (positions, compact codes (dim / 8, len) of those positions) covering n."""
        import faiss

        # One query at a time: OpenMP thread start-up costs more than the scan itself.
        faiss.omp_set_num_threads(1)
        groups = centroids.shape[0]
        self.n = n
        # FAISS's copy only: the exact scan, where FAISS cannot decide, reads the segments'
        # (5.2 MB less at 163k rows)
        codes = np.empty((n, groups // 2), dtype=np.uint8)  # row by row, FAISS's layout
        for positions, block in fill:
            codes[positions] = block.T
        plain = faiss.IndexPQ(groups, groups, 4, faiss.METRIC_INNER_PRODUCT)
        faiss.copy_array_to_vector(np.zeros(groups * 16, dtype=np.float32), plain.pq.centroids)
        plain.is_trained = True
        if n:
            plain.codes.resize(codes.size)
            faiss.copy_array_to_vector(codes.ravel(), plain.codes)
            plain.ntotal = n
        del codes
        # packs the codes into its own blocks (FAISS's stub lists another overload only)
        self.index = faiss.IndexPQFastScan(plain)  # type: ignore[arg-type]
        # 13, FAISS's own choice for k > 20 (blocks of 32 rows, a reservoir of candidates): 0.172 /
        # 0.214 / 0.434 ms for 2,400 of 20k / 38k / 163k rows, against 0.178 / 0.220 / 0.498 for
        # 15 (the query-at-a-time scan); 1,200 of 4k rows 0.070 against 0.071; for 1,350 rows
        # 15 and 0 are level with it, 12 and 14 twice as slow.
        self.index.implem = 13
        self._ones = np.ones((1, groups), dtype=np.float32)
        # FAISS's centroids as an array (its vector keeps its size: the buffer stays put),
        # written per query in ~1 us where faiss.copy_array_to_vector took ~50
        centroids_of = self.index.pq.centroids
        self._centroids = faiss.rev_swig_ptr(centroids_of.data(), centroids_of.size())
        # The centroids are the query's: one search at a time (threads share the index).
        self._lock = threading.Lock()

    def candidates(self, tables: dense_pq.QueryTables, count: int) -> np.ndarray | None:
        """Rows of the `count` best scores (ties: lower row), in no order; None where FAISS
        cannot tell them (every row tied with the last, few rows, no spread, or distances not
        as read here): every row is then scored (code_scan.candidates)."""
        ask = count + max(CANDIDATE_MARGIN, count // 8)
        while ask < self.n and tables.scale > 0:
            with self._lock:
                self._centroids[:] = tables.groups.ravel()
                found_at, found = self.index.search(self._ones, ask)
            rows = found[0]
            # FAISS's distances, best first, are (a bias) + score / scale: each row's score
            # less the best one's is read back exactly; anything else (a row missing, an
            # order or a value not on that grid) has every row scored instead.
            scaled = found_at[0].astype(np.float64)
            scaled -= scaled[0]
            scaled *= tables.scale
            values = np.rint(scaled)
            off_grid = np.abs(scaled - values).max() > 0.1
            if rows[-1] < 0 or off_grid or (np.diff(values) > 0).any():
                break
            # Every row scoring above the last one found was found; the count-th best is
            # above it unless rows tied with it go on past `ask`: then ask for more.
            nth = values[count - 1]
            if nth > values[-1]:
                above = int(np.count_nonzero(values[:count] > nth))
                tied = int(np.count_nonzero(values[above:] == nth))
                last = np.sort(rows[above : above + tied])[: count - above]
                return np.concatenate([rows[:above], last]).astype(np.int64, copy=False)
            ask *= 2
        return None


class DenseView:
    """Dense search over every live row of a row space (deleted or masked rows are absent)."""

    def __init__(
        self, space: RowSpace, whole: DenseIndex | None = None, one_shot: bool = False
    ) -> None:
        self.space = space
        self.whole = whole  # codes of every row of `space` in row order (a table swapped in)
        # A process that answers one command scans the mapped compact codes with numpy
        # instead (indexer/index/code_scan.py): no FAISS import, no copy.
        self.one_shot = one_shot

    @cached_property
    def parts(self) -> list[tuple[DenseIndex, np.ndarray | int]]:
        """Each segment's codes with its local -> global row map (RowSpace.row_map)."""
        if self.whole is not None:
            return [(self.whole, 0)]
        return [(s.dense, self.space.row_map(i)) for i, s in enumerate(self.space.segments)]

    @cached_property
    def codec(self) -> Codec:
        denses = [dense for dense, _ in self.parts]
        if not denses:
            return Codec(np.zeros(0, dtype=np.float32), None)
        if not all(denses[0].same_codec(other) for other in denses[1:]):
            raise CorruptIndexError(f"segments of one index have different vector codes; {REBUILD}")
        return denses[0].codec()

    @property
    def ranges(self) -> np.ndarray:
        return self.codec.ranges

    @cached_property
    def _fast(self) -> FastScan:
        def fill() -> Iterator[tuple[Any, np.ndarray]]:
            for dense, to_global in self.parts:
                for start, block in dense.compact_blocks():
                    stop = start + block.shape[1]
                    if isinstance(to_global, int):
                        yield slice(to_global + start, to_global + stop), block
                    else:
                        mapped = to_global[start:stop]
                        live = mapped >= 0
                        yield mapped[live], block[:, live]

        assert self.codec.centroids is not None
        return FastScan(self.space.n_rows, self.codec.centroids, fill())

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(similarities, global rows) of the k nearest live rows, best first."""
        n = self.space.n_rows
        if n == 0 or k <= 0:
            return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.int64)
        codec = self.codec
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        count = candidate_factor() * k
        if codec.centroids is None or count >= n:
            rows = np.arange(n, dtype=np.int64)
        else:
            tables = dense_pq.tables(q, codec.centroids)
            found = None
            if not self.one_shot or "_fast" in self.__dict__:
                found = self._fast.candidates(tables, count)
            if found is None:  # a one-shot process, or FAISS could not tell: every row scored
                from .code_scan import candidates

                found = candidates(self.parts, tables.lut, count)
            rows = np.sort(found)
        sims, rows = dense_pq.top(similarities(self._codes(rows), codec.ranges, q), rows, k)
        best = np.lexsort((rows, -sims))
        return sims[best], rows[best]

    @cached_property
    def _codes_bytes(self) -> int:
        return sum(d.n_rows * d.dim for d, _ in self.parts)

    @cached_property
    def _codes_mapped(self) -> bool:
        limit = mapped_codes_max()
        return limit is None or self._codes_bytes <= limit

    def reconstruct(self, rows: np.ndarray) -> np.ndarray:
        """Stored (decoded) vectors of global rows."""
        return decode(self._codes(np.asarray(rows, dtype=np.int64)), self.ranges)

    def _codes(self, rows: np.ndarray) -> np.ndarray:
        """8-bit codes of global rows, read from the segments that hold them."""
        space = self.space
        if self.whole is not None or space.identity:
            cats, part = rows, np.zeros(len(rows), dtype=np.int64)
        else:
            cats = rows if space.concatenated else space.global_to_cat[rows]
            part = np.searchsorted(space.seg_offsets, cats, side="right") - 1
            cats = cats - space.seg_offsets[part]
        # Rows in the segments' order (a search's candidates: sorted) are read straight into
        # their places (_take_into).
        in_order = (self.whole is not None or space.concatenated) and _ascending(rows)
        order = np.arange(len(rows)) if in_order else np.lexsort((cats, part))
        width = len(self.ranges)
        out = np.empty((len(rows), width), dtype=np.uint8)
        if any(dense.dim != width for dense, _ in self.parts):
            raise CorruptIndexError(f"segments of one index have different vector codes; {REBUILD}")
        if self.one_shot or self._codes_mapped:
            # Through the segments' memory maps (mapped_codes_max). A long-lived process reads
            # 4 MB of a file at a time (_WINDOW_BYTES) and drops each window's pages once read:
            # a query's rows are scattered, and the 64 KB the kernel maps around each would
            # otherwise keep nearly every code resident (40 MB at 163k chunks). Faulting them
            # back costs ~0.15 ms a query in a tight loop, 1-5 % of warm p50 in the bench
            # (docs/benchmarks.md). A one-shot process keeps what it maps (it ends with the
            # command), advised for random reads: 1,200 rows at 163k chunks in 0.23-1.2 ms
            # (the file cached in 2 MB folios or 4 KB pages), where a preadv per run of rows
            # took 2.7-3.5 ms of a cold search.
            resident = self.one_shot or self._codes_bytes <= _RESIDENT_BYTES
            for i, (dense, _) in enumerate(self.parts):
                if self.one_shot:
                    dense.random_reads()
                else:
                    dense.huge_pages()
                mine = order[part[order] == i]  # sorted by row
                local = cats[mine]
                if resident:  # (small codes: kept mapped, _RESIDENT_BYTES)
                    _take_into(out, mine, dense.codes, local, in_order)
                    continue
                start = dense.codes_offset + local * width
                window = start // _WINDOW_BYTES
                across = (start + width - 1) // _WINDOW_BYTES != window
                if across.any():  # a row across two windows (huge pages) is read on its own
                    out[mine[across]] = dense.rows(local[across])
                    mine, local, window = mine[~across], local[~across], window[~across]
                cuts = (np.flatnonzero(np.diff(window)) + 1).tolist()
                for lo, hi in zip([0, *cuts], [*cuts, len(mine)], strict=True):
                    if hi > lo:
                        _take_into(out, mine[lo:hi], dense.codes, local[lo:hi], in_order)
                        dense.release_codes()
            return out
        files = [dense.file for dense, _ in self.parts]
        if all(f is not None for f in files):
            where = [f for f in files if f is not None]
            out[order] = read_rows(where, width, part[order], cats[order])
            return out
        for i, (dense, _) in enumerate(self.parts):  # some in memory (a working-tree overlay)
            mine = order[part[order] == i]
            if len(mine):
                out[mine] = dense.rows(cats[mine])
        return out


def _ascending(rows: np.ndarray) -> bool:
    return len(rows) < 2 or bool((rows[1:] >= rows[:-1]).all())


def _take_into(
    out: np.ndarray, at: np.ndarray, codes: np.ndarray, rows: np.ndarray, ascending: bool
) -> None:
    """out[at] = codes[rows]: straight into `out` where `at` is a run of places (`ascending`
    places without a gap), as a search's candidates are: an array of its own and a copy from
    it wrote a query's codes twice (300 KB at 1,200 rows; the take and the cosines alone,
    caches cold: 0.47 -> 0.28 ms in a microbench, a whole search within the bench's noise)."""
    if ascending and len(at) and int(at[-1]) - int(at[0]) == len(at) - 1:
        # (mode "clip": the rows are known good, and "raise" would take them through a buffer)
        codes.take(rows, axis=0, out=out[int(at[0]) : int(at[-1]) + 1], mode="clip")
    elif len(at):
        out[at] = codes.take(rows, axis=0)
