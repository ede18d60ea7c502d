"""Knowing in microseconds that a working tree has not changed: inotify, as git's fsmonitor.

A long-lived process (an MCP server, `indexer serve`, a notebook) refreshes the working-tree
overlay before every search. `git status` costs 10-30 ms on sympy; a watch on the directories
that hold tracked files (and on the git directory: index, HEAD, refs) answers "nothing moved"
with one non-blocking read. Any event means "maybe": the overlay then asks git status again
(stat data decides what really changed). Directories git ignores (`build/`, `.venv/`) are not
watched: nothing in them can enter the overlay. Where inotify is missing or its watch limit is
reached, `TreeWatch.open` returns None and every refresh asks git.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_IN_ONLYDIR = 0x01000000
# modify, attrib, close_write, moved_from, moved_to, create, delete, delete_self, move_self
_IN_ISDIR = 0x40000000
_CREATED = 0x100 | 0x80  # create, moved_to
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (then the name, NUL-padded)
_MASK = 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        return libc
    except (OSError, AttributeError):
        return None


class TreeWatch:
    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self._libc = libc
        self._fd = fd
        self._watched: set[str] = set()
        self._dirs: dict[int, str] = {}  # watch descriptor -> directory

    @classmethod
    def open(cls, directories: Iterable[Path]) -> TreeWatch | None:
        libc = _libc()
        if libc is None:
            return None
        fd = int(libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC))
        if fd < 0:
            return None
        watch = cls(libc, fd)
        if not watch.add(directories):
            watch.close()
            return None
        return watch

    def add(self, directories: Iterable[Path]) -> bool:
        """Watch these directories too; False when the system's watch limit is reached."""
        for directory in directories:
            key = os.fspath(directory)
            if key in self._watched:
                continue
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(key), _MASK | _IN_ONLYDIR)
            if wd < 0:
                if ctypes.get_errno() in (errno.ENOSPC, errno.ENOMEM):
                    return False
                continue  # gone meanwhile, or not a directory: nothing to watch
            self._watched.add(key)
            self._dirs[int(wd)] = key
        return True

    def changed(self) -> bool:
        """Whether anything happened since the last call (reads every pending event). A new
        directory is watched at once, with what was created inside it before the watch."""
        seen = False
        while True:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return seen
            except OSError:
                return True  # cannot tell: assume a change
            if not data:
                return seen
            seen = True
            new_dirs = []
            for wd, mask, name in _events(data):
                if mask & _IN_ISDIR and mask & _CREATED and wd in self._dirs:
                    new_dirs.append(Path(self._dirs[wd], name))
            for top in new_dirs:
                self.add(Path(d) for d, _, _ in os.walk(top))

    def close(self, _close: Callable[[int], None] = os.close) -> None:
        # `_close` is bound at definition: at interpreter exit `os` may already be gone.
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            _close(fd)

    def __del__(self) -> None:
        self.close()


def _events(data: bytes) -> list[tuple[int, int, str]]:
    """(watch descriptor, mask, name) of each event in a read buffer."""
    out = []
    offset = 0
    while offset + _EVENT.size <= len(data):
        wd, mask, _, length = _EVENT.unpack_from(data, offset)
        start = offset + _EVENT.size
        name = data[start : start + length].rstrip(b"\0")
        out.append((wd, mask, os.fsdecode(name)))
        offset = start + length
    return out


def watched_directories(root: Path, tracked: Iterable[str], git_dirs: Iterable[Path]) -> set[Path]:
    """The root, every directory holding a tracked or candidate file, untracked directories
    (`dir/` entries) with everything below them, and the git directories with their refs."""
    found = {root}
    for path in tracked:
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            found.add(root.joinpath(*parts[:depth]))
        if path.endswith("/"):  # an untracked directory: all of it
            found.update(Path(d) for d, _, _ in os.walk(root / path))
    for git_dir in git_dirs:
        found.add(git_dir)
        refs = git_dir / "refs"
        if refs.is_dir():
            found.update(Path(d) for d, _, _ in os.walk(refs))
    return found
