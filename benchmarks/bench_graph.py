"""Code-graph benchmark: the graph work of a 1-file update and `indexer related` latency,
before (global resolution, commit 4ed996f) and after (per-file facts in segments, resolution at
query time).

    python benchmarks/bench_graph.py --old-indexes /work/bigbench/indexes \\
        --new-indexes sympy=DIR big=DIR [--work DIR] [--rounds 3]

Inputs: for each corpus, an index built by the old code (benchmarks/bench_latency.py leaves them
under /work/bigbench/indexes/<corpus>; its snapshot holds the old graph files) and one built by
this checkout (`indexer build --index-dir DIR`). The old code is `git archive 4ed996f indexer`
unpacked under --work and run from there (PYTHONPATH).
- Graph work of a 1-file update (sympy/core/basic.py, 2,000 lines, changed), both designs in the
  same run, alternating, --rounds each, each in a fresh process:
  before: `write_graph` of 4ed996f with the snapshot as base (reads the stored per-file data,
  parses the changed file, resolves every name, writes graph.json, edges, per-file data and the
  ranking arrays: what every update did);
  after: what an update does for the graph now: extract the changed file's facts
  (`extract_facts`) and write them into the new segment (`write_facts`).
- `indexer related` latency: a cold process (`indexer related Basic.subs --json`, median of 3)
  and warm in-process calls (p50/p95 over 50 methods, depth 1, both directions).
Prints Markdown; raw numbers go to --out.
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

ROOT = Path(__file__).resolve().parents[1]
OLD_COMMIT = "4ed996f"

# Runs in a child process with PYTHONPATH set to one code base; prints JSON.
UPDATE_CHILD = r"""
import json, sys, time
from pathlib import Path
design, snapshot, out, changed, repo = sys.argv[1:]
snapshot, out = Path(snapshot), Path(out)
try:
    from indexer.source.chunks import Chunk
except ImportError:  # the code before the layout change
    from indexer.chunker import Chunk
files = json.loads((snapshot / "files.json").read_text())
paths = [f["path"] for f in files]
blob_of = {f["path"]: f["blob"] for f in files}
with (snapshot / "chunks.jsonl").open("rb") as fh:
    chunks = [Chunk(**json.loads(line), text="") for line in fh]
changed_chunks = [c for c in chunks if c.path == changed]
start, cpu = time.perf_counter(), time.process_time()
if design == "before":
    from indexer.graph import write_graph
    write_graph(out, repo, paths, blob_of, changed_chunks, jobs=1, base=snapshot)
else:
    from indexer.index.graph.facts import write_facts
    from indexer.index.graph.model import FileGraph
    from indexer.index.graph.write import extract_facts
    facts = extract_facts(repo, [(changed, blob_of[changed], changed_chunks)], 1)
    write_facts(out, [FileGraph.from_dict(p, d) for p, d in facts.items()])
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
written = sum(p.stat().st_size for p in out.iterdir() if p.name.startswith("graph"))
print(json.dumps({"seconds": seconds, "cpu": cpu, "bytes": written}))
"""

WARM_CHILD = r"""
import json, random, statistics, sys, time
git_dir, index_dir = sys.argv[1:]
from indexer.api import Index
index = Index.open(git_dir, index_dir=index_dir)
methods = sorted(index.chunk_at(i, with_text=False).id for i in range(len(index))
                 if index.chunk_at(i, with_text=False).kind == "method")
picked = random.Random(4).sample(methods, min(50, len(methods)))
start = time.perf_counter()
index.related(picked[0])
first = time.perf_counter() - start
times, cpu = [], []
for key in picked[1:]:
    t, c = time.perf_counter(), time.process_time()
    index.related(key)
    times.append(time.perf_counter() - t)
    cpu.append(time.process_time() - c)
times.sort()
print(json.dumps({"first_s": first, "p50_ms": 1000 * statistics.median(times),
                  "p95_ms": 1000 * times[int(0.95 * (len(times) - 1))],
                  "max_ms": 1000 * times[-1], "cpu_p50_ms": 1000 * statistics.median(cpu)}))
