"""Full build side by side with Semble and the baseline: wall, CPU-s and peak RSS, one run.

    python benchmarks/bench_build.py --repos /work/bigbench/repos --baseline REV \\
        --semble-python VENV/bin/python --semble-model M2V_DIR [--rounds 2] [--corpora sympy,big]

Each build is a fresh process (`indexer build` into an empty directory; Semble's
`SembleIndex.from_path` on a checkout of the same commit), timed as a whole: wall clock, CPU
seconds of the process and every child it waited for (`wait4`), and the peak of the summed RSS of
its process tree (workers, and resource trackers where a pool starts them), sampled every 20 ms.
RSS counts
pages shared between processes (shared libraries, the memory-mapped vector table) once per
process; the peak of the summed PSS (each shared page divided among its users: the memory the
tree really holds) is sampled every 100 ms beside it. Systems alternate within each round.
`baseline` is this repository at REV (e.g. main before a change), run from an exported copy.
The Dask build of sympy runs on a local cluster (a scheduler and 2 single-thread workers,
started here) and must give the local build's search results. With a baseline, the build's
segments are compared with the baseline's, file by file. Each run records the 1-minute load
average before and after (the machine may be shared). Prints a Markdown report; the raw numbers
go to WORK/build_results.json.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_core import QUERIES  # noqa: E402  (sympy questions)

from indexer.api import Index  # noqa: E402
from indexer.errors import CorruptIndexError  # noqa: E402
from indexer.index.store import current_generation, read_generation, segment_dir  # noqa: E402

SEMBLE_BUILD = r"""
import sys
from semble import SembleIndex
SembleIndex.from_path(sys.argv[1], model_path=sys.argv[2])
"""


def measure(command: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    """Wall, CPU-s and peak RSS of a command's whole process tree."""
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    root = psutil.Process(process.pid)
    peak = peak_pss = 0
    cpu: dict[int, float] = {}  # last CPU seen per process of the tree
    tick = 0
    while True:
        try:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        except ChildProcessError:
            break
        if pid:
            break
        total = pss = 0
        tick += 1
        try:
            for p in [root, *root.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                    if tick % 5 == 0:  # reading smaps costs more
                        pss += p.memory_full_info().pss
                    times = p.cpu_times()
                    cpu[p.pid] = times.user + times.system
                except psutil.Error:
                    pass
        except psutil.Error:
            pass
        peak, peak_pss = max(peak, total), max(peak_pss, pss)
        time.sleep(0.02)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"failed ({process.returncode}): {' '.join(command)}")
    return {
        "wall_s": round(wall, 2),
        # wait4 misses workers nobody waited for, sampling misses each process's last 20 ms:
        # both are lower bounds of the tree's CPU time.
        "cpu_s": round(max(usage.ru_utime + usage.ru_stime, sum(cpu.values())), 2),
        "peak_rss_mb": round(peak / 2**20, 1),
        "peak_pss_mb": round(peak_pss / 2**20, 1),
        "load": round(max(load_before, os.getloadavg()[0]), 2),
        "processes": len(cpu),
    }


def checkout(repo: Path, target: Path) -> Path:
    """The repository's HEAD tree as plain files (what Semble indexes)."""
    if not target.exists():
        target.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "--git-dir", str(repo), "archive", "HEAD"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def export_baseline(rev: str, target: Path) -> Path:
    if not target.exists():
        target.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def indexer_command(src: Path, repo: Path, index_dir: Path, *extra: str) -> list[str]:
    code = f"import runpy, sys; sys.path.insert(0, {str(src)!r}); "
    code += "runpy.run_module('indexer', run_name='__main__')"
    return [sys.executable, "-c", code, "build", "--repo", str(repo), "--index-dir",
            str(index_dir), "--json", *extra]  # fmt: skip


def segments_of(index_dir: Path) -> list[Path]:
    """The segments of the current generation (a build streams several)."""
    generation = current_generation(index_dir)
    return [segment_dir(generation, e["name"]) for e in read_generation(generation)["segments"]]


def same_rows(a: Path, b: Path) -> bool:
    """Byte-identical segments: same chunks, terms, postings, vectors and graph facts."""
    if len(segments_of(a)) != len(segments_of(b)):
        return False
    for sa, sb in zip(segments_of(a), segments_of(b), strict=True):
        names = sorted(p.name for p in sa.iterdir())
        if names != sorted(p.name for p in sb.iterdir()):
            return False
        if not all(filecmp.cmp(sa / n, sb / n, shallow=False) for n in names):
            return False
    return True


def same_answers(a: Path, b: Path) -> bool | None:
    """Same top 10 (ids and scores) on every query; None: `b` has a format this code does not
    read (a baseline from before a format change)."""
    try:
        ib = Index(current_generation(b))
    except CorruptIndexError:
        return None
    ia = Index(current_generation(a))
    for query in QUERIES:
        ra, rb = ia.search(query, k=10), ib.search(query, k=10)
        if [(r.id, r.score) for r in ra] != [(r.id, r.score) for r in rb]:
            return False
    return True


