"""A cold `indexer search` process against the import floor, on existing indexes.

    python benchmarks/bench_cold.py --corpus sympy=GIT_DIR=INDEX_DIR [--corpus big=...]
                                    [--baseline CHECKOUT] [--runs 64]

The cold part of bench_latency.py without building corpora: whole `indexer search --json`
processes alternating with `python -c "import numpy, faiss"` (the floor), the same search
forwarded to a running `indexer serve`, and `--baseline`'s code on the same index (same
format). Queries cycle through the three kinds of bench_latency.py (identifiers sampled from
the index, short questions, issue texts). `--worktree` also times the search from a clone's
working tree (the default overlay: `git status` on a clean tree).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from latency_corpora import query_sets
from latency_processes import timed_run

ROOT = Path(__file__).resolve().parents[1]


def runs_of(variants: dict[str, tuple[list[str], dict[str, str], Path]], n: int) -> dict[str, Any]:
    times: dict[str, list[float]] = {k: [] for k in variants}
    names = list(variants)
    for i in range(n):
        for name in names if i % 2 == 0 else reversed(names):
            cmd, env, cwd = variants[name]
            cmd = [c.replace("{i}", str(i)) for c in cmd]
            times[name].append(timed_run(cmd, env, cwd))
    med = {k: statistics.median(v) for k, v in times.items()}
    out: dict[str, Any] = {f"{k}_ms": round(v, 1) for k, v in med.items()}
    out.update({f"{k}_ratio": round(v / med["floor"], 2) for k, v in med.items() if k != "floor"})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", action="append", required=True, help="NAME=GIT_DIR=INDEX")
    parser.add_argument("--baseline", type=Path, default=None, help="an earlier checkout")
    parser.add_argument("--devset", type=Path, default=ROOT.parent / "shared" / "devset")
    parser.add_argument("--runs", type=int, default=64)
    parser.add_argument("--worktree", action="store_true", help="also from a clone's tree")
    args = parser.parse_args()
    results = {}
    for spec in args.corpus:
        name, git_dir, index_dir = spec.split("=")
        # absolute: the baseline's processes run from its own checkout
        git_dir, index_dir = str(Path(git_dir).resolve()), str(Path(index_dir).resolve())
        kinds = query_sets(Path(index_dir), args.devset)
        longest = max(map(len, kinds.values()))
        queries = [q for i in range(longest) for qs in kinds.values() for q in qs[i : i + 1]]
        with tempfile.TemporaryDirectory() as run_dir:
            env = dict(os.environ, INDEXER_SAVINGS="0", XDG_RUNTIME_DIR=run_dir)
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            here = [sys.executable, "-m", "indexer"]
            where = ["--repo", git_dir, "--index-dir", index_dir, "--json"]
            for i in range(args.runs):
                (Path(run_dir) / f"q{i}").write_text(queries[i % len(queries)])
            search = [sys.executable, "-c", READ_QUERY, run_dir, "search", *where]
            local = dict(env, INDEXER_SERVE="0")
            variants = {
                "floor": ([sys.executable, "-c", "import numpy, faiss"], env, ROOT),
                "search": ([*search, "{i}"], local, ROOT),
                "served": ([*search, "{i}"], env, ROOT),
            }
            if args.baseline is not None:
                base_env = dict(local, PYTHONPATH=str(args.baseline))
                variants["baseline"] = ([*search, "{i}"], base_env, args.baseline)
            clone = Path(run_dir) / "clone"
            if args.worktree:
                subprocess.run(["git", "clone", "-q", git_dir, str(clone)], check=True)
                time.sleep(1.1)  # then a status settles the index's racy stat data, as in use
                subprocess.run(["git", "status", "-s"], cwd=clone, check=True, capture_output=True)
                tree = [sys.executable, "-c", READ_QUERY, run_dir, "search", "--json"]
                variants["worktree"] = ([*tree, "--index-dir", index_dir, "{i}"], local, clone)
            subprocess.run([*here, "serve", "--background", *where], env=env, check=True)
            try:
                result = runs_of(variants, args.runs)
            finally:
                subprocess.run([*here, "serve", "--stop", *where], env=env, check=False)
            shutil.rmtree(clone, ignore_errors=True)
        results[name] = result
        print(name, json.dumps(result), file=sys.stderr, flush=True)
    print(json.dumps(results, indent=1))


# `python -c READ_QUERY DIR ARGS... I`: run `indexer ARGS QUERY_I` (the query read from a file,
# so an issue text passes whole), as its own process would.
READ_QUERY = """
import sys
from pathlib import Path
query = Path(sys.argv[1], "q" + sys.argv[-1]).read_text()
sys.argv = ["indexer", *sys.argv[2:-1], "--", query]
from indexer.serve.cli import main
raise SystemExit(main())
"""

if __name__ == "__main__":
    main()
