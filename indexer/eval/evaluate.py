"""`indexer eval`: retrieval quality on datasets of {query, gold_files, gold_functions}.

Used by the CLI, the benchmarks and the tuning notebooks alike. Each dataset tree is committed
into a cached git repository and indexed once; systems are compared on the same indexes:

    fused      the product: hybrid BM25 + dense, RRF, reranking, adaptive cut
    bm25       chunk BM25 only (same reranking)
    dense      static-vector dense only (same reranking)
    file-bm25  baseline: BM25 over whole files, no chunking
"""

from __future__ import annotations

import functools
import json
import math
import os
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..api import Index, parse_query
from ..errors import IndexerError
from ..index.lexical import LexicalIndex
from ..index.tokens import lexical_terms, path_terms, stem
from ..search.fusion import FusionConfig

SYSTEMS = ("fused", "bm25", "dense", "file-bm25")
CHUNK_DEPTH = 100  # chunks retrieved to rank files


@dataclass(frozen=True)
class Case:
    id: str
    group: str
    tree: Path
    query: str
    gold_files: tuple[str, ...]
    gold_functions: tuple[str, ...]


def load_dataset(path: Path, repo_root: Path) -> list[Case]:
    cases: list[Case] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise IndexerError(f"cannot read dataset {path}: {exc.strerror}") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            query = raw["query"]
            gold = tuple(raw["gold_files"])
        except (ValueError, KeyError, TypeError) as exc:
            raise IndexerError(f"{path}:{number}: not a dataset record ({exc})") from exc
        if "sdist_root" in raw:
            tree = repo_root / raw["sdist_root"].rstrip("/")
        elif "tree" in raw:
            tree = repo_root / raw["tree"] / raw.get("root", "")
        else:
            tree = repo_root / raw.get("repo_dir", raw.get("repo", ""))
        group = str(raw.get("repo") or raw.get("package") or tree.name)
        case_id = str(raw.get("instance_id") or raw.get("id") or number)
        cases.append(
            Case(case_id, group, tree, query, gold, tuple(raw.get("gold_functions") or ()))
        )
    return cases


# -- preparing trees as git repositories ---------------------------------------------------------


def commit_tree(source: Path, git_dir: Path) -> str:
    """Commit every file under `source` into a bare repository at `git_dir` (deterministic)."""
    import pygit2

    repo = pygit2.init_repository(str(git_dir), bare=True)

    def build(directory: Path) -> Any:
        builder = repo.TreeBuilder()
        empty = True
        for entry in sorted(os.scandir(directory), key=lambda e: e.name):
            if entry.name == ".git" or entry.is_symlink():
                continue
            if entry.is_dir():
                sub = build(Path(entry.path))
                if sub is not None:
                    builder.insert(entry.name, sub, pygit2.enums.FileMode.TREE)
                    empty = False
            elif entry.is_file():
                blob = repo.create_blob_fromdisk(entry.path)
                builder.insert(entry.name, blob, pygit2.enums.FileMode.BLOB)
                empty = False
        return None if empty else builder.write()

    tree = build(source)
    if tree is None:
        raise IndexerError(f"dataset tree {source} has no files")
    signature = pygit2.Signature("indexer eval", "eval@indexer.invalid", 1_700_000_000, 0)
    commit = repo.create_commit("HEAD", signature, signature, f"tree of {source.name}", tree, [])
    return str(commit)


def prepare_index(
    tree: Path,
    cache_dir: Path,
    rebuild: bool = False,
    log: Callable[[str], None] | None = None,
    any_table: bool = False,
) -> tuple[Index, float | None]:
    """A built index of `tree` (cached); returns it and the build seconds if it was built now.

    The cached index is rebuilt when the chunker or the vector table changed, unless `any_table`
    (the tuning code swaps the dense side in memory, see `indexer.eval.tuning.with_vectors`)."""
    from ..index.build import build_index
    from ..index.store import current_snapshot

    if not tree.is_dir():
        raise IndexerError(f"dataset tree {tree} does not exist; fetch the trees first")
    key = tree.parent.name + "__" + tree.name if tree.parent.name else tree.name
    git_dir = cache_dir / key / "repo.git"
    index_dir = cache_dir / key / "index"
    if not (git_dir / "HEAD").exists():
        git_dir.parent.mkdir(parents=True, exist_ok=True)
        commit_tree(tree, git_dir)
    built: float | None = None
    if not rebuild:
        try:
            index = Index(current_snapshot(index_dir))
            from ..index.vectors import StaticVectors
            from ..source.chunker import CHUNKER_VERSION

            table = StaticVectors.load()
            m = index.manifest
            same_table = any_table or m["vectors"]["card"] == table.card
            if m.get("chunker_version") == CHUNKER_VERSION and same_table:
                return index, None
        except IndexerError:
            pass
    if log:
        log(f"building index of {tree.name}")
    report = build_index(git_dir, index_dir=index_dir, progress=False)
    built = report.seconds
    return Index(current_snapshot(index_dir)), built


