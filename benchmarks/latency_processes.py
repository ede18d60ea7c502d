"""The latency bench's whole processes (benchmarks/bench_latency.py): cold `indexer search`
against the import floor, the peak RSS of a search process, and the baseline checkout's index."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from latency_corpora import ensure_index

ROOT = Path(__file__).resolve().parents[1]


def cold(
    git_dir: Path, index_dir: Path, queries: list[str], runs: int, baseline: Baseline | None
) -> dict[str, float]:
    """Whole `indexer search --json` processes against the import floor, alternating: run in
    the process (no server), forwarded to a running `indexer serve`, and the baseline's (its
    tree first on PYTHONPATH, as the `indexer` script imports it)."""
    import compileall
    import tempfile

    # Byte-compile each variant's package first: with PYTHONDONTWRITEBYTECODE set and no .pyc
    # on disk, every cold process would compile every module it imports (~60 ms measured).
    for src in [ROOT] + ([baseline.src] if baseline is not None else []):
        compileall.compile_dir(str(src / "indexer"), quiet=1)
    times: dict[str, list[float]] = {"floor": [], "search": [], "served": [], "baseline": []}
    base = ["--repo", str(git_dir), "--json"]
    with tempfile.TemporaryDirectory() as run_dir:
        env = dict(os.environ, INDEXER_SAVINGS="0", XDG_RUNTIME_DIR=run_dir)
        # The `indexer` command itself (`-m` would add runpy's import); PYTHONPATH and the
        # working directory pick each variant's source tree.
        script = Path(sys.executable).parent / "indexer"
        indexer = [str(script)] if script.exists() else [sys.executable, "-m", "indexer"]
        ours = [*base, "--index-dir", str(index_dir)]
        subprocess.run(
            [*indexer, "serve", "--background", *ours], check=True, env=env, capture_output=True
        )
        try:
            for i in range(runs):
                q = queries[i % len(queries)]
                # `-m indexer` imports the package of the working directory first: each
                # variant runs from its own source tree.
                variants = [
                    ("floor", [sys.executable, "-c", "import numpy, faiss"], env, ROOT),
                    ("search", [*indexer, "search", q, *ours], dict(env, INDEXER_SERVE="0"), ROOT),
                    ("served", [*indexer, "search", q, *ours], env, ROOT),
                ]
                if baseline is not None:
                    cmd = [*indexer, "search", q, *base, "--index-dir", str(baseline.index_dir)]
                    # never forwarded: the baseline may share an index (and a server) with ours
                    base_env = dict(env, **baseline.env, INDEXER_SERVE="0")
                    variants.append(("baseline", cmd, base_env, baseline.src))
                for name, cmd, run_env, cwd in variants if i % 2 == 0 else variants[::-1]:
                    times[name].append(timed_run(cmd, run_env, cwd))
        finally:
            subprocess.run(
                [*indexer, "serve", "--stop", *ours], check=False, env=env, capture_output=True
            )
    med = {k: statistics.median(v) for k, v in times.items() if v}
    out = {f"{k}_ms": round(v, 1) for k, v in med.items()}
    out.update({f"{k}_ratio": round(v / med["floor"], 2) for k, v in med.items() if k != "floor"})
    return out


def timed_run(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    """Milliseconds of one whole process; a run that failed (an error, not "nothing found":
    `indexer search` exits 1 for that) stops the benchmark, as its time would mean nothing."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, check=False, capture_output=True, env=env, cwd=cwd)
    elapsed = (time.perf_counter() - start) * 1000
    failed = (b"indexer: error", b"indexer: internal error", b"Traceback")
    if proc.returncode not in (0, 1) or any(mark in proc.stderr for mark in failed):
        why = proc.stderr.decode(errors="replace").strip()[-300:]
        raise SystemExit(f"{' '.join(cmd[:4])}... in {cwd} failed: {why}")
    return elapsed


class Baseline:
    """An earlier checkout (`--baseline DIR`): its own index, built and searched by its code."""

    def __init__(self, src: Path, work: Path, name: str, git_dir: Path, reuse: bool) -> None:
        self.src = src
        self.env = {"PYTHONPATH": str(src), "INDEXER_BENCH_SRC": str(src)}
        self.index_dir = work / "indexes" / f"{name}-baseline"
        env = dict(os.environ, **self.env)
        self.built_by = ensure_index(git_dir, self.index_dir, env, src, reuse)


def search_rss(
    index_dir: Path, queries: list[str], env: dict[str, str] | None = None, src: Path = ROOT
) -> float:
    """Peak RSS (MB) of a process that opens the index and runs every query, with the code of
    `src` (run from there: `python -c` imports the working directory's package first)."""
    code = (
        "import json, resource, sys\n"
        "from pathlib import Path\n"
        "from indexer.api import Index\n"
        "from indexer.index.store import current_snapshot\n"
        "index = Index(current_snapshot(Path(sys.argv[1])))\n"
        "for q in json.loads(sys.stdin.read()):\n"
        "    index.search(q, k=10, log=False)\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)\n"
    )
    return round(
        float(run_with_input([sys.executable, "-c", code, str(index_dir)], queries, env, src)), 1
    )


def run_with_input(cmd: list[str], data: Any, env: dict[str, str] | None, cwd: Path) -> str:
    """stdout of `cmd` run in `cwd` with `data` as JSON on its stdin (stripped)."""
    proc = subprocess.run(
        cmd, input=json.dumps(data), capture_output=True, text=True, check=True, env=env, cwd=cwd
    )
    return proc.stdout.strip()
