"""Freshness benchmark: hook overhead, update latency, branch switches, and equivalence checks.

    python benchmarks/bench_fresh.py [--work DIR] [--trees DIR] [--releases 1.3 1.4 1.5]

Consecutive sympy releases (PyPI sdists) are committed one after another into a temporary git
repository. Measured, in one run:
- the time `git commit` takes with the hooks installed vs without (median of 15 commits);
- wall time until the index reflects a commit changing 1-5 files (hooks, background update) and
  the synchronous `indexer update` time for 5 and 100 changed files;
- switching between two releases and back, as a fraction of a full build;
- replaying the releases: incremental update vs full rebuild at each release (identical files
  and identical top-10 for a query set).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_core import GIT_ENV, sdist_tree  # noqa: E402

from indexer.api import Index  # noqa: E402
from indexer.index.build import build_index, update_index  # noqa: E402
from indexer.index.store import current_snapshot  # noqa: E402

QUERIES = [
    "solve linear equations",
    "Matrix determinant",
    "simplify trigonometric",
    "Symbol",
    "latex printer",
    "integrate rational functions",
    "series expansion",
    "Rational",
]


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, env=env or GIT_ENV, check=True, capture_output=True, text=True
    ).stdout.strip()


def release_tree(version: str, work: Path, trees: Path | None) -> Path:
    return sdist_tree(f"sympy=={version}", work, trees)


def replace_tree(repo: Path, tree: Path) -> None:
    for child in repo.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    for child in tree.iterdir():
        dest = repo / child.name
        shutil.copytree(child, dest) if child.is_dir() else shutil.copy2(child, dest)


def same_snapshot(a: Path, b: Path) -> bool:
    """The same rows as the full build, whatever the segments: files, ids, every chunk."""
    ia, ib = Index(a), Index(b)
    if ia.files != ib.files or list(ia._fids) != list(ib._fids):
        return False
    return all(ia.chunk_at(r) == ib.chunk_at(r) for r in range(len(ia)))


def same_answers(a: Path, b: Path) -> bool:
    ia, ib = Index(a), Index(b)
    return all([r.id for r in ia.search(q)] == [r.id for r in ib.search(q)] for q in QUERIES)


def timed_commit(repo: Path, path: Path, i: int, env: dict[str, str] | None = None) -> float:
    path.write_text(path.read_text() + f"\n# edit {i}\n")
    git(repo, "add", str(path.relative_to(repo)))
    start = time.perf_counter()
    git(repo, "commit", "-q", "-m", f"edit {i}", env=env)
    return (time.perf_counter() - start) * 1000


def wait_for(index_dir: Path, commit: str, timeout: float = 300) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        try:
            if Index(current_snapshot(index_dir)).commit == commit:
                return time.perf_counter() - start
        except Exception:
            pass
        time.sleep(0.01)
    raise SystemExit(f"index never reached {commit}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=ROOT / ".bench" / "fresh")
    parser.add_argument(
        "--trees",
        type=Path,
        default=None,
        help="folder with unpacked sympy-<version> trees (else pip download)",
    )
    parser.add_argument("--releases", nargs="+", default=["1.3", "1.4", "1.5"])
    args = parser.parse_args()
    work = args.work.resolve()
    shutil.rmtree(work / "repo", ignore_errors=True)
    shutil.rmtree(work / "full", ignore_errors=True)
    repo = work / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    index_dir = repo / ".git" / "indexer"
    results: dict[str, object] = {}

    # Replay releases: full build at the first, incremental updates after, checked each time.
    replay = []
    commits = {}
    for n, version in enumerate(args.releases):
        replace_tree(repo, release_tree(version, work, args.trees))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"sympy {version}")
        commits[version] = git(repo, "rev-parse", "HEAD")
        report = update_index(repo, index_dir=index_dir, progress=False)
        full = build_index(repo, index_dir=work / "full", progress=False)
        snap, full_snap = current_snapshot(index_dir), current_snapshot(work / "full")
        row = {
            "release": version,
            "mode": report.mode,
            "update_s": report.seconds,
            "searchable_s": report.searchable_seconds,
            "full_build_s": full.seconds,
            "chunked_files": report.chunked_files,
            "reused_files": report.reused_files,
            "chunks": report.chunks,
            "identical_files": same_snapshot(snap, full_snap),
            "identical_top10": same_answers(snap, full_snap),
        }
        replay.append(row)
        print(json.dumps(row), file=sys.stderr)
        if n == 0:
            results["full_build_s"] = full.seconds
    results["replay"] = replay

    # Switching releases: to the previous one and back.
    first, last = args.releases[-2], args.releases[-1]
    to_prev = update_index(repo, rev=commits[first], index_dir=index_dir, progress=False)
    back = update_index(repo, rev=commits[last], index_dir=index_dir, progress=False)
    full_s = float(results["full_build_s"])  # type: ignore[arg-type]
    results["switch"] = {
        "to_previous_s": to_prev.seconds,
        "to_previous_searchable_s": to_prev.searchable_seconds,
        "back_searchable_s": back.searchable_seconds,
        "to_previous_fraction": round(to_prev.seconds / full_s, 3),
        "to_previous_chunked": to_prev.chunked_files,
        "back_s": back.seconds,
        "back_fraction": round(back.seconds / full_s, 3),
        "back_chunked": back.chunked_files,
    }
    print(json.dumps(results["switch"]), file=sys.stderr)

    # Synchronous updates for 5 and 100 changed files.
    py_files = sorted(p for p in (repo / "sympy").rglob("*.py") if "tests" not in p.parts)
    sync = {}
    for count in (5, 100):
        for i, p in enumerate(py_files[:count]):
            p.write_text(p.read_text() + f"\n\ndef bench_added_{count}_{i}():\n    return {i}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"change {count} files")
        report = update_index(repo, index_dir=index_dir, progress=False)
        sync[str(count)] = {
            "update_s": report.seconds,
            "searchable_s": report.searchable_seconds,
            "chunked_files": report.chunked_files,
        }
    results["sync_update"] = sync
    print(json.dumps(sync), file=sys.stderr)

    # Hook overhead on `git commit`, and time until the index reflects the commit.
    target = py_files[0]
    plain = [timed_commit(repo, target, i) for i in range(15)]
    update_index(repo, index_dir=index_dir, progress=False)
    subprocess.run(
        [sys.executable, "-m", "indexer", "hooks", "install", "--repo", str(repo)],
        check=True,
        capture_output=True,
    )
    hooked = []
    fresh_after = []
    for i in range(15):
        hooked.append(timed_commit(repo, target, 100 + i))
        fresh_after.append(wait_for(index_dir, git(repo, "rev-parse", "HEAD")))
    results["hook"] = {
        "commit_ms_plain_median": round(statistics.median(plain), 1),
        "commit_ms_hooked_median": round(statistics.median(hooked), 1),
        "added_ms": round(statistics.median(hooked) - statistics.median(plain), 1),
        "index_fresh_after_commit_s_median": round(statistics.median(fresh_after), 3),
        "index_fresh_after_commit_s_max": round(max(fresh_after), 3),
    }
    print(json.dumps(results["hook"]), file=sys.stderr)
    subprocess.run(
        [sys.executable, "-m", "indexer", "hooks", "uninstall", "--repo", str(repo)],
        check=True,
        capture_output=True,
    )

    (work / "results.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
