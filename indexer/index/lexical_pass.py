"""One query's postings read and scored: the arithmetic every BM25 search shares, and the pass
that scores every posting (lexical_topk.py prunes instead when that pays).

Each posting's contribution is the reference's float32 arithmetic (lexical_view.py `score`):
(idf x tf) x (k1 + 1) / (tf + norm), then x the term's weight; or a segment's precomputed score
x weight. The one pass adds them up per row in float64, term after term in query order, as
np.bincount sums the reference's: the exact sums. Everything runs in buffers the view reuses
(fresh memory costs page faults: indexer/index/postings.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import cached_property

import numpy as np

from .bm25_params import K1
from .postings import Scratch, Source, Stream, Terms, union

# Postings the one pass scores (or looks up) at once (a longer term: on its own). Their int32
# rows are added through an intp copy (`_add`): a chunk's (1 MB) stays in a reused buffer,
# where a report's whole postings' (2.1 MB at 163k chunks) was over
# workers.SEARCH_MMAP_BYTES, a fresh mapping: up to 280 page faults a report
# (docs/benchmarks.md, twenty-third pass).
LEAN_CHUNK = 1 << 17
SCALAR_TERM = 1024  # postings per term from which its idf and weight multiply as scalars
SAMPLE_STEP = 16  # the one pass's rows sampled for a floor under its n-th best sum
TERM_FLOOR_ROWS = 1 << 16  # from this many rows, the floor comes from a strong term's rows
# The coverage of rows asked after the pass: each (term, segment) part binary-searched for the
# rows, or every posting's row looked up in a flag per row. Costs in ns, measured on sympy's
# reports at 38k and 163k chunks (10 rows: 36 / 52 us by search, 27 / 193 by flags).
PART_NS = 700  # per part searched
NEEDLE_NS = 20  # per row searched in a part
FLAG_NS = 1  # per posting looked up

Result = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class QueryPass:
    """One query's postings over the sources (every row of the segments laid end to end, dead
    ones included), laid out term after term in `order` (a term's place in it: its index), with
    the query's partial sums in `scratch.acc`."""

    def __init__(
        self,
        sources: Sequence[Source],
        norm: np.ndarray | None,  # None: the values are precomputed scores (one segment)
        terms: Terms,
        scratch: Scratch,
        eligible: np.ndarray | None,
        order: np.ndarray,
    ) -> None:
        self.sources, self.norm, self.q, self.s, self.eligible = (
            sources,
            norm,
            terms,
            scratch,
            eligible,
        )
        self.order = order.tolist()
        self.idf, self.weights = terms.idf[order], terms.weights[order]  # by place in the order
        total = sum(hi - lo for spans in terms.spans for _, lo, hi in spans)
        self.stream = Stream(sources, [terms.spans[t] for t in self.order], total, scratch)
        self.total, self.starts = total, self.stream.term_starts
        self.offsets = [source.offset for source in sources] + [len(scratch.acc)]
        scratch.uses += 1  # the buffers now hold this query's postings (LaterCoverage)
        self.use = scratch.uses
        # The postings read: row and the term's place in the order (and, for pruning, `raw`).
        self.rows = scratch.get("rows", total, np.int32)  # rows stay far below 2**31

    @cached_property
    def raw(self) -> np.ndarray:
        """Every posting's value as stored, kept for pruning (the one pass reads a chunk's
        values into a buffer of its own: a report's 770k postings need not hold 3 MB more)."""
        return self.s.get("raw", self.total, self.stream.dtype)

    # -- scoring ----------------------------------------------------------------------------------
    def _contrib(
        self, rows: np.ndarray, raw: np.ndarray, place: np.ndarray | int, out: np.ndarray
    ) -> None:
        """Each posting's contribution into `out` (float64 holding float32 values): the
        reference's float32 arithmetic in its order ((idf * tf) * (k1 + 1) / (tf + norm), then
        x weight; or precomputed score x weight). `place`: each posting's term (its place in
        the order), or k for postings laid out as the terms k, k+1, ... (starts[k]:...)."""
        s, n = self.s, len(rows)
        spans = []
        if isinstance(place, int):
            bounds = self.starts[place:] - self.starts[place]
            bounds = bounds[: int(np.searchsorted(bounds, n)) + 1].tolist()
            spans = [(place + i, x, y) for i, (x, y) in enumerate(itertools.pairwise(bounds))]

        def times(c: np.ndarray, table: np.ndarray, into: np.ndarray) -> None:
            """into = c x table[term] (float32), term by term or gathered."""
            if spans:
                for k, x, y in spans:
                    np.multiply(c[x:y], table[k], out=into[x:y])
            else:
                gathered = s.get("c_gathered", n, np.float32)
                np.multiply(c, table.take(place, out=gathered, mode="clip"), out=into)

        c = s.get("c_contrib", n, np.float32)
        if self.norm is None:
            # Precomputed scores x weight straight from the postings read, not from a copy of
            # them: a report's list 94 -> 80 us at 163k chunks, 43 -> 36 at 38k (microbench).
            # The products written into the float64 `out` at once were slower (106 / 53 us):
            # numpy's casting loop costs more than the one widening copy below.
            times(raw, self.weights, c)
        else:  # (a buffer only tf needs)
            np.copyto(c, raw)  # tf as float32
            tmp = s.get("c_tmp", n, np.float32)
            self.norm.take(rows, out=tmp, mode="clip")
            tmp += c  # tf + norm
            times(c, self.idf, c)  # tf * idf
            c *= K1 + 1
            c /= tmp
            times(c, self.weights, c)
        np.copyto(out, c)

    def _add(self, rows: np.ndarray, wide: np.ndarray) -> None:
        """acc[rows] += wide, element after element (np.add.at). The rows are copied to intp
        first: numpy's ufunc.at takes its fast loop only for intp indices, and int32 ones go
        through its casting iterator (131k postings: 170 -> 141 us, plus 15 for the copy; a
        report at 163k chunks, toggled search by search in one process: -65 us of ~3.9 ms)."""
        at = self.s.get("c_intp", len(rows), np.intp)
        np.copyto(at, rows)
        np.add.at(self.s.acc, at, wide)

    def _terms(self, k: int, stop: int) -> np.ndarray | int:
        """What _contrib takes for the postings of the terms order[k:stop]: k when their
        terms are long enough for two scalar products each to beat two gathers."""
        size = int(self.starts[stop] - self.starts[k])
        return k if size >= SCALAR_TERM * (stop - k) else self._places(k, stop)

    def _places(self, k: int, stop: int) -> np.ndarray:
        """place[...] of the postings of the terms order[k:stop] (k..stop-1 each)."""
        a, b = int(self.starts[k]), int(self.starts[stop])
        place = self.s.get("place", b - a)  # as long as the batch: used before the next one
        place.fill(0)
        place[self.starts[k + 1 : stop] - a] = 1
        place[0] = k
        np.cumsum(place, out=place)
        return place

    def _load(self, k: int, stop: int, values: np.ndarray | None = None) -> tuple[int, int]:
        """Read the postings of the terms order[k:stop] into rows and raw (or their values
        into `values`, as long as they are); their slice."""
        a, b = int(self.starts[k]), int(self.starts[stop])
        self.stream.read(k, stop, self.rows[a:b], self.raw[a:b] if values is None else values)
        return a, b

    # -- the one pass --------------------------------------------------------------------------
    def one_pass(self, n: int) -> Result:
        """Every posting scored, in query-term order here, and added up per row in that order
        (np.add.at adds element after element, as np.bincount does): the exact sums, in the
        view's own buffers, with nothing to prune. No row's coverage: `coverage_of` reads it
        from the postings' rows, left in the buffers."""
        s, m = self.s, len(self.order)
        rows, starts, k = self.rows, self.starts.tolist(), 0
        while k < m:  # terms a chunk at a time: the temporaries stay small
            stop = k + 1
            while stop < m and starts[stop + 1] - starts[k] <= LEAN_CHUNK:
                stop += 1
            raw = s.get("c_raw", starts[stop] - starts[k], self.stream.dtype)
            a, b = self._load(k, stop, raw)
            wide = s.get("c_wide", b - a, np.float64)
            self._contrib(rows[a:b], raw, self._terms(k, stop), wide)
            self._add(rows[a:b], wide)
            k = stop
        if 8 * self.total < len(s.acc):  # few postings: their rows, not every row
            # Only the rows at or above a floor under the n-th best sum can be listed: those
            # of the postings read, a few thousand of a question's ~15k at 163k chunks, are
            # merged (each term's rows are sorted) and partitioned, not all of them.
            floor = self._floor(n)
            read = rows
            if floor > 0:
                read = read[s.acc.take(read) >= floor]
            cands = union(read, runs=True)
            if floor <= 0:
                cands = cands[s.acc.take(cands) > 0]
            if self.eligible is not None:
                cands = cands[self.eligible.take(cands)]
        else:
            cands = self._above(self._floor(n))
        sums = s.acc.take(cands)
        if len(cands) > n > 0:  # the n best and every row tied with the n-th
            nth = np.partition(sums, len(sums) - n)[len(sums) - n]
            cands, sums = cands[sums >= nth], sums[sums >= nth]
        self._clear()
        # No coverage yet: a search reads it of a page of rows, looked up afterwards in the
        # rows read (LaterCoverage), not of the ~1,000 it could ask about (0.5 ms a report at
        # 163k chunks when every posting's row was looked up for them).
        return cands, sums.astype(np.float32), cands[:0], np.zeros(0, np.float32)

    def coverage_of(self, seen: np.ndarray) -> np.ndarray:
        """The keyword coverage of `seen` (sorted, distinct rows) from the rows of every
        posting a pass in query-term order read (still in `rows`): the idf of each row's
        terms, added in that order (the postings'), as np.bincount adds the reference's."""
        s, rows, parts = self.s, self.rows, self.stream.starts
        n_parts = len(parts) - 1
        if n_parts * (PART_NS + NEEDLE_NS * len(seen)) < FLAG_NS * self.total:
            # Each part's rows are sorted: binary search for the rows asked.
            wanted = seen.astype(np.int32)
            found = np.empty((n_parts, len(seen)), dtype=np.int64)
            bounds = parts.tolist()
            for p in range(n_parts):
                found[p] = rows[bounds[p] : bounds[p + 1]].searchsorted(wanted)
            found += parts[:-1, None]
            hit = found < parts[1:, None]
            hit &= rows.take(found, mode="clip") == wanted
            part, col = hit.nonzero()  # part after part: postings' order
            term = np.repeat(np.arange(len(self.order)), np.diff(self.stream.parts))
            idf = self.idf.astype(np.float64).take(term.take(part))
        else:  # every posting's row looked up in a flag per row
            s.flags[seen] = True
            at = s.get("c_hit", self.total, bool)
            for lo in range(0, self.total, LEAN_CHUNK):  # numpy's intp copy stays small
                hi = min(lo + LEAN_CHUNK, self.total)
                s.flags.take(rows[lo:hi], out=at[lo:hi], mode="clip")
            s.flags[seen] = False
            at = at.nonzero()[0]
            idf = self.idf.astype(np.float64).take(self.starts.searchsorted(at, side="right") - 1)
            col = seen.searchsorted(rows.take(at))
        covered = np.bincount(col, weights=idf, minlength=len(seen))
        return (covered / max(self.q.total, 1e-9)).astype(np.float32)

    def _floor(self, n: int) -> float:
        """A lower bound of the n-th best sum (0 when there is none): the n-th best of a set of
        distinct rows, which cannot be above all rows'. Rows under it are never listed: most
        rows a long query touches. The set: in a large index, the rows of one of the query's
        strongest terms (most of the best rows have it); else, or without such a term, every
        SAMPLE_STEP-th row."""
        if n <= 0:
            return 0.0
        acc = self.s.acc
        if len(acc) >= TERM_FLOOR_ROWS:
            floor = self._floor_of_terms(n)
            if floor is not None:
                return floor
        sums = acc[::SAMPLE_STEP]
        if self.eligible is not None:
            sums = sums[self.eligible[::SAMPLE_STEP]]
        sums = sums[sums > 0]
        if len(sums) < n:
            return 0.0
        return float(np.partition(sums, len(sums) - n)[len(sums) - n])

    def _floor_of_terms(self, n: int) -> float | None:
        """The n-th best sum of the rows of the strongest term (by weight x idf) of n to 8n
        postings (a term has a row once), or None when no term has that many. At 163k chunks
        a report's floor from every 16th row read 1.3 MB of sums (strided: 80 us) and let
        ~6,400 rows through; this one reads a few thousand (50 us) and lets ~2,900 through
        (a question's ~700)."""
        sizes = np.diff(self.starts)
        fit = np.flatnonzero((sizes >= n) & (sizes <= 8 * n))
        if not len(fit):
            return None
        t = int(fit[np.argmax((self.weights * self.idf)[fit])])
        rows = self.rows[int(self.starts[t]) : int(self.starts[t + 1])]
        if self.eligible is not None:
            rows = rows[self.eligible.take(rows)]
        if len(rows) < n:
            return None
        sums = self.s.acc.take(rows)
        return float(np.partition(sums, len(sums) - n)[len(sums) - n])

    def _above(self, floor: float) -> np.ndarray:
        """Rows (eligible) whose sum is positive and at least `floor`."""
        kept = self.s.acc >= floor if floor > 0 else self.s.acc > 0
        if self.eligible is not None:
            kept &= self.eligible
        found: np.ndarray = kept.nonzero()[0]
        return found

    def _clear(self) -> None:
        """The one pass's sums back to zero."""
        if 4 * self.total > len(self.s.acc):
            self.s.acc.fill(0)
        else:
            self.s.acc[self.rows] = 0


class LaterCoverage:
    """The keyword coverage of rows asked after a one pass (a search's page of results), from
    the rows of the postings it left in the view's buffers; None once the buffers hold another
    query's (or another thread has them): the caller then reads the postings again."""

    def __init__(self, search: QueryPass, to_cat: np.ndarray | None) -> None:
        self.search, self.to_cat = search, to_cat  # to_cat: global rows -> rows laid end to end

    def __call__(self, rows: np.ndarray) -> np.ndarray | None:
        search, s = self.search, self.search.s
        if not s.lock.acquire(blocking=False):
            return None
        try:
            if s.uses != search.use:
                return None
            cats = rows if self.to_cat is None else self.to_cat[rows]
            seen = union(cats)
            covered: np.ndarray = search.coverage_of(seen)[seen.searchsorted(cats)]
            return covered
        finally:
            s.trim()  # as a search's end does
            s.lock.release()
