"""Shared code of the tuning notebooks: evaluate vector-table variants and fusion settings on
cached eval indexes, and pick settings with cross-validation by repository.

Pure numpy/FAISS (the runtime's own dependencies): the teacher model and torch stay in the
notebooks. Everything here goes through `indexer.eval.evaluate`, so a notebook's numbers are the
numbers `indexer eval` prints.
"""

from __future__ import annotations

import copy
import json
import os
import statistics
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..api import Index
from ..errors import IndexerError
from ..index.dense import Codec, DenseIndex
from ..index.dense_view import DenseView
from ..index.tokens import code_terms, path_terms
from ..index.vectors import StaticVectors
from ..search.fusion import FusionConfig
from ..source.chunker import Chunk
from .evaluate import Case, EvalReport, evaluate, prepare_index

OBJECTIVE = ("file_recall@10", "mrr")


def iter_chunks(index: Index) -> Iterator[Chunk]:
    """Every chunk of an index in row order."""
    for row in range(len(index)):
        yield index.chunk_at(row)


def chunk_dense_terms(chunk: Chunk) -> list[str]:
    """The terms a build embeds for a chunk: its text, its path and (twice) its names.

    Order does not matter (the embedding counts terms); tests check this matches a real build.
    """
    names = f"{chunk.qualname} {chunk.symbol}"
    return code_terms(chunk.text) + code_terms(names) * 2 + path_terms(chunk.path)


def dense_documents(index: Index) -> list[list[str]]:
    """The dense terms of every chunk, as the build embeds them."""
    return [chunk_dense_terms(c) for c in iter_chunks(index)]


def with_vectors(index: Index, table: StaticVectors, documents: Sequence[Sequence[str]]) -> Index:
    """A view of `index` whose dense side is rebuilt in memory from another vector table.

    Identical to building the index with that table (same documents, same embedding, same
    FAISS index type) at a fraction of the cost: chunking and BM25 are reused.
    """
    view = Index(index.snapshot, index.fusion, vectors=table)
    codec = Codec(table.quantizer_ranges(), table.pq_centroids)  # no centroids: exact scans
    codes = DenseIndex.build(table.embed_many(documents), codec)
    view.__dict__["dense"] = DenseView(view.space, codes)
    return view


class EvalSet:
    """The cases of one dataset and its indexes (built once, cached on disk).

    Cached indexes are reused whatever table built them: when the wanted table (`table`, by
    default the shipped one) is another, the dense side is swapped in memory (`with_vectors`),
    which gives exactly what a rebuild would.
    """

    def __init__(
        self,
        name: str,
        cases: Sequence[Case],
        cache_dir: Path,
        log: Callable[[str], None] | None = None,
        table: StaticVectors | None = None,
    ) -> None:
        self.name = name
        self.cases = list(cases)
        self.table = table or StaticVectors.load()
        self.indexes: dict[Path, Index] = {}
        for case in self.cases:
            if case.tree not in self.indexes:
                index = prepare_index(case.tree, cache_dir, log=log, any_table=True)[0]
                self.indexes[case.tree] = index
        self._documents: dict[Path, list[list[str]]] = {}
        self._views: tuple[str, dict[Path, Index]] | None = None

    def documents(self, tree: Path) -> list[list[str]]:
        if tree not in self._documents:
            self._documents[tree] = dense_documents(self.indexes[tree])
        return self._documents[tree]

    def variant(self, table: StaticVectors) -> dict[Path, Index]:
        """Indexes whose dense side uses `table` (the views of the last table are cached)."""
        key = json.dumps(table.card, sort_keys=True)
        if self._views is None or self._views[0] != key:
            views = {}
            for tree, index in self.indexes.items():
                if index.manifest["vectors"]["card"] == table.card:
                    views[tree] = Index(index.snapshot, index.fusion, vectors=table)
                else:
                    views[tree] = with_vectors(index, table, self.documents(tree))
            self._views = (key, views)
        return self._views[1]

    def run(
        self,
        systems: Sequence[str] = ("fused",),
        fusion: FusionConfig | None = None,
        table: StaticVectors | None = None,
        cut: bool = True,
    ) -> EvalReport:
        indexes = self.variant(table or self.table)
        return evaluate(self.cases, Path("."), systems, fusion=fusion, cut=cut, indexes=indexes)


# -- fusion settings -----------------------------------------------------------------------------


def config_with(base: FusionConfig, overrides: Mapping[str, Any]) -> FusionConfig:
    """`base` with dotted-key overrides (`{"retriever_weights.long.dense": 0.2}`), validated."""
    values = copy.deepcopy(base.values)
    for dotted, value in overrides.items():
        node = values
        *parents, leaf = dotted.split(".")
        for key in parents:
            node = node[key]
        if leaf not in node:
            raise IndexerError(f"unknown fusion setting {dotted!r}")
        node[leaf] = value
    return FusionConfig.from_dict(values, "tuned fusion settings")


def objective(row: Mapping[str, Any]) -> float:
    """Per-query objective: the mean of file Recall@10 and MRR."""
    return float(statistics.fmean(float(row[m]) for m in OBJECTIVE))


def score_rows(rows: Sequence[Mapping[str, Any]], groups: set[str] | None = None) -> float:
    """Mean objective, each dataset weighing the same (rows carry a 'dataset' key)."""
    by_set: dict[str, list[float]] = {}
    for r in rows:
        if groups is None or r["group"] in groups:
            by_set.setdefault(str(r.get("dataset", "")), []).append(objective(r))
    return statistics.fmean(statistics.fmean(v) for v in by_set.values()) if by_set else 0.0


