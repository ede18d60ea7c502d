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
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CorruptIndexError
from .integrity import REBUILD
from .lexical import K1

MARGIN = 1e-6
FIRST_BATCH = 8  # the first batch holds 1/8 of the query's postings (at least one term)
EXACT_CELLS = 1 << 22  # (terms x rows) of the final sums done at once
CHUNK = 1 << 15  # postings scored at once: the temporaries stay in cache
PREAD_MIN = 1 << 20  # smaller postings (an update's segment) are read through their map

Span = tuple[int, int, int]  # (segment, first posting, end)
Range = tuple[int, int, int]  # (query term, first slot, end) of postings kept in the arena


@dataclass
class Terms:
    """A query resolved against a view: its known terms in query order."""

    weights: np.ndarray  # float32: 1 + log(count in the query), times the term's boost
    idf: np.ndarray  # float32
    spans: list[list[Span]]  # each term's postings in each segment that has it
    total: float  # the coverage denominator (unknown terms count at a df=1 term's idf)


class Source:
    """One segment's postings as a query reads them: row (segments laid end to end) and value
    (tf, or the precomputed score) of the postings [lo, hi)."""

    def __init__(self, docs: np.ndarray, values: np.ndarray, offset: int) -> None:
        self.offset = offset
        self._arrays = (docs, values)
        self._views = tuple(
            a.view(np.ndarray) if isinstance(a, np.memmap) else a for a in self._arrays
        )
        # A large memory-mapped array is read with pread, not through its map, so the postings
        # a query reads do not stay resident in a long-lived process.
        self._files = [
            (str(a.filename), int(a.offset))
            if isinstance(a, np.memmap)
            and a.filename
            and len(a) >= PREAD_MIN
            and hasattr(os, "preadv")
            else None
            for a in self._arrays
        ]
        self._fds: dict[int, int] = {}

    def part(self, which: int, lo: int, hi: int, stash: Any) -> np.ndarray:
        """Postings [lo, hi) of the docs (0: int32 rows within the segment) or the values (1: tf
        or score): a view of the map, or what pread put in `stash(n, dtype)`."""
        view = self._views[which]
        if self._files[which] is None:
            return view[lo:hi]
        return self._pread(which, lo, hi, stash(hi - lo, view.dtype))

    def _pread(self, which: int, lo: int, hi: int, into: np.ndarray) -> np.ndarray:
        path, base = self._files[which]  # type: ignore[misc]
        fd = self._fds.get(which)
        if fd is None:
            fd = self._fds[which] = os.open(path, os.O_RDONLY)
            weakref.finalize(self, os.close, fd)
        size = (hi - lo) * into.dtype.itemsize
        if size and os.preadv(fd, [into.data.cast("B")], base + lo * into.dtype.itemsize) != size:
            raise CorruptIndexError(f"index file {Path(path).name} is truncated; {REBUILD}")
        return into


class Scratch:
    """Buffers a view reuses from query to query: fresh memory costs a page fault per 4 KiB on
    first touch (several microseconds each on a virtual machine), more than the arithmetic."""

    def __init__(self, n_rows: int) -> None:
        self.acc = np.zeros(n_rows)  # partial sums per row; all zero between queries
        self.mark = np.full(n_rows, -1, dtype=np.int64)  # a row's candidate index; -1 between
        self.stamp = np.zeros(n_rows, dtype=np.int64)  # any values (see `distinct`)
        self.flags = np.zeros(n_rows, dtype=np.uint8)  # rows asked about; zero between queries
        self.lock = threading.Lock()
        self._buffers: dict[str, np.ndarray] = {}

    def get(self, name: str, n: int, dtype: Any = np.int64) -> np.ndarray:
        buf = self._buffers.get(name)
        if buf is None or len(buf) < n or buf.dtype != np.dtype(dtype):
            size = max(n, 2 * len(buf) if buf is not None else 0, 4096)
            buf = self._buffers[name] = np.empty(size, dtype=dtype)
        return buf[:n]

    def ramp(self, n: int) -> np.ndarray:
        buf = self._buffers.get("ramp")
        if buf is None or len(buf) < n:
            buf = self._buffers["ramp"] = np.arange(
                max(n, 2 * len(buf) if buf is not None else 0, 4096)
            )
        return buf[:n]

    def compress(self, name: str, keep: np.ndarray, values: np.ndarray) -> np.ndarray:
        out = self.get(name, int(np.count_nonzero(keep)), values.dtype)
        np.compress(keep, values, out=out)
        return out

    def distinct(self, name: str, rows: np.ndarray) -> np.ndarray:
        """`rows` without repeats (in no particular order): each row's slot in `stamp` is
        written with the position of one of its copies, and only that copy is kept."""
        ramp = self.ramp(len(rows))
        self.stamp[rows] = ramp
        got = np.take(self.stamp, rows, out=self.get("got", len(rows)))
        return self.compress(name, np.equal(got, ramp, out=self.get("same", len(rows), bool)), rows)


