"""Per-commit cost of each way to keep the index fresh, measured with real `git commit`s.

    python benchmarks/bench_precommit.py [--commits N] [--old-rev REV] [--new-rev REV]

In one run, on one small repository with an index: no hook, `indexer hooks install` (native),
the pre-commit framework with this repository's hook at two revisions (before and after the
hook became a detaching shell one-liner), and the framework running a hook that does nothing
(`true`: the framework's own floor). Each route makes N commits; the median and max
wall time of `git commit` is reported. The background updates are waited for between commits
so they do not slow the next measurement.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_core import GIT_ENV

ROOT = Path(__file__).resolve().parents[1]
ENV = {
    **GIT_ENV,
    "INDEXER_SAVINGS": "0",
}
NOOP_CONFIG = """repos:
  - repo: local
    hooks:
      - id: noop
        name: noop
        entry: "true"
        language: system
        pass_filenames: false
        always_run: true
        stages: [post-commit]
"""
HOOK_TYPES = ["-t", "post-commit", "-t", "post-merge", "-t", "post-checkout", "-t", "post-rewrite"]


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    proc = subprocess.run(cmd, cwd=cwd, env=env or ENV, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stdout}{proc.stderr}")


def make_repo(where: Path) -> Path:
    where.mkdir()
    run(["git", "init", "-q"], where)
    for i in range(20):
        (where / f"m{i}.py").write_text(f"def f{i}(x):\n    return x + {i}\n")
    run(["git", "add", "-A"], where)
    run(["git", "commit", "-q", "-m", "init"], where)
    run([sys.executable, "-m", "indexer", "build"], where)
    return where


def wait_idle(repo: Path) -> None:
    lock_dir = repo / ".git" / "indexer"
    deadline = time.time() + 120
    while time.time() < deadline:
        if not (lock_dir / "pending").exists():
            proc = subprocess.run(["pgrep", "-f", "indexer update"], capture_output=True)
            if proc.returncode != 0:
                return
        time.sleep(0.2)


def commits(repo: Path, n: int, env: dict[str, str]) -> list[float]:
    times = []
    for i in range(n):
        (repo / f"c{i}_{time.time_ns()}.py").write_text(f"def g{i}():\n    return {i}\n")
        run(["git", "add", "-A"], repo, env)
        start = time.perf_counter()
        run(["git", "commit", "-q", "-m", f"c{i}"], repo, env)
        times.append(time.perf_counter() - start)
        wait_idle(repo)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=10)
    parser.add_argument("--old-rev", default="a3f20c5", help="hook with a Python entry")
    parser.add_argument("--new-rev", default="HEAD", help="hook with the shell entry")
    args = parser.parse_args()
    pre_commit = shutil.which("pre-commit") or str(Path(sys.executable).parent / "pre-commit")
    old = subprocess.check_output(["git", "rev-parse", args.old_rev], cwd=ROOT, text=True).strip()
    new = subprocess.check_output(["git", "rev-parse", args.new_rev], cwd=ROOT, text=True).strip()
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = {**ENV, "PRE_COMMIT_HOME": str(base / "pre-commit-home")}
        routes = {
            "no hook": None,
            "indexer hooks install (native)": "native",
            f"pre-commit, Python entry ({old[:7]})": old,
            f"pre-commit, shell entry ({new[:7]})": new,
            "pre-commit, a hook that does nothing (floor)": "noop",
        }
        for label, route in routes.items():
            repo = make_repo(base / f"repo{len(results)}")
            if route == "native":
                run([sys.executable, "-m", "indexer", "hooks", "install"], repo)
            elif route is not None:
                (repo / ".pre-commit-config.yaml").write_text(
                    NOOP_CONFIG
                    if route == "noop"
                    else f"repos:\n  - repo: {ROOT}\n    rev: {route}\n    hooks:\n"
                    "      - id: indexer\n"
                )
                run([pre_commit, "install", *HOOK_TYPES], repo, env)
                run([pre_commit, "install-hooks"], repo, env)
            commits(repo, 2, env)  # warm-up
            results[label] = commits(repo, args.commits, env)
            print(f"{label}: done", file=sys.stderr, flush=True)
    print("| route | `git commit` median ms | max ms | median over no hook ms |")
    print("|---|---|---|---|")
    base_ms = statistics.median(results["no hook"]) * 1000
    for label, times in results.items():
        med = statistics.median(times) * 1000
        print(f"| {label} | {med:.1f} | {max(times) * 1000:.1f} | {med - base_ms:+.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
