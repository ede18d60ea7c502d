"""BM25 over every live segment, scored at query time with global statistics.

Segments store raw term frequencies and document lengths (and, for speed, each posting's score
with the segment's own statistics, used while one segment is the whole index). Otherwise a query
computes, for its own terms only, the document frequency over live postings of every segment,
the idf from the live row count, and each posting's BM25 contribution with the live rows'
average length: the scores a single index of the same rows gives, bit for bit (the same float32
arithmetic on the same values; a row's contributions are summed in query-term order whatever
segment holds it). `score` scores every posting (the reference); `top`, what a search asks, the
n best rows and the coverage of the rows the ranking reads (indexer/index/lexical_topk.py).
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from ..errors import CorruptIndexError
from .bm25_params import K1, B
from .columns import find_sorted
from .integrity import REBUILD
from .lexical_pass import LaterCoverage
from .lexical_topk import TopN
from .postings import PREAD_MIN, Scratch, Source, Terms, union
from .reader import RowSpace


def read_spans(array: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """array[start:start + len] of each span, end to end. A memory-mapped array is read with
    pread, not through its map, so the postings a query reads do not stay resident in the
    process (a long-lived one would otherwise end up holding every common term's pages)."""
    path = getattr(array, "filename", None)
    if path is None or len(array) < PREAD_MIN or not hasattr(os, "preadv"):
        # Positions of every posting of the spans, without a Python loop per span.
        before = np.cumsum(lens) - lens
        idx = np.arange(int(lens.sum()), dtype=np.int64) + np.repeat(starts - before, lens)
        return np.asarray(array[idx])
    item = array.dtype.itemsize
    out = np.empty(int(lens.sum()), dtype=array.dtype)
    view = out.data.cast("B")
    base = int(getattr(array, "offset", 0))
    fd = os.open(path, os.O_RDONLY)
    try:
        pos = 0
        for start, n in zip(starts.tolist(), lens.tolist(), strict=True):
            size = n * item
            if size and os.preadv(fd, [view[pos : pos + size]], base + start * item) != size:
                raise CorruptIndexError(f"index file {Path(path).name} is truncated; {REBUILD}")
            pos += size
    finally:
        os.close(fd)
    return out


# Terms a view keeps the spans of between searches (~300 bytes each; the bench's 64 queries
# look up ~5k at 163k chunks, a server's varied queries many more).
TERMS_KEPT = 1 << 14


def idf_of(n_docs: int, df: np.ndarray) -> np.ndarray:
    df = df.astype(np.float32)
    return np.log1p((n_docs - df + 0.5) / (df + 0.5)).astype(np.float32)


def row_norms(lengths: np.ndarray) -> np.ndarray:
    """K1 * (1 - B + B * length / average length) of every row."""
    avgdl = float(lengths.mean()) if len(lengths) else 1.0
    return np.asarray(K1 * (1 - B + B * lengths / max(avgdl, 1e-9)), dtype=np.float32)


@dataclass
class LexicalHits:
    """The BM25 top rows of a query, and the keyword coverage of the rows the ranking reads."""

    rows: np.ndarray  # best first, every one with a positive score; ties in row order
    scores: np.ndarray  # float32, exactly LexicalView.score's
    seen: np.ndarray  # sorted rows whose coverage is known (rows + `also`)
    seen_coverage: np.ndarray
    view: LexicalView
    terms: Sequence[str]
    later: LaterCoverage | None = None  # the coverage of other rows, while the buffers last

    def coverage(self, rows: np.ndarray) -> np.ndarray:
        """Idf-weighted fraction of the query's terms each row has (LexicalView.score's)."""
        rows = np.asarray(rows, dtype=np.int64)
        pos = np.minimum(self.seen.searchsorted(rows), max(len(self.seen) - 1, 0))  # (>= 0)
        known = self.seen[pos] == rows if len(self.seen) else np.zeros(len(rows), dtype=bool)
        if known.all():
            return self.seen_coverage[pos]
        out = np.zeros(len(rows), dtype=np.float32)
        out[known] = self.seen_coverage[pos[known]]
        others = rows[~known]
        found = self.later(others) if self.later is not None else None
        out[~known] = found if found is not None else self.view.coverage(self.terms, others)
        return out


class LexicalView:
    def __init__(self, space: RowSpace, one_shot: bool = False) -> None:
        self.space = space
        self.one_shot = one_shot  # a process that answers one command (nothing to release)
        self.n_docs = space.n_rows
        self._idf: dict[str, float] = {}  # of the terms some live row has
        self._spans: dict[str, list[tuple[int, int, int]]] = {}
        self._df: dict[str, int] = {}
        self._scratch: Scratch | None = None
        self.last_stats: dict[str, int] = {}  # postings of the last `top` and how many it scored

    @cached_property
    def _rare(self) -> float:
        """The idf of a df=1 term (what an unknown query term counts in the coverage)."""
        return float(idf_of(self.n_docs, np.asarray([1]))[0])

    @property
    def doc_lengths(self) -> np.ndarray:
        """Terms per live row, read when asked (a search keeps the norms made from them)."""
        return np.asarray(self.space.gather("doc_lengths", keep=False), dtype=np.float32)

    @cached_property
    def norm(self) -> np.ndarray:
        return row_norms(self.doc_lengths)

    def new_query(self) -> None:
        """A search starts: a view that has looked up more than TERMS_KEPT terms forgets them
        (their spans, df and idf: caches only, so a search in another thread meanwhile only
        looks its terms up again), and a long-lived process does not grow with every term it
        is asked."""
        if len(self._spans) > TERMS_KEPT:
            self._spans.clear()
            self._df.clear()
            self._idf.clear()

    def spans(self, term: str) -> list[tuple[int, int, int]]:
        """(segment, first posting, end) of `term` in each segment that has it."""
        found = self._spans.get(term)
        return found if found is not None else self.look_up([term])[term]

    def look_up(self, terms: Sequence[str]) -> dict[str, list[tuple[int, int, int]]]:
        """The spans of `terms`; those not looked up yet are found all at once in each segment
        (a report's hundreds of terms: one batched search per segment, Lines.find_many)."""
        out: dict[str, list[tuple[int, int, int]]] = {}
        new = []
        for term in dict.fromkeys(terms):
            spans = self._spans.get(term)
            if spans is None:
                new.append(term)
            else:
                out[term] = spans
        if not new:
            return out
        found: dict[str, list[tuple[int, int, int]]] = {t: [] for t in new}
        for i, segment in enumerate(self.space.segments):
            at = find_sorted(segment.terms, new)
            where = [k for k, j in enumerate(at) if j is not None]
            if not where:
                continue
            ids = np.asarray([at[k] for k in where], dtype=np.int64)
            indptr = segment.postings[0]
            los, his = indptr[ids].tolist(), indptr[ids + 1].tolist()
            for k, lo, hi in zip(where, los, his, strict=True):
                found[new[k]].append((i, int(lo), int(hi)))
            if not self.one_shot:  # the spans are kept: their pages are not read again
                segment.release_vocabulary()
        self._spans.update(found)
        out.update(found)
        return out

    def df(self, term: str) -> int:
        """Live rows with `term` (counted once per view: a masked segment's postings are scanned
        for the dead rows on the first query that has the term)."""
        known = self._df.get(term)
        if known is not None:
            return known
        total = 0
        for i, lo, hi in self.spans(term):
            to_global = self.space.row_map(i)
            if isinstance(to_global, int) or self.space.dead_rows[i] == 0:
                total += hi - lo
            else:
                docs = self.space.segments[i].postings[1][lo:hi]
                total += int((to_global[docs] >= 0).sum())
        self._df[term] = total
        return total

    def without_common(self, terms: Sequence[str], share: float) -> list[str]:
        """`terms` without those more than `share` of the live rows have, as Elasticsearch's
        `cutoff_frequency` sets a long query's common words apart: they hold most of its
        postings and little of any score. Terms no row has stay (coverage counts them); if
        every term is common, all stay."""
        limit = share * self.n_docs
        self.look_up(terms)
        kept = [t for t in terms if self.df(t) <= limit]
        return kept if kept else list(terms)

    def term_idf(self, term: str) -> float | None:
        """The term's idf, or None when no live row has it."""
        known = self._idf.get(term)
        if known is None:
            df = self.df(term)
            if df == 0:
                return None
            known = self._idf[term] = float(idf_of(self.n_docs, np.asarray([df]))[0])
        return known

    def _weighted(
        self, counts: Mapping[str, int], boosts: Mapping[str, float] | None
    ) -> tuple[list[str], np.ndarray, np.ndarray]:
        """(terms, query weights, idf) of a query's known terms: 1 + log(count), boosted."""
        boosts = boosts or {}
        weights = np.fromiter(
            ((1.0 + math.log(c)) * boosts.get(t, 1.0) for t, c in counts.items()),
            dtype=np.float32,
            count=len(counts),
        )
        query = list(counts)
        return query, weights, idf_of(self.n_docs, np.asarray([self.df(t) for t in query]))

    def resolve(
        self, terms: Sequence[str], boosts: Mapping[str, float] | None = None
    ) -> Terms | None:
        """The query's known terms (query order) with their weights, idf and postings; None
        when no live row has any."""
        every = Counter(terms)  # first occurrences in query order, as the reference counts
        self.look_up(list(every))
        counts = {t: c for t, c in every.items() if self.term_idf(t) is not None}
        if not counts:
            return None
        query, weights, term_idf = self._weighted(counts, boosts)
        unknown = max(0, len(every) - len(query))
        total = float(term_idf.sum()) + unknown * self._rare
        return Terms(weights, term_idf, [self.spans(t) for t in query], total)

    # -- pruned top rows (indexer/index/lexical_topk.py) ------------------------------------------
    @cached_property
    def _sources(self) -> list[Source]:
        identity = self.space.identity  # one segment, nothing deleted: its own scores are global
        out = []
        for segment, offset in zip(
            self.space.segments, self.space.seg_offsets.tolist(), strict=False
        ):
            _, docs, tfs = segment.postings
            out.append(Source(docs, segment.scores if identity else tfs, int(offset)))
        return out

    @cached_property
    def _laid_out(self) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
        """(norm, global row, live) of every row of the segments laid end to end; norm None
        for one segment (its precomputed scores), the others None where rows are global."""
        space = self.space
        if space.identity:
            return None, None, None
        if space.concatenated:
            return self.norm, None, None
        to_global = space.cat_to_global
        live = to_global >= 0
        norm = np.ones(len(to_global), dtype=np.float32)
        norm[live] = self.norm[to_global[live]]
        return norm, to_global, live

    def top(
        self,
        terms: Sequence[str],
        boosts: Mapping[str, float] | None,
        n: int,
        allowed: np.ndarray | None = None,
        also: np.ndarray | None = None,
    ) -> LexicalHits:
        """The n best rows by BM25 among `allowed` (a row mask), as `top_rows(score(...), n)`
        gives them, without scoring every posting of the query's common terms; the hits give
        any row's coverage (`also`: rows the caller will ask about, known at once if pruned)."""
        also_rows = np.zeros(0, dtype=np.int64) if also is None else np.asarray(also, np.int64)
        query = self.resolve(terms, boosts)
        if query is None or self.n_docs == 0:
            rows, seen = np.zeros(0, dtype=np.int64), union(also_rows)
            none = np.zeros(0, dtype=np.float32)
            return LexicalHits(rows, none, seen, np.zeros(len(seen), np.float32), self, terms)
        norm, to_global, live = self._laid_out
        eligible = allowed
        if to_global is not None:
            if allowed is None:  # every live row (read only, as TopN reads it): made once
                eligible = live
            else:
                eligible = np.zeros(len(to_global), dtype=bool)
                eligible[self.space.global_to_cat] = allowed
            also_rows = self.space.global_to_cat[also_rows]
        also_rows = union(also_rows)
        if self._scratch is None:
            self._scratch = Scratch(int(self.space.seg_offsets[-1]))
        scratch = self._scratch
        owned = scratch.lock.acquire(blocking=False)  # else another thread searches this view
        try:
            search = TopN(
                self._sources,
                norm,
                query,
                scratch if owned else Scratch(scratch.n_rows),
                eligible,
                lean=n <= 0,  # a coverage look-up reads every posting in query order
            )
            cands, scores, seen, seen_coverage = (
                search.run(n, also_rows) if n > 0 else search.coverage(also_rows)
            )
            read_all = search.read_all
            to_cat = self.space.global_to_cat if to_global is not None else None
            later = LaterCoverage(read_all, to_cat) if read_all is not None else None
            if n > 0:  # (a coverage lookup is not a search)
                self.last_stats = {
                    "postings": search.total,
                    "scored": search.scored,
                    "looked_up": search.looked,
                }
        except BaseException:
            if owned:
                self._scratch = None  # its buffers may hold this query's partial sums
            raise
        finally:
            if owned:
                scratch.trim()
                scratch.lock.release()
        if to_global is not None:
            cands, seen = to_global[cands], to_global[seen]
            order = np.argsort(seen)
            seen, seen_coverage = seen[order], seen_coverage[order]
        positive = scores > 0
        cands, scores = cands[positive], scores[positive]
        if len(scores) > n > 0:  # the n best and every row tied with the n-th
            nth = np.partition(scores, len(scores) - n)[len(scores) - n]
            keep = scores >= nth
            cands, scores = cands[keep], scores[keep]
        best = np.lexsort((cands, -scores))[:n]
        return LexicalHits(cands[best], scores[best], seen, seen_coverage, self, terms, later)

    def coverage(self, terms: Sequence[str], rows: np.ndarray) -> np.ndarray:
        """score(terms)[1][rows], reading only what those rows need."""
        return self.top(terms, {}, 0, also=rows).coverage(rows)

    def score(
        self, terms: Sequence[str], boosts: Mapping[str, float] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(BM25 score per row, idf-weighted fraction of query terms each row has): every
        posting scored, the reference `top` equals."""
        self.look_up(terms)
        counts = Counter(t for t in terms if self.term_idf(t) is not None)
        all_terms = len(set(terms))
        if not counts:
            zeros = np.zeros(self.n_docs, dtype=np.float32)
            return zeros, zeros
        query, weights, term_idf = self._weighted(counts, boosts)
        docs_parts, score_parts, idf_parts = [], [], []
        for i, segment in enumerate(self.space.segments):
            where = [{s: (lo, hi) for s, lo, hi in self.spans(t)}.get(i) for t in query]
            present = [q for q, span in enumerate(where) if span is not None]
            if not present:
                continue
            spans = np.asarray([where[q] for q in present], dtype=np.int64).reshape(-1, 2)
            starts, lens = spans[:, 0], spans[:, 1] - spans[:, 0]
            _, seg_docs, seg_tfs = segment.postings
            docs = read_spans(seg_docs, starts, lens)
            posting_weights = np.repeat(weights[present], lens)
            posting_idf = np.repeat(term_idf[present], lens)
            to_global = self.space.local_to_global(i)
            if to_global is None:  # one segment, nothing deleted: its own scores are global
                scores = read_spans(segment.scores, starts, lens)
            else:
                docs = to_global[docs]
                tfs = np.asarray(read_spans(seg_tfs, starts, lens), dtype=np.float32)
                live = docs >= 0
                if not live.all():
                    docs, tfs = docs[live], tfs[live]
                    posting_weights, posting_idf = posting_weights[live], posting_idf[live]
                scores = posting_idf * tfs * (K1 + 1) / (tfs + self.norm[docs])
            docs_parts.append(docs)
            score_parts.append(scores * posting_weights)
            idf_parts.append(posting_idf)
        docs = np.concatenate(docs_parts) if len(docs_parts) > 1 else docs_parts[0]
        bm25 = np.bincount(
            docs,
            weights=np.concatenate(score_parts) if len(score_parts) > 1 else score_parts[0],
            minlength=self.n_docs,
        ).astype(np.float32)
        posting_idf = np.concatenate(idf_parts) if len(idf_parts) > 1 else idf_parts[0]
        # Terms no live row has still count in the denominator, at a df=1 term's idf.
        unknown = max(0, all_terms - len(query))
        top = float(idf_of(self.n_docs, np.asarray([1]))[0])
        total = float(term_idf.sum()) + unknown * top
        coverage = np.bincount(docs, weights=posting_idf, minlength=self.n_docs)
        return bm25, (coverage / max(total, 1e-9)).astype(np.float32)
