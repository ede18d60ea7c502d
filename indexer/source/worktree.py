"""What the working tree holds that the indexed commit does not: the files `git status` reports.

Detection is git's own: `git status --porcelain=v2` compares the files on disk with the stat data
in git's index (hashing only files whose stat changed, honouring sparse checkouts, fsmonitor and
the untracked cache), run with `--no-optional-locks` so it never takes `index.lock` from under a
concurrent `git commit`. A subprocess costs ~60 ms less in a cold `indexer search` than importing
pygit2 (measured in docs/freshness.md), and libgit2's status reports the files a sparse checkout
leaves out as deleted. Where no `git` executable is found, pygit2's status is used instead.

A path is a candidate when it differs between the working tree and the indexed commit: what
status reports (tracked and modified, added, deleted, renamed, unmerged; untracked but not
ignored) plus, when HEAD has moved past the indexed commit, what changed in between. The same
path rules as a build then apply (indexer/source/gitsource.py: secrets first, `.indexerignore` read
from the working tree, vendored, generated, binary by name, symlinks, submodules).
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import IndexerError
from .ignorefile import IGNORE_FILE, IgnoreRules

GIT_TIMEOUT_S = 60
_BLOB_MODE = 0o100644
_LINK_MODE = 0o120000
_SUBMODULE_MODE = 0o160000


@dataclass(frozen=True)
class Change:
    """One candidate path. `stat` is (mtime_ns, ctime_ns, size, inode) of the file on disk:
    what a long-lived process compares to know whether it must read the file again."""

    path: str
    state: str  # modified | added | deleted | conflicted
    stat: tuple[int, int, int, int] | None = None  # None: not on disk


@dataclass
class WorktreeScan:
    root: Path
    head: str | None  # None: no commit yet
    changes: list[Change] = field(default_factory=list)  # files to chunk from disk, path order
    removed: list[str] = field(default_factory=list)  # gone from disk (deleted, renamed away)
    skipped: dict[str, list[str]] = field(default_factory=dict)  # reason -> paths (path rules)
    merging: bool = False  # a merge with conflicts in progress (markers are in the files)
    unrelated: bool = False  # the indexed commit is not in this repository: no overlay

    @property
    def paths(self) -> set[str]:
        """Every candidate path: their committed rows no longer describe the disk."""
        found = {c.path for c in self.changes} | set(self.removed)
        return found | {p for paths in self.skipped.values() for p in paths}


def git_found() -> bool:
    """A `git` executable on PATH (shutil.which, without importing shutil)."""
    return any(os.access(os.path.join(d, "git"), os.X_OK) for d in os.get_exec_path())


def scan_worktree(root: Path, indexed_commit: str | None) -> WorktreeScan:
    """The candidate paths of the working tree at `root` against `indexed_commit`."""
    if not git_found():
        head, flags = _pygit2_status(root)
    else:
        head, flags = _git_status(root)
    if indexed_commit and head and head != indexed_commit:
        between = _changed_between(root, indexed_commit, head)
        if between is None:  # another repository's index (`--index-dir`): nothing to overlay
            return WorktreeScan(root, head, unrelated=True)
        for path in between:
            flags.setdefault(path, "modified")
    rules = _ignore_rules(root) if flags else IgnoreRules(None)
    scan = WorktreeScan(root, head, merging="conflicted" in flags.values())
    for path in sorted(flags):
        state = flags[path]
        try:
            info = os.lstat(root / path)
        except (FileNotFoundError, NotADirectoryError):
            info = None
        if info is None or state == "deleted":  # deleted, or untracked and ignored now
            scan.removed.append(path)
            continue
        reason = _skip_reason(path, info, rules)
        if reason is not None:
            scan.skipped.setdefault(reason, []).append(path)
            continue
        key = (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino)
        scan.changes.append(Change(path, state, key))
    return scan


def resolve_rev(repo: str | os.PathLike[str] | None, rev: str) -> str:
    """The commit id `rev` names in the repository holding `repo` (bare ones too)."""
    where = Path(repo) if repo is not None else Path.cwd()
    args = ["rev-parse", "--verify", "--quiet", "--end-of-options", rev + "^{commit}"]
    try:
        out = _git(args, where)
    except IndexerError:
        raise IndexerError(f"unknown revision: {rev}") from None
    return out.decode("ascii", "replace").strip()


def watch_paths(root: Path) -> list[str]:
    """Every tracked path and every untracked, unignored file or directory (`dir/`, empty ones
    too): what a watch of the tree must cover."""
    tracked = _git(["ls-files", "-z"], root)
    others = _git(["ls-files", "-z", "--others", "--directory", "--exclude-standard"], root)
    return [p for p in os.fsdecode(tracked + b"\0" + others).split("\0") if p]


def size_skip_reason(path: str, size: int) -> str | None:
    """A file too large to index, decided from its size before reading it (as builds do)."""
    from .pathrules import MAX_FILE_BYTES, MAX_NOTEBOOK_BYTES

    limit = MAX_NOTEBOOK_BYTES if path.lower().endswith(".ipynb") else MAX_FILE_BYTES
    return "too_large" if size > limit else None


def _skip_reason(path: str, info: os.stat_result, rules: IgnoreRules) -> str | None:
    if stat.S_ISDIR(info.st_mode):
        return "submodule"  # an untracked nested repository, or a submodule
    if stat.S_ISLNK(info.st_mode):
        return "symlink"
    if not stat.S_ISREG(info.st_mode):
        return "special"
    parts = path.split("/")
    for depth in range(1, len(parts)):
        if rules.decision("/".join(parts[:depth]) + "/") is True:
            return "ignored"  # a build never walks into an ignored directory
    from .pathrules import path_skip_reason  # the rules' tables load only for a dirty tree

    return path_skip_reason(path, _BLOB_MODE, rules) or size_skip_reason(path, info.st_size)


def _ignore_rules(root: Path) -> IgnoreRules:
    """`.indexerignore` as it is on disk: a build of the edited tree would read that one."""
    try:
        return IgnoreRules.from_text((root / IGNORE_FILE).read_text("utf-8", "replace"))
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return IgnoreRules(None)


_STATUS = ["status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all", "--no-renames"]
_PREFETCHED: dict[Path, subprocess.Popen[bytes]] = {}


def prefetch_status(root: Path) -> None:
    """Start `git status` for `root` now: a command that searches once runs it while it
    imports numpy and opens the index (the next `scan_worktree` of `root` collects it)."""
    if root not in _PREFETCHED and git_found():
        with contextlib.suppress(OSError):  # scan_worktree runs it again and says why
            _PREFETCHED[root] = _start(_STATUS, root)


def _start(args: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    return subprocess.Popen(
        ["git", "--no-optional-locks", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _git(args: list[str], cwd: Path, started: subprocess.Popen[bytes] | None = None) -> bytes:
    try:
        proc = started or _start(args, cwd)
        out, err = proc.communicate(timeout=GIT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise IndexerError(f"git {args[0]} failed in {cwd}: {exc}") from exc
    if proc.returncode != 0:
        message = err.decode("utf-8", "replace").strip().splitlines()
        raise IndexerError(f"git {args[0]} failed in {cwd}: {(message or ['?'])[-1]}")
    return out


def _git_status(root: Path) -> tuple[str | None, dict[str, str]]:
    """(HEAD commit, path -> state) from `git status --porcelain=v2 -z`."""
    out = _git(_STATUS, root, _PREFETCHED.pop(root, None))
    head: str | None = None
    flags: dict[str, str] = {}
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if entry.startswith("# branch.oid "):
            oid = entry.split()[2]
            head = None if oid == "(initial)" else oid
        elif entry.startswith("? "):
            flags[entry[2:]] = "added"
        elif entry.startswith(("1 ", "2 ")):
            parts = entry.split(" ", 8)
            if parts[2].startswith("S"):
                continue  # a submodule: its own repository, never indexed
            if entry.startswith("2 "):  # a rename (only with rename detection): both paths
                parts = entry.split(" ", 9)
                flags[fields[i]] = "deleted"
                i += 1
                flags[parts[9]] = "added"
                continue
            flags[parts[8]] = _state(parts[1])
        elif entry.startswith("u "):
            flags[entry.split(" ", 10)[10]] = "conflicted"
    return head, flags


def _state(xy: str) -> str:
    if "D" in xy:
        return "deleted"
    return "added" if xy[0] == "A" else "modified"


def _changed_between(root: Path, old: str, new: str) -> list[str] | None:
    """Paths that differ between two commits (the index is behind HEAD); None when `old` is
    not a commit of this repository."""
    try:
        out = _git(["diff", "--no-renames", "--name-only", "-z", old, new, "--"], root)
    except IndexerError:
        return None
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def _pygit2_status(root: Path) -> tuple[str | None, dict[str, str]]:
    """The same through libgit2, when no git executable exists (sparse checkouts: files left
    out are reported deleted, so they are masked too)."""
    import pygit2

    repo: Any = pygit2.Repository(str(root))
    head = None if repo.head_is_unborn else str(repo.head.target)
    status = pygit2.enums.FileStatus
    flags: dict[str, str] = {}
    for path, flag in repo.status(untracked_files="all", ignored=False).items():
        if flag & status.CONFLICTED:
            flags[path] = "conflicted"
        elif flag & (status.WT_DELETED | status.INDEX_DELETED):
            flags[path] = "deleted"
        elif flag & (status.WT_NEW | status.INDEX_NEW):
            flags[path] = "added"
        else:
            flags[path] = "modified"
    return head, flags
