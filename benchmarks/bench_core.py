"""Core benchmark: build speed, query latency (warm and cold) and retrieval quality, in one run.

    python benchmarks/bench_core.py [--work DIR] [--trees DIR] [--trees-short DIR] [--skip-quality]

Real code from PyPI sdists is committed into temporary git repositories:
- large: sympy 1.5 (~1,500 .py files); latency is also measured on sympy + astropy (>50k chunks)
- mid:   requests 2.32.3
Quality runs `indexer eval` on ../shared/devset (long issue queries) and ../shared/devset-short
(short questions) for the fused system, BM25-only chunks, dense-only chunks and whole-file BM25.
Prints a Markdown report; the raw numbers go to WORK/results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from indexer.api import Index  # noqa: E402
from indexer.eval.evaluate import commit_tree, evaluate, format_table, load_dataset  # noqa: E402
from indexer.index.store import current_snapshot  # noqa: E402

# Commits made by the benchmarks (identity fixed so no git config is needed).
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "b@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "b@example.com",
}
SDISTS = {"sympy": "sympy==1.5", "requests": "requests==2.32.3", "astropy": "astropy==5.2"}
QUERIES = [
    "solve a system of linear equations",
    "Matrix determinant",
    "simplify trigonometric expressions",
    "latex printing of integrals",
    "Symbol assumptions positive",
    "series expansion around a point",
    "how are sessions and cookies persisted",
    "HTTPAdapter",
    "retry on connection errors",
    "parse a FITS header card",
    "unit conversion between quantities",
    "Table column formatting",
    "prime factorization",
    "lambdify numpy backend",
    "differential equation solver hints",
    "redirect handling",
    "SkyCoord",
    "read a CSV table",
    "pretty printer unicode",
    "Rational",
]


def sdist_tree(spec: str, work: Path, devset: Path | None) -> Path:
    name, version = spec.split("==")
    if devset is not None:
        for candidate in devset.glob(f"{name}-{version}"):
            if candidate.is_dir():
                return candidate
    unpacked = work / "src" / f"{name}-{version}"
    if unpacked.is_dir():
        return unpacked
    download = work / "sdists"
    download.mkdir(parents=True, exist_ok=True)
    extra = ["--no-binary", name] if name == "astropy" else ["--no-binary", ":all:"]
    env = dict(os.environ, PIP_CONSTRAINT="") if name != "astropy" else dict(os.environ)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            *extra,
            spec,
            "-d",
            str(download),
        ],
        check=True,
        env=env,
    )
    # PyPI keeps some sdists under their display name (Django-5.1.4.tar.gz).
    wanted = f"{name}-{version}.tar.gz".lower()
    archive = next(p for p in download.glob("*.tar.gz") if p.name.lower() == wanted)
    with tarfile.open(archive) as tar:
        tar.extractall(work / "src", filter="data")
        top = tar.getnames()[0].split("/")[0]
    if top != unpacked.name:
        (work / "src" / top).rename(unpacked)
    return unpacked


def make_repo(trees: list[Path], work: Path, name: str) -> Path:
    """A git repository whose single commit holds the given trees side by side."""
    import shutil

    git_dir = work / "repos" / f"{name}.git"
    if (git_dir / "HEAD").exists():
        return git_dir
    if len(trees) == 1:
        commit_tree(trees[0], git_dir)
        return git_dir
    staging = work / "staging" / name
    shutil.rmtree(staging, ignore_errors=True)
    for tree in trees:
        shutil.copytree(tree, staging / tree.name)
    commit_tree(staging, git_dir)
    return git_dir


def build(git_dir: Path, index_dir: Path, env: dict[str, str] | None = None) -> dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "indexer",
            "build",
            "--repo",
            str(git_dir),
            "--index-dir",
            str(index_dir),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        # `-m` puts the working directory first on sys.path: a baseline builds with its own code
        cwd=(env or {}).get("INDEXER_BENCH_SRC"),
    )
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"build failed: {proc.stderr}")
    report = json.loads(proc.stdout)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {
        "seconds": round(seconds, 2),
        "build_seconds_reported": report["seconds"],
        "files": report["files"],
        "chunks": report["chunks"],
        "bytes": report["bytes"],
        "peak_rss_mb": round(max(peak, before) / 1024, 1),
    }


def warm_latency(index_dir: Path) -> dict[str, float]:
    index = Index(current_snapshot(index_dir))
    for q in QUERIES:  # load everything once
        index.search(q)
    times = []
    for _ in range(10):
        for q in QUERIES:
            start = time.perf_counter()
            index.search(q, k=10)
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return {
        "chunks": len(index),
        "p50_ms": round(statistics.median(times), 2),
        "p95_ms": round(times[int(0.95 * (len(times) - 1))], 2),
    }


def cold_search(git_dir: Path, index_dir: Path, runs: int = 7) -> dict[str, float]:
    times = []
    for i in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "indexer",
                "search",
                QUERIES[i % len(QUERIES)],
                "--repo",
                str(git_dir),
                "--index-dir",
                str(index_dir),
                "--json",
            ],
            check=True,
            capture_output=True,
        )
        times.append((time.perf_counter() - start) * 1000)
    return {"median_ms": round(statistics.median(times), 1), "min_ms": round(min(times), 1)}


ABLATIONS: dict[str, dict[str, object]] = {
    "default (artifacts/fusion.json)": {},
    "no definition boost": {"rerank": {"definition": 0}},
    "no path match": {"rerank": {"path": 0}},
    "no file coherence": {"rerank": {"coherence": 0}},
    "no per-file saturation": {"rerank": {"saturation": 1.0}},
    "no test/doc/vendor demotion": {"rerank": {"demote": 1.0}},
    "no data/config demotion": {"rerank": {"demote_data": 1.0}},
    "no reranking at all": {
        "rerank": {
            "definition": 0,
            "path": 0,
            "coherence": 0,
            "saturation": 1.0,
            "demote": 1.0,
            "demote_data": 1.0,
        }
    },
    "equal retriever weights": {
        "retriever_weights": {
            "symbol": {"bm25": 1.0, "dense": 1.0},
            "natural": {"bm25": 1.0, "dense": 1.0},
            "long": {"bm25": 1.0, "dense": 1.0},
        }
    },
    "no adaptive cut": {"threshold": {"relative": 0.0}},
}


def run_ablations(cases: list, cache: Path) -> dict[str, dict[str, float]]:  # type: ignore[type-arg]
    from indexer.search.fusion import FusionConfig

    base = json.loads((ROOT / "artifacts" / "fusion.json").read_text())
    out = {}
    for name, override in ABLATIONS.items():
        merged = json.loads(json.dumps(base))
        for key, value in override.items():
            if isinstance(value, dict):
                for sub, v in value.items():
                    if isinstance(v, dict):
                        merged[key][sub].update(v)
                    else:
                        merged[key][sub] = v
            else:
                merged[key] = value
        report = evaluate(cases, cache, systems=("fused",), fusion=FusionConfig.from_dict(merged))
        out[name] = report.systems["fused"]
    return out


def ablation_table(ablation: dict[str, dict[str, float]]) -> str:
    lines = ["| variant | file R@1 | file R@10 | MRR | function R@10 |", "|---|---|---|---|---|"]
    for name, m in ablation.items():
        fn = m.get("function_recall@10")
        lines.append(
            f"| {name} | {m['file_recall@1']:.3f} | {m['file_recall@10']:.3f} | "
            f"{m['mrr']:.3f} | {'-' if fn is None else f'{fn:.3f}'} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=ROOT / ".bench")
    parser.add_argument("--devset", type=Path, default=ROOT.parent / "shared" / "devset")
    parser.add_argument(
        "--devset-short", type=Path, default=ROOT.parent / "shared" / "devset-short"
    )
    parser.add_argument(
        "--trees",
        type=Path,
        default=None,
        help="where devset trees are unpacked (default: WORK/devset-trees)",
    )
    parser.add_argument("--trees-short", type=Path, default=None)
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument(
        "--ablations",
        action="store_true",
        help="also evaluate the fused system with each ranking signal changed",
    )
    args = parser.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    trees = args.trees or work / "devset-trees"
    trees_short = args.trees_short or work / "devset-short-trees"
    results: dict[str, object] = {}

    sympy = sdist_tree(SDISTS["sympy"], work, trees if trees.exists() else None)
    requests_tree = sdist_tree(SDISTS["requests"], work, None)
    astropy = sdist_tree(SDISTS["astropy"], work, trees if trees.exists() else None)

    for name, repo_trees in (
        ("requests", [requests_tree]),
        ("sympy", [sympy]),
        ("sympy+astropy", [sympy, astropy]),
    ):
        git_dir = make_repo(repo_trees, work, name.replace("+", "_"))
        index_dir = work / "indexes" / name.replace("+", "_")
        entry = {"build": build(git_dir, index_dir)}
        entry["warm"] = warm_latency(index_dir)
        entry["cold"] = cold_search(git_dir, index_dir)
        results[name] = entry
        print(f"{name}: {json.dumps(entry)}", file=sys.stderr)

    lines = [
        "| repository | files | chunks | build s | artifacts MB | peak RSS MB | warm p50 ms "
        "| warm p95 ms | cold search ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, entry in results.items():
        b, w, c = entry["build"], entry["warm"], entry["cold"]  # type: ignore[index]
        lines.append(
            f"| {name} | {b['files']} | {b['chunks']} | {b['seconds']} | "
            f"{b['bytes'] / 1e6:.1f} | {b['peak_rss_mb']} | {w['p50_ms']} | "
            f"{w['p95_ms']} | {c['median_ms']} |"
        )
    print("\n".join(lines))

    if not args.skip_quality:
        for label, dataset, tree_root, fetch in (
            ("devset (long issue queries)", args.devset, trees, "fetch_trees.sh"),
            ("devset-short (short questions)", args.devset_short, trees_short, "fetch_trees.sh"),
        ):
            if not tree_root.exists():
                subprocess.run(["bash", str(dataset / fetch), str(tree_root)], check=True)
            cases = load_dataset(dataset / "instances.jsonl", tree_root)
            report = evaluate(cases, work / "eval-cache", log=lambda m: print(m, file=sys.stderr))
            results[label] = report.systems
            results[label + " per repository"] = report.groups
            print(f"\n{label}, {len(cases)} queries\n")
            print(format_table(report))
            if args.ablations:
                ablation = run_ablations(cases, work / "eval-cache")
                results[label + " ablations"] = ablation
                print(f"\nablations (fused, one signal changed), {label}\n")
                print(ablation_table(ablation))
    (work / "results.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
