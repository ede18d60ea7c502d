"""Agent benchmark: tokens per answer vs recall, graph signals in ranking, `related` latency.

    python benchmarks/bench_agent.py [--cache DIR] [--trees DIR] [--trees-short DIR] [--limit N]

On ../shared/devset (long issue queries) and ../shared/devset-short (short questions), with the
indexes `indexer eval` builds and caches (indexer.eval.evaluate.prepare_index); sympy 1.5 (the sdist
tree of the dev set) is reported on its own as well. For every query, the top 10 results
(`indexer search`, k=10, default cut) are sent four ways, counted with o200k_base:

    session     the whole files the results come from, each read once per session (the
                honest baseline; a session = one repository's queries in a row)
    files       the same files read again for every query (the upper bound)
    chunks      each result's full chunk text with its header line
    compressed  `--compress`: signature, docstring, the lines that matter, elision markers
    budget N    `--budget N`: full text for the top ones, compressed or one-line references

next to the file recall of that answer (gold files among the files the answer names). Graph
signals (fusion.json "graph") are evaluated as file Recall@10 / MRR of the ranking, each alone,
against the graph-off default, on the same indexes in the same run. The graph is resolved from
each index's per-file facts (cached indexes without facts are rebuilt).
It ends with the answer-line hit rate of `--compress` on the hand-labelled questions of
benchmarks/bench_compress.py (before/after, same run); `--compress-lines-only` runs just that.
Prints Markdown; raw numbers go to --out.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ["INDEXER_SAVINGS"] = "0"  # the benchmark's searches are not an agent's savings

from indexer.api import Index, parse_query  # noqa: E402
from indexer.errors import IndexerError  # noqa: E402
from indexer.eval.evaluate import (  # noqa: E402
    CHUNK_DEPTH,
    Case,
    file_metrics,
    load_dataset,
    prepare_index,
    unique_in_order,
)
from indexer.index.graph.rank import GraphRanker  # noqa: E402
from indexer.search.budget import count_tokens  # noqa: E402
from indexer.search.compress import class_members, compress, full  # noqa: E402
from indexer.search.fusion import FusionConfig  # noqa: E402
from indexer.search.line_scoring import query_weights  # noqa: E402

BUDGETS = (500, 1500)
GRAPH_OFF = {"expand": 0.0, "ppr": 0.0, "file_boost": 0.0, "seeds": 5}
GRAPH_VARIANTS: dict[str, dict[str, float]] = {
    "graph off": {},
    "expand 0.2": {"expand": 0.2},
    "expand 0.5": {"expand": 0.5},
    "ppr 0.3": {"ppr": 0.3},
    "ppr 0.5 (default)": {"ppr": 0.5},
    "ppr 1.0": {"ppr": 1.0},
    "ppr 0.5, 10 seeds": {"ppr": 0.5, "seeds": 10},
    "ppr 0.5 + file_boost 0.3": {"ppr": 0.5, "file_boost": 0.3},
    "file_boost 0.3": {"file_boost": 0.3},
    "file_boost 1.0": {"file_boost": 1.0},
}


def attach_graph(index: Index) -> float:
    """Resolve the whole graph from the index's facts (what a search with graph signals does
    first) and its ranking arrays; returns the seconds it took."""
    start = time.perf_counter()
    index.__dict__.pop("graph", None)
    index._graph_ranker = GraphRanker(index)  # type: ignore[attr-defined]
    return time.perf_counter() - start


class FileTokens:
    def __init__(self, index: Index) -> None:
        import pygit2

        self.repo: Any = pygit2.Repository(index.manifest["repo_root"])
        self.blob_of = {f["path"]: f["blob"] for f in index.files}
        self.cache: dict[str, int] = {}

    def __call__(self, path: str) -> int:
        if path not in self.cache:
            data = bytes(self.repo[self.blob_of[path]].data)
            self.cache[path] = count_tokens(data.decode("utf-8", "replace"))
        return self.cache[path]


def recall(files: list[str], gold: tuple[str, ...]) -> float:
    return len(set(files) & set(gold)) / len(gold)


def token_row(index: Index, case: Case, file_tokens: FileTokens) -> dict[str, Any]:
    results = index.search(case.query, k=10, log=False)
    chunks = [index.show(r.id) for r in results]
    terms = query_weights(case.query, index.lexical)  # what `--compress` ships
    files = unique_in_order(c.path for c in chunks)
    compressed = [
        compress(c, terms, class_members(index, c) if c.kind == "class" else []) for c in chunks
    ]
    row: dict[str, Any] = {
        "results": len(results),
        "file_tokens": {p: file_tokens(p) for p in files},
        "files_tokens": sum(file_tokens(p) for p in files),
        "chunks_tokens": count_tokens("\n".join(full(c) for c in chunks)),
        "compressed_tokens": count_tokens("\n".join(compressed)),
        "answer_recall": recall(files, case.gold_files),
    }
    for budget in BUDGETS:
        packed = index.search_budget(case.query, budget, k=10, log=False)
        row[f"budget{budget}_tokens"] = packed.tokens
        row[f"budget{budget}_recall"] = recall(
            unique_in_order(i["path"] for i in packed.items), case.gold_files
        )
    return row


def rank_files(index: Index, query: str) -> list[str]:
    ranked = index.rank(parse_query(query), CHUNK_DEPTH)
    return unique_in_order(index.files[int(index._chunk_file[r])]["path"] for r, _ in ranked)


def related_latency(index: Index, samples: int = 200) -> dict[str, float]:
    start = time.perf_counter()
    graph = index.graph
    load_ms = (time.perf_counter() - start) * 1000
    symbols = [n for n, k in zip(graph.ids, graph.columns["kind"], strict=True) if k == "method"]
    rng = random.Random(4)
    picked = rng.sample(symbols, min(samples, len(symbols)))
    out: dict[str, float] = {"graph_load_ms": round(load_ms, 1)}
    for label, direction, depth in (("both_d1", "both", 1), ("callers_d2", "callers", 2)):
        times = []
        for node in picked:
            t = time.perf_counter()
            index.related(node, direction=direction, depth=depth)
            times.append((time.perf_counter() - t) * 1000)
        times.sort()
        out[f"{label}_p50_ms"] = round(statistics.median(times), 2)
        out[f"{label}_p95_ms"] = round(times[int(0.95 * (len(times) - 1))], 2)
    out["nodes"] = len(graph.ids)
    out["edges"] = len(graph.edges)
    return out


def cold_search(index: Index, off: FusionConfig, default: FusionConfig) -> dict[str, float]:
    """`indexer search` as a fresh process (default settings, PageRank prior on), and the
    first search of a freshly opened index in-process with the graph prior on and off."""
    import subprocess

    query = "matrix determinant of a symbolic matrix"
    index_dir = str(index.snapshot.parent.parent)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "indexer", "search", query, "--json", "--index-dir", index_dir],
            check=True,
            capture_output=True,
            env={**os.environ, "INDEXER_SAVINGS": "0"},
        )
        times.append((time.perf_counter() - start) * 1000)
    out = {"cli_cold_median_ms": round(statistics.median(times), 1)}
    for label, cfg in (("graph_off", off), ("ppr_default", default)):
        firsts = []
        for _ in range(3):
            start = time.perf_counter()
            Index(index.snapshot, fusion=cfg).search(query, k=10, log=False)
            firsts.append((time.perf_counter() - start) * 1000)
        out[f"first_search_{label}_ms"] = round(statistics.median(firsts), 1)
    return out


def summarize_tokens(rows: list[dict[str, Any]]) -> dict[str, float]:
    def mean(key: str) -> float:
        return round(statistics.fmean(r[key] for r in rows), 4)

    out = {"queries": len(rows)}
    for key, value in rows[0].items():
        if isinstance(value, int | float):
            out[key] = mean(key)
    per_tree: dict[str, dict[str, int]] = {}  # one session per repository: each file once
    for r in rows:
        per_tree.setdefault(r["tree"], {}).update(r["file_tokens"])
    session = sum(sum(files.values()) for files in per_tree.values())
    out["session_tokens"] = round(session / len(rows), 1)
    base = sum(r["files_tokens"] for r in rows)
    for form in ("chunks", "compressed", *(f"budget{b}" for b in BUDGETS)):
        out[f"{form}_saved_pct"] = round(
            100 * (1 - sum(r[f"{form}_tokens"] for r in rows) / base), 2
        )
    out["compressed_le_600_pct"] = round(
        100 * sum(r["compressed_tokens"] <= 600 for r in rows) / len(rows), 1
    )
    return out


def run_dataset(
    cases: list[Case], cache: Path, jobs: int, log: Any
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    """Per-variant ranking metrics and token rows, each row tagged with its group."""
    by_tree: dict[Path, list[Case]] = {}
    for case in cases:
        by_tree.setdefault(case.tree, []).append(case)
    ranking: dict[str, list[dict[str, Any]]] = {v: [] for v in GRAPH_VARIANTS}
    tokens: list[dict[str, Any]] = []
    extra: dict[str, Any] = {"graph_build_s": {}, "related": {}, "cold_search": {}}
    base = FusionConfig.load()
    configs = {}
    for name, change in GRAPH_VARIANTS.items():
        values = copy.deepcopy(base.values)
        values["graph"].update({**GRAPH_OFF, **change})  # each variant alone against "off"
        configs[name] = FusionConfig.from_dict(values)
    for tree, tree_cases in by_tree.items():
        index, _ = prepare_index(tree, cache, log=log)
        try:  # a cached index from an older on-disk format is rebuilt
            _ = index.lexical, index.dense
        except (OSError, ValueError, IndexerError):
            index, _ = prepare_index(tree, cache, rebuild=True, log=log)
        extra["graph_build_s"][tree.name] = round(attach_graph(index), 2)
        log(f"{tree.name}: {len(tree_cases)} queries")
        file_tokens = FileTokens(index)
        for case in tree_cases:
            for name, cfg in configs.items():
                index.fusion = cfg
                m = file_metrics(rank_files(index, case.query), case.gold_files)
                ranking[name].append({"group": case.group, "tree": tree.name, **m})
            index.fusion = base  # the shipped defaults
            tokens.append({"tree": tree.name, **token_row(index, case, file_tokens)})
        if tree.name == "sympy-1.5":
            extra["related"] = related_latency(index)
            extra["cold_search"] = cold_search(index, configs["graph off"], base)
    extra["tokens_rows"] = tokens
    return ranking, extra


def ranking_table(ranking: dict[str, list[dict[str, Any]]], only: str | None = None) -> list[str]:
    lines = ["| ranking | R@1 | R@5 | R@10 | MRR | nDCG@10 |", "|---|---|---|---|---|---|"]
    for name, rows in ranking.items():
        rows = [r for r in rows if only is None or r["tree"] == only]
        if not rows:
            continue
        cells = [
            statistics.fmean(r[k] for r in rows)
            for k in ("file_recall@1", "file_recall@5", "file_recall@10", "mrr", "ndcg@10")
        ]
        lines.append(f"| {name} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    return lines


def token_table(label: str, s: dict[str, float]) -> list[str]:
    lines = [
        f"**{label}** ({int(s['queries'])} queries, {s['results']:.1f} results per answer)",
        "",
        "| answer | tokens / query | vs whole files every query | file recall of the answer |",
        "|---|---|---|---|",
        f"| whole files, once per session (honest baseline) | {s['session_tokens']:.0f} "
        f"| -{round(100 * (1 - s['session_tokens'] / s['files_tokens']), 2)}% "
        f"| {s['answer_recall']:.3f} |",
        f"| whole files, every query (upper bound) | {s['files_tokens']:.0f} | - "
        f"| {s['answer_recall']:.3f} |",
        f"| result chunks, full text | {s['chunks_tokens']:.0f} | -{s['chunks_saved_pct']}% "
        f"| {s['answer_recall']:.3f} |",
        f"| compressed (`--compress`) | {s['compressed_tokens']:.0f} "
        f"| -{s['compressed_saved_pct']}% | {s['answer_recall']:.3f} |",
    ]
    for b in BUDGETS:
        lines.append(
            f"| `--budget {b}` | {s[f'budget{b}_tokens']:.0f} | -{s[f'budget{b}_saved_pct']}% "
            f"| {s[f'budget{b}_recall']:.3f} |"
        )
    lines.append("")
    lines.append(f"Compressed answers of at most 600 tokens: {s['compressed_le_600_pct']}%.")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devset", type=Path, default=ROOT.parent / "shared" / "devset")
    parser.add_argument(
        "--devset-short", type=Path, default=ROOT.parent / "shared" / "devset-short"
    )
    parser.add_argument("--trees", type=Path, default=ROOT.parent / "trees" / "devset")
    parser.add_argument("--trees-short", type=Path, default=ROOT.parent / "trees" / "devset-short")
    parser.add_argument("--cache", type=Path, default=ROOT / ".bench" / "eval-cache")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="only the first N queries per set")
    parser.add_argument("--out", type=Path, default=ROOT / ".bench" / "agent_results.json")
    parser.add_argument("--compress-work", type=Path, default=ROOT / ".bench" / "compress")
    parser.add_argument("--compress-lines-only", action="store_true")
    parser.add_argument("--sets", default="long,short", help="dev sets to run: long, short")
    args = parser.parse_args()

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    results: dict[str, Any] = {}
    report: list[str] = []
    datasets = (
        ("devset (long issue queries)", args.devset, args.trees),
        ("devset-short (short questions)", args.devset_short, args.trees_short),
    )
    wanted = set() if args.compress_lines_only else set(args.sets.split(","))
    for label, dataset, trees in (
        d for d, key in zip(datasets, ("long", "short"), strict=True) if key in wanted
    ):
        cases = load_dataset(dataset / "instances.jsonl", trees)
        if args.limit:
            cases = cases[: args.limit]
        ranking, extra = run_dataset(cases, args.cache.resolve(), args.jobs, log)
        rows = extra.pop("tokens_rows")
        summary = summarize_tokens(rows)
        results[label] = {"ranking": ranking, "tokens": summary, **extra}
        report += [f"### {label}", "", *token_table("all repositories", summary), ""]
        sympy_rows = [r for r in rows if r["tree"] == "sympy-1.5"]
        if sympy_rows:
            s = summarize_tokens(sympy_rows)
            results[label]["tokens_sympy"] = s
            report += [*token_table("sympy 1.5 sdist", s), ""]
        report += ["Graph signals in ranking (file metrics of the top 100 chunks):", ""]
        report += [*ranking_table(ranking), ""]
        if sympy_rows:
            report += ["sympy 1.5 only:", "", *ranking_table(ranking, "sympy-1.5"), ""]
        if extra["related"]:
            report += [f"`related` on sympy 1.5: {json.dumps(extra['related'])}", ""]
        if extra.get("cold_search"):
            report += [f"search on sympy 1.5: {json.dumps(extra['cold_search'])}", ""]
        if extra.get("sympy_build_s"):
            report += [f"sympy 1.5 build (with graph) s: {extra['sympy_build_s']}", ""]
        if extra["graph_build_s"]:
            report += [
                "whole-graph resolution from each index's facts (what a search with graph "
                f"signals does first), seconds: {json.dumps(extra['graph_build_s'])}",
                "",
            ]
    import bench_compress

    lines_summary = bench_compress.run(args.compress_work.resolve(), log)
    results["compress_lines"] = lines_summary
    report += ["### Answer lines", "", *bench_compress.table(lines_summary), ""]
    print("\n".join(report))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