# -- metrics -------------------------------------------------------------------------------------


def file_metrics(ranked_files: Sequence[str], gold: Sequence[str]) -> dict[str, float]:
    gold_set = set(gold)
    out: dict[str, float] = {}
    for k in (1, 5, 10):
        out[f"file_recall@{k}"] = len(gold_set & set(ranked_files[:k])) / len(gold_set)
    rr = 0.0
    for rank, path in enumerate(ranked_files, start=1):
        if path in gold_set:
            rr = 1.0 / rank
            break
    out["mrr"] = rr
    dcg = sum(
        1.0 / math.log2(r + 1) for r, p in enumerate(ranked_files[:10], start=1) if p in gold_set
    )
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(len(gold_set), 10) + 1))
    out["ndcg@10"] = dcg / ideal if ideal else 0.0
    return out


def function_recall(ranked_chunks: Sequence[str], gold: Sequence[str], k: int = 10) -> float | None:
    if not gold:
        return None
    top = set(ranked_chunks[:k])
    return sum(1 for g in gold if g in top) / len(gold)


def unique_in_order(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


# -- systems -------------------------------------------------------------------------------------


@dataclass
class FileBM25:
    """Baseline: one BM25 document per file (its whole text plus its path)."""

    index: LexicalIndex
    paths: list[str]

    @classmethod
    def from_index(cls, index: Index) -> FileBM25:
        paths = [f["path"] for f in index.files]
        # Reassemble whole files from the git blobs the index recorded.
        import pygit2

        repo = pygit2.Repository(index.manifest["repo_root"])
        docs = []
        for f in index.files:
            blob: Any = repo[f["blob"]]
            text = blob.data.decode("utf-8", errors="replace")
            docs.append(lexical_terms(text) + [stem(t) for t in path_terms(f["path"])])
        return cls(LexicalIndex.build(docs), paths)

    def rank(self, query: str, depth: int = 100) -> list[str]:
        scores, _ = self.index.score(lexical_terms(query))
        hits = np.nonzero(scores > 0)[0]
        order = hits[np.argsort(-scores[hits], kind="stable")][:depth]
        return [self.paths[i] for i in order]


def run_system(
    index: Index, system: str, query: str, file_bm25: FileBM25 | None, cut: bool = True
) -> tuple[list[str], list[str], list[int]]:
    """(ranked files, ranked 'path::qualname' chunk keys, chunk rows) for one query."""
    if system == "file-bm25":
        assert file_bm25 is not None
        return file_bm25.rank(query), [], []
    retrievers = {"fused": ("bm25", "dense"), "bm25": ("bm25",), "dense": ("dense",)}[system]
    ranked = index.rank(parse_query(query), CHUNK_DEPTH, cut=cut, retrievers=retrievers)
    rows = [row for row, _ in ranked]
    files = [index.files[int(index._chunk_file[r])]["path"] for r in rows]
    keys = []
    for r in rows[:10]:
        c = index.chunk_at(r, with_text=False)
        keys.append(f"{c.path}::{c.qualname}")
    return unique_in_order(files), keys, rows


@dataclass
class EvalReport:
    systems: dict[str, dict[str, float]]
    groups: dict[str, dict[str, dict[str, float]]]
    rows: list[dict[str, Any]] = field(default_factory=list)
    builds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "systems": self.systems,
            "groups": self.groups,
            "builds": self.builds,
            "queries": self.rows,
        }


