"""Exact top-N BM25 without scoring every posting: MaxScore pruning (as Lucene and tantivy
prune), term at a time and vectorised.

A posting of term t never scores more than its bound, weight x idf x (k1 + 1). Terms are taken
in decreasing order of that bound and their postings scored in full, batch by batch, into
per-row partial sums, until the bounds of the terms left add up to less than the N-th best
partial sum (theta, a lower bound of the N-th best score): a row none of the scored terms has
cannot enter the top N any more. The terms left (a long query's common words: huge postings,
tiny idf) are then scored only for the rows still in the race, those whose partial sum plus
the bounds left reaches theta (theta rises, the bounds left shrink, term after term), and for
the rows the caller wants the keyword coverage of (`also`).

The result is the exhaustive scoring's, bit for bit (indexer/index/lexical_view.py `score`, the
reference): each posting scored goes through the same float32 arithmetic, and the final rows'
contributions are summed in float64 in query-term order, the order `np.bincount` sums them in.
Pruning decisions read partial sums taken in another order, so each comparison carries a
relative margin (1e-6, against float32's 6e-8) that can only keep a row, never drop one.

The postings are streamed chunk by chunk (indexer/index/postings.py): what stays in memory is
each posting scored in full (its row and contribution, for the final sums) and what the race
keeps; a query's temporaries fit in cache and reuse the view's buffers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .lexical import K1
from .postings import Chunk, Range, Scratch, Source, Span, Stream, union

MARGIN = 1e-6
FIRST_BATCH = 64  # the first batch holds 1/64 of the query's postings (at least one term)
RACE_BATCH = 32  # a batch of the race holds 1/32 of them (at least one term)
LEAN_POSTINGS = 16384  # fewer postings: scored in full, without the pruning's bookkeeping
EXACT_CELLS = 1 << 22  # (terms x rows) of the final sums done at once
MANY_RANGES = 8  # terms in a chunk from which their idf and weight are gathered per posting

Result = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass
class Terms:
    """A query resolved against a view: its known terms in query order."""

    weights: np.ndarray  # float32: 1 + log(count in the query), times the term's boost
    idf: np.ndarray  # float32
    spans: list[list[Span]]  # each term's postings in each segment that has it
    total: float  # the coverage denominator (unknown terms count at a df=1 term's idf)


class TopN:
    """One query's pruned scoring over the sources (every row of the segments laid end to end,
    dead ones included). Partial sums live in `scratch.acc`: -inf marks a row that may not be
    returned (dead, or outside `eligible`), +inf a row scored in full whatever its sum (`also`,
    once the pruning starts). The stream holds the terms in decreasing order of bound (a batch
    of terms is a slice of it), or in query order for a query with few postings."""

    def __init__(
        self,
        sources: Sequence[Source],
        norm: np.ndarray | None,  # None: the values are precomputed scores (one segment)
        terms: Terms,
        scratch: Scratch,
        eligible: np.ndarray | None,
    ) -> None:
        self.norm, self.q, self.s, self.eligible = norm, terms, scratch, eligible
        m = len(terms.weights)
        bound = terms.weights.astype(np.float64) * terms.idf.astype(np.float64) * (K1 + 1)
        self.bound = bound * (1 + MARGIN)
        total = sum(hi - lo for spans in terms.spans for _, lo, hi in spans)
        self.lean = m == 1 or total <= LEAN_POSTINGS
        order = np.arange(m) if self.lean else np.argsort(-self.bound, kind="stable")
        self.order = order.tolist()
        self.idf, self.weights = terms.idf[order], terms.weights[order]  # by place in the order
        self.rest = np.zeros(m + 1)  # rest[k]: the bounds of the terms order[k:]
        self.rest[:m] = np.cumsum(self.bound[order][::-1])[::-1]
        self.stream = Stream(sources, [terms.spans[t] for t in self.order], total, scratch)
        self.total = self.stream.total
        self.rows = scratch.get("rows32", self.total, np.int32)  # of the postings scored in full
        self.contrib = scratch.get("contrib", self.total, np.float32)
        self.full = 0  # the stream's [:full] is scored in full
        self.race: list[Range] = []  # (k, first, end) of what the race kept, in race_*
        self.race_end = 0

    # -- scoring ----------------------------------------------------------------------------------
    def _buffers(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        return self.s.get("c_rows", n), self.s.get("c_values", n, np.float32)

    def _contrib(
        self, rows: np.ndarray, values: np.ndarray, out: np.ndarray, ranges: list[Range]
    ) -> None:
        """Each posting's contribution: the reference's float32 arithmetic in its order
        ((idf * tf) * (k1 + 1) / (tf + norm), then x weight; or precomputed score x weight).
        A term's idf and weight multiply its range, or, with many short ranges, come per
        posting from its place in the order."""
        s, n = self.s, len(rows)
        idf, weights = self.idf, self.weights
        if len(ranges) > MANY_RANGES:
            place = s.get("c_place", n)
            place.fill(0)
            first = [x for _, x, _ in ranges]
            place[first[1:]] = np.diff([k for k, _, _ in ranges])
            place[0] = ranges[0][0]
            np.cumsum(place, out=place)
            tmp = s.get("c_tmp", n, np.float32)
            (weights if self.norm is None else idf).take(place, out=out, mode="clip")
            out *= values
            if self.norm is None:
                return
            out *= K1 + 1
            self.norm.take(rows, out=tmp, mode="clip")
            tmp += values
            out /= tmp
            out *= weights.take(place, out=tmp, mode="clip")
            return
        if self.norm is None:
            for k, x, y in ranges:
                np.multiply(values[x:y], weights[k], out=out[x:y])
            return
        for k, x, y in ranges:
            np.multiply(values[x:y], idf[k], out=out[x:y])
        out *= K1 + 1
        tmp = self.norm.take(rows, out=s.get("c_tmp", n, np.float32), mode="clip")
        tmp += values
        out /= tmp
        for k, x, y in ranges:
            out[x:y] *= weights[k]

    def _add(self, rows: np.ndarray, contrib: np.ndarray) -> None:
        wide = self.s.get("c_wide", len(rows), np.float64)
        np.copyto(wide, contrib)
        np.add.at(self.s.acc, rows, wide)

    def _at_least(self, rows: np.ndarray, floor: float) -> np.ndarray:
        """The rows whose sum reaches floor (a new array)."""
        sums = self.s.acc.take(rows, out=self.s.get("c_sums", len(rows), np.float64), mode="clip")
        keep = np.greater_equal(sums, floor, out=self.s.get("c_keep", len(rows), bool))
        picked: np.ndarray = rows[keep]
        return picked

    def _full(self, k: int, stop: int, floor: float) -> np.ndarray:
        """Score the terms order[k:stop] in full; returns their rows whose sum reaches floor."""
        chunk = self.stream.chunk(k, stop)
        rows, values = self._buffers(chunk.end - chunk.start)
        Stream.fill(chunk, rows, values, self.s)
        out = self.contrib[chunk.start : chunk.end]
        self._contrib(rows, values, out, chunk.ranges)
        self._add(rows, out)
        np.copyto(self.rows[chunk.start : chunk.end], rows, casting="same_kind")
        self.full = chunk.end
        return self._at_least(rows, floor)

    def _raced(self, k: int, stop: int, floor: float) -> np.ndarray:
        """Score the postings of the terms order[k:stop] whose row's sum reaches `floor`
        (+inf rows always); returns their rows."""
        s = self.s
        chunk = self.stream.chunk(k, stop)
        rows, values = self._buffers(chunk.end - chunk.start)
        Stream.fill(chunk, rows, values, s)
        sums = s.acc.take(rows, out=s.get("c_sums", len(rows), np.float64), mode="clip")
        keep = np.greater_equal(sums, floor, out=s.get("c_keep", len(rows), bool))
        return self._keep(chunk, keep, rows, values)

    def _keep(
        self, chunk: Chunk, keep: np.ndarray, rows: np.ndarray, values: np.ndarray
    ) -> np.ndarray:
        """The postings of `chunk` that `keep` selects into the race's arena, scored."""
        s = self.s
        counts = np.add.reduceat(keep, [x for _, x, _ in chunk.ranges], dtype=np.int64).tolist()
        x, n = self.race_end, sum(counts)
        if not n:
            return rows[:0]
        race_rows = s.get("race_rows", self.total)[x : x + n]
        race_values = s.get("race_values", self.total, np.float32)[x : x + n]
        out = s.get("race_contrib", self.total, np.float32)[x : x + n]
        rows.compress(keep, out=race_rows)
        values.compress(keep, out=race_values)
        ranges, at = [], 0
        for (k, _, _), count in zip(chunk.ranges, counts, strict=True):
            if count:
                ranges.append((k, at, at + count))
                at += count
        self._contrib(race_rows, race_values, out, ranges)
        self._add(race_rows, out)
        self.race.extend((k, x + i, x + j) for k, i, j in ranges)
        self.race_end = x + n
        return race_rows

    def _raise(
        self, pool: np.ndarray, picked: np.ndarray, theta: float, n: int
    ) -> tuple[float, np.ndarray]:
        """theta from the pool (every row whose sum can reach theta) and the rows just added
        to: (new theta, new pool)."""
        rows = self.s.distinct("distinct", np.concatenate([pool, picked]))
        sums = self.s.acc.take(rows)
        infinite = int(np.count_nonzero(sums == np.inf))  # `also` rows: not scores
        if len(sums) >= n + infinite:
            theta = max(
                theta, float(np.partition(sums, len(sums) - n - infinite)[len(sums) - n - infinite])
            )
        floor = theta * (1 - MARGIN) / (1 + MARGIN)
        return theta, rows[sums >= floor]

    # -- the search -------------------------------------------------------------------------------
    def run(self, n: int, also: np.ndarray) -> Result:
        """(candidates, their exact scores, the candidates + `also` sorted, their coverage):
        every row of the true top n is a candidate."""
        if self.lean:
            return self._lean(also)
        s, rest, starts = self.s, self.rest, self.stream.term_starts
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
            theta, pool = self._raise(pool, picked, theta, n)
            done, target = stop, 2 * int(starts[stop])
        if done < m:
            s.acc[also] = np.inf
        while done < m:  # the rest only for the rows still in the race
            stop = done + 1
            while stop < m and starts[stop] - starts[done] < self.total // RACE_BATCH:
                stop += 1
            kept = self._raced(done, stop, floor(done))
            theta, pool = self._raise(pool, kept, theta, n)
            done = stop
        # The race's last field, and the `also` rows (their sums were set aside: +inf).
        seen = union(pool, also)
        cands = seen if self.eligible is None else seen[self.eligible[seen]]
        return self._exact(cands, seen)

    def coverage(self, rows: np.ndarray) -> Result:
        """No top rows: the coverage of `rows` (sorted) only."""
        s = self.s
        chunk = self.stream.chunk(0, len(self.order))
        got, values = self._buffers(self.total)
        Stream.fill(chunk, got, values, s)
        s.flags[rows] = 1
        hit = s.flags.take(got, out=s.get("c_hit", len(got), np.uint8), mode="clip")
        s.flags[rows] = 0
        self._keep(chunk, hit.view(bool), got, values)
        return self._exact(rows[:0], rows)

    def _lean(self, also: np.ndarray) -> Result:
        """Every posting scored (the stream is in query-term order) and summed per row in
        stream order by bincount, as the reference sums them, over the rows touched only."""
        s, q, total = self.s, self.q, self.total
        chunk = self.stream.chunk(0, len(self.order))
        rows, values = self._buffers(total)
        Stream.fill(chunk, rows, values, s)
        contrib = self.contrib[:total]
        self._contrib(rows, values, contrib, chunk.ranges)
        touched = np.sort(s.distinct("distinct", rows))
        s.mark[touched] = s.ramp(len(touched))
        local = s.mark.take(rows, out=s.get("c_local", total), mode="clip")
        s.mark[touched] = -1
        wide = s.get("c_wide", total, np.float64)
        np.copyto(wide, contrib)
        bm25 = np.bincount(local, weights=wide, minlength=len(touched)).astype(np.float32)
        idf = np.repeat(q.idf.astype(np.float64), np.diff(self.stream.term_starts))
        covered = np.bincount(local, weights=idf, minlength=len(touched))
        coverage = (covered / max(q.total, 1e-9)).astype(np.float32)
        cands, scores = touched, bm25
        if self.eligible is not None:
            keep = self.eligible[touched]
            cands, scores = touched[keep], bm25[keep]
        seen = union(touched, also)
        known = np.zeros(len(seen), dtype=np.float32)
        known[np.searchsorted(seen, touched)] = coverage  # rows no term reaches: 0
        return cands, scores, seen, known

    # -- exact sums -------------------------------------------------------------------------------
    def _exact(self, cands: np.ndarray, seen: np.ndarray) -> Result:
        """Exact scores of `cands` and coverage of `seen` (sorted, holds cands) from every
        posting kept of those rows, summed in query-term order."""
        s, order = self.s, self.order
        m = len(order)
        s.flags[seen] = 1
        found = []  # (pos in the full part, pos in the race's arena)
        for a in range(0, self.full, 1 << 15):
            b = min(self.full, a + (1 << 15))
            rows = s.get("c_rows", b - a)
            np.copyto(rows, self.rows[a:b])
            hit = s.flags.take(rows, out=s.get("c_hit", b - a, np.uint8), mode="clip")
            found.append(hit.nonzero()[0] + a)
        race_rows = s.get("race_rows", self.total)[: self.race_end]
        hit = s.flags.take(race_rows, out=s.get("c_hit", len(race_rows), np.uint8), mode="clip")
        in_race = hit.nonzero()[0]
        s.flags[seen] = 0
        pos = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
        k_full = np.searchsorted(self.stream.term_starts, pos, side="right") - 1
        starts = np.asarray([x for _, x, _ in self.race], dtype=np.int64)
        owner = np.asarray([k for k, _, _ in self.race], dtype=np.int64)
        k_race = owner[np.searchsorted(starts, in_race, side="right") - 1]
        term = np.asarray(order, dtype=np.int64)[np.concatenate([k_full, k_race])]
        col = np.searchsorted(seen, np.concatenate([self.rows[pos], race_rows[in_race]]))
        race_contrib = s.get("race_contrib", self.total, np.float32)[: self.race_end]
        value = np.concatenate([self.contrib[pos], race_contrib[in_race]])
        bm25, coverage = np.zeros(len(seen), np.float32), np.zeros(len(seen), np.float32)
        step = max(1, EXACT_CELLS // max(m, 1))
        for a in range(0, len(seen), step):  # blocks of rows bound the (terms x rows) tables
            inside = (col >= a) & (col < a + step)
            bm25[a : a + step], coverage[a : a + step] = self._sums(
                term[inside], col[inside] - a, value[inside], min(step, len(seen) - a)
            )
        if self.eligible is not None or 4 * (self.full + self.race_end) > len(s.acc):
            s.acc.fill(0)
        else:
            for a in range(0, self.full, 1 << 15):
                s.acc[self.rows[a : min(self.full, a + (1 << 15))]] = 0
            s.acc[race_rows] = 0
            s.acc[seen] = 0  # `also` rows: +inf
        return cands, bm25[np.searchsorted(seen, cands)], seen, coverage

    def _sums(
        self, term: np.ndarray, col: np.ndarray, value: np.ndarray, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        s, q = self.s, self.q
        m = len(q.weights)
        scores = s.get("x_scores", m * k, np.float32).reshape(m, k)
        scores.fill(0)
        scores[term, col] = value
        present = s.get("x_present", m * k, np.float32).reshape(m, k)
        present.fill(0)
        present[term, col] = q.idf[term]
        # Reduced along the slow axis, numpy adds term after term (no pairwise summation):
        # the sum np.bincount makes of each row's postings in query-term order.
        bm25 = np.add.reduce(scores, axis=0, dtype=np.float64).astype(np.float32)
        covered = np.add.reduce(present, axis=0, dtype=np.float64)
        return bm25, (covered / max(q.total, 1e-9)).astype(np.float32)