class TopN:
    """One query's pruned scoring over the sources (every row of the segments laid end to end,
    dead ones included). Partial sums live in `scratch.acc`: -inf marks a row that may not be
    returned (dead, or outside `eligible`), +inf a row scored in full whatever its sum (`also`,
    once the pruning starts).

    Every posting of the query is read once, into the arena, term after term in decreasing
    order of bound (a batch of terms is a slice); the terms scored in full are scored there, the
    postings the race keeps of the others are copied to the race's own arena and scored there."""

    def __init__(
        self,
        sources: Sequence[Source],
        norm: np.ndarray | None,  # None: the values are precomputed scores (one segment)
        terms: Terms,
        scratch: Scratch,
        eligible: np.ndarray | None,
    ) -> None:
        self.sources, self.norm, self.q, self.s = sources, norm, terms, scratch
        self.eligible = eligible
        m = len(terms.weights)
        bound = terms.weights.astype(np.float64) * terms.idf.astype(np.float64) * (K1 + 1)
        self.bound = bound * (1 + MARGIN)
        self.order = np.argsort(-self.bound, kind="stable").tolist()
        self.rest = np.zeros(m + 1)  # rest[k]: the bounds of the terms order[k:]
        self.rest[:m] = np.cumsum(self.bound[self.order][::-1])[::-1]
        sizes = [sum(hi - lo for _, lo, hi in terms.spans[t]) for t in self.order]
        self.starts = np.zeros(m + 1, dtype=np.int64)  # of order[k]'s postings in the arena
        np.cumsum(sizes, out=self.starts[1:])
        self.total = int(self.starts[-1])
        self.cat = scratch.get("cat", self.total)  # row (segments laid end to end)
        self.val = scratch.get("val", self.total, np.float32)  # tf, or the precomputed score
        self.contrib = scratch.get("contrib", self.total, np.float32)
        self.full = 0  # arena[:full]: scored in full
        self.race: list[Range] = []  # (term, first, end) of what the race kept, in race_*
        self.race_end = 0
        self._stashed: dict[str, int] = {}
        self._load()

    # -- reading and scoring postings -------------------------------------------------------------
    def _stash(self, n: int, dtype: Any) -> np.ndarray:
        name = f"raw_{np.dtype(dtype).name}"
        at = self._stashed.get(name, 0)
        self._stashed[name] = at + n
        return self.s.get(name, self.total, dtype)[at : at + n]

    def _load(self) -> None:
        """Every posting of the query into the arena: one copy per array whatever the number of
        (term, segment) pairs, then each pair's row offset."""
        docs, values, shifts = [], [], []
        for t in self.order:
            for seg, lo, hi in self.q.spans[t]:
                source = self.sources[seg]
                docs.append(source.part(0, lo, hi, self._stash))
                values.append(source.part(1, lo, hi, self._stash))
                shifts.append(source.offset)
        np.concatenate(docs, out=self.cat)
        np.concatenate(values, out=self.val)
        if not any(shifts):
            return
        if len(shifts) * 1024 < self.total:  # long spans: shift each
            pos = 0
            for part, shift in zip(docs, shifts, strict=True):
                if shift:
                    self.cat[pos : pos + len(part)] += shift
                pos += len(part)
            return
        # Many short spans: each posting's offset as a running sum of the changes.
        step = self.s.get("shift", self.total)
        step.fill(0)
        ends = np.cumsum([len(part) for part in docs])
        change = np.diff(np.asarray(shifts, dtype=np.int64), prepend=0)
        step[np.concatenate(([0], ends[:-1]))] = change
        np.cumsum(step, out=step)
        self.cat += step

    def _score(
        self, cat: np.ndarray, val: np.ndarray, out: np.ndarray, ranges: list[Range]
    ) -> None:
        """out = each posting's contribution (the reference's float32 arithmetic, in its order)
        for postings laid out term by term as `ranges` says, and into the sums."""
        q = self.q
        if self.norm is None:  # the precomputed score x the weight
            for t, x, y in ranges:
                np.multiply(val[x:y], q.weights[t], out=out[x:y])
        else:
            for t, x, y in ranges:
                np.multiply(val[x:y], q.idf[t], out=out[x:y])  # idf * tf
            out *= K1 + 1
            tmp = np.take(self.norm, cat, out=self.s.get("tmp", len(cat), np.float32), mode="clip")
            tmp += val  # tf + norm
            out /= tmp
            for t, x, y in ranges:
                out[x:y] *= q.weights[t]
        wide = self.s.get("wide", len(out), np.float64)
        np.copyto(wide, out)
        np.add.at(self.s.acc, cat, wide)

    def _ranges(self, k: int, stop: int, base: int) -> list[Range]:
        starts = self.starts
        return [
            (self.order[i], int(starts[i]) - base, int(starts[i + 1]) - base)
            for i in range(k, stop)
        ]

    def _sums(self, rows: np.ndarray, name: str = "sums") -> np.ndarray:
        return np.take(self.s.acc, rows, out=self.s.get(name, len(rows), np.float64), mode="clip")

    def _at_least(self, rows: np.ndarray, floor: float, name: str) -> np.ndarray:
        keep = np.greater_equal(self._sums(rows), floor, out=self.s.get("keep", len(rows), bool))
        return self.s.compress(name, keep, rows)

    def _raise(
        self, pool: np.ndarray, new: np.ndarray, theta: float, n: int
    ) -> tuple[float, np.ndarray]:
        """theta from the pool (every row whose sum can reach theta) and the rows `new` just
        added to: (new theta, new pool)."""
        floor = theta * (1 - MARGIN) / (1 + MARGIN)
        picked = self._at_least(new, floor, "picked")  # -inf rows never pass
        rows = np.concatenate([pool, picked]) if len(pool) else picked
        rows = self.s.distinct("rows", rows)
        values = self._sums(rows)
        infinite = int(np.count_nonzero(values == np.inf))  # `also` rows: not scores
        if len(values) >= n + infinite and n > 0:
            values.partition(len(values) - n - infinite)
            theta = max(theta, float(values[len(values) - n - infinite]))
        floor = theta * (1 - MARGIN) / (1 + MARGIN)
        return theta, self._at_least(rows, floor, "pool").copy()

    # -- the search -------------------------------------------------------------------------------
    def run(
        self, n: int, also: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(candidates, their exact scores, the candidates + `also` sorted, their coverage):
        every row of the true top n is a candidate."""
        s, rest, starts = self.s, self.rest, self.starts
        m = len(self.order)
        if self.eligible is not None:
            np.copyto(s.acc, -np.inf, where=~self.eligible)
        theta, pool, done = 0.0, np.zeros(0, dtype=np.int64), 0
        target = max(self.total // FIRST_BATCH, 1)

        def beaten(k: int) -> bool:  # the terms order[k:] cannot lift an unseen row to theta
            return bool(rest[k] * (1 + MARGIN) < theta * (1 - MARGIN))

        while done < m and not beaten(done):  # every posting of the strongest terms
            stop = done + 1
            while stop < m and starts[stop] - starts[done] < target and not beaten(stop):
                stop += 1
            a, b = int(starts[done]), int(starts[stop])
            self._score(
                self.cat[a:b], self.val[a:b], self.contrib[a:b], self._ranges(done, stop, a)
            )
            self.full = b
            theta, pool = self._raise(pool, self.cat[a:b], theta, n)
            done, target = stop, 2 * b
        if done < m:
            s.acc[also] = np.inf
            while done < m:  # the rest only for the rows still in the race
                stop = done + 1
                while stop < m and starts[stop] - starts[done] < self.total // (4 * FIRST_BATCH):
                    stop += 1
                floor = theta * (1 - MARGIN) / (1 + MARGIN) - rest[done]
                a, b = int(starts[done]), int(starts[stop])
                sums = self._sums(self.cat[a:b])
                kept = self._keep(
                    np.greater_equal(sums, floor, out=s.get("keep", b - a, bool)), done, stop
                )
                theta, pool = self._raise(pool, kept, theta, n)
                done = stop
        # The race's last field, and the `also` rows (their sums were set aside: +inf).
        seen = np.union1d(pool, also)
        cands = seen if self.eligible is None else seen[self.eligible[seen]]
        return self._exact(cands, seen)

    def _keep(self, keep: np.ndarray, k: int, stop: int) -> np.ndarray:
        """Copy the postings `keep` selects of terms order[k:stop] to the race's arena, score
        them; returns their rows."""
        s = self.s
        a, b = int(self.starts[k]), int(self.starts[stop])
        counts = np.add.reduceat(keep, (self.starts[k:stop] - a), dtype=np.int64).tolist()
        x = self.race_end
        y = x + sum(counts)
        cat = s.get("race_cat", self.total)
        val = s.get("race_val", self.total, np.float32)
        out = s.get("race_contrib", self.total, np.float32)
        np.compress(keep, self.cat[a:b], out=cat[x:y])
        np.compress(keep, self.val[a:b], out=val[x:y])
        ranges, at = [], 0
        for i, count in zip(range(k, stop), counts, strict=True):
            if count:
                ranges.append((self.order[i], at, at + count))
                at += count
        self._score(cat[x:y], val[x:y], out[x:y], ranges)
        self.race.extend((t, x + i, x + j) for t, i, j in ranges)
        self.race_end = y
        return cat[x:y]

    def coverage(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """No top rows: the coverage of `rows` (sorted) only."""
        s = self.s
        s.flags[rows] = 1
        hit = np.take(s.flags, self.cat, out=s.get("x_hit", self.total, np.uint8), mode="clip")
        s.flags[rows] = 0
        self._keep(hit.view(bool), 0, len(self.order))
        return self._exact(rows[:0], rows)

    # -- exact sums -------------------------------------------------------------------------------
    def _exact(
        self, cands: np.ndarray, seen: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Exact scores of `cands` and coverage of `seen` (sorted, holds cands) from every
        posting kept of those rows, summed in query-term order."""
        s = self.s
        m = len(self.order)
        # Where the postings of `seen` are: (term, column, contribution) of each.
        s.flags[seen] = 1
        parts = []
        full = self._ranges(0, len(self.order), 0)
        race_cat = s.get("race_cat", self.total)[: self.race_end]
        race_contrib = s.get("race_contrib", self.total, np.float32)[: self.race_end]
        for cat, contrib, ranges in (
            (self.cat[: self.full], self.contrib[: self.full], full),
            (race_cat, race_contrib, self.race),
        ):
            if not len(cat):
                continue
            hit = np.take(s.flags, cat, out=s.get("x_hit", len(cat), np.uint8), mode="clip")
            pos = np.flatnonzero(hit)
            starts = np.fromiter((x for _, x, _ in ranges), dtype=np.int64, count=len(ranges))
            owner = np.fromiter((t for t, _, _ in ranges), dtype=np.int64, count=len(ranges))
            parts.append(
                (owner[np.searchsorted(starts, pos, side="right") - 1], cat[pos], contrib[pos])
            )
        s.flags[seen] = 0
        term = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
        col = np.searchsorted(seen, np.concatenate([p[1] for p in parts])) if parts else term
        value = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0, np.float32)
        bm25, coverage = np.zeros(len(seen), np.float32), np.zeros(len(seen), np.float32)
        step = max(1, EXACT_CELLS // max(m, 1))
        for a in range(0, len(seen), step):  # blocks of rows bound the (terms x rows) tables
            inside = (col >= a) & (col < a + step)
            bm25[a : a + step], coverage[a : a + step] = self._sums_of(
                term[inside], col[inside] - a, value[inside], min(step, len(seen) - a)
            )
        if self.eligible is not None or 4 * (self.full + self.race_end) > len(s.acc):
            s.acc.fill(0)
        else:
            s.acc[self.cat[: self.full]] = 0
            s.acc[race_cat] = 0
            s.acc[seen] = 0  # `also` rows: +inf
        return cands, bm25[np.searchsorted(seen, cands)], seen, coverage

    def _sums_of(
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