def dask_build(repo: Path, work: Path, local_dir: Path) -> dict[str, Any]:
    """sympy on a local cluster (scheduler + 2 workers); same answers as the local build?"""
    dask = [str(Path(sys.executable).with_name("dask"))]
    address_file = work / "scheduler.json"
    address_file.unlink(missing_ok=True)
    quiet = {"cwd": work, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    procs = [
        subprocess.Popen(
            [*dask, "scheduler", "--port", "0", "--dashboard-address", ":0",
             "--scheduler-file", str(address_file)],
            **quiet,  # type: ignore[call-overload]
        )
    ]  # fmt: skip
    try:
        while not address_file.exists():
            time.sleep(0.2)
        address = json.loads(address_file.read_text())["address"]
        for _ in range(2):
            procs.append(
                subprocess.Popen(
                    [*dask, "worker", address, "--nthreads", "1", "--dashboard-address", ":0",
                     "--local-directory", str(work)],
                    **quiet,  # type: ignore[call-overload]
                )
            )  # fmt: skip
        from distributed import Client

        with Client(address) as client:
            client.wait_for_workers(2, timeout=120)
        out = work / "dask-index"
        shutil.rmtree(out, ignore_errors=True)
        numbers: dict[str, Any] = measure(
            indexer_command(ROOT, repo, out, "--backend", "dask", "--scheduler", address)
        )
        numbers["same_rows_as_local"] = same_rows(local_dir, out)
        numbers["same_answers_as_local"] = same_answers(local_dir, out)
        return numbers
    finally:
        for p in procs[::-1]:
            p.terminate()
            p.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", default="/work/bigbench/repos", help="sympy.git, big.git")
    parser.add_argument("--corpora", default="sympy,big")
    parser.add_argument("--baseline", default=None, help="git revision of the baseline")
    parser.add_argument("--semble-python", default=None)
    parser.add_argument("--semble-model", default=None)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--big-rounds", type=int, default=1)
    parser.add_argument("--work", default=None, help="scratch directory (default: a temp dir)")
    parser.add_argument("--no-dask", action="store_true")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-build-"))
    work.mkdir(parents=True, exist_ok=True)
    systems: dict[str, Any] = {"indexer": ROOT}
    if args.baseline:
        systems["baseline"] = export_baseline(args.baseline, work / "baseline-src")
    if args.semble_python and args.semble_model:
        systems["semble"] = None
    results: dict[str, Any] = {}
    for corpus in args.corpora.split(","):
        repo = Path(args.repos) / f"{corpus}.git"
        tree = checkout(repo, work / "trees" / corpus) if "semble" in systems else None
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in systems}
        names = list(systems)
        for round_ in range(args.rounds if corpus == "sympy" else args.big_rounds):
            for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                out = work / f"{corpus}-{name}"
                shutil.rmtree(out, ignore_errors=True)
                if name == "semble":
                    command = [args.semble_python, "-c", SEMBLE_BUILD, str(tree), args.semble_model]
                else:
                    command = indexer_command(systems[name], repo, out)
                numbers = measure(command)
                print(f"{corpus} {name} round {round_ + 1}: {numbers}", file=sys.stderr)
                runs[name].append(numbers)
        entry: dict[str, Any] = {"runs": runs}
        best = {
            n: {k: min(r[k] for r in rs) for k in rs[0] if k != "load"} for n, rs in runs.items()
        }
        entry["best"] = best
        if "baseline" in systems:
            ours, theirs = work / f"{corpus}-indexer", work / f"{corpus}-baseline"
            entry["same_answers_as_baseline"] = same_answers(ours, theirs)
            entry["same_rows_as_baseline"] = same_rows(ours, theirs)
        entry["segments"] = len(segments_of(work / f"{corpus}-indexer"))
        if corpus == "sympy" and not args.no_dask:
            entry["dask"] = dask_build(repo, work, work / f"{corpus}-indexer")
            print(f"sympy dask: {entry['dask']}", file=sys.stderr)
        results[corpus] = entry
    (work / "build_results.json").write_text(json.dumps(results, indent=2))
    print(report(results))
    return 0


def report(results: dict[str, Any]) -> str:
    lines = [
        "| corpus | system | processes | wall s | CPU s | peak RSS MiB | peak PSS MiB "
        "| wall vs semble | RSS vs semble |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for corpus, entry in results.items():
        best = entry["best"]
        semble = best.get("semble")
        for name, b in best.items():
            ratio = (
                f"{b['wall_s'] / semble['wall_s']:.2f}" if semble else "-",
                f"{b['peak_rss_mb'] / semble['peak_rss_mb']:.2f}" if semble else "-",
            )
            lines.append(
                f"| {corpus} | {name} | {b.get('processes', '-')} | {b['wall_s']} | {b['cpu_s']} "
                f"| {b['peak_rss_mb']} "
                f"| {b.get('peak_pss_mb', '-')} "
                f"| {ratio[0]} | {ratio[1]} |"
            )
        lines.append(f"\n{corpus}: the build wrote {entry['segments']} segment(s)")
        if "same_answers_as_baseline" in entry:
            lines.append(f"\n{corpus}: same top-10 ids and scores as the baseline: "
                         f"{entry['same_answers_as_baseline']}; segments byte-identical: "
                         f"{entry['same_rows_as_baseline']}")  # fmt: skip
        for name, rs in entry["runs"].items():
            each = ", ".join(f"{r['wall_s']} s (load {r['load']})" for r in rs)
            lines.append(f"\n{corpus} {name}: wall of each round {each}")
        if "dask" in entry:
            d = entry["dask"]
            lines.append(
                f"\n{corpus} on a local Dask cluster (2 workers): {d['wall_s']} s wall; same rows "
                f"as the local build: {d['same_rows_as_local']}; same answers: "
                f"{d['same_answers_as_local']}"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
