"""The working-tree overlay: uncommitted files chunked on the fly, never written anywhere.

`WorktreeOverlay.refresh` lists the candidate paths (indexer/source/worktree.py), reads and
chunks the files whose stat changed since the last refresh (a long-lived process keeps the
object: an MCP server, `indexer serve`, a notebook), and returns an `OverlayState`: the files
to add as one in-memory segment and the paths whose committed rows are masked. A file whose
content equals its indexed blob (touched, or reverted) is neither: the commit already says what
it holds.

Chunking is the build's (`pipeline.chunk_blob`: content checks for binary, huge, minified and
generated files, secret values redacted before anything is tokenised), so an overlaid file
gives exactly the chunks a build of a commit holding the same bytes gives.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..source.languages import detect_language
from ..source.worktree import Change, WorktreeScan, scan_worktree, size_skip_reason

if TYPE_CHECKING:
    from ..api import Index
    from ..source.watch import TreeWatch
    from .blobcache import CachedFile


def blob_id(data: bytes) -> str:
    """The git blob id of `data` (what `git hash-object` prints for the file)."""
    import hashlib  # only for a dirty tree: a clean one's search never loads OpenSSL

    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


@dataclass(frozen=True)
class OverlayFile:
    """One uncommitted file as read from disk (the fields of the segment writer's FreshFile)."""

    path: str
    blob: str
    language: str
    state: str  # modified | added | conflicted
    entry: CachedFile  # chunks, terms; entry.skip_reason set when content rules skip it


@dataclass
class OverlayState:
    root: Path  # the working tree
    commit: str  # the indexed commit the overlay is relative to
    files: list[OverlayFile] = field(default_factory=list)  # indexable, path order
    masked: list[str] = field(default_factory=list)  # committed rows hidden (sorted)
    removed: list[str] = field(default_factory=list)  # gone from disk
    skipped: dict[str, list[str]] = field(default_factory=dict)  # reason -> paths
    merging: bool = False
    unrelated: bool = False  # the working tree is another repository's: nothing overlaid

    @property
    def key(self) -> tuple[object, ...]:
        """Equal keys: the same overlay (a long-lived process reuses what it assembled)."""
        files = tuple((f.path, f.blob) for f in self.files)
        return (self.root, self.commit, files, tuple(self.masked))

    def __bool__(self) -> bool:
        return bool(self.masked)

    def summary(self) -> dict[str, object]:
        """What `indexer status` reports about the working tree."""
        states: dict[str, int] = {}
        for f in self.files:
            states[f.state] = states.get(f.state, 0) + 1
        if self.removed:
            states["deleted"] = len(self.removed)
        return {
            "root": str(self.root),
            "overlaid": len(self.masked),
            "files": len(self.files),
            "chunks": sum(len(f.entry.records) for f in self.files),
            "states": dict(sorted(states.items())),
            "skipped": {r: len(p) for r, p in sorted(self.skipped.items())},
            "merging": self.merging,
            "unrelated": self.unrelated,
            "paths": list(self.masked),
        }


class WorktreeOverlay:
    """The overlay of one working tree; keep it to refresh only what changed on disk.

    With `watch`, the directories of the tree are watched (indexer/source/watch.py): a refresh
    with no event since the last one returns the last state without asking git."""

    def __init__(self, root: str | os.PathLike[str], watch: bool = False) -> None:
        self.root = Path(root)
        self._read: dict[str, tuple[tuple[int, int, int, int], OverlayFile]] = {}
        self._watching = watch
        self._watch: TreeWatch | None = None
        self._last: OverlayState | None = None
        self._watch_commit: str | None = None
        self._lock = threading.Lock()

    def refresh(self, commit: str, blob_of: Mapping[str, str]) -> OverlayState:
        """The overlay against `commit`, whose indexed files have the blobs `blob_of`."""
        with self._lock:  # a server may answer two requests at once
            return self._refresh(commit, blob_of)

    def _refresh(self, commit: str, blob_of: Mapping[str, str]) -> OverlayState:
        last = self._last
        if self._watching and commit != self._watch_commit:
            self._watch_commit = commit  # first refresh, or another indexed commit
            self._start_watch()
        elif (
            last is not None
            and last.commit == commit
            and self._watch is not None
            and not self._watch.changed()
        ):
            return last  # nothing moved in the tree or the git directory since
        scan = scan_worktree(self.root, commit)
        state = self.state_of(scan, commit, blob_of)
        if self._watch is not None:
            self._watch_paths(scan.paths)
        self._last = state
        return state

    def _start_watch(self) -> None:
        from ..source.watch import TreeWatch, watched_directories
        from ..source.worktree import watch_paths
        from .gitdir import git_dir

        if self._watch is not None:
            self._watch.close()
        directory = Path(git_dir(self.root))
        common = directory / "commondir"  # a linked worktree: refs live in the main git dir
        dirs = [directory]
        if common.is_file():
            dirs.append((directory / common.read_text("utf-8").strip()).resolve())
        self._watch = TreeWatch.open(watched_directories(self.root, watch_paths(self.root), dirs))
        if self._watch is not None:
            self._watch.changed()  # events from before the scan below are covered by it

    def _watch_paths(self, paths: set[str]) -> None:
        from ..source.watch import watched_directories

        assert self._watch is not None
        if not self._watch.add(watched_directories(self.root, paths, ())):
            self._watch.close()  # over the system's limit: ask git every time
            self._watch = None

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None

    def state_of(self, scan: WorktreeScan, commit: str, blob_of: Mapping[str, str]) -> OverlayState:
        state = OverlayState(self.root, commit, merging=scan.merging, unrelated=scan.unrelated)
        masked = set(scan.removed) & set(blob_of)
        state.removed = sorted(masked)
        for reason, paths in scan.skipped.items():
            state.skipped[reason] = list(paths)
            masked.update(p for p in paths if p in blob_of)
        seen = set()
        for change in scan.changes:
            seen.add(change.path)
            f = self._file(change)
            if f is None or f.blob == blob_of.get(f.path):
                continue  # unreadable now, or the very content the commit holds
            if f.entry.skip_reason:  # masked only if the commit has it indexed
                state.skipped.setdefault(f.entry.skip_reason, []).append(f.path)
                if f.path in blob_of:
                    masked.add(f.path)
            else:
                masked.add(f.path)
                state.files.append(f)
        for path in set(self._read) - seen:
            del self._read[path]  # committed or reverted: forget it
        state.masked = sorted(masked)
        return state

    def _file(self, change: Change) -> OverlayFile | None:
        assert change.stat is not None
        known = self._read.get(change.path)
        if known is not None and known[0] == change.stat:
            return known[1]
        f = read_file(self.root, change)
        if f is not None:
            self._read[change.path] = (change.stat, f)
        return f


def read_file(root: Path, change: Change) -> OverlayFile | None:
    """Read and chunk one file of the working tree (None: it vanished meanwhile)."""
    from .blobcache import CachedFile
    from .pipeline import chunk_blob

    language = detect_language(change.path) or "text"
    size = change.stat[2] if change.stat else 0
    too_large = size_skip_reason(change.path, size)
    if too_large:  # never read a huge file just to skip it
        return OverlayFile(
            change.path, "", language, change.state, CachedFile(too_large, [], [], [])
        )
    try:
        data = (root / change.path).read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return None
    try:
        entry, _tree = chunk_blob(data, change.path, language)
    except Exception as exc:  # a parser bug skips the file, as in builds
        entry = CachedFile(f"error:{type(exc).__name__}", [], [], [])
    return OverlayFile(change.path, blob_id(data), language, change.state, entry)


_KEPT: dict[Path, WorktreeOverlay] = {}  # working tree -> its overlay, in a long-lived process


def kept_overlay(root: Path, watch: bool, keep: bool) -> WorktreeOverlay:
    """The overlay of `root`; with `keep`, one per working tree for the life of the process
    (what it read and chunked survives index updates)."""
    if not keep:
        return WorktreeOverlay(root, watch)
    overlay = _KEPT.get(root)
    if overlay is None:
        overlay = _KEPT[root] = WorktreeOverlay(root, watch)
    return overlay


def overlaid(index: Index, state: OverlayState) -> Index:
    """`index` with the overlay's files as one in-memory segment in place of their committed
    rows: the reader (indexer/index/reader.py) lays them out in path order and scores them with
    the statistics of every live row, as if a generation held them."""
    from .writer import FreshFile, assemble, stored_ranges

    table = index.vectors
    # The codec (the table's ranges and centroids) is stored in every segment: read it there
    # rather than recompute the ranges from the whole table (the same numbers).
    codec = stored_ranges(index._parts[0][0].dense) if index._parts else None
    time = int(index.manifest["commit_time"])  # uncommitted = as recent as the indexed commit
    files = [FreshFile(f.path, f.blob, f.language, time, f.entry) for f in state.files]
    segment = assemble(list(files), table, {}, codec) if files else None
    view = index.with_overlay(segment, state.masked)
    view.worktree = state
    view.committed = index
    return view
