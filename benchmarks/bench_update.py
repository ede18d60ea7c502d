"""What a small commit costs as whole processes: `indexer update`, and the installed hooks.

    python benchmarks/bench_update.py --corpus sympy=SYMPY_GIT=SYMPY_INDEX \\
        --corpus big=BIG_GIT=BIG_INDEX [--baseline CHECKOUT] [--rounds 5] [--hook-rounds 3] \\
        [--merge-commits 10]

Every corpus gets a clone of its repository with a copy of its index (an index of the same
commit, so no full build is needed), one per code (this checkout, and `--baseline`'s). Round by
round, a 1-file and then a 5-file commit, corpora and codes alternating: `python -c "import
numpy, faiss"` (the import floor), then the commit and `indexer update` as a whole process for
each code (wall time, and the seconds the update reports for itself).
The files changed are the same in every corpus where they can be: non-test `.py` files of the
first corpus, found in the others by their blob (the big corpus holds sympy), a different set
every round. Reported: medians, each against the floor of the same rounds, and the ratio of
every corpus to the first (issue 8: within ±20 %).

Then, per corpus and code, the installed hooks: a 1-file `git commit` timed until it returns,
and from its return until the index's current generation is the new HEAD (polled every 5 ms).
`--merge-commits N`: on a fresh clone, N such commits in a row, each 0.1 s after the previous
one became searchable; the tiered merge policy starts a background merge after the first few,
and the commit that lands during it (a lock still held once the previous commit is searchable)
shows whether it waits for the merge (`searchable_during_a_merge_s`, with the merges' times).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_core import GIT_ENV

ROOT = Path(__file__).resolve().parents[1]
FLOOR = [sys.executable, "-c", "import numpy, faiss"]
UPDATE = [sys.executable, "-m", "indexer", "update", "--json"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout.strip()


def clone(origin: Path, index: Path, where: Path) -> Path:
    shutil.rmtree(where, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", str(origin), str(where)], check=True, env=GIT_ENV)
    shutil.copytree(index, where / ".git" / "indexer")
    return where


def python_files(repo: Path) -> dict[str, str]:
    """blob -> path of the non-test `.py` files at HEAD."""
    found: dict[str, str] = {}
    for line in git(repo, "ls-tree", "-r", "HEAD").splitlines():
        meta, path = line.split("\t", 1)
        if path.endswith(".py") and "test" not in path and meta.split()[1] == "blob":
            found.setdefault(meta.split()[2], path)
    return found


def change_sets(repos: dict[str, Path], rounds: int) -> dict[str, dict[int, list[list[str]]]]:
    """corpus -> n -> one list of paths per round: the same blobs in every corpus that has them
    (else that corpus's own files at the same places in its list)."""
    listed = {corpus: python_files(repo) for corpus, repo in repos.items()}
    first = next(iter(listed.values()))
    reference = sorted(first.items(), key=lambda item: (len(item[1]), item[1]))
    sets: dict[str, dict[int, list[list[str]]]] = {}
    for corpus, blobs in listed.items():
        own = sorted(blobs.values(), key=lambda p: (len(p), p))
        for n in (1, 5):
            for r in range(rounds):
                at = 200 + 7 * (r + 10 * n)
                picked = [blobs.get(blob) for blob, _ in reference[at : at + n]]
                if not all(picked):
                    picked = own[at : at + n]
                sets.setdefault(corpus, {}).setdefault(n, []).append([p for p in picked if p])
    return sets


def commit(repo: Path, paths: list[str], tag: str) -> None:
    for name in paths:
        with (repo / name).open("a") as fh:
            fh.write(f"\n\ndef bench_update_{tag}():\n    return 1\n")
    git(repo, "commit", "-qam", f"bench {tag}")


def environment(code: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(code), "INDEXER_SAVINGS": "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # every checkout runs from cached bytecode
    return env


def timed(cmd: list[str], cwd: Path, code: Path) -> tuple[float, float, float | None]:
    """(wall seconds of the whole process, its CPU seconds with its children's, the seconds an
    update reports for itself). CPU time moves less than wall time on a shared machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=environment(code), capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr[-2000:]}")
    try:
        inner = float(json.loads(done.stdout)["seconds"])
    except (ValueError, KeyError, TypeError):
        inner = None
    return wall, cpu, inner


def current_commit(index_dir: Path) -> str | None:
    try:
        name = (index_dir / "CURRENT").read_text().strip()
        manifest = json.loads((index_dir / "generations" / f"{name}.json").read_text())
    except (OSError, ValueError):
        return None
    return str(manifest.get("commit"))


def hook_commits(repo: Path, code: Path, rounds: int, gap: float, offset: int) -> dict[str, object]:
    """`git commit` wall time with the hooks installed, and commit-return -> searchable."""
    env = {**GIT_ENV, "PYTHONPATH": str(code)}  # the hook's Python runs `code` too
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    hooks = [sys.executable, "-m", "indexer", "hooks", "install"]
    subprocess.run(hooks, cwd=repo, env=env, check=True, capture_output=True)
    commit_s, searchable_s, during_merge = [], [], []
    index_dir = repo / ".git" / "indexer"
    names = sorted(python_files(repo).values())
    merging = False
    for r in range(rounds):
        with (repo / names[offset + r]).open("a") as fh:
            fh.write(f"\n\ndef bench_hook_{r}():\n    return {r}\n")
        git(repo, "add", "-A")
        start = time.perf_counter()
        subprocess.run(["git", "commit", "-qm", f"hook {r}"], cwd=repo, env=env, check=True)
        returned = time.perf_counter()
        head = git(repo, "rev-parse", "HEAD")
        while current_commit(index_dir) != head and time.perf_counter() - returned < 120:
            time.sleep(0.005)
        searchable_s.append(round(time.perf_counter() - returned, 3))
        if merging:
            during_merge.append(searchable_s[-1])
        commit_s.append(returned - start)
        time.sleep(gap)
        # Searchable, yet a lock still held: the background merge after the update (this
        # code: merge.lock; older code merged holding update.lock). The next commit lands in it.
        merging = busy(index_dir, "merge.lock") or busy(index_dir, "update.lock")
    settle(index_dir)
    log = (index_dir / "update.log").read_text() if (index_dir / "update.log").exists() else ""
    merges = [
        line.split(" segments in ")[1].split("s")[0]
        for line in log.splitlines()
        if "merged " in line
    ]
    return {
        "commit_s": round(statistics.median(commit_s), 3),
        "searchable_after_commit_s": round(statistics.median(searchable_s), 3),
        "searchable_max_s": max(searchable_s),
        "searchable_each_s": searchable_s,
        "merge_s": [float(m) for m in merges],
        "searchable_during_a_merge_s": during_merge,
    }


def busy(index_dir: Path, name: str) -> bool:
    import fcntl

    try:
        fd = os.open(index_dir / name, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def settle(index_dir: Path, timeout: float = 300) -> None:
    """Wait until no background update or merge holds its lock (before the clone is removed)."""
    deadline = time.monotonic() + timeout
    quiet = 0
    while quiet < 3 and time.monotonic() < deadline:  # an updater lets go of one, takes the other
        idle = not busy(index_dir, "update.lock") and not busy(index_dir, "merge.lock")
        quiet = quiet + 1 if idle else 0
        time.sleep(0.1)


def median(values: list[float]) -> float:
    return round(statistics.median(values), 3)


def report(times: dict[str, dict[str, list[float]]], codes: list[str]) -> dict[str, object]:
    """Medians, each against the floor of the same rounds (CPU seconds against the floor's CPU
    seconds), and every corpus against the first."""

    def floor_of(key: str) -> str:
        return "floor_cpu" if key.endswith("_cpu") else "floor"

    corpora = list(times)
    result: dict[str, object] = {}
    for corpus in corpora:
        t = times[corpus]
        row: dict[str, object] = {
            "floor_s": median(t["floor"]),
            "floor_cpu_s": median(t["floor_cpu"]),
        }
        for key, values in t.items():
            if not key.startswith("floor"):
                row[f"{key}_s"] = median(values)
                row[f"{key}_x_floor"] = round(median(values) / median(t[floor_of(key)]), 2)
        result[corpus] = row
    first = corpora[0]
    for corpus in corpora[1:]:
        a_t, b_t = times[first], times[corpus]
        ratios: dict[str, float] = {
            "floor": round(median(b_t["floor"]) / median(a_t["floor"]), 2),
            "floor_cpu": round(median(b_t["floor_cpu"]) / median(a_t["floor_cpu"]), 2),
        }
        for key in b_t:
            if key.startswith("floor") or key.endswith("_inner") or key not in a_t:
                continue
            a, b = median(a_t[key]), median(b_t[key])
            fa, fb = median(a_t[floor_of(key)]), median(b_t[floor_of(key)])
            ratios[key] = round(b / a, 2)
            ratios[f"{key}_against_floors"] = round((b / fb) / (a / fa), 2)
            # Round by round (the two corpora ran seconds apart): steadier under a drifting load.
            paired = [y / x for x, y in zip(a_t[key], b_t[key], strict=False)]
            ratios[f"{key}_round_by_round"] = round(statistics.median(paired), 2)
        result[f"{corpus}/{first}"] = ratios
    result["codes"] = codes
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", action="append", default=[], help="NAME=REPO=INDEX")
    parser.add_argument("--repo", type=Path, help="one corpus (with --index)")
    parser.add_argument("--index", type=Path, help="an index of --repo's HEAD")
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout")
    parser.add_argument(
        "--baseline-index",
        action="append",
        default=[],
        help="NAME=INDEX: the baseline's own index of corpus NAME (when its format differs)",
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-update"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--hook-rounds", type=int, default=3)
    parser.add_argument("--merge-commits", type=int, default=0)
    args = parser.parse_args()
    corpora = {}
    for spec in args.corpus:
        name, repo, index = spec.split("=", 2)
        corpora[name] = (Path(repo), Path(index))
    if args.repo and args.index:
        corpora[args.repo.stem] = (args.repo, args.index)
    if not corpora:
        raise SystemExit("give --corpus NAME=REPO=INDEX (or --repo and --index)")
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    codes = {"indexer": ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    for code in codes.values():
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(code / "indexer")], check=True
        )
    load = {"start": os.getloadavg()}
    own = dict(spec.split("=", 1) for spec in args.baseline_index)
    repos = {
        (corpus, name): clone(
            origin,
            Path(own[corpus]) if name == "baseline" and corpus in own else index,
            work / f"{corpus}-{name}",
        )
        for corpus, (origin, index) in corpora.items()
        for name in codes
    }
    first_code = next(iter(codes))
    sets = change_sets({c: repos[(c, first_code)] for c in corpora}, args.rounds)
    times: dict[str, dict[str, list[float]]] = {c: {"floor": []} for c in corpora}
    order = list(corpora)
    for r in range(args.rounds):  # 1-file and 5-file rounds interleaved, as corpora and codes
        for n in (1, 5):
            for corpus in order if r % 2 == 0 else order[::-1]:
                wall, cpu, _ = timed(FLOOR, work, ROOT)
                times[corpus]["floor"].append(wall)
                times[corpus].setdefault("floor_cpu", []).append(cpu)
                names = list(codes) if r % 2 == 0 else list(codes)[::-1]
                for name in names:
                    repo = repos[(corpus, name)]
                    commit(repo, sets[corpus][n][r], f"{name}_{n}_{r}")
                    wall, cpu, inner = timed(UPDATE, repo, codes[name])
                    times[corpus].setdefault(f"{name}_{n}file", []).append(wall)
                    times[corpus].setdefault(f"{name}_{n}file_cpu", []).append(cpu)
                    if inner is not None:
                        times[corpus].setdefault(f"{name}_{n}file_inner", []).append(inner)
    result = report(times, list(codes)) if args.rounds else {"codes": list(codes)}
    result["each_round_s"] = {
        c: {k: [round(x, 3) for x in v] for k, v in t.items()} for c, t in times.items()
    }
    load["updates_done"] = os.getloadavg()
    if args.hook_rounds:
        for corpus in corpora:
            for name, code in codes.items():
                hooks = hook_commits(repos[(corpus, name)], code, args.hook_rounds, 0.5, 400)
                result[f"{corpus}_{name}_hooks"] = hooks
    for repo in repos.values():
        shutil.rmtree(repo, ignore_errors=True)
    if args.merge_commits:
        for corpus, (origin, index) in corpora.items():
            for name, code in codes.items():
                repo = clone(origin, index, work / f"merge-{corpus}-{name}")
                waits = hook_commits(repo, code, args.merge_commits, 0.1, 600)
                result[f"{corpus}_{name}_merge_commits"] = waits
                shutil.rmtree(repo, ignore_errors=True)
    load["end"] = os.getloadavg()
    result["load_average"] = {k: [round(x, 2) for x in v] for k, v in load.items()}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
