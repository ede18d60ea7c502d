"""Code-graph benchmark: the graph work of a 1-file update and `indexer related` latency,
before (global resolution, commit 4ed996f) and after (per-file facts, resolution at query time).

    python benchmarks/bench_graph.py [--indexes /work/bigbench/indexes] [--corpora sympy big]
        [--work DIR] [--rounds 3]

Inputs: indexes built by the old code (benchmarks/bench_latency.py leaves them under
/work/bigbench/indexes/<corpus>), whose snapshots hold the old graph files. The old code is
`git archive 4ed996f indexer` unpacked under --work and run from there (PYTHONPATH).
- Graph work of a 1-file update, both designs in the same run, alternating, --rounds each:
  before: `write_graph` of 4ed996f with the snapshot as base (reads the stored per-file data,
  parses the changed file, resolves every name, writes graph.json, edges, per-file data and the
  ranking arrays); after: `write_graph` of this checkout (parses the changed file, copies the
  other files' facts, writes the facts and their name index). The changed file is
  sympy/core/basic.py (2,000 lines): its stored blob is marked stale, so both designs parse it
  again.
- `indexer related` latency: a cold process (`python -m indexer related KEY --json`) and warm
  in-process calls (p50 over 50 methods, depth 1, both directions), old index vs new index (the
  same snapshot, hard-linked, plus the facts converted from its per-file data, which is what the
  extraction writes).
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
    from indexer.source.chunker import Chunk
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
    from indexer.index.graph.write import write_graph
    kept = [p for p in paths if p != changed]
    write_graph(out, repo, paths, blob_of, changed_chunks, jobs=1, base=snapshot, kept=kept)
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
written = sum(p.stat().st_size for p in out.iterdir() if p.name.startswith("graph"))
print(json.dumps({"seconds": seconds, "cpu": cpu, "bytes": written}))
"""

WARM_CHILD = r"""
import json, random, statistics, sys, time
from pathlib import Path
design, git_dir, index_dir = sys.argv[1], sys.argv[2], sys.argv[3]
from indexer.api import Index
index = Index.open(git_dir, index_dir=index_dir)
files = json.loads((index.snapshot / "files.json").read_text())
with (index.snapshot / "chunks.jsonl").open("rb") as fh:
    methods = [r["id"] for r in map(json.loads, fh) if r["kind"] == "method"]
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
                  "cpu_p50_ms": 1000 * statistics.median(cpu)}))
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


def linked_snapshot(snapshot: Path, target: Path, stale: str | None) -> Path:
    """A copy of `snapshot` (hard links) with the changed file's stored blob marked stale."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for f in snapshot.iterdir():
        if f.name != "graph_files.json":
            os.link(f, target / f.name)
    raw = json.loads((snapshot / "graph_files.json").read_text(encoding="utf-8"))
    if stale is not None:
        raw[stale]["blob"] = "0" * 40
    (target / "graph_files.json").write_text(json.dumps(raw, separators=(",", ":")))
    return target


def new_index(old_index: Path, target: Path) -> Path:
    """The old index's current snapshot (hard links) plus graph facts converted from its
    per-file data: an index this checkout opens."""
    sys.path.insert(0, str(ROOT))
    from indexer.index.graph import FileGraph, write_facts
    from indexer.index.store import sha256_file

    name = (old_index / "CURRENT").read_text().strip()
    snapshot = old_index / "snapshots" / name
    dest = target / "snapshots" / name
    if not (dest / "graph_facts.json").is_file():
        shutil.rmtree(target, ignore_errors=True)
        dest.mkdir(parents=True)
        for f in snapshot.iterdir():
            if not f.name.startswith("graph") and f.name != "manifest.json":
                os.link(f, dest / f.name)
        raw = json.loads((snapshot / "graph_files.json").read_text(encoding="utf-8"))
        write_facts(dest, [FileGraph.from_dict(p, d) for p, d in raw.items()])
        manifest = json.loads((snapshot / "manifest.json").read_text(encoding="utf-8"))
        listed = {n: v for n, v in manifest["files"].items() if not n.startswith("graph")}
        for f in dest.glob("graph_facts*"):
            listed[f.name] = {"bytes": f.stat().st_size, "sha256": sha256_file(f)}
        manifest["files"] = listed
        (dest / "manifest.json").write_text(json.dumps(manifest))
        (target / "CURRENT").write_text(name)
    return target


