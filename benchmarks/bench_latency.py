"""Query latency side by side with Semble: warm p50/p95 per query kind, cold CLI, search RSS.

    python benchmarks/bench_latency.py --semble-python VENV/bin/python --semble-model M2V_DIR
                                       [--work DIR] [--corpora sympy,big] [--repeats 5]

Corpora: sympy 1.5 (~38k chunks) and "big": sympy 1.5 + Django 5.1.4 (sdist) + the .py files of
the scikit-learn 1.5.2, scipy 1.14.1 and transformers 4.46.3 wheels (~150k+ chunks), each
committed into a bare git repository. Both systems run in their own long-lived worker process and
time each search in-process; queries alternate between the workers (in a shuffled order, each
search timed once no worker has a running thread: `wait_idle`), so drift on a shared machine
hits both alike (report ratios). Three query kinds: identifiers (symbols sampled from the
corpus), short questions, issue-sized texts (sympy issues from ../shared/devset). Cold: a whole
`indexer search --json` process against `python -c "import numpy, faiss"`, alternating. Flat:
with both corpora, one process opens both indexes and runs sympy's queries on each, alternating
query by query, so the big/sympy ratio of p50 is the same queries' cost at ~4x the chunks.
Semble (PyPI `semble` 0.7) needs its own venv and a local model2vec model (docs/benchmarks.md,
"Query latency", has the commands).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# --baseline runs an earlier checkout's code in its own workers (same run, same machine).
sys.path.insert(0, os.environ.get("INDEXER_BENCH_SRC") or str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from latency_corpora import (  # noqa: E402
    corpus,
    drop_cached,
    ensure_index,
    query_sets,
    varied_queries,
)
from latency_processes import Baseline, cold, run_with_input, search_rss  # noqa: E402
from latency_report import report  # noqa: E402

SEMBLE_WORKER = r"""
import json, sys, time
from semble import SembleIndex
tree, model = sys.argv[1], sys.argv[2]
start = time.perf_counter()
index = SembleIndex.from_path(tree, model_path=model)
print(json.dumps({"ready": round(time.perf_counter() - start, 2)}), flush=True)
for line in sys.stdin:
    q = json.loads(line)["q"]
    t = time.perf_counter()
    index.search(q, top_k=10)
    print(json.dumps({"ms": (time.perf_counter() - t) * 1000}), flush=True)
"""


def ours_worker(index_dir: str) -> None:
    """Serve timing requests for our index (runs in its own process: --worker DIR)."""
    from indexer.api import Index
    from indexer.index.store import current_snapshot

    index = Index(current_snapshot(Path(index_dir)))
    print(json.dumps({"ready": len(index)}), flush=True)
    for line in sys.stdin:
        q = json.loads(line)["q"]
        t = time.perf_counter()
        index.search(q, k=10, log=False)
        print(json.dumps({"ms": (time.perf_counter() - t) * 1000}), flush=True)


def flat_worker(index_dirs: list[str], repeats: int) -> None:
    """p50 per kind of the same queries on each index, in one process, alternating query by
    query (--flat-worker DIR,DIR REPEATS; the queries on stdin): prints one JSON line."""
    from indexer.api import Index
    from indexer.index.store import current_snapshot

    queries: dict[str, list[str]] = json.loads(sys.stdin.read())
    indexes = [Index(current_snapshot(Path(d))) for d in index_dirs]
    for qs in queries.values():  # warm-up
        for q in qs:
            for index in indexes:
                index.search(q, k=10, log=False)
    times: list[dict[str, list[float]]] = [{k: [] for k in queries} for _ in indexes]
    order, turn = list(range(len(indexes))), 0
    for _ in range(repeats):
        for kind, qs in queries.items():
            for q in qs:
                turn += 1  # each index first as often as the other (see `warm`)
                for i in order if turn % 2 else order[::-1]:
                    start = time.perf_counter()
                    indexes[i].search(q, k=10, log=False)
                    times[i][kind].append((time.perf_counter() - start) * 1000)
    p50 = [{k: round(statistics.median(v), 3) for k, v in per.items()} for per in times]
    print(json.dumps(p50), flush=True)


def flat(
    index_dirs: list[Path],
    queries: dict[str, list[str]],
    repeats: int,
    baseline: Path | None,
    rounds: int = 1,
) -> dict[str, Any]:
    """p50 per kind on each index and the last/first ratio, for this code and the baseline's:
    `rounds` worker processes each, this code's and the baseline's taking turns (which goes
    first alternates), so that the machine's drift over the run falls on both. Per kind: the
    median p50 of each index over the rounds, the median of the rounds' ratios, and the
    rounds' ratios."""
    variants: list[tuple[str, Path, dict[str, str] | None, list[Path]]] = [
        ("indexer", ROOT, None, index_dirs)
    ]
    if baseline is not None:
        base_env = dict(os.environ, PYTHONPATH=str(baseline), INDEXER_BENCH_SRC=str(baseline))
        base_dirs = [d.parent / f"{d.name}-baseline" for d in index_dirs]
        variants.append(("baseline", baseline, base_env, base_dirs))
    runs: dict[str, list[list[dict[str, float]]]] = {name: [] for name, *_ in variants}
    for turn in range(rounds):
        for name, src, env, dirs in variants if turn % 2 == 0 else variants[::-1]:
            where = ",".join(map(str, dirs))
            cmd = [sys.executable, __file__, "--flat-worker", where, str(repeats)]
            runs[name].append(json.loads(run_with_input(cmd, queries, env, src).splitlines()[-1]))
    out: dict[str, Any] = {"rounds": rounds}
    for name, p50s in runs.items():
        out[name] = {}
        for kind in queries:
            ratios = [round(p50[-1][kind] / p50[0][kind], 3) for p50 in p50s]
            out[name][kind] = {
                "p50_ms": [
                    round(statistics.median(p50[i][kind] for p50 in p50s), 3)
                    for i in range(len(index_dirs))
                ],
                "ratio": round(statistics.median(ratios), 2),
                "ratios": ratios,
            }
    return out


