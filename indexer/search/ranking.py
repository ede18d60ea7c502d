"""Ranking: candidates from BM25, the dense index and exact definitions, fused (RRF),
reranked (indexer/search/rerank.py), scored with confidence and cut adaptively."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .arrays import stable_order
from .fusion import confidence, recency_score, rrf
from .rerank import file_evidence, rerank, saturate

if TYPE_CHECKING:
    from ..api import Index
    from .query import Query


def rank(
    index: Index,
    q: Query,
    k: int,
    cut: bool = True,
    retrievers: tuple[str, ...] = ("bm25", "dense"),
    allowed: np.ndarray | None = None,
) -> list[tuple[int, dict[str, float]]]:
    """BM25, dense and exact-definition candidates fused by RRF, reranked, scored with
    confidence and cut adaptively; `allowed` (a row mask) applies search filters."""
    cfg = index.fusion
    if len(index) == 0:
        return []  # an empty index (nothing indexable): FAISS cannot search for 0 results
    index.lexical.new_query()
    n_cand = min(int(cfg["candidates"]), len(index))
    kind = q.kind(int(cfg["long_query_words"]))
    weights = cfg["retriever_weights"][kind]

    boosts = q.term_weights(float(cfg["query"]["salient"]), float(cfg["query"]["prose"]))
    single = len(retrievers) == 1  # a retriever alone (ablations) keeps its full weight
    w_bm25 = 1.0 if single else float(weights["bm25"])
    w_dense = 1.0 if single else float(weights["dense"])
    dense_terms = q.dense
    if cfg["query"]["dense_salient"] and q.salient_dense:
        dense_terms = q.salient_dense  # a report's blur of prose hides its subject
    qvec = index.vectors.embed_terms(dense_terms)
    top_dense = np.zeros(0, dtype=np.int64)
    dense_sims = np.zeros(0, dtype=np.float32)
    # A dense list with no weight changes no rank: skip the scan (confidence still gets
    # every candidate's cosine below).
    if qvec.any() and "dense" in retrievers and w_dense > 0:
        dense_sims, top_dense = index.dense.search(qvec, n_cand)
        if allowed is not None:  # filters: only the allowed part of the dense top-N
            top_dense, dense_sims = (
                top_dense[allowed[top_dense]],
                dense_sims[allowed[top_dense]],
            )

    # Names BM25 cannot see (`g`, one letter) and exact definitions of a symbol query.
    none = np.zeros(0, dtype=np.int64)
    exact = index.defining_rows(q.identifiers, n_cand) if q.symbol_like else none
    w_title = float(cfg["query"]["title"])
    title = none
    if "bm25" in retrievers and q.title_lexical and w_title > 0 and not single:
        # A report's title is a short question inside it: its own BM25 list.
        title = index.lexical.top(q.title_lexical, {}, n_cand, allowed).rows
    lexical = q.lexical
    common = float(cfg["query"]["common_df"])
    if kind == "long" and common > 0:  # a report's common words: most postings, little score
        lexical = index.lexical.without_common(lexical, common)
    # BM25's top rows, pruned (indexer/index/lexical_topk.py); a pruned search knows the
    # keyword coverage of every row the lists above may bring in at once.
    bm25 = index.lexical.top(
        lexical, boosts, n_cand, allowed, also=np.concatenate([exact, title, top_dense])
    )
    top_bm25 = bm25.rows
    lists: list[tuple[np.ndarray, float]] = []
    if "bm25" in retrievers:
        lists.append((top_bm25, w_bm25))
        if len(exact):
            lists.append((exact, 1.0))
        if len(title):
            lists.append((title, w_title))
    if "dense" in retrievers:
        lists.append((top_dense, w_dense))
    rows, scores = rrf(lists, float(cfg["rrf_k"]))
    if not len(rows):
        return []
    similarity = candidate_similarities(index, rows, top_dense, dense_sims, qvec)

    scores = file_evidence(index, rows, rerank(index, q, rows, scores))
    order = np.argsort(-scores, kind="stable")
    rows, scores, similarity = rows[order], scores[order], similarity[order]
    graph_cfg = cfg["graph"]
    graphed = graph_cfg["expand"] or graph_cfg["ppr"] or graph_cfg["file_boost"]
    rule = cfg["threshold"]
    relative_cut = cut and float(rule["relative"]) > 0
    # Only the first k rows are returned unless the graph reorders, a filter drops or a
    # relative cut compares rows below them: then the rest need no order (nor confidence).
    head = None if graphed or allowed is not None or relative_cut else k
    # The best similarity any candidate has (the cut below tests it): the rows beyond the head
    # count with the similarities known now; a row whose similarity is read later is in it.
    known_best = float(np.fmax.reduce(similarity, initial=0.0)) if head is not None else 0.0
    rows, scores, similarity = saturate(index, rows, scores, similarity, head)
    if graphed:
        from ..index.graph.rank import graph_rerank  # only when enabled: the graph costs a resolve

        read_similarities(index, rows, similarity, qvec, len(rows))
        rows, scores, similarity = graph_rerank(index, rows, scores, similarity, graph_cfg)
    if allowed is not None:  # filters hold for every candidate source (exact names, graph)
        keep = allowed[rows]
        rows, scores, similarity = rows[keep], scores[keep], similarity[keep]
        if not len(rows):
            return []

    # Only the rows returned need their similarity and keyword coverage (the others' count
    # as 0: nothing reads them), unless a relative cut compares them all.
    needed = len(rows) if relative_cut else k
    read_similarities(index, rows, similarity, qvec, needed)
    keyword = np.zeros(len(rows), dtype=np.float32)
    keyword[:needed] = bm25.coverage(rows[:needed])
    recency = recency_score(
        index._file_times[index._chunk_file[rows]],
        int(index.manifest["commit_time"]),
        float(cfg["recency_half_life_days"]),
    )
    conf = confidence(similarity, keyword, recency, cfg)
    if cut:
        if (
            max(float(similarity.max(initial=0)), known_best) < rule["min_similarity"]
            and len(top_bm25) + len(exact) == 0
        ):
            return []
        keep = conf >= rule["relative"] * float(conf[: max(k, 1)].max(initial=0))
        keep[: int(rule["min_results"])] = True
        rows, scores, similarity = rows[keep], scores[keep], similarity[keep]
        keyword, recency, conf = keyword[keep], recency[keep], conf[keep]
    out = []
    for i in range(min(k, len(rows))):
        out.append(
            (
                int(rows[i]),
                {
                    "score": float(scores[i]),
                    "confidence": float(conf[i]),
                    "similarity": float(similarity[i]),
                    "keyword": float(keyword[i]),
                    "recency": float(recency[i]),
                },
            )
        )
    return out


def candidate_similarities(
    index: Index, rows: np.ndarray, top_dense: np.ndarray, dense_sims: np.ndarray, qvec: np.ndarray
) -> np.ndarray:
    """Cosine of every candidate the dense list has; the others are NaN until
    `read_similarities` reads their stored vectors (a row's codes cost a read)."""
    if not qvec.any():
        return np.zeros(len(rows), dtype=np.float32)
    similarity = np.full(len(rows), np.nan, dtype=np.float32)
    if len(top_dense):
        order = stable_order(top_dense)  # (distinct rows: any sort gives this order)
        ordered = top_dense[order]  # (searchsorted's `sorter` is slower than this copy)
        pos = np.minimum(ordered.searchsorted(rows), len(order) - 1)
        known = ordered[pos] == rows
        similarity[known] = dense_sims[order[pos[known]]]
    return similarity


def read_similarities(
    index: Index, rows: np.ndarray, similarity: np.ndarray, qvec: np.ndarray, first: int
) -> None:
    """Fill in the similarities of the first `first` rows from their stored vectors; the rest
    not read count as 0 (nothing reads them)."""
    head = similarity[:first]
    missing = np.flatnonzero(np.isnan(head))
    if len(missing):
        # Row by row (einsum's own loop): a row's value does not depend on which others are
        # read with it, as a BLAS product's blocking may make it.
        head[missing] = np.einsum("ij,j->i", index.dense.reconstruct(rows[missing]), qvec)
    similarity[np.isnan(similarity)] = 0.0
