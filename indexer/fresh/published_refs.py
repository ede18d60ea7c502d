"""Published indexes on `refs/indexer/*`: moving them between clones with git, and choosing the
one a clone should adopt.

`fetch` and `push` run the `git` executable (so credentials, SSH settings and proxies work as
for any other fetch). Fetches are forced into `refs/indexer/*`: the remote is the source of
truth for published indexes, whatever a local ref held before.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from ..errors import IndexerError

REF_PREFIX = "refs/indexer/"
FETCH_SPEC = f"+{REF_PREFIX}*:{REF_PREFIX}*"
UNRELATED = 1 << 30  # distance of an indexed commit this clone does not have


@dataclass(frozen=True)
class Published:
    """One published index: its ref, the publish commit and the commit it indexes."""

    ref: str
    commit: str
    indexed_commit: str
    distance: int  # commits between HEAD and the indexed commit, both ways

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _git(repo: pygit2.Repository, *args: str) -> subprocess.CompletedProcess[str]:
    where = repo.workdir or repo.path
    try:
        proc = subprocess.run(
            ["git", *args], cwd=where, capture_output=True, text=True, timeout=600
        )
    except FileNotFoundError:
        raise IndexerError("git is not installed (needed to fetch or push indexes)") from None
    except subprocess.TimeoutExpired:
        raise IndexerError(f"`git {args[0]}` did not finish within 10 minutes") from None
    return proc


def _git_error(proc: subprocess.CompletedProcess[str], what: str) -> IndexerError:
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    reason = lines[-1] if lines else f"exit status {proc.returncode}"
    return IndexerError(f"{what} failed: {reason}")


def fetch(repo: pygit2.Repository, remote: str) -> None:
    """Fetch every published index of `remote` into refs/indexer/* (forced, pruned)."""
    if remote.startswith("-"):
        raise IndexerError(f"invalid remote name: {remote!r}")
    proc = _git(repo, "fetch", "--quiet", "--prune", "--no-tags", remote, FETCH_SPEC)
    if proc.returncode != 0:
        raise _git_error(proc, f"fetching published indexes from {remote}")


def fetch_commit(repo: pygit2.Repository, remote: str, commit: str) -> None:
    """Make `commit` available (the source commit a published index was built from): by id,
    else with the remote's branches. Failures are left to the caller's check."""
    if _git(repo, "fetch", "--quiet", "--no-tags", remote, commit).returncode == 0:
        return
    _git(repo, "fetch", "--quiet", "--no-tags", remote)


def push(repo: pygit2.Repository, remote: str, ref: str) -> None:
    """Push `ref` without force: published commits chain, so a push fast-forwards, and a push
    racing a newer publish fails loudly instead of installing the older index."""
    proc = _git(repo, "push", "--quiet", remote, f"{ref}:{ref}")
    if proc.returncode != 0:
        raise _git_error(proc, f"pushing {ref} to {remote}")


def default_branch(repo: pygit2.Repository, remote: str | None) -> str | None:
    """The remote's default branch: refs/remotes/<remote>/HEAD (set by clone), else asked."""
    names = [remote] if remote else list(repo.remotes.names())
    for name in names:
        try:
            target = repo.references[f"refs/remotes/{name}/HEAD"].target
        except (KeyError, pygit2.GitError, ValueError):
            continue
        if isinstance(target, str):
            return target.rsplit("/", 1)[-1]
    if remote:
        proc = _git(repo, "ls-remote", "--symref", remote, "HEAD")
        for line in proc.stdout.splitlines():
            if line.startswith("ref: refs/heads/"):
                return line.split()[1][len("refs/heads/") :]
    return None


def branches_at(repo: pygit2.Repository, commit: pygit2.Oid | str) -> list[str]:
    """Names of the local and remote-tracking branches whose tip is `commit` (remote names
    without their remote), sorted."""
    names: set[str] = set()
    for name in repo.branches.local:
        if repo.branches.local[name].target == commit:
            names.add(name)
    for name in repo.branches.remote:
        branch = repo.branches.remote[name]
        if name.endswith("/HEAD") or branch.target != commit:
            continue
        names.add(name.split("/", 1)[1] if "/" in name else name)
    return sorted(names)


def manifest_of(repo: pygit2.Repository, commit: pygit2.Commit) -> dict[str, Any] | None:
    """The manifest of a publish commit (unverified: only used to choose and compare)."""
    try:
        blob: Any = repo[commit.tree["manifest.json"].id]
        data = json.loads(bytes(blob.data))
    except (KeyError, ValueError, TypeError):
        return None
    return data if isinstance(data, dict) else None


def _distance(repo: pygit2.Repository, head: str | None, indexed: str) -> int:
    if head is None or indexed not in repo:
        return UNRELATED
    ahead, behind = repo.ahead_behind(head, indexed)
    return int(ahead + behind)


def published_indexes(repo: pygit2.Repository) -> list[Published]:
    """Every readable published index in this repository, nearest to HEAD first."""
    head = None if repo.head_is_unborn else str(repo.head.target)
    found = []
    for name in repo.references:
        if not name.startswith(REF_PREFIX):
            continue
        try:
            commit = repo.references[name].peel(pygit2.Commit)
        except (pygit2.GitError, ValueError, KeyError):
            continue
        manifest = manifest_of(repo, commit)
        if manifest is None or not isinstance(manifest.get("commit"), str):
            continue
        indexed = manifest["commit"]
        found.append(Published(name, str(commit.id), indexed, _distance(repo, head, indexed)))
    return sorted(found, key=lambda p: (p.distance, p.ref))


def choose(repo: pygit2.Repository, own_ref: str | None, remote: str | None) -> Published | None:
    """What a clone adopts: its own branch's index, else the remote default branch's, else the
    index of the commit nearest to HEAD (any relation: an update diffs trees, not history)."""
    candidates = published_indexes(repo)
    by_ref = {p.ref: p for p in candidates}
    if own_ref and own_ref in by_ref:
        return by_ref[own_ref]
    branch = default_branch(repo, remote)
    if branch and REF_PREFIX + branch in by_ref:
        return by_ref[REF_PREFIX + branch]
    return candidates[0] if candidates else None


def repo_root(repo: pygit2.Repository) -> str:
    return str(Path(repo.workdir or repo.path))
