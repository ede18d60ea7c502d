"""The working-tree overlay on sympy (issue 13), in one run:

- warm search p50 with 1, 10 and 100 uncommitted files against a clean tree, both in this process
  and sharing one index, queries alternating between the two trees (targets +2 / +5 / +30 ms);
- a cold `indexer search` process with 10 uncommitted files against the clean tree, alternating
  (target within +50 ms);
- the same top 10 as a full build of a commit holding the same edits (committed at the indexed
  commit's time, so recency agrees).

    python benchmarks/bench_worktree.py [--repo /work/bigbench/repos/sympy.git] [--work DIR]
        [--devset /work/shared/devset] [--repeats 3] [--cold-runs 20] [--skip warm|cold|equality]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from latency_corpora import query_sets  # noqa: E402

from indexer.api import Index  # noqa: E402

COUNTS = (1, 10, 100)


def git(tree: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=tree, capture_output=True, text=True, check=True, env=env
    )
    return done.stdout


def build(tree: Path, index_dir: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "indexer",
            "build",
            "--repo",
            str(tree),
            "--index-dir",
            str(index_dir),
        ],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start


def edit_targets(tree: Path, n: int) -> list[str]:
    paths = [
        p
        for p in git(tree, "ls-files", "sympy/*.py").split()
        if "/tests/" not in p and not p.endswith("__init__.py")
    ]
    return random.Random(13).sample(sorted(paths), n)


def apply_edits(tree: Path, targets: list[str]) -> None:
    """Each file gets a new function and one renamed word (what an agent's edit looks like)."""
    git(tree, "checkout", "-q", "--", ".")
    for i, path in enumerate(targets):
        file = tree / path
        text = file.read_text(encoding="utf-8")
        stem = Path(path).stem
        text += (
            f"\n\ndef overlay_rewrite_{i}_{stem}(expr, depth=2):\n"
            f'    """Rewrite {stem} expressions bottom-up before simplification."""\n'
            "    return expr.replace(lambda e: e.is_Pow, lambda e: e.base ** e.exp)\n"
        )
        file.write_text(text, encoding="utf-8")


def p50(values: list[float]) -> float:
    return round(statistics.median(values), 3)


def timed(index: Index, query: str) -> float:
    start = time.perf_counter()
    index.search(query, k=10)
    return (time.perf_counter() - start) * 1000


def warm(clean: Path, dirty: Path, index_dir: Path, queries: list[str], repeats: int) -> Any:
    clean_ix = Index.open(clean, index_dir=index_dir)
    dirty_ix = Index.open(dirty, index_dir=index_dir)
    out = {}
    for n in COUNTS:
        apply_edits(dirty, edit_targets(dirty, n))
        start = time.perf_counter()
        dirty_ix.search(queries[0], k=10)  # the overlay is read and chunked here, once
        first = (time.perf_counter() - start) * 1000
        for q in queries:  # warm-up of both
            clean_ix.search(q, k=10)
            dirty_ix.search(q, k=10)
        times: dict[str, list[float]] = {"clean": [], "dirty": []}
        for _ in range(repeats):
            for q in queries:
                times["clean"].append(timed(clean_ix, q))
                times["dirty"].append(timed(dirty_ix, q))
        entry = {
            "clean_p50": p50(times["clean"]),
            "dirty_p50": p50(times["dirty"]),
            "first_search_ms": round(first, 1),
            "overlaid": dirty_ix.current().worktree.summary()["overlaid"],  # type: ignore[union-attr]
        }
        entry["delta_ms"] = round(entry["dirty_p50"] - entry["clean_p50"], 3)
        out[n] = entry
        print(f"warm {n:>3} dirty: {entry}", file=sys.stderr)
    return out


def cold(
    clean: Path, dirty: Path, index_dir: Path, queries: list[str], runs: int, served: bool
) -> Any:
    """Whole `indexer search` processes; `served`: forwarded to a running `indexer serve`."""
    apply_edits(dirty, edit_targets(dirty, 10))
    env = dict(os.environ, INDEXER_SERVE="on" if served else "0", INDEXER_SAVINGS="0")
    base = [sys.executable, "-m", "indexer", "search", "--json", "--no-log"]
    if served:
        serve = [sys.executable, "-m", "indexer", "serve", "--index-dir", str(index_dir)]
        subprocess.run([*serve, "--background"], cwd=clean, env=env, check=True)
    times: dict[str, list[float]] = {"clean": [], "dirty": []}
    for i in range(runs + 2):
        q = queries[i % len(queries)]
        for name, tree in (("clean", clean), ("dirty", dirty)):
            start = time.perf_counter()
            subprocess.run(
                [*base, "--index-dir", str(index_dir), "--", q],
                cwd=tree,
                env=env,
                capture_output=True,
                check=False,
            )
            if i >= 2:  # two warm-up rounds (page cache)
                times[name].append((time.perf_counter() - start) * 1000)
    if served:
        subprocess.run([*serve, "--stop"], cwd=clean, env=env, check=False)
    entry = {"clean_p50": p50(times["clean"]), "dirty_p50": p50(times["dirty"])}
    entry["delta_ms"] = round(entry["dirty_p50"] - entry["clean_p50"], 1)
    print(f"cold 10 dirty{' (served)' if served else ''}: {entry}", file=sys.stderr)
    return entry


def equality(dirty: Path, index_dir: Path, work: Path, queries: list[str], n: int) -> Any:
    """Top 10 of the overlay vs a full build of a commit holding the same edits."""
    apply_edits(dirty, edit_targets(dirty, n))
    overlaid = Index.open(dirty, index_dir=index_dir)
    got = [[(r.id, r.score) for r in overlaid.search(q, k=10)] for q in queries]
    date = git(dirty, "log", "-1", "--format=%cI").strip()
    env = dict(os.environ, GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    git(dirty, "add", "-A")
    git(dirty, "-c", "user.name=bench", "-c", "user.email=b@x", "commit", "-qm", "edits", env=env)
    full_dir = work / f"full-{n}"
    build(dirty, full_dir)
    full = Index.open(dirty, index_dir=full_dir, worktree=False)
    want = [[(r.id, r.score) for r in full.search(q, k=10)] for q in queries]
    git(dirty, "reset", "-q", "--hard", "HEAD~1")
    same_ids = sum([i for i, _ in g] == [i for i, _ in w] for g, w in zip(got, want, strict=True))
    same_all = sum(g == w for g, w in zip(got, want, strict=True))
    entry = {"queries": len(queries), "same_top10_ids": same_ids, "same_ids_and_scores": same_all}
    print(f"equality {n} dirty: {entry}", file=sys.stderr)
    return entry


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repo", type=Path, default=Path("/work/bigbench/repos/sympy.git"))
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--devset", type=Path, default=Path("/work/shared/devset"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cold-runs", type=int, default=20)
    parser.add_argument("--skip", action="append", default=[], choices=("warm", "cold", "equality"))
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-worktree-"))
    work.mkdir(parents=True, exist_ok=True)
    clean, dirty, index_dir = work / "clean", work / "dirty", work / "index"
    for tree in (clean, dirty):
        if not tree.exists():
            git(work, "clone", "-q", str(args.repo), str(tree))
    results: dict[str, Any] = {}
    if not (index_dir / "CURRENT").exists():
        results["build_s"] = round(build(clean, index_dir), 1)
    sets = query_sets(index_dir, args.devset)
    queries = [q for qs in sets.values() for q in qs]
    results["queries"] = len(queries)
    if "warm" not in args.skip:
        results["warm"] = warm(clean, dirty, index_dir, queries, args.repeats)
    if "cold" not in args.skip:
        results["cold"] = cold(clean, dirty, index_dir, queries, args.cold_runs, served=False)
        results["served"] = cold(clean, dirty, index_dir, queries, args.cold_runs, served=True)
    if "equality" not in args.skip:
        results["equality"] = {n: equality(dirty, index_dir, work, queries, n) for n in (10, 100)}
    git(dirty, "checkout", "-q", "--", ".")
    print(json.dumps(results, indent=1))
    (work / "results.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