def cold_related(code: Path, git_dir: Path, index_dir: Path, key: str, runs: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(code), "INDEXER_SAVINGS": "0"}
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "indexer",
                "related",
                key,
                "--json",
                "--repo",
                str(git_dir),
                "--index-dir",
                str(index_dir),
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=code,
        )
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"related failed: {proc.stderr[-2000:]}")
    return statistics.median(times)


def bench_corpus(name: str, indexes: Path, work: Path, rounds: int) -> dict[str, Any]:
    old_index = indexes / name
    snapshot = old_index / "snapshots" / (old_index / "CURRENT").read_text().strip()
    files = json.loads((snapshot / "files.json").read_text())
    git_dir = Path(json.loads((snapshot / "manifest.json").read_text())["repo_root"])
    changed = ""
    with (snapshot / "chunks.jsonl").open("rb") as fh:
        for line in fh:
            if b'"Basic.subs"' in line:
                changed = json.loads(line)["path"]
                break
    base_old = linked_snapshot(snapshot, work / name / "old-base" / "snapshots" / "s", changed)
    new_dir = new_index(old_index, work / name / "new-index")
    new_snapshot = next((new_dir / "snapshots").iterdir())
    codes = {"before": old_code(work), "after": ROOT}
    update: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for _ in range(rounds):
        for design in ("before", "after"):
            out = Path(tempfile.mkdtemp(dir=work))
            for f in ("chunk_fids.npy", "chunk_file.npy", "files.json"):
                os.link(snapshot / f, out / f)
            base = base_old if design == "before" else new_snapshot
            args = (design, str(base), str(out), changed, str(git_dir))
            update[design].append(child(codes[design], UPDATE_CHILD, *args))
            shutil.rmtree(out)
    result: dict[str, Any] = {"changed_file": changed, "files": len(files)}
    for design, runs in update.items():
        result[f"update_graph_s_{design}"] = round(statistics.median(r["seconds"] for r in runs), 3)
        result[f"update_graph_cpu_s_{design}"] = round(statistics.median(r["cpu"] for r in runs), 3)
        result[f"update_graph_bytes_{design}"] = runs[0]["bytes"]
    key = "Basic.subs"
    index_dirs = {"before": old_index, "after": new_dir}
    for design in ("before", "after"):
        result[f"related_cold_s_{design}"] = round(
            cold_related(codes[design], git_dir, index_dirs[design], key, 3), 3
        )
        warm = child(codes[design], WARM_CHILD, design, str(git_dir), str(index_dirs[design]))
        result[f"related_first_s_{design}"] = round(warm["first_s"], 3)
        result[f"related_warm_p50_ms_{design}"] = round(warm["p50_ms"], 2)
        result[f"related_warm_p95_ms_{design}"] = round(warm["p95_ms"], 2)
        result[f"related_warm_cpu_p50_ms_{design}"] = round(warm["cpu_p50_ms"], 2)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--indexes", type=Path, default=Path("/work/bigbench/indexes"))
    parser.add_argument("--corpora", nargs="+", default=["sympy", "big"])
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "bench-graph")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    results = {
        c: bench_corpus(c, args.indexes, args.work.resolve(), args.rounds) for c in args.corpora
    }
    rows = [
        ("graph work of a 1-file update, s", "update_graph_s"),
        ("its CPU seconds", "update_graph_cpu_s"),
        ("graph bytes written by it", "update_graph_bytes"),
        ("`indexer related` cold process, s", "related_cold_s"),
        ("first `related` in a process, s", "related_first_s"),
        ("warm `related` p50, ms", "related_warm_p50_ms"),
        ("warm `related` p95, ms", "related_warm_p95_ms"),
        ("warm `related` CPU p50, ms", "related_warm_cpu_p50_ms"),
    ]
    print("| measure | " + " | ".join(f"{c} before | {c} after" for c in results) + " |")
    print("|---|" + "---|---|" * len(results))
    for label, key in rows:
        cells = [f"{r[key + '_before']} | {r[key + '_after']}" for r in results.values()]
        print(f"| {label} | " + " | ".join(cells) + " |")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
