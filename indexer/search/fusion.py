"""Fusion settings (artifacts/fusion.json), reciprocal rank fusion, confidence, adaptive cut."""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import IndexerError
from .arrays import stable_order, unique_first_inverse

DEFAULTS: dict[str, Any] = {
    "version": 1,
    "rrf_k": 60,
    "candidates": 200,
    # Retriever weights inside RRF, by query type.
    "retriever_weights": {
        "symbol": {"bm25": 1.0, "dense": 0.5},  # a bare identifier or two
        "natural": {"bm25": 1.0, "dense": 1.0},  # a short question
        "long": {"bm25": 1.0, "dense": 0.3},  # an issue or a stack trace
    },
    "long_query_words": 40,
    # confidence = similarity*w + keyword*w + recency*w
    "confidence_weights": {"similarity": 0.5, "keyword": 0.3, "recency": 0.2},
    # Cosine similarities of static vectors live in a narrow band: rescale [floor, 1] to [0, 1].
    "similarity_floor": 0.2,
    "recency_half_life_days": 365.0,
    "threshold": {
        "relative": 0.5,  # keep results whose confidence >= relative * best confidence
        "min_similarity": 0.3,  # below this raw cosine, dense evidence does not count
        "min_results": 1,
    },
    "rerank": {
        "definition": 1.0,  # query names the chunk's symbol
        "path": 1.0,  # query terms name the file stem / directories
        "coherence": 0.2,  # several candidates from one file
        "saturation": 0.7,  # j-th chunk of a file in the ranking is multiplied by this**j
        "demote": 0.3,  # tests/examples/docs/vendored/generated unless asked for
        "prose": 0.5,  # text and doc sections, for issue-sized queries not about docs
        "file_evidence": 0.0,  # a file's next chunks add this share of their score (rerank.py)
        "demote_data": 0.5,  # data/configuration files unless asked for or named
    },
    # Issue-sized queries (indexer/search/query.py): BM25 weight of code-like evidence (paths,
    # dotted names, stack frames, code, error lines) and of the prose around it.
    # dense_salient 1: embed only the title and that evidence (0: the whole text).
    # title: weight of a third list in the fusion, BM25 of the report's title alone (a short
    # question inside the report).
    # common_df: long queries leave out of BM25 the terms more than this share of the chunks
    # have (0: none left out).
    "query": {"salient": 2.0, "prose": 0.6, "dense_salient": 0.0, "title": 1.0, "common_df": 0.0},
    # Code-graph signals (indexer/index/graph.py graph_rerank); 0 = off. Only the PageRank prior
    # raised dev-set MRR (both sets, R@10 unchanged); expand and file_boost did not
    # (docs/agents.md).
    "graph": {
        "expand": 0.0,  # callers/callees of the top results join at this x the seed's score
        "ppr": 0.0,  # personalised PageRank prior seeded by the top results (off: ~13 ms/query)
        "file_boost": 0.0,  # files the top results call or import
        "seeds": 5,  # how many top results seed the graph signals
    },
}


@dataclass(frozen=True)
class FusionConfig:
    values: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    @classmethod
    def default(cls) -> FusionConfig:
        return cls(copy.deepcopy(DEFAULTS))

    @classmethod
    def load(cls, path: Path | None = None) -> FusionConfig:
        path = path or default_fusion_path()
        if not path.exists():
            return cls.default()
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise IndexerError(f"invalid fusion settings {path}: {exc}") from exc
        return cls.from_dict(raw, str(path))

    @classmethod
    def from_dict(cls, raw: Any, source: str = "fusion settings") -> FusionConfig:
        if not isinstance(raw, dict):
            raise IndexerError(f"invalid {source}: expected a JSON object")
        merged = copy.deepcopy(DEFAULTS)
        for key, value in raw.items():
            if key not in DEFAULTS:
                continue  # extra keys (scores, notes) are kept by the notebook, ignored here
            if isinstance(DEFAULTS[key], dict):
                if not isinstance(value, dict):
                    raise IndexerError(f"invalid {source}: '{key}' must be an object")
                _merge(merged[key], value, f"{source}: {key}")
            else:
                merged[key] = value
        _validate(merged, source)
        return cls(merged)


def _merge(into: dict[str, Any], update: dict[str, Any], where: str) -> None:
    for key, value in update.items():
        if key not in into:
            raise IndexerError(f"invalid {where}: unknown key '{key}'")
        if isinstance(into[key], dict):
            if not isinstance(value, dict):
                raise IndexerError(f"invalid {where}.{key}: must be an object")
            _merge(into[key], value, f"{where}.{key}")
        else:
            into[key] = value


