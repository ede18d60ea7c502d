"""Git objects read through one `git cat-file --batch` process, for `indexer update`.

An update reads a few commits, trees and blobs; importing pygit2 (with OpenSSL, sockets and
tarfile) costs a one-shot process about what importing numpy does, more than the update's
own work. The objects here answer the part of pygit2's API that the update path uses (trees,
commits, blobs; ids are hex strings), so `gitsource`, `treediff` and the chunking pipeline read
them unchanged. Where no `git` executable runs, `gitsource.open_reader` falls back to pygit2.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import NotARepositoryError

TREE_MODE = 0o040000
COMMIT_MODE = 0o160000


def discover(start: str | os.PathLike[str] | None) -> tuple[str, str | None]:
    """(git directory, working tree or None when bare) of the repository holding `start`,
    symlinks resolved as pygit2's discovery resolves them."""
    origin = os.fspath(start) if start is not None else os.getcwd()
    if not os.path.exists(origin):
        raise NotARepositoryError(f"not a git repository: {origin} (no such path)")
    here = Path(os.path.realpath(origin))
    for candidate in (here, *here.parents):
        dot_git = candidate / ".git"
        if dot_git.is_dir():
            return str(dot_git), str(candidate)
        if dot_git.is_file():  # a linked worktree or a submodule: "gitdir: <path>"
            text = dot_git.read_text(encoding="utf-8").strip()
            if text.startswith("gitdir:"):
                return os.path.realpath(candidate / text[7:].strip()), str(candidate)
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return str(candidate), None  # a bare repository
    raise NotARepositoryError(f"not a git repository: {origin}")


class Entry:
    """A tree entry, as pygit2's tree iteration yields it (name, id, filemode, type_str)."""

    __slots__ = ("filemode", "id", "name", "type_str")

    def __init__(self, name: str, oid: str, filemode: int) -> None:
        self.name, self.id, self.filemode = name, oid, filemode
        kind = filemode & 0o170000
        self.type_str = "tree" if kind == TREE_MODE else "commit" if kind == COMMIT_MODE else "blob"


class Blob:
    type_str = "blob"

    def __init__(self, oid: str, data: bytes) -> None:
        self.id, self.data = oid, data


class Tree:
    type_str = "tree"

    def __init__(self, oid: str, raw: bytes, id_bytes: int) -> None:
        self.id = oid
        self._entries: dict[str, Entry] = {}
        at = 0
        while at < len(raw):  # "<mode> <name>\0<id bytes>", repeated
            space = raw.index(b" ", at)
            nul = raw.index(b"\0", space)
            name = os.fsdecode(raw[space + 1 : nul])
            end = nul + 1 + id_bytes
            self._entries[name] = Entry(name, raw[nul + 1 : end].hex(), int(raw[at:space], 8))
            at = end

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, name: str) -> Entry:
        return self._entries[name]

    def __contains__(self, name: object) -> bool:
        return name in self._entries


class Commit:
    type_str = "commit"

    def __init__(self, repo: CatFileRepository, oid: str, raw: bytes) -> None:
        self.id, self._repo = oid, repo
        self.parent_ids: list[str] = []
        self.tree_id = ""
        self.commit_time = 0
        for line in raw.split(b"\n\n", 1)[0].split(b"\n"):
            key, _, value = line.partition(b" ")
            if key == b"tree":
                self.tree_id = value.decode("ascii")
            elif key == b"parent":
                self.parent_ids.append(value.decode("ascii"))
            elif key == b"committer":  # "Name <email> <seconds> <offset>"
                self.commit_time = int(value.rsplit(b" ", 2)[-2])

    @property
    def tree(self) -> Tree:
        tree = self._repo[self.tree_id]
        assert isinstance(tree, Tree)
        return tree

    @property
    def parents(self) -> list[Commit]:
        return [self._repo.commit(p) for p in self.parent_ids]  # type: ignore[misc]

    def peel(self, _kind: Any = None) -> Commit:
        return self


class CatFileRepository:
    """A repository read through `git cat-file --batch` (started on first use). A process
    forked from this one (the build's worker pool) starts its own: the pipes of the parent's
    are closed in the child at the fork, so the two never share one (interleaved requests)
    and the parent's `git` sees the end of its input when the parent closes it."""

    def __init__(self, git_dir: str, workdir: str | None) -> None:
        self.path = git_dir.rstrip("/") + "/"
        self.workdir = workdir.rstrip("/") + "/" if workdir is not None else None
        self.is_bare = workdir is None
        self._process: subprocess.Popen[bytes] | None = None
        _OPEN.add(self)

    def _forget(self) -> None:
        """In a forked child: drop the parent's process (this process's copies of its pipes)."""
        process, self._process = self._process, None
        if process is not None:
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()

    def _read(self, name: str) -> tuple[str, str, bytes] | None:
        """(id, type, content) of the object `name` (an id or any revision), or None."""
        if "\n" in name or not name:
            return None
        if self._process is None:
            self._process = subprocess.Popen(
                ["git", f"--git-dir={self.path}", "cat-file", "--batch"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(name.encode("utf-8") + b"\n")
        stdin.flush()
        header = stdout.readline().split()
        if len(header) != 3:  # "<name> missing", "<name> ambiguous", or the process died
            if not header:
                raise OSError(f"git cat-file stopped reading {self.path}")
            return None
        oid, kind, size = header[0].decode("ascii"), header[1].decode("ascii"), int(header[2])
        data = stdout.read(size + 1)[:-1]
        return oid, kind, data

    def __getitem__(self, name: str) -> Blob | Tree | Commit:
        found = self._read(str(name))
        if found is None:
            raise KeyError(name)
        oid, kind, data = found
        if kind == "tree":
            return Tree(oid, data, len(oid) // 2)
        if kind == "commit":
            return Commit(self, oid, data)
        return Blob(oid, data)

    def commit(self, rev: str) -> Commit | None:
        """The commit `rev` names (tags peeled), or None."""
        found = self._read(f"{rev}^{{commit}}")
        return Commit(self, found[0], found[2]) if found is not None else None

    @property
    def head_is_unborn(self) -> bool:
        return self.commit("HEAD") is None

    def close(self) -> None:
        if self._process is not None:
            process, self._process = self._process, None
            assert process.stdin is not None
            process.stdin.close()
            try:
                process.wait(timeout=CLOSE_SECONDS)
            except subprocess.TimeoutExpired:  # something else holds its input open
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()


CLOSE_SECONDS = 5
_OPEN: weakref.WeakSet[CatFileRepository] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for reader in list(_OPEN):
        reader._forget()


os.register_at_fork(after_in_child=_after_fork_in_child)
