"""BM25 over code-aware terms, stored as term-major postings with precomputed scores.

The layout is the one bm25s uses (a sparse term x document score matrix), kept in our own three
.npy arrays plus a JSON vocabulary so that loading needs nothing but numpy and executes no code.
A query is one `bincount` over the postings of its terms.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

K1 = 1.2
B = 0.75


@dataclass
class LexicalIndex:
    vocab: dict[str, int]
    indptr: np.ndarray  # int64, len(vocab)+1
    docs: np.ndarray  # int32 document ids of the postings
    scores: np.ndarray  # float32 BM25 contribution of the term in that document
    idf: np.ndarray  # float32 per term
    n_docs: int

    @classmethod
    def build(cls, documents: Sequence[Sequence[str]]) -> LexicalIndex:
        n_docs = len(documents)
        vocab: dict[str, int] = {}
        term_ids: list[int] = []
        doc_ids: list[int] = []
        tfs: list[int] = []
        lengths = np.zeros(n_docs, dtype=np.float32)
        for doc, terms in enumerate(documents):
            counts = Counter(terms)
            lengths[doc] = len(terms)
            for term, tf in counts.items():
                tid = vocab.setdefault(term, len(vocab))
                term_ids.append(tid)
                doc_ids.append(doc)
                tfs.append(tf)
        t = np.asarray(term_ids, dtype=np.int64)
        d = np.asarray(doc_ids, dtype=np.int32)
        f = np.asarray(tfs, dtype=np.float32)
        order = np.argsort(t, kind="stable")
        t, d, f = t[order], d[order], f[order]
        df = np.bincount(t, minlength=len(vocab)).astype(np.float32)
        idf = np.log1p((n_docs - df + 0.5) / (df + 0.5)).astype(np.float32)
        avgdl = float(lengths.mean()) if n_docs else 1.0
        norm = K1 * (1 - B + B * lengths[d] / max(avgdl, 1e-9))
        scores = (idf[t] * f * (K1 + 1) / (f + norm)).astype(np.float32)
        indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(df.astype(np.int64), out=indptr[1:])
        return cls(vocab, indptr, d, scores, idf, n_docs)

    def query_weights(self, terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Known term ids and their weights (1 + log of the term's count in the query)."""
        counts = Counter(t for t in terms if t in self.vocab)
        ids = np.fromiter((self.vocab[t] for t in counts), dtype=np.int64, count=len(counts))
        weights = np.fromiter(
            (1.0 + math.log(c) for c in counts.values()), dtype=np.float32, count=len(counts)
        )
        return ids, weights

    def score(self, terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(BM25 score per document, idf-weighted fraction of query terms each document has)."""
        ids, weights = self.query_weights(terms)
        all_terms = len(set(terms))
        if len(ids) == 0:
            zeros = np.zeros(self.n_docs, dtype=np.float32)
            return zeros, zeros
        starts, ends = self.indptr[ids], self.indptr[ids + 1]
        lens = ends - starts
        idx = np.concatenate([np.arange(s, e) for s, e in zip(starts, ends, strict=True)])
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
        terms = sorted(self.vocab, key=self.vocab.__getitem__)
        (directory / "bm25_vocab.json").write_text(
            json.dumps({"n_docs": self.n_docs, "terms": terms}), encoding="utf-8"
        )

    @classmethod
    def load(cls, directory: Path) -> LexicalIndex:
        meta = json.loads((directory / "bm25_vocab.json").read_text(encoding="utf-8"))
        vocab = {t: i for i, t in enumerate(meta["terms"])}
        return cls(
            vocab,
            np.load(directory / "bm25_indptr.npy", allow_pickle=False),
            np.load(directory / "bm25_docs.npy", allow_pickle=False, mmap_mode="r"),
            np.load(directory / "bm25_scores.npy", allow_pickle=False, mmap_mode="r"),
            np.load(directory / "bm25_idf.npy", allow_pickle=False),
            int(meta["n_docs"]),
        )


FILES = ("bm25_indptr.npy", "bm25_docs.npy", "bm25_scores.npy", "bm25_idf.npy", "bm25_vocab.json")
