"""Segments benchmark: what a small commit costs, what the index weighs, search over segments.

    python benchmarks/bench_segments.py --repo /work/bigbench/repos/sympy.git [--baseline DIR]

In one run, on a clone of `--repo` (a bare repository holding one commit is enough):
- full build; disk under the index directory vs the indexed source (blob sizes at HEAD);
- a 1-file and a 5-file commit: `indexer update` as a whole process (median of 3 runs each),
  bytes written by the 1-file update (new files under the index directory) vs the index size;
- search p50 over 10 unmerged segments vs the same index merged by `indexer optimize`, in one
  process, alternating query by query, and whether both give the same top 10.
`--baseline DIR`: a checkout of the code before segments (e.g. `git archive main`), measured
the same way in the same run, alternating with this code.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_core import GIT_ENV

ROOT = Path(__file__).resolve().parents[1]
QUERIES = ["solve linear equations", "Matrix determinant", "latex printer", "Symbol", "Rational"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout.strip()


def indexer(code: Path, repo: Path, *args: str) -> float:
    """Run `python -m indexer` from `code` (its package first on the path); wall seconds."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "indexer", *args, "--repo", str(repo)],
        cwd=code,
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"indexer {' '.join(args)} failed: {proc.stderr.strip()[-2000:]}")
    return time.perf_counter() - start


