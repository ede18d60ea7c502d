"""BM25 over code-aware terms, stored as term-major postings with precomputed scores.

The layout is the one bm25s uses (a sparse term x document score matrix), kept in our own three
.npy arrays plus a JSON vocabulary so that loading needs nothing but numpy and executes no code.
A query is one `bincount` over the postings of its terms.
"""

from __future__ import annotations

import bisect
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from . import npy
from .bm25_params import K1 as K1
from .bm25_params import B as B


@dataclass
class LexicalIndex:
    terms: list[str]  # sorted; a term's id is its position
    indptr: np.ndarray  # int64, len(vocab)+1
    docs: np.ndarray  # int32 document ids of the postings (sorted by term, then document)
    scores: np.ndarray  # float32 BM25 contribution of the term in that document
    idf: np.ndarray  # float32 per term
    n_docs: int
    tfs: np.ndarray  # float32 term frequency of each posting (kept for incremental updates)
    doc_lengths: np.ndarray  # float32 terms per document

    @classmethod
    def build(cls, documents: Sequence[Sequence[str]]) -> LexicalIndex:
        terms, docs, tfs, lengths = postings_of(documents)
        vocab = sorted(set(terms))
        ids = {t: i for i, t in enumerate(vocab)}
        term_ids = np.fromiter((ids[t] for t in terms), dtype=np.int64, count=len(terms))
        order = np.lexsort((docs, term_ids))
        return cls.from_postings(vocab, term_ids[order], docs[order], tfs[order], lengths)

    @classmethod
    def from_postings(
        cls,
        vocab: Sequence[str],
        term_ids: np.ndarray,
        docs: np.ndarray,
        tfs: np.ndarray,
        doc_lengths: np.ndarray,
    ) -> LexicalIndex:
        """The index from postings sorted by (term, document). Full builds and incremental
        updates both end here, so equal postings give byte-identical indexes."""
        n_docs = len(doc_lengths)
        df = np.bincount(term_ids, minlength=len(vocab)).astype(np.float32)
        idf = np.log1p((n_docs - df + 0.5) / (df + 0.5)).astype(np.float32)
        avgdl = float(doc_lengths.mean()) if n_docs else 1.0
        norm = K1 * (1 - B + B * doc_lengths[docs] / max(avgdl, 1e-9))
        scores = (idf[term_ids] * tfs * (K1 + 1) / (tfs + norm)).astype(np.float32)
        indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(df.astype(np.int64), out=indptr[1:])
        return cls(
            list(vocab),
            indptr,
            docs.astype(np.int32),
            scores,
            idf,
            n_docs,
            tfs.astype(np.float32),
            doc_lengths.astype(np.float32),
        )

    @cached_property
    def vocab(self) -> dict[str, int]:
        """term -> id, built on first use (a search looks its few terms up by bisection)."""
        return {t: i for i, t in enumerate(self.terms)}

    def term_id(self, term: str) -> int | None:
        i = bisect.bisect_left(self.terms, term)
        return i if i < len(self.terms) and self.terms[i] == term else None

    def term_ids(self) -> np.ndarray:
        """Term id of every posting (the inverse of indptr)."""
        return np.repeat(np.arange(len(self.terms), dtype=np.int64), np.diff(self.indptr))

    def query_weights(
        self, terms: Sequence[str], boosts: Mapping[str, float] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Known term ids and their weights (1 + log of the term's count in the query, times
        the term's boost from query analysis, 1 if none)."""
        found = {t: self.term_id(t) for t in set(terms)}
        counts = Counter(t for t in terms if found[t] is not None)
        boosts = boosts or {}
        ids = np.fromiter((found[t] for t in counts), dtype=np.int64, count=len(counts))
        weights = np.fromiter(
            ((1.0 + math.log(c)) * boosts.get(t, 1.0) for t, c in counts.items()),
            dtype=np.float32,
            count=len(counts),
        )
        return ids, weights

    def score(
        self, terms: Sequence[str], boosts: Mapping[str, float] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(BM25 score per document, idf-weighted fraction of query terms each document has)."""
        ids, weights = self.query_weights(terms, boosts)
        all_terms = len(set(terms))
        if len(ids) == 0:
            zeros = np.zeros(self.n_docs, dtype=np.float32)
            return zeros, zeros
        starts = self.indptr[ids]
        lens = self.indptr[ids + 1] - starts
        # Positions of every posting of the query's terms, without a Python loop per term.
        before = np.cumsum(lens) - lens
        idx = np.arange(int(lens.sum()), dtype=np.int64) + np.repeat(starts - before, lens)
        docs = self.docs[idx]
        bm25 = np.bincount(
            docs, weights=self.scores[idx] * np.repeat(weights, lens), minlength=self.n_docs
        ).astype(np.float32)
        term_idf = self.idf[ids]
        # Terms unknown to the index still count in the denominator at the highest idf.
        unknown = max(0, all_terms - len(ids))
        total = float(term_idf.sum()) + unknown * float(self.idf.max(initial=1.0))
        coverage = np.bincount(docs, weights=np.repeat(term_idf, lens), minlength=self.n_docs)
        return bm25, (coverage / max(total, 1e-9)).astype(np.float32)

    # -- persistence -----------------------------------------------------------------------------
    def save(self, directory: Path) -> None:
        np.save(directory / "bm25_indptr.npy", self.indptr)
        np.save(directory / "bm25_docs.npy", self.docs)
        np.save(directory / "bm25_scores.npy", self.scores)
        np.save(directory / "bm25_idf.npy", self.idf)
        np.save(directory / "bm25_tfs.npy", self.tfs)
        np.save(directory / "bm25_doclen.npy", self.doc_lengths)
        terms = self.terms
        (directory / "bm25_vocab.json").write_text(
            json.dumps({"n_docs": self.n_docs, "terms": terms}), encoding="utf-8"
        )

    @classmethod
    def load(cls, directory: Path) -> LexicalIndex:
        meta = json.loads((directory / "bm25_vocab.json").read_text(encoding="utf-8"))
        vocab = meta["terms"]
        return cls(
            vocab,
            npy.load(directory / "bm25_indptr.npy"),
            npy.load(directory / "bm25_docs.npy", "r"),
            npy.load(directory / "bm25_scores.npy", "r"),
            npy.load(directory / "bm25_idf.npy"),
            int(meta["n_docs"]),
            npy.load(directory / "bm25_tfs.npy", "r"),
            npy.load(directory / "bm25_doclen.npy", "r"),
        )


def top_rows(scores: np.ndarray, n: int) -> np.ndarray:
    """Rows with a positive score, best first, at most n; ties keep row order.

    Equal to a stable argsort of every hit, but a long query hits most chunks: partitioning
    first sorts only the n best (and the rows tied with the n-th)."""
    hits = np.nonzero(scores > 0)[0]
    if len(hits) > n:
        values = scores[hits]
        nth = np.partition(values, len(values) - n)[len(values) - n]
        hits = hits[values >= nth]  # the n best plus every row tied with the n-th
    return hits[np.argsort(-scores[hits], kind="stable")][:n]


def postings_of(
    documents: Sequence[Sequence[str] | Mapping[str, int]], first_doc: int = 0
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """(term, document, term frequency) of every distinct term of every document (its terms,
    or their counts in first-seen order), and lengths."""
    terms: list[str] = []
    docs: list[int] = []
    tfs: list[int] = []
    lengths = np.zeros(len(documents), dtype=np.float32)
    for i, doc_terms in enumerate(documents):
        counts = doc_terms if isinstance(doc_terms, Mapping) else Counter(doc_terms)
        lengths[i] = sum(counts.values())
        terms.extend(counts)
        docs.extend([first_doc + i] * len(counts))
        tfs.extend(counts.values())
    return (terms, np.asarray(docs, dtype=np.int64), np.asarray(tfs, dtype=np.float32), lengths)
