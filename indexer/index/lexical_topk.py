"""Exact top-N BM25 over a query's postings: one pass that scores them all, or MaxScore pruning
(as Lucene and tantivy prune), term at a time and vectorised, when it pays.

Pruning: a posting of term t never scores more than its bound, weight x idf x (k1 + 1). Terms
are taken in decreasing order of that bound and their postings scored in full, batch by batch,
into per-row partial sums, until the bounds of the terms left add up to less than theta, the
N-th best partial sum (a lower bound of the N-th best score): a row none of the scored terms has
cannot enter the top N any more. The terms left (a long query's common words: huge postings,
tiny idf) are then scored only for the rows still in the race, those whose sum plus the bounds
left reaches theta, read in full or, once few rows are left, looked up by binary search in each
(term, segment) span; and for the rows the caller wants the keyword coverage of (`also`). In
numpy the bookkeeping costs about what it saves unless most postings are skipped, so the first
batch's theta decides: pruning goes on only if it would score at most PRUNE_MAX of the postings
in full, else (and for queries with fewer than LEAN_POSTINGS postings) one pass scores them all.

Either way the result is the exhaustive scoring's, bit for bit (lexical_view.py `score`, the
reference): each posting goes through the same float32 arithmetic, and a row's contributions
are summed in float64 in query-term order, the order np.bincount sums them in (np.add.at over
postings laid out in query order; or, after pruning, per candidate, term after term). Pruning
decisions read partial sums taken in another order, so each comparison carries a relative
margin (1e-6, against float32's 6e-8) that can only keep a row, never drop one. Everything runs
in buffers the view reuses (fresh memory costs page faults: indexer/index/postings.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import cached_property

import numpy as np

from .bm25_params import K1
from .postings import Scratch, Source, Stream, Terms, in_query_order, union

MARGIN = 1e-6
FIRST_BATCH = 64  # the first batch holds 1/64 of the query's postings (at least one term)
RACE_BATCH = 32  # a batch of the race holds 1/32 of them (at least one term)
LEAN_POSTINGS = 1 << 19  # fewer postings: scored in full, without the pruning's bookkeeping
LEAN_CHUNK = 1 << 17  # postings the one pass scores at once (a longer term: on its own)
# After the first batch, theta tells how much pruning would still score in full (measured: within
# a few points of what it does); above this share, scoring everything in query order is cheaper.
PRUNE_MAX = 0.2
# The race reads a term's postings or looks its rows up: costs in ns, measured on this project.
SCAN_NS = 9  # per posting read, summed and compared
PAIR_NS = 8000  # per (term, segment) pair looked up
NEEDLE_NS = 30  # per row looked up in a pair
SCALAR_TERM = 1024  # postings per term from which its idf and weight multiply as scalars
EXACT_CELLS = 1 << 22  # (terms x rows) of the final sums done at once
SAMPLE_STEP = 16  # the one pass's rows sampled for a floor under its n-th best sum

Result = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class TopN:
    """One query's pruned scoring over the sources (every row of the segments laid end to end,
    dead ones included). Partial sums live in `scratch.acc`: -inf marks a row that may not be
    returned (dead, or outside `eligible`), +inf a row scored in full whatever its sum (`also`,
    once the pruning starts). The postings are laid out term after term, in decreasing order of
    bound (a batch of terms is a slice), or in query order for a query with few postings."""

    def __init__(
        self,
        sources: Sequence[Source],
        norm: np.ndarray | None,  # None: the values are precomputed scores (one segment)
        terms: Terms,
        scratch: Scratch,
        eligible: np.ndarray | None,
        lean: bool = False,
    ) -> None:
        self.sources, self.norm, self.q, self.s, self.eligible = (
            sources,
            norm,
            terms,
            scratch,
            eligible,
        )
        m = len(terms.weights)
        bound = terms.weights.astype(np.float64) * terms.idf.astype(np.float64) * (K1 + 1)
        self.bound = bound * (1 + MARGIN)
        total = sum(hi - lo for spans in terms.spans for _, lo, hi in spans)
        self.lean = lean or m == 1 or total <= LEAN_POSTINGS
        order = np.arange(m) if self.lean else np.argsort(-self.bound, kind="stable")
        self.order = order.tolist()
        self.idf, self.weights = terms.idf[order], terms.weights[order]  # by place in the order
        self.rest = np.zeros(m + 1)  # rest[k]: the bounds of the terms order[k:]
        self.rest[:m] = np.cumsum(self.bound[order][::-1])[::-1]
        self.stream = Stream(sources, [terms.spans[t] for t in self.order], total, scratch)
        self.total, self.starts = total, self.stream.term_starts
        self.offsets = [source.offset for source in sources] + [len(scratch.acc)]
        # The postings read: row, value as stored, and the term's place in the order.
        self.rows = scratch.get("rows", total, np.int32)  # rows stay far below 2**31
        self.raw = scratch.get("raw", total, self.stream.dtype)
        self.full = 0
        self.kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # race: rows, place, c
        self.looked = 0  # terms the race looked rows up in

    @cached_property
    def wide(self) -> np.ndarray:
        """Contributions of the postings [:full] (pruning only: a lean query sums per chunk)."""
        return self.s.get("wide", self.total, np.float64)

    @property
    def scored(self) -> int:
        """Postings scored so far (every one for a lean query)."""
        return self.total if self.lean else self.full + sum(len(k[0]) for k in self.kept)

    # -- scoring ----------------------------------------------------------------------------------
    def _contrib(
        self, rows: np.ndarray, raw: np.ndarray, place: np.ndarray | int, out: np.ndarray
    ) -> None:
        """Each posting's contribution into `out` (float64 holding float32 values): the
        reference's float32 arithmetic in its order ((idf * tf) * (k1 + 1) / (tf + norm), then
        x weight; or precomputed score x weight). `place`: each posting's term (its place in
        the order), or k for postings laid out as the terms k, k+1, ... (starts[k]:...)."""
        s, n = self.s, len(rows)
        c = s.get("c_contrib", n, np.float32)
        np.copyto(c, raw)  # tf (or the precomputed score) as float32
        tmp = s.get("c_tmp", n, np.float32)
        spans = []
        if isinstance(place, int):
            bounds = self.starts[place:] - self.starts[place]
            bounds = bounds[: int(np.searchsorted(bounds, n)) + 1].tolist()
            spans = [(place + i, x, y) for i, (x, y) in enumerate(itertools.pairwise(bounds))]

        def times(table: np.ndarray) -> None:  # c *= table[term]: term by term, or gathered
            if spans:
                for k, x, y in spans:
                    np.multiply(c[x:y], table[k], out=c[x:y])
            else:
                gathered = s.get("c_gathered", n, np.float32)
                np.multiply(c, table.take(place, out=gathered, mode="clip"), out=c)

        if self.norm is None:
            times(self.weights)
        else:
            self.norm.take(rows, out=tmp, mode="clip")
            tmp += c  # tf + norm
            times(self.idf)  # tf * idf
            c *= K1 + 1
            c /= tmp
            times(self.weights)
        np.copyto(out, c)

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

    def _load(self, k: int, stop: int) -> tuple[int, int]:
        """Read the postings of the terms order[k:stop] into rows and raw; their slice."""
        a, b = int(self.starts[k]), int(self.starts[stop])
        self.stream.read(k, stop, self.rows[a:b], self.raw[a:b])
        return a, b

    def _full(self, k: int, stop: int, floor: float) -> np.ndarray:
        """Score the terms order[k:stop] in full; returns the rows whose sum reaches floor."""
        a, b = self._load(k, stop)
        rows, wide = self.rows[a:b], self.wide[a:b]
        self._contrib(rows, self.raw[a:b], self._terms(k, stop), wide)
        np.add.at(self.s.acc, rows, wide)
        self.full = b
        sums = self.s.acc.take(rows, out=self.s.get("c_sums", b - a, np.float64), mode="clip")
        picked: np.ndarray = rows[sums >= floor]
        return picked

    def _raced(self, k: int, stop: int, floor: float) -> np.ndarray:
        """Score the postings of the terms order[k:stop] whose row's sum reaches `floor`
        (+inf rows always), reading them all; returns their rows."""
        s = self.s
        a, b = self._load(k, stop)
        sums = s.acc.take(self.rows[a:b], out=s.get("c_sums", b - a, np.float64), mode="clip")
        at = (sums >= floor).nonzero()[0]
        at += a
        rows = self.rows.take(at)
        place = self.starts.searchsorted(at, side="right") - 1
        return self._keep(rows, self.raw.take(at), place)

    def _hopeless(self, rows: np.ndarray, n: int) -> bool:
        """After the first batch: would the terms to score in full (as far as theta, estimated
        from its rows, says; measured: within a few points of what pruning then does) hold more
        than PRUNE_MAX of the postings? Then scoring all in query order is cheaper."""
        sums = self.s.acc.take(rows)
        if len(sums) < n:
            return True
        theta = float(np.partition(sums, len(sums) - n)[len(sums) - n])
        k = int(np.searchsorted(-self.rest, -theta, side="left"))
        return bool(self.starts[min(k, len(self.order))] > PRUNE_MAX * self.total)

    def _instead(self, n: int, also: np.ndarray) -> Result:
        """Start again without pruning (the terms in query order)."""
        s = self.s
        if self.eligible is not None:
            s.acc.fill(0)
        else:
            s.acc[self.rows[: self.full]] = 0
        lean = TopN(self.sources, self.norm, self.q, s, self.eligible, lean=True)
        return lean.run(n, also)

    def _keep(self, rows: np.ndarray, raw: np.ndarray, place: np.ndarray) -> np.ndarray:
        wide = np.empty(len(rows))
        self._contrib(rows, raw, place, wide)
        np.add.at(self.s.acc, rows, wide)
        self.kept.append((rows, place, wide))
        return rows

    def _looked_up(self, k: int, stop: int, alive: np.ndarray) -> np.ndarray:
        """Score the postings of the terms order[k:stop] of the rows `alive` (sorted), found by
        binary search in each (term, segment) span instead of reading it all."""
        stream = self.stream
        self.looked += stop - k
        cut = alive.searchsorted(self.offsets).tolist()
        local: dict[int, np.ndarray] = {}
        rows, raw, place = [], [], []
        for t in range(k, stop):
            for p in range(stream.parts[t], stream.parts[t + 1]):
                seg = stream.segment[p]
                if cut[seg] == cut[seg + 1]:
                    continue
                ys = local.get(seg)
                if ys is None:  # the alive rows of the segment, as its docs are stored
                    offset = self.offsets[seg]
                    ys = local[seg] = (alive[cut[seg] : cut[seg + 1]] - offset).astype(np.int32)
                docs = stream.part(p, 0)
                pos = docs.searchsorted(ys)
                np.minimum(pos, len(docs) - 1, out=pos)
                hit = docs.take(pos) == ys
                if not hit.any():
                    continue
                at = pos[hit]
                rows.append(ys[hit] + self.offsets[seg])
                raw.append(stream.part(p, 1).take(at))
                place.append(np.full(len(at), t))
        if not rows:
            return alive[:0]
        return self._keep(
            np.concatenate(rows).astype(np.int64), np.concatenate(raw), np.concatenate(place)
        )

    def _raise(
        self, pool: np.ndarray, picked: np.ndarray, theta: float, n: int
    ) -> tuple[float, np.ndarray]:
        """theta from the pool (every row whose sum can reach theta) and the rows just added
        to: (new theta, new pool)."""
        rows = self.s.distinct("distinct", np.concatenate([pool, picked]))
        sums = self.s.acc.take(rows)
        infinite = int(np.count_nonzero(sums == np.inf))  # `also` rows: not scores
        k = len(sums) - n - infinite
        if k >= 0:
            theta = max(theta, float(np.partition(sums, k)[k]))
        floor = theta * (1 - MARGIN) / (1 + MARGIN)
        return theta, rows[sums >= floor]

    # -- the search -------------------------------------------------------------------------------
    def run(self, n: int, also: np.ndarray, coverage: bool = True) -> Result:
        """(candidates, their exact scores, the candidates + `also` sorted, their coverage):
        every row of the true top n is a candidate. Without `coverage`, a one-pass search
        returns no coverage (no rows seen)."""
        if self.lean:
            return self._lean(n, also, coverage)
        s, rest, starts = self.s, self.rest, self.starts.tolist()
        m = len(self.order)
        if self.eligible is not None:
            np.copyto(s.acc, -np.inf, where=~self.eligible)
        theta, pool, done = 0.0, np.zeros(0, dtype=np.int64), 0
        target = max(self.total // FIRST_BATCH, 1)

        def beaten(k: int) -> bool:  # the terms order[k:] cannot lift an unseen row to theta
            return bool(rest[k] * (1 + MARGIN) < theta * (1 - MARGIN))

        def floor(k: int) -> float:  # the sum a row needs before the terms order[k:] (m: none)
            return max(theta * (1 - MARGIN) / (1 + MARGIN) - float(rest[k]), 5e-324)

        while done < m and not beaten(done):  # every posting of the strongest terms
            stop = done + 1
            while stop < m and starts[stop] - starts[done] < target and not beaten(stop):
                stop += 1
            picked = self._full(done, stop, floor(m))
            if done == 0 and stop < m and self._hopeless(picked, n):
                return self._instead(n, also)
            theta, pool = self._raise(pool, picked, theta, n)
            done, target = stop, 2 * starts[stop]
        if done < m:
            s.acc[also] = np.inf
        alive: np.ndarray | None = None  # the rows still in the race, once worth listing
        pending: list[np.ndarray] = []  # rows the race added to since theta was last raised
        while done < m:  # the rest only for the rows still in the race
            stop = done + 1
            while stop < m and starts[stop] - starts[done] < self.total // RACE_BATCH:
                stop += 1
            least = floor(done)
            if alive is None and (self.total - starts[done]) * SCAN_NS > len(s.acc):
                alive = (s.acc >= least).nonzero()[0]  # one pass over the rows
            elif alive is not None:
                alive = alive[s.acc.take(alive) >= least]
            pairs = self.stream.parts[stop] - self.stream.parts[done]
            looking = PAIR_NS * pairs + NEEDLE_NS * (stop - done) * (
                len(alive) if alive is not None else self.total
            )
            if alive is not None and looking < SCAN_NS * (starts[stop] - starts[done]):
                pending.append(self._looked_up(done, stop, alive))
            else:
                pending.append(self._raced(done, stop, least))
            done = stop
            if done == m or sum(len(rows) for rows in pending) >= n:  # theta is worth raising
                theta, pool = self._raise(pool, np.concatenate(pending), theta, n)
                pending = []
        # The race's last field, and the `also` rows (their sums were set aside: +inf).
        seen = union(pool, also)
        cands = seen if self.eligible is None else seen[self.eligible[seen]]
        return self._exact(cands, seen)

    def coverage(self, rows: np.ndarray) -> Result:
        """No top rows: the coverage of `rows` (sorted) only."""
        s = self.s
        self._load(0, len(self.order))
        s.flags[rows] = 1
        at = s.flags.take(self.rows, out=s.get("c_hit", self.total, np.uint8), mode="clip")
        s.flags[rows] = 0
        at = at.nonzero()[0]
        got, place = self.rows.take(at), self.starts.searchsorted(at, side="right") - 1
        self._keep(got, self.raw.take(at), place)
        return self._exact(rows[:0], rows)

    def _lean(self, n: int, also: np.ndarray, coverage: bool = True) -> Result:
        """Every posting scored, in query-term order here, and added up per row in that order
        (np.add.at adds element after element, as np.bincount does): the exact sums, in the
        view's own buffers, with nothing to prune."""
        s, q, m = self.s, self.q, len(self.order)
        rows, starts, k = self.rows, self.starts.tolist(), 0
        while k < m:  # terms a chunk at a time: the temporaries stay small
            stop = k + 1
            while stop < m and starts[stop + 1] - starts[k] <= LEAN_CHUNK:
                stop += 1
            a, b = self._load(k, stop)
            wide = s.get("c_wide", b - a, np.float64)
            self._contrib(rows[a:b], self.raw[a:b], self._terms(k, stop), wide)
            np.add.at(s.acc, rows[a:b], wide)
            k = stop
        if 8 * self.total < len(s.acc):  # few postings: their rows, not every row
            cands = union(rows)
            cands = cands[s.acc.take(cands) > 0]
            if self.eligible is not None:
                cands = cands[self.eligible.take(cands)]
        else:
            cands = self._above(self._floor(n))
        sums = s.acc.take(cands)
        if len(cands) > n > 0:  # the n best and every row tied with the n-th
            nth = np.partition(sums, len(sums) - n)[len(sums) - n]
            cands, sums = cands[sums >= nth], sums[sums >= nth]
        if not coverage:
            self._clear()
            return cands, sums.astype(np.float32), cands[:0], np.zeros(0, np.float32)
        seen = union(cands, also)
        # Coverage of those rows only: their postings' idf, added in posting order.
        s.flags[seen] = 1
        at = s.flags.take(rows, out=s.get("c_hit", self.total, np.uint8), mode="clip")
        s.flags[seen] = 0
        at = at.nonzero()[0]
        idf = self.idf.astype(np.float64).take(self.starts.searchsorted(at, side="right") - 1)
        covered = np.bincount(seen.searchsorted(rows.take(at)), weights=idf, minlength=len(seen))
        self._clear()
        return cands, sums.astype(np.float32), seen, (covered / max(q.total, 1e-9)).astype("f4")

    def _floor(self, n: int) -> float:
        """A lower bound of the n-th best sum (0 when there is none): the n-th best of every
        SAMPLE_STEP-th row's, distinct rows whose n-th best cannot be above all rows'. Rows
        under it are never listed: most rows a long query touches."""
        sums = self.s.acc[::SAMPLE_STEP]
        if self.eligible is not None:
            sums = sums[self.eligible[::SAMPLE_STEP]]
        sums = sums[sums > 0]
        if n <= 0 or len(sums) < n:
            return 0.0
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

    # -- exact sums -------------------------------------------------------------------------------
    def _exact(self, cands: np.ndarray, seen: np.ndarray) -> Result:
        """Exact scores of `cands` and coverage of `seen` (sorted, holds cands) from every
        posting scored of those rows, summed in query-term order."""
        s, full = self.s, self.full
        m = len(self.order)
        s.flags[seen] = 1
        at = s.flags.take(self.rows[:full], out=s.get("c_hit", full, np.uint8), mode="clip")
        at = at.nonzero()[0]
        place = [self.starts.searchsorted(at, side="right") - 1]
        rows, wide = [self.rows.take(at)], [self.wide.take(at) if full else np.zeros(0)]
        for race_rows, race_place, race_wide in self.kept:
            hit = s.flags.take(race_rows).nonzero()[0]
            rows.append(race_rows.take(hit))
            place.append(race_place.take(hit))
            wide.append(race_wide.take(hit))
        s.flags[seen] = 0
        col = np.searchsorted(seen, np.concatenate(rows))
        term, value = np.concatenate(place), np.concatenate(wide).astype(np.float32)
        bm25, coverage = np.zeros(len(seen), np.float32), np.zeros(len(seen), np.float32)
        step = max(1, EXACT_CELLS // max(m, 1))
        for a in range(0, len(seen), step):  # blocks of rows bound the (terms x rows) tables
            inside = (col >= a) & (col < a + step)
            k = min(step, len(seen) - a)
            bm25[a : a + k], coverage[a : a + k] = in_query_order(
                self.s, self.q, self.order, term[inside], col[inside] - a, value[inside], k
            )
        if self.eligible is not None or 4 * full > len(s.acc):
            s.acc.fill(0)
        else:
            s.acc[self.rows[:full]] = 0
            for race_rows, _, _ in self.kept:
                s.acc[race_rows] = 0
            s.acc[seen] = 0  # `also` rows: +inf
        return cands, bm25[np.searchsorted(seen, cands)], seen, coverage
