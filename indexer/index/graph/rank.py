"""Graph signals in ranking (off by default: fusion.json "graph" weights are 0; see
docs/agents.md for the measurements): expansion to callers/callees, personalised PageRank and a
file boost. The graph is resolved from the index's facts when a search first needs it."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np

from ...errors import CorruptIndexError, IndexerError
from .codegraph import CodeGraph
from .model import EDGE_TYPES, SYMBOL_KINDS

_RANK_EDGES = ("CALLS", "IMPORTS", "INHERITS", "DEFINES")


def rows_of(
    graph: CodeGraph, fids: np.ndarray, chunk_file: np.ndarray, file_paths: Sequence[str]
) -> np.ndarray:
    """The node of every row from the index's columns (FAISS id and file of each row; no chunk
    decoded): its symbol, else its file."""
    from ..dense import faiss_id

    kinds = graph.columns["kind"]
    pairs = [(nid, i) for i, nid in enumerate(graph.ids) if kinds[i] in SYMBOL_KINDS]
    pairs += [(cid, graph.index[nid]) for cid, nid in graph.chunk_node.items()]
    keys = np.asarray([faiss_id(c) for c, _ in pairs], dtype=np.int64)
    values = np.asarray([i for _, i in pairs], dtype=np.int64)
    order = np.argsort(keys)
    keys, values = keys[order], values[order]
    file_nodes = np.asarray([graph.index.get(f"file:{p}", -1) for p in file_paths], dtype=np.int64)
    rows = file_nodes[chunk_file] if len(chunk_file) else np.zeros(0, dtype=np.int64)
    if len(keys) and len(fids):
        pos = np.clip(np.searchsorted(keys, fids), 0, len(keys) - 1)
        hit = keys[pos] == fids
        rows = np.where(hit, values[pos], rows)
    return rows.astype(np.int32)


def _adjacency(graph: CodeGraph) -> tuple[np.ndarray, np.ndarray]:
    from scipy import sparse

    kinds = graph.columns["kind"]
    n = len(graph.ids)
    e = graph.edges
    real = np.asarray([k in SYMBOL_KINDS or k == "file" for k in kinds], dtype=bool)
    wanted = np.isin(e[:, 2], [EDGE_TYPES.index(t) for t in _RANK_EDGES])
    keep = wanted & real[e[:, 0]] & real[e[:, 1]] if len(e) else wanted
    src, dst = e[keep, 0], e[keep, 1]
    adj = sparse.coo_matrix(
        (np.ones(2 * len(src), dtype=np.float32), (np.r_[src, dst], np.r_[dst, src])),
        shape=(n, n),
    ).tocsr()
    adj.sum_duplicates()
    return adj.indptr.astype(np.int64), adj.indices.astype(np.int32)


class GraphRanker:
    """Row -> node map and the transition matrix for PageRank, computed from `index.graph` (the
    whole graph resolved from the facts) the first time a search with graph signals needs them."""

    def __init__(self, index: Any) -> None:
        self.index = index
        n_rows = len(index)
        graph: CodeGraph = index.graph
        paths = [f["path"] for f in index.files]
        row_node = rows_of(graph, index._fids, index._chunk_file, paths)
        indptr, indices = _adjacency(graph)
        if len(row_node) != n_rows:
            raise CorruptIndexError("the code graph does not match the chunks; run `indexer build`")
        self.row_node = row_node.astype(np.int64)
        # Plain numpy (scipy.sparse alone costs ~50-90 ms of import on a cold search).
        self.n_nodes = len(indptr) - 1
        degree = np.diff(indptr)
        self.inv_degree = 1.0 / np.maximum(degree, 1).astype(np.float64)
        self.neighbours = indices.astype(np.int64)
        self.owner = np.repeat(np.arange(self.n_nodes), degree)

    @cached_property
    def graph(self) -> CodeGraph:
        graph: CodeGraph = self.index.graph
        return graph

    @cached_property
    def node_rows(self) -> dict[int, list[int]]:
        kinds = self.graph.columns["kind"]
        out: dict[int, list[int]] = {}
        for row, node in enumerate(self.row_node.tolist()):
            if node >= 0 and kinds[node] != "file":
                out.setdefault(node, []).append(row)
        return out

    @cached_property
    def file_of_node(self) -> np.ndarray:
        g = self.graph
        return np.asarray(
            [g.index.get(f"file:{p}", -1) if p else -1 for p in g.columns["path"]],
            dtype=np.int64,
        )

    def ppr(self, seeds: dict[int, float], alpha: float = 0.5, iterations: int = 12) -> np.ndarray:
        """Personalised PageRank (restart probability 1 - alpha) from weighted seed nodes."""
        s = np.zeros(self.n_nodes, dtype=np.float64)
        for node, w in seeds.items():
            s[node] += w
        total = s.sum()
        if total <= 0:
            return s
        s /= total
        p = s.copy()
        for _ in range(iterations):
            # (A D^-1 p)[i] = sum over neighbours j of p[j] / degree[j]; A is symmetric.
            spread = np.bincount(
                self.owner,
                weights=(p * self.inv_degree)[self.neighbours],
                minlength=self.n_nodes,
            )
            p = (1 - alpha) * s + alpha * spread
        return p


def graph_rerank(
    index: Any,
    rows: np.ndarray,
    scores: np.ndarray,
    similarity: np.ndarray,
    cfg: dict[str, float],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Apply the enabled graph signals to a ranked candidate list (sorted by score):

    expand      callers/callees of the top `seeds` results join at expand x the seed's score
    ppr         score x (1 + ppr x PageRank from the top results, normalised to [0, 1])
    file_boost  score x (1 + file_boost x log1p(edges from the top results into the file))
    """
    ranker: GraphRanker | bool | None = getattr(index, "_graph_ranker", None)
    if ranker is None:
        try:
            ranker = GraphRanker(index)
        except IndexerError:  # a snapshot without a graph ranks as before, never fails
            ranker = False
        index._graph_ranker = ranker
    if not isinstance(ranker, GraphRanker):
        return rows, scores, similarity
    n_seeds = max(1, int(cfg.get("seeds", 5)))
    rows = rows.copy()
    scores = scores.astype(np.float64).copy()
    seed_nodes = {
        int(ranker.row_node[r]): float(s)
        for r, s in zip(rows[:n_seeds].tolist(), scores[:n_seeds].tolist(), strict=True)
        if ranker.row_node[r] >= 0
    }
    if cfg.get("file_boost", 0) > 0 and seed_nodes:
        pointed: dict[int, int] = {}
        for node in list(seed_nodes)[: 2 * n_seeds]:
            out = ranker.graph._edges(ranker.graph.ids[node], True)
            for dst, etype in out[:, [1, 2]].tolist():
                if etype in (EDGE_TYPES.index("CALLS"), EDGE_TYPES.index("IMPORTS")):
                    f = int(ranker.file_of_node[dst])
                    if f >= 0:
                        pointed[f] = pointed.get(f, 0) + 1
        if pointed:
            files = ranker.file_of_node[np.maximum(ranker.row_node[rows], 0)]
            boost = np.asarray([pointed.get(int(f), 0) for f in files.tolist()], dtype=np.float64)
            boost[ranker.row_node[rows] < 0] = 0
            scores *= 1.0 + float(cfg["file_boost"]) * np.log1p(boost)
    if cfg.get("ppr", 0) > 0 and seed_nodes:
        p = ranker.ppr(seed_nodes)
        nodes = ranker.row_node[rows]
        values = np.where(nodes >= 0, p[np.maximum(nodes, 0)], 0.0)
        top = values.max(initial=0.0)
        if top > 0:
            scores *= 1.0 + float(cfg["ppr"]) * values / top
    if cfg.get("expand", 0) > 0 and seed_nodes:
        present = set(rows.tolist())
        added: dict[int, float] = {}
        for node, seed_score in seed_nodes.items():
            if ranker.graph.columns["kind"][node] == "file":
                continue
            node_id = ranker.graph.ids[node]
            for way in ("callers", "callees"):
                for other, _, _ in ranker.graph.neighbours(node_id, way, 1):
                    for r in ranker.node_rows.get(ranker.graph.index[other], [])[:1]:
                        if r not in present:
                            added[r] = max(added.get(r, 0.0), float(cfg["expand"]) * seed_score)
        if added:
            rows = np.r_[rows, np.fromiter(added, dtype=np.int64, count=len(added))]
            scores = np.r_[scores, np.fromiter(added.values(), dtype=np.float64)]
            similarity = np.r_[similarity, np.zeros(len(added), dtype=similarity.dtype)]
    order = np.argsort(-scores, kind="stable")
    return rows[order], scores[order], similarity[order]
