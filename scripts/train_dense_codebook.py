"""Train the compact-code centroids (indexer/index/dense_pq.py) of a static vector table.

    python scripts/train_dense_codebook.py --corpus DIR [DIR ...] [--table artifacts/static_vectors]

The training vectors are the chunks of the corpus exactly as a build stores them: the runtime's
chunker, the terms a build embeds, the table's embedding rounded to float16, the 8-bit codes
decoded. Each group of 4 dimensions gets 16 centroids by k-means (k-means++ start from a fixed
seed, Lloyd iterations in float64): the same corpus and table give the same file. The corpus
must not be an evaluated project: the shipped centroids come from the distillation corpus
without Django (which the latency benchmark's big corpus contains), see docs/benchmarks.md.
Writes `pq_centroids.npy` into the table directory and records how in its `card.json`
(`notebooks/distill_static_vectors.ipynb` calls `train` for the table it makes).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from indexer.index.dense import decode
from indexer.index.dense import encode as encode_codes
from indexer.index.dense_pq import CENTROIDS, SUB_DIMS, subspace_order
from indexer.index.vectors import StaticVectors


def training_vectors(table: StaticVectors, term_lists: Sequence[Sequence[str]]) -> np.ndarray:
    """Decoded 8-bit codes of documents, as a build stores them (float16 first, like a build)."""
    ranges = table.quantizer_ranges()
    vectors = table.embed_many(term_lists).astype(np.float16).astype(np.float32)
    kept = vectors[np.linalg.norm(vectors, axis=1) > 0]
    return decode(encode_codes(kept, ranges), ranges)


def kmeans(points: np.ndarray, k: int, rng: np.random.Generator, iterations: int) -> np.ndarray:
    """k centroids of points (float64): k-means++ start, then Lloyd; an empty cluster takes the
    point farthest from its centroid."""
    n = len(points)
    centres = [points[int(rng.integers(n))]]
    for _ in range(1, k):
        d2 = ((points[:, None, :] - np.asarray(centres)[None]) ** 2).sum(axis=2).min(axis=1)
        total = float(d2.sum())
        pick = int(rng.choice(n, p=d2 / total)) if total > 0 else int(rng.integers(n))
        centres.append(points[pick])
    c = np.asarray(centres, dtype=np.float64)
    for _ in range(iterations):
        d2 = ((points[:, None, :] - c[None]) ** 2).sum(axis=2)
        label = d2.argmin(axis=1)
        for j in range(k):
            members = points[label == j]
            if len(members):
                c[j] = members.mean(axis=0)
            else:
                c[j] = points[int(d2[np.arange(n), label].argmax())]
    return c


def train(vectors: np.ndarray, seed: int = 0, iterations: int = 50) -> np.ndarray:
    """(dim / 4, 16, 4) float32 centroids, groups in `subspace_order`."""
    dim = vectors.shape[1]
    if len(vectors) < CENTROIDS:
        raise ValueError(f"need at least {CENTROIDS} training vectors, got {len(vectors)}")
    grouped = np.asarray(vectors, dtype=np.float64)[:, subspace_order(dim)]
    rng = np.random.default_rng(seed)
    out = np.empty((dim // SUB_DIMS, CENTROIDS, SUB_DIMS), dtype=np.float32)
    for m in range(dim // SUB_DIMS):
        points = grouped[:, SUB_DIMS * m : SUB_DIMS * (m + 1)]
        out[m] = kmeans(points, CENTROIDS, rng, iterations)
    return out


def with_codebook(
    table: StaticVectors, term_lists: Sequence[Sequence[str]], about: dict[str, object]
) -> StaticVectors:
    """`table` with centroids trained on these documents, recorded in its card."""
    vectors = training_vectors(table, term_lists)
    table.pq_centroids = train(vectors)
    table.card = {
        **table.card,
        "dense_codebook": {
            **about,
            "vectors": len(vectors),
            "groups": int(table.pq_centroids.shape[0]),
            "centroids": CENTROIDS,
            "seed": 0,
            "iterations": 50,
        },
    }
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", nargs="+", type=Path, required=True)
    parser.add_argument("--table", type=Path, default=Path("artifacts/static_vectors"))
    args = parser.parse_args()

    import distill_static_vectors as dsv

    from indexer.eval.tuning import chunk_dense_terms, save_table_atomic

    table = StaticVectors.load(args.table)
    chunks = dsv.corpus_chunks(args.corpus, limit=10**9)
    about = {"corpus": [p.name for p in args.corpus], "chunks": len(chunks)}
    table = with_codebook(table, [chunk_dense_terms(c) for c in chunks], about)
    save_table_atomic(table, args.table)
    print(json.dumps(table.card["dense_codebook"], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