def files_under(directory: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for path in directory.rglob("*"):
        if path.is_file():
            st = path.stat()
            out[str(path.relative_to(directory))] = (st.st_ino, st.st_size)
    return out


def python_files(repo: Path, n: int, start: int) -> list[str]:
    """n source files, different ones for each `start` (each update its own segment)."""
    names = [p for p in git(repo, "ls-files", "*.py").splitlines() if "/tests/" not in p]
    return sorted(names, key=lambda p: (len(p), p))[100 + start : 100 + start + n]


def commit_change(repo: Path, files: list[str], tag: str) -> None:
    for name in files:
        with (repo / name).open("a") as fh:
            fh.write(f"\n\ndef bench_added_{tag}_{abs(hash(name)) % 10**6}():\n    return 1\n")
    git(repo, "commit", "-qam", f"bench {tag}")


def source_bytes(repo: Path) -> int:
    out = git(repo, "ls-tree", "-r", "-l", "HEAD")
    return sum(int(line.split()[3]) for line in out.splitlines() if line.split()[3].isdigit())


def search_p50(code: Path, repo: Path, rounds: int = 30) -> float:
    """Warm search p50 (ms) in a fresh process of `code`."""
    script = (
        "import sys, time, statistics\n"
        "from indexer import Index\n"
        "index = Index.open(sys.argv[1])\n"
        f"queries = {QUERIES!r}\n"
        "for q in queries: index.search(q)\n"
        "times = []\n"
        f"for _ in range({rounds}):\n"
        "    for q in queries:\n"
        "        t = time.perf_counter(); index.search(q); times.append(time.perf_counter() - t)\n"
        "print(statistics.median(times) * 1000)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(code)}
    proc = subprocess.run(
        [sys.executable, "-c", script, str(repo)],
        cwd=code,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return float(proc.stdout.strip().splitlines()[-1])


def segments_vs_merged(
    code: Path, segments: Path, merged: Path, rounds: int = 10
) -> dict[str, Any]:
    """Warm p50 (ms) over the unmerged and the merged index in one process, alternating query by
    query (drift on a shared machine hits both alike), and whether their top 10s are equal."""
    script = (
        "import json, sys, time, statistics\n"
        "from pathlib import Path\n"
        "from indexer.api import Index\n"
        "from indexer.index.store import current_generation\n"
        "a, b = (Index(current_generation(Path(p))) for p in sys.argv[1:3])\n"
        f"queries = {QUERIES!r}\n"
        "top = lambda ix, q: [(r.id, r.score) for r in ix.search(q)]\n"
        "same = all(top(a, q) == top(b, q) for q in queries)\n"
        "times = {'a': [], 'b': []}\n"
        f"for rep in range({rounds}):\n"
        "    for q in queries:\n"
        "        pair = (('a', a), ('b', b))\n"
        "        for name, ix in (pair if rep % 2 == 0 else pair[::-1]):\n"
        "            t = time.perf_counter(); ix.search(q)\n"
        "            times[name].append(time.perf_counter() - t)\n"
        "print(json.dumps({'segments_ms': statistics.median(times['a']) * 1000,"
        " 'merged_ms': statistics.median(times['b']) * 1000, 'same': same}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(code)}
    proc = subprocess.run(
        [sys.executable, "-c", script, str(segments), str(merged)],
        cwd=code,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return {
        "search_p50_segments_ms": round(out["segments_ms"], 2),
        "search_p50_merged_ms": round(out["merged_ms"], 2),
        "search_same_top10": out["same"],
    }


def measure(
    code: Path,
    origin: Path,
    work: Path,
    label: str,
    segments: bool,
    start: Path | None = None,
    search: bool = True,
) -> dict[str, object]:
    """`start`: a format-2 snapshot (segments: converted by convert_v2.py) or index directory
    (baseline: copied) of the same commit and chunker version, instead of a full build."""
    repo = work / f"repo-{label}"
    shutil.rmtree(repo, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", str(origin), str(repo)], check=True, env=GIT_ENV)
    index_dir = repo / ".git" / "indexer"
    result: dict[str, object] = {}
    if start is None:
        result["build_s"] = round(indexer(code, repo, "build"), 2)
    elif segments:
        env = {**os.environ, "PYTHONPATH": str(code)}
        script = [sys.executable, str(code / "benchmarks" / "convert_v2.py"), str(start)]
        subprocess.run([*script, str(index_dir)], cwd=code, env=env, check=True)
    else:
        shutil.copytree(start, index_dir, symlinks=True)
    size = sum(s for _, s in files_under(index_dir).values())
    source = source_bytes(repo)
    result.update(index_mb=round(size / 1e6, 1), source_mb=round(source / 1e6, 1))
    result["disk_ratio"] = round(size / source, 2)
    for n in (1, 5):
        times = []
        for attempt in range(3):
            commit_change(repo, python_files(repo, n, 10 * attempt + 5 * (n > 1)), f"{n}-{attempt}")
            before = files_under(index_dir)
            times.append(indexer(code, repo, "update"))
            after = files_under(index_dir)
            if n == 1 and attempt == 0:
                written = sum(s[1] for k, s in after.items() if before.get(k) != s)
                total = sum(s[1] for s in after.values())
                result["written_1file_bytes"] = written
                result["written_1file_pct"] = round(100 * written / total, 2)
        result[f"update_{n}file_s"] = round(statistics.median(times), 3)
        print(label, json.dumps(result), file=sys.stderr, flush=True)
    if segments and search:
        for i in range(10 - 6):
            commit_change(repo, python_files(repo, 1, 40 + i), f"seg-{i}")
            indexer(code, repo, "update")
        status = json.loads(
            subprocess.run(
                [sys.executable, "-m", "indexer", "status", "--json", "--repo", str(repo)],
                cwd=code,
                env={**os.environ, "PYTHONPATH": str(code)},
                check=True,
                capture_output=True,
            ).stdout
        )
        result["segments"] = status.get("segments")
        merged = work / "merged-index"
        shutil.rmtree(merged, ignore_errors=True)
        shutil.copytree(index_dir, merged)
        indexer(code, repo, "optimize", "--index-dir", str(merged))
        result.update(segments_vs_merged(code, index_dir, merged))
    elif search:
        result["search_p50_ms"] = round(search_p50(code, repo), 2)
    shutil.rmtree(repo, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--baseline", default=None, help="a checkout of the code before segments")
    parser.add_argument("--work", default="/tmp/bench-segments")
    parser.add_argument("--code", default=str(ROOT), help="the checkout measured (default: this)")
    parser.add_argument("--start-snapshot", default=None, help="format-2 snapshot to convert")
    parser.add_argument("--baseline-start", default=None, help="format-2 index dir to copy")
    parser.add_argument("--no-search", action="store_true", help="updates and disk only")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    out: dict[str, object] = {"repo": args.repo}
    if args.baseline:
        start = Path(args.baseline_start) if args.baseline_start else None
        out["baseline"] = measure(
            Path(args.baseline), Path(args.repo), work, "base", False, start, not args.no_search
        )
    start = Path(args.start_snapshot) if args.start_snapshot else None
    out["segments"] = measure(
        Path(args.code), Path(args.repo), work, "seg", True, start, not args.no_search
    )
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