"""


def child(code: Path, script: str, *args: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(code), "INDEXER_SAVINGS": "0"}
    proc = subprocess.run(  # cwd: `-c` puts the working directory first on sys.path
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, cwd=code
    )
    if proc.returncode != 0:
        raise SystemExit(f"child failed: {proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def old_code(work: Path) -> Path:
    code = work / f"code-{OLD_COMMIT}"
    if not (code / "indexer").is_dir():
        code.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "archive", OLD_COMMIT, "indexer"], cwd=ROOT, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(code)], input=archive, check=True)
    return code


def stale_base(snapshot: Path, target: Path, stale: str) -> Path:
    """A copy of `snapshot` (hard links) with the changed file's stored blob marked stale, so
    the old update parses it again."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for f in snapshot.iterdir():
        if f.name != "graph_files.json":
            os.link(f, target / f.name)
    raw = json.loads((snapshot / "graph_files.json").read_text(encoding="utf-8"))
    raw[stale]["blob"] = "0" * 40
    (target / "graph_files.json").write_text(json.dumps(raw, separators=(",", ":")))
    return target


def cold_related(code: Path, git_dir: Path, index_dir: Path, key: str, runs: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(code), "INDEXER_SAVINGS": "0"}
    command = [sys.executable, "-m", "indexer", "related", key, "--json", "--repo", str(git_dir)]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(
            [*command, "--index-dir", str(index_dir)],
            capture_output=True,
            text=True,
            env=env,
            cwd=code,
        )
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"related failed: {proc.stderr[-2000:]}")
    return statistics.median(times)


def bench_corpus(old_index: Path, new_index: Path, work: Path, rounds: int) -> dict[str, Any]:
    snapshot = old_index / "snapshots" / (old_index / "CURRENT").read_text().strip()
    files = json.loads((snapshot / "files.json").read_text())
    git_dir = Path(json.loads((snapshot / "manifest.json").read_text())["repo_root"])
    changed = next(f["path"] for f in files if f["path"].endswith("sympy/core/basic.py"))
    base = stale_base(snapshot, work / old_index.name / "old-base" / "snapshots" / "s", changed)
    codes = {"before": old_code(work), "after": ROOT}
    update: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for _ in range(rounds):
        for design in ("before", "after"):
            out = Path(tempfile.mkdtemp(dir=work))
            for f in ("chunk_fids.npy", "chunk_file.npy", "files.json"):
                os.link(snapshot / f, out / f)  # the old rank arrays read them
            args = (design, str(base), str(out), changed, str(git_dir))
            update[design].append(child(codes[design], UPDATE_CHILD, *args))
            shutil.rmtree(out)
    result: dict[str, Any] = {"changed_file": changed, "files": len(files)}
    for design, runs in update.items():
        result[f"update_graph_s_{design}"] = round(statistics.median(r["seconds"] for r in runs), 3)
        result[f"update_graph_cpu_s_{design}"] = round(statistics.median(r["cpu"] for r in runs), 3)
        result[f"update_graph_bytes_{design}"] = runs[0]["bytes"]
    index_dirs = {"before": old_index, "after": new_index}
    for design in ("before", "after") if new_index.name else ():
        result[f"related_cold_s_{design}"] = round(
            cold_related(codes[design], git_dir, index_dirs[design], "Basic.subs", 3), 3
        )
        warm = child(codes[design], WARM_CHILD, str(git_dir), str(index_dirs[design]))
        result[f"related_first_s_{design}"] = round(warm["first_s"], 3)
        for name in ("p50_ms", "p95_ms", "max_ms", "cpu_p50_ms"):
            result[f"related_warm_{name}_{design}"] = round(warm[name], 2)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old-indexes", type=Path, default=Path("/work/bigbench/indexes"))
    parser.add_argument(
        "--new-indexes", nargs="+", required=True, help="CORPUS=INDEX_DIR (CORPUS=: updates only)"
    )
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "bench-graph")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    results = {}
    for spec in args.new_indexes:
        name, _, new_dir = spec.partition("=")
        results[name] = bench_corpus(args.old_indexes / name, Path(new_dir), work, args.rounds)
    rows = [
        ("graph work of a 1-file update, s", "update_graph_s"),
        ("its CPU seconds", "update_graph_cpu_s"),
        ("graph bytes written by it", "update_graph_bytes"),
        ("`indexer related` cold process, s", "related_cold_s"),
        ("first `related` in a process, s", "related_first_s"),
        ("warm `related` p50, ms", "related_warm_p50_ms"),
        ("warm `related` p95, ms", "related_warm_p95_ms"),
        ("warm `related` max, ms", "related_warm_max_ms"),
        ("warm `related` CPU p50, ms", "related_warm_cpu_p50_ms"),
    ]
    print("| measure | " + " | ".join(f"{c} before | {c} after" for c in results) + " |")
    print("|---|" + "---|---|" * len(results))
    for label, key in rows:
        cells = [f"{r.get(key + '_before')} | {r.get(key + '_after')}" for r in results.values()]
        print(f"| {label} | " + " | ".join(cells) + " |")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