@functools.cache
def _token_counter() -> Callable[[str], int]:
    try:
        from bpe_openai import get_encoding

        enc = get_encoding("o200k_base")
        return lambda text: len(enc.encode(text))
    except Exception:  # pragma: no cover - bpe-openai is a dependency
        return lambda text: max(1, len(text) // 4)


_TOKENS: dict[tuple[str, int], int] = {}


def _chunk_tokens(index: Index, row: int, count: Callable[[str], int]) -> int:
    """Tokens of one chunk's text (memoised: tuning runs rank the same chunks many times)."""
    key = (str(index.snapshot), row)
    if key not in _TOKENS:
        _TOKENS[key] = count(index.chunk_at(row).text)
    return _TOKENS[key]


def evaluate(
    cases: Sequence[Case],
    cache_dir: Path,
    systems: Sequence[str] = SYSTEMS,
    fusion: FusionConfig | None = None,
    cut: bool = True,
    rebuild: bool = False,
    log: Callable[[str], None] | None = None,
    indexes: Mapping[Path, Index] | None = None,
) -> EvalReport:
    """Run `systems` on every case. `indexes` (tree -> Index) skips preparing the trees: the
    tuning notebooks pass indexes with another vector table or fusion settings."""
    for s in systems:
        if s not in SYSTEMS:
            raise IndexerError(f"unknown system {s!r}; choose from {', '.join(SYSTEMS)}")
    count_tokens = _token_counter()
    by_tree: dict[Path, list[Case]] = {}
    for case in cases:
        by_tree.setdefault(case.tree, []).append(case)
    rows: list[dict[str, Any]] = []
    builds: dict[str, float] = {}
    for tree, tree_cases in by_tree.items():
        if indexes is not None and tree in indexes:
            index = indexes[tree]
        else:
            index, built = prepare_index(tree, cache_dir, rebuild=rebuild, log=log)
            if built is not None:
                builds[tree.name] = built
        if fusion is not None:
            index.fusion = fusion
        file_bm25 = FileBM25.from_index(index) if "file-bm25" in systems else None
        for case in tree_cases:
            for system in systems:
                start = time.perf_counter()
                files, keys, chunk_rows = run_system(index, system, case.query, file_bm25, cut)
                latency = (time.perf_counter() - start) * 1000
                row: dict[str, Any] = {
                    "id": case.id,
                    "group": case.group,
                    "system": system,
                    **file_metrics(files, case.gold_files),
                    "latency_ms": latency,
                    "top_files": files[:10],
                }
                fr = function_recall(keys, case.gold_functions)
                if fr is not None:
                    row["function_recall@10"] = fr
                if chunk_rows:
                    row["tokens"] = sum(
                        _chunk_tokens(index, r, count_tokens) for r in chunk_rows[:10]
                    )
                rows.append(row)
    return summarize(rows, builds)


METRICS = (
    "file_recall@1",
    "file_recall@5",
    "file_recall@10",
    "mrr",
    "ndcg@10",
    "function_recall@10",
    "tokens",
    "latency_ms",
)


def summarize(rows: list[dict[str, Any]], builds: dict[str, float]) -> EvalReport:
    metrics = METRICS

    def aggregate(selected: list[dict[str, Any]]) -> dict[str, float]:
        out: dict[str, float] = {"queries": float(len(selected))}
        for m in metrics:
            values = [r[m] for r in selected if m in r]
            if values:
                out[m] = round(statistics.fmean(values), 4)
        lat = sorted(r["latency_ms"] for r in selected)
        if lat:
            out["latency_p95_ms"] = round(lat[int(0.95 * (len(lat) - 1))], 3)
        return out

    systems: dict[str, dict[str, float]] = {}
    groups: dict[str, dict[str, dict[str, float]]] = {}
    for system in dict.fromkeys(r["system"] for r in rows):
        mine = [r for r in rows if r["system"] == system]
        systems[system] = aggregate(mine)
        for group in dict.fromkeys(r["group"] for r in mine):
            groups.setdefault(group, {})[system] = aggregate(
                [r for r in mine if r["group"] == group]
            )
    return EvalReport(systems, groups, rows, builds)


def format_table(report: EvalReport, per_group: bool = False) -> str:
    """The overall table; with `per_group`, one block per repository after it."""
    blocks = [_table(report.systems)]
    if per_group:
        for group, systems in report.groups.items():
            blocks.append(f"\n{group}\n" + _table(systems))
    return "\n".join(blocks)


def _table(systems: dict[str, dict[str, float]]) -> str:
    cols = METRICS
    heads = ("R@1", "R@5", "R@10", "MRR", "nDCG@10", "fnR@10", "tokens", "ms")
    lines = [f"{'system':<22}" + "".join(f"{h:>9}" for h in heads)]
    for name, m in systems.items():
        cells = []
        for c in cols:
            v = m.get(c)
            cells.append(
                f"{'-':>9}" if v is None else f"{v:>9.0f}" if c == "tokens" else f"{v:>9.3f}"
            )
        lines.append(f"{name:<22}" + "".join(cells))
    return "\n".join(lines)