def _number(value: Any, where: str, low: float, high: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise IndexerError(f"invalid {where}: {value!r} is not a number")
    if not low <= value <= high:
        raise IndexerError(f"invalid {where}: {value} is outside [{low}, {high}]")


def _validate(v: dict[str, Any], source: str) -> None:
    _number(v["rrf_k"], f"{source}: rrf_k", 1, 10_000)
    _number(v["candidates"], f"{source}: candidates", 10, 10_000)
    _number(v["long_query_words"], f"{source}: long_query_words", 1, 100_000)
    for kind, weights in v["retriever_weights"].items():
        for name, w in weights.items():
            _number(w, f"{source}: retriever_weights.{kind}.{name}", 0, 100)
    total = 0.0
    for name, w in v["confidence_weights"].items():
        _number(w, f"{source}: confidence_weights.{name}", 0, 1)
        total += w
    if total <= 0:
        raise IndexerError(f"invalid {source}: confidence_weights must not all be zero")
    _number(v["similarity_floor"], f"{source}: similarity_floor", -1, 0.99)
    _number(v["recency_half_life_days"], f"{source}: recency_half_life_days", 0.001, 1e6)
    _number(v["threshold"]["relative"], f"{source}: threshold.relative", 0, 1)
    _number(v["threshold"]["min_similarity"], f"{source}: threshold.min_similarity", -1, 1)
    _number(v["threshold"]["min_results"], f"{source}: threshold.min_results", 0, 1000)
    for name, w in v["rerank"].items():
        _number(w, f"{source}: rerank.{name}", 0, 100)
    for name, w in v["query"].items():
        _number(w, f"{source}: query.{name}", 0, 1 if name == "common_df" else 100)
    for name, w in v["graph"].items():
        _number(w, f"{source}: graph.{name}", 0, 100)


def default_fusion_path() -> Path:
    here = Path(__file__).resolve().parents[1]  # the indexer package
    for candidate in (here.parent / "artifacts" / "fusion.json", here / "data" / "fusion.json"):
        if candidate.exists():
            return candidate
    return here.parent / "artifacts" / "fusion.json"


def rrf(rank_lists: list[tuple[np.ndarray, float]], k: float) -> tuple[np.ndarray, np.ndarray]:
    """Reciprocal rank fusion of the retrievers' ranked lists (BM25, dense, exact names): sum
    over lists of weight / (k + rank), ranks starting at 1.

    Returns (rows, scores), rows in order of first appearance (the first list's order, then rows
    only later lists have), the order ties keep in a stable sort of the scores."""
    used = [(np.asarray(rows, dtype=np.int64), w) for rows, w in rank_lists if w != 0]
    if not used or not sum(len(rows) for rows, _ in used):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    all_rows = np.concatenate([rows for rows, _ in used])
    contrib = np.concatenate(
        [w / (k + np.arange(1, len(rows) + 1, dtype=np.float64)) for rows, w in used]
    )
    unique, first, inverse = unique_first_inverse(all_rows)
    # bincount adds in input order, as a running sum per row would.
    sums = np.bincount(inverse, weights=contrib, minlength=len(unique))
    order = stable_order(first)
    return unique[order], sums[order]


def confidence(
    similarity: np.ndarray,
    keyword: np.ndarray,
    recency: np.ndarray,
    config: FusionConfig,
) -> np.ndarray:
    w = config["confidence_weights"]
    floor = float(config["similarity_floor"])
    sim = np.clip((similarity - floor) / (1.0 - floor), 0.0, 1.0)
    total = w["similarity"] + w["keyword"] + w["recency"]
    return np.asarray(
        (w["similarity"] * sim + w["keyword"] * np.clip(keyword, 0, 1) + w["recency"] * recency)
        / total,
        dtype=np.float32,
    )


def recency_score(
    change_times: np.ndarray, reference_time: int, half_life_days: float
) -> np.ndarray:
    age_days = np.maximum(0, reference_time - change_times) / 86400.0
    return np.asarray(0.5 ** (age_days / half_life_days), dtype=np.float32)


def adaptive_cut(conf: np.ndarray, config: FusionConfig) -> int:
    """How many of the ranked results to keep: those within a fraction of the best confidence."""
    if len(conf) == 0:
        return 0
    rule = config["threshold"]
    best = float(conf.max())
    keep = np.nonzero(conf >= rule["relative"] * best)[0]
    last = int(keep.max()) + 1 if len(keep) else 0
    return max(last, min(int(rule["min_results"]), len(conf)))
