"""Keeping the index fresh without ever slowing git down.

Git hooks start `indexer update --background`, which forks a detached process and returns at
once. Updates are serialised by an exclusive lock on `<index>/update.lock`; a trigger that finds
the lock taken only leaves a `pending` mark and exits, and the running updater loops until no
mark is left, so a burst of commits costs a couple of updates that end at the final HEAD. Then
the updater lets go of the lock and merges segments if the tiered policy asks for it (one merger
at a time: `<index>/merge.lock`): a commit that lands during the merge finds the update lock
free and is searchable after its own update; the merge publishes on top of it
(indexer/index/merge.py). Failures are appended to `<index>/update.log` and the last one is
kept in `last_failure.json` for `indexer status`. An update or a merge killed at any point
leaves the previous generation current.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import IndexerError

LOCK = "update.lock"
MERGE_LOCK = "merge.lock"
PENDING = "pending"
LOG = "update.log"
FAILURE = "last_failure.json"
MAX_LOG_BYTES = 1_000_000


@contextmanager
def update_lock(index_dir: Path, wait: bool) -> Iterator[bool]:
    """Hold the update lock; yields False at once when `wait` is off and another update runs."""
    with _exclusive(index_dir, LOCK, wait) as acquired:
        yield acquired


@contextmanager
def merge_lock(index_dir: Path, wait: bool) -> Iterator[bool]:
    """Held by the one process that merges in the background (False: another one does)."""
    with _exclusive(index_dir, MERGE_LOCK, wait) as acquired:
        yield acquired


@contextmanager
def _exclusive(index_dir: Path, name: str, wait: bool) -> Iterator[bool]:
    index_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(index_dir / name, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def update_running(index_dir: Path) -> bool:
    if not (index_dir / LOCK).exists():
        return False
    fd = os.open(index_dir / LOCK, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def log(index_dir: Path, message: str) -> None:
    """Append to the update log (trimmed when it grows past 1 MB); never raises."""
    try:
        path = index_dir / LOG
        if path.exists() and path.stat().st_size > MAX_LOG_BYTES:
            path.replace(index_dir / (LOG + ".1"))
        with path.open("a", encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} [{os.getpid()}] {message}\n")
    except OSError:
        pass


def last_failure(index_dir: Path) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads((index_dir / FAILURE).read_text(encoding="utf-8"))
        return data
    except (OSError, ValueError):
        return None


def run_updates(repo: str | None, index_dir: Path, rev: str | None = None) -> int:
    """Update until no trigger is pending, then merge without the update lock. Returns 0;
    failures are logged, never raised."""
    from ..index.build import update_index

    for _ in range(5):  # bounded: a trigger storm cannot keep us busy forever
        if not _update_while_pending(repo, index_dir, rev, update_index):
            return 0  # another updater holds the lock, and has our mark
        if (index_dir / PENDING).exists():
            continue  # a trigger marked pending just before we let go: take it up
        _merge_in_background(index_dir)
        # A trigger that came while the merge published (a few milliseconds under the
        # publish lock, not the update lock) ran its own update; one that came while our
        # updates ran left a mark that is ours to take up.
        if not (index_dir / PENDING).exists():
            break
    return 0


def _update_while_pending(repo: str | None, index_dir: Path, rev: str | None, update: Any) -> bool:
    """Hold the lock and update until no trigger is pending (False: another process holds
    it, and has our mark)."""
    with update_lock(index_dir, wait=False) as acquired:
        if not acquired:
            (index_dir / PENDING).touch()
            log(index_dir, "another update is running; marked pending")
            return False
        for _ in range(20):  # bounded: a trigger storm cannot keep us busy forever
            (index_dir / PENDING).unlink(missing_ok=True)
            try:
                report = update(repo, rev, index_dir=index_dir, progress=False)
                log(
                    index_dir,
                    f"{report.mode} update to {report.commit[:12]} in "
                    f"{report.seconds:.2f}s ({report.chunked_files} files chunked)",
                )
                (index_dir / FAILURE).unlink(missing_ok=True)
            except Exception as exc:  # the log and status report it; git must not see it
                message = str(exc) if isinstance(exc, IndexerError) else repr(exc)
                log(index_dir, f"update failed: {message}\n{traceback.format_exc()}")
                failure = {
                    "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "error": message,
                }
                with contextlib.suppress(OSError):
                    (index_dir / FAILURE).write_text(json.dumps(failure), encoding="utf-8")
            if not (index_dir / PENDING).exists():
                break
    return True


def _merge_in_background(index_dir: Path) -> None:
    """After the hook's updates, without the update lock: merge segments if the tiered policy
    asks for it (indexer/index/merge.py), one merger at a time. Searches see the updates
    before this starts, and updates that arrive meanwhile do not wait for it."""
    from ..index.merge import commit, prepare

    with merge_lock(index_dir, wait=False) as acquired:
        if not acquired:
            return  # another updater merges; it publishes on top of our generation
        try:
            prepared = prepare(index_dir)
            if isinstance(prepared, dict):
                return
            result = commit(prepared)
            if result["merged"]:
                on = " (on a newer generation)" if result.get("rebased") else ""
                took = f"{result['seconds']:.2f}s{on}"
                log(index_dir, f"merged {result['merged']} segments in {took}")
            else:
                log(index_dir, "merge dropped: the index changed under it (planned again later)")
        except Exception as exc:  # a failed merge leaves the generation as it was
            log(index_dir, f"merge failed: {exc!r}")


def start_background_update(repo: str | None, index_dir: Path) -> None:
    """Fork a detached `indexer update` and return immediately."""
    index_dir.mkdir(parents=True, exist_ok=True)
    args = [sys.executable, "-m", "indexer", "update", "--index-dir", str(index_dir)]
    if repo:
        args += ["--repo", repo]
    with (index_dir / LOG).open("a") as log_file:
        subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=log_file,
            start_new_session=True,
            close_fds=True,
        )


def freshness(repo_path: str, index_dir: Path, indexed_commit: str | None) -> dict[str, Any]:
    """fresh / behind by N commits / diverged / updating, plus the last failure."""
    import pygit2

    from ..source.gitsource import open_repository

    repo = open_repository(repo_path)
    info: dict[str, Any] = {
        "head": None,
        "state": "unknown",
        "behind": None,
        "updating": update_running(index_dir),
        "last_failure": last_failure(index_dir),
    }
    if repo.head_is_unborn:
        return info
    head = str(repo.head.target)
    info["head"] = head
    if indexed_commit is None:
        info["state"] = "not indexed"
    elif indexed_commit == head:
        info["state"] = "fresh"
    else:
        try:
            ahead, behind = repo.ahead_behind(head, indexed_commit)
        except (pygit2.GitError, KeyError, ValueError):
            ahead, behind = 0, 0
        if behind == 0 and ahead > 0:
            plural = "commit" if ahead == 1 else "commits"
            info["state"], info["behind"] = f"behind by {ahead} {plural}", ahead
        else:
            info["state"], info["behind"] = "diverged (another branch)", ahead
    if info["updating"]:
        info["state"] += ", updating"
    return info


def index_freshness(index_dir: Path, repo_root: str | None, commit: str) -> dict[str, Any]:
    """`freshness` of an index, or state `unknown` when its repository is gone or moved."""
    try:
        return freshness(repo_root or ".", index_dir, commit)
    except IndexerError:
        return {
            "head": None,
            "state": "unknown",
            "behind": None,
            "updating": False,
            "last_failure": last_failure(index_dir),
        }