def evaluate_config(
    sets: Sequence[EvalSet], config: FusionConfig, table: StaticVectors | None = None
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for s in sets:
        for r in s.run(("fused",), config, table).rows:
            rows.append({**r, "dataset": s.name})
    return rows


def cross_validate(results: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Leave-one-repository-out selection among candidate settings.

    `results` maps a candidate's name to its per-query rows. For each repository, the candidate
    that scores best on the other repositories is chosen and scored on the held-out one; the mean
    of those held-out scores estimates how the selection generalises to unseen repositories.
    """
    names = list(results)
    groups = sorted({str(r["group"]) for rows in results.values() for r in rows})
    held_out: dict[str, float] = {}
    picks: dict[str, str] = {}
    for g in groups:
        rest = set(groups) - {g}
        best = max(names, key=lambda n: score_rows(results[n], rest))
        picks[g] = best
        held_out[g] = score_rows(results[best], {g})
    overall = max(names, key=lambda n: score_rows(results[n]))
    return {
        "chosen": overall,
        "cv_score": statistics.fmean(held_out.values()) if held_out else 0.0,
        "held_out": held_out,
        "picks": picks,
        "scores": {n: score_rows(results[n]) for n in names},
    }


def same_fold_choice(
    fixed: Mapping[str, Sequence[Mapping[str, Any]]], tuned_cv: Mapping[str, Any]
) -> dict[str, Any]:
    """Which candidate to ship: fixed settings (built-in defaults, the current file) or the tuned
    selection, each scored on the same held-out repositories.

    A fixed setting involves no selection, so its held-out score on a repository is its score
    there; the tuned one's is the cross-validated score of the selection (`cross_validate`). Ties
    go to the earlier entry of `fixed` (list first what changes least), the tuned one last: an
    in-sample gain that does not carry over to held-out repositories is not worth shipping.
    """
    groups = list(tuned_cv["held_out"])
    scores = {
        name: statistics.fmean(score_rows(rows, {g}) for g in groups) if groups else 0.0
        for name, rows in fixed.items()
    }
    scores["tuned"] = float(tuned_cv["cv_score"])
    ranked = sorted(scores, key=lambda n: -round(scores[n], 9))  # stable: ties keep the order
    winner = ranked[0]
    runner_up = ranked[1] if len(ranked) > 1 else winner
    return {
        "winner": winner,
        "runner_up": runner_up,
        "margin": round(scores[winner] - scores[runner_up], 4),
        "held_out": {n: round(v, 4) for n, v in scores.items()},
        "folds": len(groups),
    }


def coordinate_search(
    sets: Sequence[EvalSet],
    base: FusionConfig,
    space: Mapping[str, Sequence[Any]],
    rounds: int = 2,
    log: Callable[[str], None] | None = None,
    min_gain: float = 0.0,
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    """Coordinate ascent over `space` (one setting at a time, the others held at their best).

    Returns the best overrides of `base`, every evaluated candidate's rows (for
    cross-validation) and a trace of (setting, value, score, tokens) for plots.
    """
    current: dict[str, Any] = {}
    seen: dict[str, list[dict[str, Any]]] = {}
    trace: list[dict[str, Any]] = []

    def key(overrides: Mapping[str, Any]) -> str:
        return json.dumps(dict(sorted(overrides.items())))

    def run(overrides: dict[str, Any]) -> float:
        k = key(overrides)
        if k not in seen:
            seen[k] = evaluate_config(sets, config_with(base, overrides))
        return score_rows(seen[k])

    best_score = run(current)
    for round_no in range(rounds):
        changed = False
        for setting, values in space.items():
            for value in values:
                trial = {**current, setting: value}
                score = run(trial)
                rows = seen[key(trial)]
                tokens = statistics.fmean(r.get("tokens", 0) for r in rows)
                trace.append(
                    {
                        "round": round_no,
                        "setting": setting,
                        "value": value,
                        "score": score,
                        "tokens": tokens,
                    }
                )
                # A setting moves only for a gain above `min_gain`: smaller ones are noise on a
                # few hundred queries, and the defaults encode judgement the dev sets cannot see.
                if score > best_score + max(min_gain, 1e-9):
                    best_score, current, changed = score, trial, True
            if log:
                log(f"round {round_no} {setting}: best {best_score:.4f} with {current}")
        if not changed:
            break
    return current, seen, trace


def summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Mean metrics of per-query rows."""
    out: dict[str, float] = {"queries": float(len(rows))}
    for m in ("file_recall@1", "file_recall@10", "mrr", "ndcg@10", "function_recall@10", "tokens"):
        values = [float(r[m]) for r in rows if m in r]
        if values:
            out[m] = round(statistics.fmean(values), 4)
    return out


# -- writing artifacts atomically ----------------------------------------------------------------


def write_json_atomic(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_table_atomic(table: StaticVectors, directory: Path) -> None:
    """Write a vector table beside `directory`, check it loads, then swap it in by renames."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{directory.name}."))
    try:
        table.save(staging)
        StaticVectors.load(staging)  # refuse to publish something the runtime cannot read
        if directory.exists():
            for name in os.listdir(staging):
                os.replace(staging / name, directory / name)
            staging.rmdir()
        else:
            os.replace(staging, directory)
    except BaseException:
        for leftover in staging.glob("*"):
            leftover.unlink()
        if staging.exists():
            staging.rmdir()
        raise
