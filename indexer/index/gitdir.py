"""Find a repository's git directory with nothing but pathlib (no pygit2, no numpy): the CLI
needs it before deciding whether a running `indexer serve` can answer."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import NotARepositoryError


def git_dir(repo: str | os.PathLike[str] | None) -> str:
    """The git directory of `repo` without importing pygit2 (keeps cold searches fast)."""
    start = Path(repo if repo is not None else os.getcwd()).resolve()
    if not start.exists():
        raise NotARepositoryError(f"not a git repository: {start} (no such path)")
    for candidate in (start, *start.parents):
        dot_git = candidate / ".git"
        if dot_git.is_dir():
            return str(dot_git)
        if dot_git.is_file():  # worktree or submodule: "gitdir: <path>"
            text = dot_git.read_text(encoding="utf-8").strip()
            if text.startswith("gitdir:"):
                return str((candidate / text[7:].strip()).resolve())
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return str(candidate)  # bare repository
    raise NotARepositoryError(f"not a git repository: {start}")


def worktree_root(start: str | os.PathLike[str] | None) -> Path | None:
    """The working tree holding `start` (default: the current directory), found as
    `git_dir` finds the git directory: None inside a bare repository or a git dir."""
    here = Path(start if start is not None else os.getcwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / ".git").exists():
            return candidate
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return None  # a bare repository, or inside a .git directory
    return None


def index_dir_of(repo: str | None, index_dir: str | None) -> Path:
    """`--index-dir` when given, else the repository's default (<git-dir>/indexer)."""
    from .store import default_index_dir

    return Path(index_dir) if index_dir else default_index_dir(git_dir(repo))