class Worker:
    def __init__(self, cmd: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        self.ready = self._read()["ready"]

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"worker {self.proc.args!r} died")
        data: dict[str, Any] = json.loads(line)
        return data

    def time(self, q: str) -> float:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"q": q}) + "\n")
        self.proc.stdin.flush()
        return float(self._read()["ms"])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def running_threads(pid: int) -> int:
    """Threads of process `pid` on a CPU or waiting for one (state R in /proc; 0 without it)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    running = 0
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as fh:
                stat = fh.read()
        except OSError:  # the thread ended
            continue
        running += stat.rpartition(")")[2].split()[:1] == ["R"]  # the state follows the name
    return running


def wait_idle(workers: dict[str, Worker], limit_s: float = 1.0, gap_s: float = 0.0) -> float:
    """Wait (at most `limit_s`) until no thread of any worker runs; the seconds waited.

    A library's thread pool may keep its threads spinning after a search returns: Semble's
    numpy (OpenBLAS) keeps two busy for ~0.1 s after each of its searches, its default thread
    timeout. On a 2-core machine the next system timed shared the cores with them: its median
    0.2-0.5 ms higher at 163k chunks and, whenever the scheduler took the CPU away, a sample one
    time slice (~4 ms) longer (docs/benchmarks.md, eighteenth pass). Every system is timed on an
    idle machine. `gap_s`: wait at least this long (searches spaced as an agent's are: every
    cache cold, for every system)."""
    start = time.perf_counter()
    if gap_s > 0:
        time.sleep(gap_s)
    while any(running_threads(w.proc.pid) for w in workers.values()):
        if time.perf_counter() - start > limit_s:
            break
        time.sleep(0.001)
    return time.perf_counter() - start


def warm(
    workers: dict[str, Worker],
    queries: dict[str, list[str]],
    repeats: int,
    idle: bool = True,
    gap_s: float = 0.0,
) -> dict[str, Any]:
    times: dict[str, dict[str, list[float]]] = {w: {k: [] for k in queries} for w in workers}
    waited = dict.fromkeys(workers, 0.0)  # seconds waited for the machine after each system
    for qs in queries.values():
        for q in qs:  # warm-up: every query once per system
            for worker in workers.values():
                worker.time(q)
    names, shuffle = list(workers), random.Random(0)
    for _ in range(repeats):
        for kind, qs in queries.items():
            for q in qs:
                # Each query's order is shuffled: with three systems, reversing the order each
                # query had the middle one never follow itself (its caches always another's:
                # the same code measured 0.87-0.94x itself in that place, eighteenth pass), and
                # turning it per repeat put one system first in 3 of 5 repeats (2-4 %).
                order = names[:]
                shuffle.shuffle(order)
                for name in order:
                    times[name][kind].append(workers[name].time(q))
                    if idle:  # (--no-idle-wait: the next search starts at once, as before)
                        waited[name] += wait_idle(workers, gap_s=gap_s)
    out: dict[str, Any] = {
        name: {
            kind: {
                "p50_ms": round(statistics.median(ts), 3),
                "p95_ms": round(percentile(ts, 0.95), 3),
            }
            for kind, ts in per_kind.items()
        }
        for name, per_kind in times.items()
    }
    samples = repeats * sum(len(qs) for qs in queries.values())
    out["idle_wait_ms"] = {name: round(s * 1000 / samples, 2) for name, s in waited.items()}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=ROOT / ".bench" / "latency")
    parser.add_argument("--trees", type=Path, default=None, help="unpacked devset trees")
    parser.add_argument("--devset", type=Path, default=ROOT.parent / "shared" / "devset")
    parser.add_argument(
        "--devset-short", type=Path, default=ROOT.parent / "shared" / "devset-short"
    )
    parser.add_argument(
        "--varied-queries",
        type=int,
        default=1500,
        help="RSS after this many varied queries too (a long-lived server's); 0: skip",
    )
    parser.add_argument("--corpora", default="sympy,big")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--flat-rounds",
        type=int,
        default=3,
        help="flat: worker processes per code, this code's and the baseline's taking turns",
    )
    parser.add_argument("--cold-runs", type=int, default=10)
    parser.add_argument("--semble-python", default=None, help="python of a venv with semble")
    parser.add_argument("--semble-model", default=None, help="local model2vec model directory")
    parser.add_argument("--baseline", type=Path, default=None, help="an earlier checkout")
    parser.add_argument(
        "--no-idle-wait",
        action="store_true",
        help="time the next search without waiting for every worker's threads to be idle",
    )
    parser.add_argument(
        "--gap-ms", type=float, default=0.0, help="idle time before each timed search (spaced)"
    )
    parser.add_argument(
        "--reuse-indexes",
        action="store_true",
        help="search existing indexes whatever code built them (default: rebuild if other code)",
    )
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--flat-worker", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        ours_worker(args.worker)
        return 0
    if args.flat_worker:
        flat_worker(args.flat_worker[0].split(","), int(args.flat_worker[1]))
        return 0
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    for name in args.corpora.split(","):
        tree, git_dir = corpus(name, work, args.trees)
        index_dir = work / "indexes" / name
        built_by = {"indexer": ensure_index(git_dir, index_dir, reuse=args.reuse_indexes)}
        queries = query_sets(index_dir, args.devset)
        baseline = None
        if args.baseline:
            baseline = Baseline(args.baseline, work, name, git_dir, args.reuse_indexes)
            built_by["baseline"] = baseline.built_by
        drop_cached(index_dir, *([baseline.index_dir] if baseline is not None else []))
        workers = {"indexer": Worker([sys.executable, __file__, "--worker", str(index_dir)])}
        entry: dict[str, Any] = {"chunks": workers["indexer"].ready, "built_by": built_by}
        if baseline is not None:
            workers["baseline"] = Worker(
                [sys.executable, __file__, "--worker", str(baseline.index_dir)],
                env=dict(os.environ, **baseline.env),
            )
        if args.semble_python and args.semble_model:
            workers["semble"] = Worker(
                [args.semble_python, "-c", SEMBLE_WORKER, str(tree), args.semble_model],
                env=dict(os.environ, HF_HUB_OFFLINE="1"),
            )
            entry["semble_index_s"] = workers["semble"].ready
        entry["warm"] = warm(
            workers, queries, args.repeats, not args.no_idle_wait, args.gap_ms / 1000
        )
        entry["protocol"] = {"idle_wait": not args.no_idle_wait, "gap_ms": args.gap_ms}
        for worker in workers.values():
            worker.close()
        all_queries = [q for qs in queries.values() for q in qs]
        entry["cold"] = cold(git_dir, index_dir, all_queries, args.cold_runs, baseline)
        entry["search_rss_mb"] = search_rss(index_dir, all_queries)
        if baseline is not None:
            entry["baseline_rss_mb"] = search_rss(
                baseline.index_dir, all_queries, dict(os.environ, **baseline.env), baseline.src
            )
        if args.varied_queries:
            many = varied_queries(index_dir, [args.devset, args.devset_short], args.varied_queries)
            entry["varied_queries"] = len(many)
            entry["varied_rss_mb"] = search_rss(index_dir, many)
            if baseline is not None:
                entry["baseline_varied_rss_mb"] = search_rss(
                    baseline.index_dir, many, dict(os.environ, **baseline.env), baseline.src
                )
        results[name] = entry
        print(f"{name}: {json.dumps(entry)}", file=sys.stderr)
    flatness: dict[str, Any] | None = None
    if len(results) > 1:
        names = list(results)
        dirs = [work / "indexes" / name for name in names]
        queries = query_sets(dirs[0], args.devset)  # the first corpus's queries on every index
        based = [d.parent / f"{d.name}-baseline" for d in dirs] if args.baseline else []
        drop_cached(*dirs, *based)
        flatness = flat(dirs, queries, args.repeats, args.baseline, args.flat_rounds)
        flatness["corpora"] = names
        results["flat"] = flatness
        print(f"flat: {json.dumps(flatness)}", file=sys.stderr)
    print(report(results))
    (work / "results.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
