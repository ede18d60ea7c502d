"""Read a commit's tree from git: tracked files only, so .gitignore holds by construction.

A build reads git with pygit2 (`open_repository`); an update reads it through one `git cat-file
--batch` process (`open_reader`, gitcat.py), which does not pay pygit2's import. Both answer
the same calls here: a `Repo` is either.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import IndexerError, NotARepositoryError
from .ignorefile import IGNORE_FILE, IgnoreRules
from .languages import detect_language
from .pathrules import (
    MAX_FILE_BYTES,
    MAX_NOTEBOOK_BYTES,
    VENDORED_DIRS,
    content_skip_reason,
    path_skip_reason,
)
from .treediff import Change, tree_changes_between

__all__ = ["MAX_FILE_BYTES", "MAX_NOTEBOOK_BYTES", "content_skip_reason", "path_skip_reason"]

Repo = Any  # a pygit2.Repository, or a gitcat.CatFileRepository (the same calls)
Commit = Any  # a pygit2.Commit or a gitcat.Commit


@dataclass(frozen=True)
class SourceFile:
    path: str  # relative to the repository root, '/'-separated
    blob: str  # hex blob id
    language: str | None


@dataclass(frozen=True)
class TreeListing:
    commit: str
    commit_time: int
    files: list[SourceFile]
    skipped: dict[str, list[str]]  # reason -> paths (decided from the tree alone)


def open_repository(path: str | os.PathLike[str] | None) -> Any:
    """The repository holding `path` (default: the working directory), opened with pygit2."""
    import pygit2

    start = os.fspath(path) if path is not None else os.getcwd()
    if not os.path.exists(start):
        raise NotARepositoryError(f"not a git repository: {start} (no such path)")
    found = pygit2.discover_repository(start)
    if found is None:
        raise NotARepositoryError(f"not a git repository: {start}")
    return pygit2.Repository(found)


_READERS: dict[str, Repo] = {}  # git dir -> the reader an update in this process opened


def open_reader(path: str | os.PathLike[str] | None) -> Repo:
    """The repository read through `git cat-file --batch` (gitcat.py), else with pygit2 when
    no `git` executable is found. Blobs that the chunking pipeline reads in this process for
    the same repository come from it too (`reader_for`); `close_reader` ends it."""
    from . import gitcat

    if not any(os.access(os.path.join(d, "git"), os.X_OK) for d in os.get_exec_path()):
        return open_repository(path)
    git_dir, workdir = gitcat.discover(path)
    reader = gitcat.CatFileRepository(git_dir, workdir)
    _READERS[reader.path] = reader
    return reader


def close_reader(repo: Repo) -> None:
    """End what `open_reader` started (its `git cat-file` process)."""
    from .gitcat import CatFileRepository

    if isinstance(repo, CatFileRepository):
        key = repo.path
        if _READERS.get(key) is repo:
            del _READERS[key]
        repo.close()


def reader_for(git_dir: str) -> Repo | None:
    """The reader an update opened in this process for the repository at `git_dir` (the
    chunking pipeline reads that update's blobs through it), or None."""
    return _READERS.get(git_dir.rstrip("/") + "/")


def repo_root(repo: Repo) -> Path:
    if repo.is_bare:
        return Path(repo.path)
    return Path(repo.workdir)


def peel_commit(repo: Repo, rev: str) -> Commit | None:
    """The commit `rev` names (a tag peeled), or None."""
    from .gitcat import CatFileRepository

    if isinstance(repo, CatFileRepository):
        return repo.commit(rev)
    import pygit2

    try:
        return repo.revparse_single(rev).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return None


def resolve_commit(repo: Repo, rev: str | None) -> Commit:
    if rev is None:
        if repo.head_is_unborn:
            raise IndexerError("the repository has no commits yet; commit something first")
        rev = "HEAD"
    commit = peel_commit(repo, rev)
    if commit is None:
        raise IndexerError(f"unknown revision: {rev}")
    return commit


def list_tree(repo: Repo, commit: Commit) -> TreeListing:
    files: list[SourceFile] = []
    skipped: dict[str, list[str]] = {}
    rules = IgnoreRules.from_tree(repo, commit.tree)

    def walk(tree: Any, prefix: str) -> None:
        for entry in tree:
            path = f"{prefix}{entry.name}"
            if entry.type_str == "tree":
                if rules.decision(path + "/") is True:
                    skipped.setdefault("ignored", []).append(path + "/")
                    continue
                if entry.name in VENDORED_DIRS:
                    skipped.setdefault("vendored", []).append(path + "/")
                    continue
                walk(repo[entry.id], path + "/")
                continue
            reason = path_skip_reason(path, entry.filemode, rules)
            if reason:
                skipped.setdefault(reason, []).append(path)
                continue
            files.append(SourceFile(path, str(entry.id), detect_language(path)))

    walk(commit.tree, "")
    return TreeListing(str(commit.id), int(commit.commit_time), files, skipped)


_CHANGES: dict[tuple[str, str], tuple[int | None, list[Change] | None]] = {}


def changes_of(repo: Repo, old: Any, new: Any, limit: int | None = None) -> list[Change] | None:
    """The changed files between two trees (treediff.py; None: more than `limit`), kept for the
    process: an update reads the indexed commit's tree against the new one, then the same
    commits for change times."""
    key = (str(old.id), str(new.id))
    if key in _CHANGES:
        tried, found = _CHANGES[key]
        if found is not None:
            return None if limit is not None and len(found) > limit else found
        if limit is not None and tried is not None and limit <= tried:
            return None
    if len(_CHANGES) > 64:
        _CHANGES.clear()
    found = tree_changes_between(repo, old, new, limit)
    _CHANGES[key] = (limit, found)
    return found


def _first_parents(commit: Commit) -> Iterator[Commit]:
    """`commit` and its first parents, newest first, one object read each (a revision walk
    sorted topologically reads the whole history before it yields the first commit)."""
    current: Commit | None = commit
    while current is not None:
        yield current
        parents = current.parents
        current = parents[0] if parents else None


def last_change_times(
    repo: Repo,
    commit: Commit,
    paths: set[str],
    max_commits: int = 2000,
) -> dict[str, int]:
    """Commit time of the last change of each path, walking first parents from `commit`.

    Paths not resolved within `max_commits` get the time of the oldest commit seen: an upper
    bound that is good enough for a recency signal and keeps builds of huge histories bounded.
    """
    times: dict[str, int] = {}
    remaining = set(paths)
    oldest = int(commit.commit_time)
    for count, current in enumerate(_first_parents(commit)):
        if not remaining or count >= max_commits:
            break
        oldest = int(current.commit_time)
        parents = current.parents
        if not parents:
            for path in remaining:
                times[path] = oldest
            remaining.clear()
            break
        found = changes_of(repo, parents[0].tree, current.tree)
        assert found is not None  # no limit
        for change in found:
            if change.path in remaining:
                times[change.path] = oldest
                remaining.discard(change.path)
    for path in remaining:
        times[path] = oldest
    return times


def changes_since(
    repo: Repo, commit: Commit, stop_at: str, max_commits: int = 2000
) -> dict[str, int] | None:
    """Every path changed on the first-parent chain from `commit` back to `stop_at` (not
    included), with the commit time of its newest change; None when `stop_at` is not on that
    chain within `max_commits`. Costs what the commits in between changed."""
    times: dict[str, int] = {}
    for count, current in enumerate(_first_parents(commit)):
        if str(current.id) == stop_at:
            return times
        parents = current.parents
        if count >= max_commits or not parents:
            return None
        found = changes_of(repo, parents[0].tree, current.tree)
        assert found is not None
        when = int(current.commit_time)
        for change in found:
            times.setdefault(change.path, when)
    return None


# Skip reasons that leave a tracked text file out of the index (binary, vendored, generated,
# links and secrets are left out on purpose).
_TEXT_LOST = ("too_large", "minified", "unsupported", "error:")


def coverage_warnings(indexed: int, skipped: dict[str, int]) -> list[str]:
    """Loud warnings for a build that indexed nothing or skipped most tracked text files."""
    lost = {r: n for r, n in skipped.items() if r.startswith(_TEXT_LOST)}
    reasons = ", ".join(f"{r} {n}" for r, n in sorted(lost.items()))
    if indexed == 0:
        total = sum(skipped.values())
        detail = f" ({reasons})" if reasons else ""
        return [f"indexed 0 files of {total} tracked{detail}: every search will be empty"]
    if sum(lost.values()) > indexed:
        return [f"skipped most tracked text files: {sum(lost.values())} ({reasons}) vs {indexed}"]
    return []


MAX_TREE_CHANGES = 2000  # beyond this a full listing is as cheap as a diff


def tree_changes(
    repo: Repo, old: str, commit: Commit
) -> tuple[list[SourceFile], set[str], dict[str, str]] | None:
    """What differs between the tree of commit `old` and `commit`'s, decided like `list_tree`
    decides: (files added or changed, paths deleted, path -> skip reason of changed files that
    are skipped by name). None when only a full listing can tell (`old` unknown, a changed
    .indexerignore, a change inside an ignored or vendored directory, a huge change)."""
    before = peel_commit(repo, old)
    if before is None:
        return None
    found = changes_of(repo, before.tree, commit.tree, MAX_TREE_CHANGES)
    if found is None:
        return None
    rules = IgnoreRules.from_tree(repo, commit.tree)
    files: list[SourceFile] = []
    deleted: set[str] = set()
    skipped: dict[str, str] = {}
    for change in found:
        path = change.path
        if path == IGNORE_FILE:
            return None
        parts = path.split("/")
        for depth in range(1, len(parts)):
            directory = "/".join(parts[:depth]) + "/"
            if parts[depth - 1] in VENDORED_DIRS or rules.decision(directory) is True:
                return None  # list_tree records the directory, not its files
        if change.new is None:
            deleted.add(path)
            continue
        blob, mode = change.new
        reason = path_skip_reason(path, mode, rules)
        if reason:
            skipped[path] = reason
        else:
            files.append(SourceFile(path, blob, detect_language(path)))
    return files, deleted, skipped
