"""A BM25 search's results (`LexicalHits`), and a search begun and finished later
(`PendingTop`): a query with few postings is scored at once, and the rows whose keyword coverage
the ranking also needs are added when they are known (a dense search run meanwhile in another
thread, indexer/search/ranking.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .lexical_topk import TopN
from .postings import Scratch, union

if TYPE_CHECKING:
    from .lexical_view import LexicalView


@dataclass
class LexicalHits:
    """The BM25 top rows of a query, and the keyword coverage of the rows the ranking reads."""

    rows: np.ndarray  # best first, every one with a positive score; ties in row order
    scores: np.ndarray  # float32, exactly LexicalView.score's
    seen: np.ndarray  # sorted rows whose coverage is known (rows + `also`)
    seen_coverage: np.ndarray
    view: LexicalView
    terms: Sequence[str]

    def coverage(self, rows: np.ndarray) -> np.ndarray:
        """Idf-weighted fraction of the query's terms each row has (LexicalView.score's)."""
        rows = np.asarray(rows, dtype=np.int64)
        pos = np.clip(np.searchsorted(self.seen, rows), 0, max(len(self.seen) - 1, 0))
        known = self.seen[pos] == rows if len(self.seen) else np.zeros(len(rows), dtype=bool)
        if known.all():
            return self.seen_coverage[pos]
        out = np.zeros(len(rows), dtype=np.float32)
        out[known] = self.seen_coverage[pos[known]]
        out[~known] = self.view.coverage(self.terms, rows[~known])
        return out


class PendingTop:
    """A `LexicalView.top` begun by `start`: `finish` (or `cancel`) exactly once. It holds the
    view's buffers (their lock) until then."""

    def __init__(
        self,
        view: LexicalView,
        terms: Sequence[str],
        n: int,
        also: np.ndarray,
        search: TopN | None,
        scratch: Scratch | None = None,
    ) -> None:
        self.view, self.terms, self.n, self.also, self.search = view, terms, n, also, search
        self.scratch = scratch  # the view's own buffers, locked: released by finish or cancel
        self.sums: tuple[np.ndarray, np.ndarray] | None = None  # a lean query's, from start

    def finish(self, also: np.ndarray | None = None) -> LexicalHits:
        """The hits, with the coverage of `also` too (global rows)."""
        rows = (
            self.also if also is None else np.concatenate([self.also, np.asarray(also, np.int64)])
        )
        view, search, n = self.view, self.search, self.n
        if search is None:  # no term of the query is indexed
            seen, none = union(rows), np.zeros(0, dtype=np.float32)
            return LexicalHits(
                np.zeros(0, np.int64), none, seen, np.zeros(len(seen), np.float32), view, self.terms
            )
        _, to_global, _ = view._laid_out
        if to_global is not None:
            rows = view.space.global_to_cat[rows]
        rows = union(rows)
        try:
            if n <= 0:  # (a coverage lookup is not a search)
                cands, scores, seen, coverage = search.coverage(rows)
            else:
                if self.sums is not None:
                    cands, scores, seen, coverage = search.lean_coverage(*self.sums, rows)
                else:
                    cands, scores, seen, coverage = search.run(n, rows)
                view.last_stats = {
                    "postings": search.total,
                    "scored": search.scored,
                    "looked_up": search.looked,
                }
        except BaseException:
            if self.scratch is not None:
                view._scratch = None  # its buffers may hold this query's partial sums
            raise
        finally:
            self._release()
        if to_global is not None:
            cands, seen = to_global[cands], to_global[seen]
            order = np.argsort(seen)
            seen, coverage = seen[order], coverage[order]
        positive = scores > 0
        cands, scores = cands[positive], scores[positive]
        if len(scores) > n > 0:  # the n best and every row tied with the n-th
            nth = np.partition(scores, len(scores) - n)[len(scores) - n]
            keep = scores >= nth
            cands, scores = cands[keep], scores[keep]
        best = np.lexsort((cands, -scores))[:n]
        return LexicalHits(cands[best], scores[best], seen, coverage, view, self.terms)

    def cancel(self) -> None:
        """Release the view's buffers, for a search that stops before `finish`."""
        if self.scratch is not None and self.sums is not None:
            self.view._scratch = None  # a lean query's sums are left in them
        self._release()

    def _release(self) -> None:
        scratch, self.scratch = self.scratch, None
        if scratch is not None:
            scratch.lock.release()
