"""What a small commit costs as whole processes: `indexer update`, and the installed hooks.

    python benchmarks/bench_update.py --repo /work/bigbench/repos/sympy.git --index IDX_DIR
                                      [--baseline CHECKOUT] [--rounds 5]

On a clone of `--repo` with a copy of `--index` (an index of the same commit, so no full build
is needed): rounds of 1-file and 5-file commits, each followed by `indexer update` as a whole
process (wall clock, alternating with `python -c "import numpy, faiss"`, the import floor, and
with `--baseline`'s code on its own clone when given). Then the hooks: `indexer hooks install`,
a 1-file `git commit` timed until it returns, and the time from its return until the index's
current generation is the new HEAD (a search opened from then on answers from it), polled every
5 ms. Files changed are non-test `.py` files, a different set every round.
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

from bench_core import GIT_ENV

ROOT = Path(__file__).resolve().parents[1]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout.strip()


def clone(origin: Path, index: Path, where: Path) -> Path:
    shutil.rmtree(where, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", str(origin), str(where)], check=True, env=GIT_ENV)
    shutil.copytree(index, where / ".git" / "indexer")
    return where


def change(repo: Path, n: int, round_: int, tag: str) -> None:
    names = [p for p in git(repo, "ls-files", "*.py").splitlines() if "test" not in p]
    names.sort(key=lambda p: (len(p), p))
    for name in names[200 + 7 * round_ : 200 + 7 * round_ + n]:
        with (repo / name).open("a") as fh:
            fh.write(f"\n\ndef bench_update_{tag}_{round_}():\n    return {round_}\n")
    git(repo, "commit", "-qam", f"bench {tag} {round_}")


def timed(cmd: list[str], cwd: Path, code: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(code), "INDEXER_SAVINGS": "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # both checkouts run from cached bytecode
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr[-2000:]}")
    return time.perf_counter() - start


def current_commit(index_dir: Path) -> str | None:
    try:
        name = (index_dir / "CURRENT").read_text().strip()
        manifest = json.loads((index_dir / "generations" / f"{name}.json").read_text())
    except (OSError, ValueError):
        return None
    return str(manifest.get("commit"))


def hook_rounds(repo: Path, code: Path, rounds: int) -> dict[str, float]:
    """`git commit` wall time with the hooks installed, and commit-return -> searchable."""
    env = {**GIT_ENV, "PYTHONPATH": str(code)}  # the hook's Python runs `code` too
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    hooks = [sys.executable, "-m", "indexer", "hooks", "install"]
    subprocess.run(hooks, cwd=repo, env=env, check=True, capture_output=True)
    commit_s, searchable_s = [], []
    index_dir = repo / ".git" / "indexer"
    for r in range(rounds):
        names = [p for p in git(repo, "ls-files", "*.py").splitlines() if "test" not in p]
        with (repo / sorted(names)[400 + r]).open("a") as fh:
            fh.write(f"\n\ndef bench_hook_{r}():\n    return {r}\n")
        git(repo, "add", "-A")
        start = time.perf_counter()
        subprocess.run(["git", "commit", "-qm", f"hook {r}"], cwd=repo, env=env, check=True)
        returned = time.perf_counter()
        head = git(repo, "rev-parse", "HEAD")
        while current_commit(index_dir) != head and time.perf_counter() - returned < 60:
            time.sleep(0.005)
        searchable_s.append(time.perf_counter() - returned)
        commit_s.append(returned - start)
        time.sleep(0.5)  # let the background merge check finish before the next commit
    return {
        "commit_s": round(statistics.median(commit_s), 3),
        "searchable_after_commit_s": round(statistics.median(searchable_s), 3),
        "searchable_max_s": round(max(searchable_s), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--index", type=Path, required=True, help="an index of the same commit")
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout")
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-update"))
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    codes = {"indexer": ROOT} | ({"baseline": args.baseline} if args.baseline else {})
    repos = {k: clone(args.repo, args.index, work / k) for k in codes}
    times: dict[str, list[float]] = {"floor": []}
    floor = [sys.executable, "-c", "import numpy, faiss"]
    for n in (1, 5):
        for r in range(args.rounds):
            times["floor"].append(timed(floor, work, ROOT))
            for name, code in codes.items():
                change(repos[name], n, r + 10 * n, name)
                update = [sys.executable, "-m", "indexer", "update", "--json"]
                times.setdefault(f"{name}_{n}file", []).append(timed(update, repos[name], code))
    result: dict[str, object] = {k: round(statistics.median(v), 3) for k, v in times.items()}
    for name in codes:
        result[f"{name}_hooks"] = hook_rounds(repos[name], codes[name], args.rounds)
    print(json.dumps(result, indent=1))
    for repo in repos.values():
        shutil.rmtree(repo, ignore_errors=True)


if __name__ == "__main__":
    main()
