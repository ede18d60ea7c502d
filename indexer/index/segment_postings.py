"""A segment's BM25 postings, merged from its three sources of rows (chunked now, finished by a
build worker, copied from a stored segment), and each posting's score under the segment's own
statistics."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .bm25_params import K1
from .lexical import postings_of
from .lexical_view import idf_of, row_norms
from .segment import Segment

MAX_TF = np.iinfo(np.uint16).max  # BM25 saturates long before


@dataclass
class Postings:
    """Postings sorted by (term, row) over a sorted vocabulary, and each row's length."""

    terms: list[str]
    indptr: np.ndarray
    docs: np.ndarray
    tfs: np.ndarray
    doc_lengths: np.ndarray


def merged_postings(
    fresh_terms: list[dict[str, int]],
    fresh_rows: list[int],
    built: list[tuple[int, Any]],
    copied_rows: Iterable[tuple[Segment, list[np.ndarray], list[int]]],
    n_rows: int,
) -> Postings:
    """The postings of a segment's rows, sorted by (term, row): `fresh_terms` of the rows
    `fresh_rows` (chunked now), `built` (first row, a worker's FileResult with file-local term
    ids) and `copied_rows` (a stored segment, its source rows, their first target rows)."""
    lengths = np.zeros(n_rows, dtype=np.float32)
    terms_new, docs_new, tfs_new, lengths_new = postings_of(fresh_terms)
    rows_new = np.asarray(fresh_rows, dtype=np.int64)
    if len(rows_new):
        docs_new = rows_new[docs_new]
        lengths[rows_new] = lengths_new
    vocab_set = set(terms_new)
    for start, r in built:  # worker-made postings: file-local term ids
        vocab_set.update(r.terms)
        lengths[start : start + len(r.doc_lengths)] = r.doc_lengths
    copied = []
    for segment, sources, targets in copied_rows:
        src_rows = np.concatenate(sources)
        new_of_old = np.full(segment.n_rows, -1, dtype=np.int64)
        new_of_old[src_rows] = np.concatenate(
            [np.arange(t, t + len(s)) for s, t in zip(sources, targets, strict=True)]
        )
        lengths[new_of_old[src_rows]] = np.asarray(segment.doc_lengths)[src_rows]
        indptr, docs, tfs = segment.postings
        term_ids = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
        keep = new_of_old[np.asarray(docs)] >= 0
        term_ids, kept_docs = term_ids[keep], new_of_old[np.asarray(docs)[keep]]
        used = np.unique(term_ids)
        names = [segment.terms[i] for i in used.tolist()]
        vocab_set.update(names)
        copied.append((used, names, term_ids, kept_docs, np.asarray(tfs)[keep]))
    vocab = sorted(vocab_set)
    ids = {t: i for i, t in enumerate(vocab)}
    # int32 term ids and rows: the order below is that of any integer type (pairs are unique)
    all_terms = [np.fromiter((ids[t] for t in terms_new), dtype=np.int32, count=len(terms_new))]
    all_docs = [docs_new.astype(np.int32)]
    all_tfs = [np.minimum(tfs_new, MAX_TF).astype(np.uint16)]
    for start, r in built:
        local = np.fromiter(map(ids.__getitem__, r.terms), dtype=np.int32, count=len(r.terms))
        all_terms.append(local[r.posting_terms])
        rows = np.arange(start, start + len(r.term_counts), dtype=np.int32)
        all_docs.append(np.repeat(rows, r.term_counts))
        all_tfs.append(r.posting_tfs)  # clipped to MAX_TF by the worker
    for used, names, term_ids, kept_docs, kept_tfs in copied:
        remap = np.zeros(int(used.max(initial=0)) + 1, dtype=np.int32)
        remap[used] = [ids[t] for t in names]
        all_terms.append(remap[term_ids])
        all_docs.append(kept_docs.astype(np.int32))
        all_tfs.append(kept_tfs.astype(np.uint16))
    term_ids = np.concatenate(all_terms)
    del all_terms
    docs = np.concatenate(all_docs)
    del all_docs
    if len(docs) < 2 or bool(np.all(docs[1:] >= docs[:-1])):
        # rows already in order (a build's segment): a stable sort by term alone gives the
        # (term, row) order, in one pass instead of two
        order = np.argsort(term_ids, kind="stable")
    else:
        order = np.lexsort((docs, term_ids))
    indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(np.bincount(term_ids, minlength=len(vocab)), out=indptr[1:])
    return Postings(
        terms=vocab,
        indptr=indptr,
        docs=docs[order].astype(np.int32),
        tfs=np.concatenate(all_tfs)[order],
        doc_lengths=lengths,
    )


def own_scores(
    indptr: np.ndarray, docs: np.ndarray, tfs: np.ndarray, lengths: np.ndarray
) -> np.ndarray:
    """Each posting's BM25 contribution with this segment's own statistics: what the reader
    uses while the segment is the whole index (the arithmetic of lexical_view, bit for bit)."""
    n_docs = len(lengths)
    term_idf = idf_of(n_docs, np.diff(indptr))
    posting_idf = np.repeat(term_idf, np.diff(indptr))
    tf = np.asarray(tfs, dtype=np.float32)
    return np.asarray(
        posting_idf * tf * (K1 + 1) / (tf + row_norms(lengths)[docs]), dtype=np.float32
    )
