"""Exact top-N BM25 over a query's postings: one pass that scores them all (lexical_pass.py), or
MaxScore pruning (as Lucene and tantivy prune), term at a time and vectorised, when it pays.

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

from collections.abc import Sequence
from functools import cached_property

import numpy as np

from .bm25_params import K1
from .lexical_pass import QueryPass, Result
from .postings import Scratch, Source, Terms, in_query_order, union

MARGIN = 1e-6
FIRST_BATCH = 64  # the first batch holds 1/64 of the query's postings (at least one term)
RACE_BATCH = 32  # a batch of the race holds 1/32 of them (at least one term)
LEAN_POSTINGS = 1 << 19  # fewer postings: scored in full, without the pruning's bookkeeping
# After the first batch, theta tells how much pruning would still score in full (measured: within
# a few points of what it does); above this share, scoring everything in query order is cheaper.
PRUNE_MAX = 0.2
# The race reads a term's postings or looks its rows up: costs in ns, measured on this project.
SCAN_NS = 9  # per posting read, summed and compared
PAIR_NS = 8000  # per (term, segment) pair looked up
NEEDLE_NS = 30  # per row looked up in a pair
EXACT_CELLS = 1 << 22  # (terms x rows) of the final sums done at once


class TopN(QueryPass):
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
        m = len(terms.weights)
        bound = terms.weights.astype(np.float64) * terms.idf.astype(np.float64) * (K1 + 1)
        self.bound = bound * (1 + MARGIN)
        total = sum(hi - lo for spans in terms.spans for _, lo, hi in spans)
        self.lean = lean or m == 1 or total <= LEAN_POSTINGS
        order = np.arange(m) if self.lean else np.argsort(-self.bound, kind="stable")
        super().__init__(sources, norm, terms, scratch, eligible, order)
        self.rest = np.zeros(m + 1)  # rest[k]: the bounds of the terms order[k:]
        self.rest[:m] = np.cumsum(self.bound[order][::-1])[::-1]
        self.full = 0
        self.kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # race: rows, place, c
        self.looked = 0  # terms the race looked rows up in
        # The pass whose buffers hold every posting: this one (a lean run) or another that
        # started over without pruning. A flag, not a reference to itself: a pass that pointed
        # at itself would outlive its search until a garbage collection found the cycle (one
        # every ~40 searches, 0.4-0.9 ms, in the middle of one).
        self._lean_run = False
        self._restarted: QueryPass | None = None

    @cached_property
    def wide(self) -> np.ndarray:
        """Contributions of the postings [:full] (pruning only: a lean query sums per chunk)."""
        return self.s.get("wide", self.total, np.float64)

    @property
    def read_all(self) -> QueryPass | None:
        """The pass whose buffers hold every posting (None: pruning skipped some)."""
        return self if self._lean_run else self._restarted

    @property
    def scored(self) -> int:
        """Postings scored so far (every one for a lean query)."""
        return self.total if self.lean else self.full + sum(len(k[0]) for k in self.kept)

    def _full(self, k: int, stop: int, floor: float) -> np.ndarray:
        """Score the terms order[k:stop] in full; returns the rows whose sum reaches floor."""
        a, b = self._load(k, stop)
        rows, wide = self.rows[a:b], self.wide[a:b]
        self._contrib(rows, self.raw[a:b], self._terms(k, stop), wide)
        self._add(rows, wide)
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
        self._restarted = lean
        return lean.one_pass(n)

    def _keep(self, rows: np.ndarray, raw: np.ndarray, place: np.ndarray) -> np.ndarray:
        wide = np.empty(len(rows))
        self._contrib(rows, raw, place, wide)
        self._add(rows, wide)
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
    def run(self, n: int, also: np.ndarray) -> Result:
        """(candidates, their exact scores, the candidates + `also` sorted, their coverage):
        every row of the true top n is a candidate. A one pass knows no row's coverage yet
        (`read_all` reads it later from the postings' rows)."""
        if self.lean:
            self._lean_run = True
            return self.one_pass(n)
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
        """No top rows: the coverage of `rows` (sorted) only, from every posting's row (a lean
        search: its terms in query order, as `coverage_of` adds them)."""
        assert self.lean
        self._load(0, len(self.order))
        return rows[:0], np.zeros(0, np.float32), rows, self.coverage_of(rows)

    # -- exact sums -------------------------------------------------------------------------------
    def _exact(self, cands: np.ndarray, seen: np.ndarray) -> Result:
        """Exact scores of `cands` and coverage of `seen` (sorted, holds cands) from every
        posting scored of those rows, summed in query-term order."""
        s, full = self.s, self.full
        m = len(self.order)
        s.flags[seen] = True
        at = s.flags.take(self.rows[:full], out=s.get("c_hit", full, bool), mode="clip")
        at = at.nonzero()[0]
        place = [self.starts.searchsorted(at, side="right") - 1]
        rows, wide = [self.rows.take(at)], [self.wide.take(at) if full else np.zeros(0)]
        for race_rows, race_place, race_wide in self.kept:
            hit = s.flags.take(race_rows).nonzero()[0]
            rows.append(race_rows.take(hit))
            place.append(race_place.take(hit))
            wide.append(race_wide.take(hit))
        s.flags[seen] = False
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
