"""The live generation an update starts from, and what an update takes from it instead of
chunking again: files kept in place, rows of a stored file with the same path and blob (a
revert), the chunks of a stored file with the same blob and stem (a rename), and the
last-change times of files the walk since the base commit did not touch."""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import IndexerError
from ..source.chunker import CHUNKER_VERSION, path_stem
from ..source.gitsource import last_change_times
from .blobcache import CachedFile
from .columns import Lines
from .pipeline import record_documents
from .reader import open_generation
from .segment import Segment
from .store import current_generation


@dataclass
class Base:
    """The live generation an update starts from."""

    path: Path
    manifest: dict[str, Any]
    parts: list[tuple[Segment, list[str]]]

    def __post_init__(self) -> None:
        # path -> (segment, file) of every live file: built with C-level zips, no Python step
        # per file (the big corpus has 10k files; an update's cost must follow the change).
        self.live: dict[str, tuple[Segment, int]] = {}
        for segment, deleted in self.parts:
            at = zip(repeat(segment), range(segment.n_files), strict=False)
            placed = zip(segment.paths, at, strict=True)
            if deleted:
                gone = set(deleted)
                self.live.update(item for item in placed if item[0] not in gone)
            else:
                self.live.update(placed)
        self.skipped: dict[str, list[str]] = self.manifest.get("skipped", {})

    def stored_at(self, path: str, blob: str) -> tuple[Segment, int] | None:
        """A stored file (live or dead) with this path and blob: a revert copies its rows."""
        for segment, _ in reversed(self.parts):
            paths = segment.paths
            i = bisect.bisect_left(paths, path)
            while i < len(paths) and paths[i] == path:
                if segment.blobs[i] == blob:
                    return segment, i
                i += 1
        return None

    def same_content(self, blob: str, language: str, stem: str) -> tuple[Segment, int] | None:
        """A stored file with this blob, language and path stem (the last one, segments in
        order): a renamed file's chunks (ids follow the path, module chunks the stem). Found by
        searching each segment's blob column for the blob, not by a table of every file."""
        needle = blob.encode("ascii")
        for segment, _ in reversed(self.parts):
            blobs = segment.blobs
            if not isinstance(blobs, Lines):
                found = [i for i, b in enumerate(blobs) if b == blob]
            else:
                found = []
                at = blobs.data.find(needle)
                while at >= 0:
                    i = int(np.searchsorted(blobs.starts, at, side="right")) - 1
                    if int(blobs.starts[i]) == at and blobs[i] == blob:
                        found.append(i)
                    at = blobs.data.find(needle, at + 1)
            for i in reversed(found):
                if segment.languages[i] == language and path_stem(segment.paths[i]) == stem:
                    return segment, i
        return None


def open_base(index_dir: Path, card: Any) -> Base | None:
    try:
        path = current_generation(index_dir)
        manifest, parts = open_generation(path)
    except (IndexerError, OSError, ValueError, KeyError):
        return None  # nothing usable: build from scratch
    if manifest.get("chunker_version") != CHUNKER_VERSION:
        return None
    if manifest.get("vectors", {}).get("card") != card:
        return None  # another vector table: every vector changes
    return Base(path, manifest, parts)


def stored_entry(segment: Segment, local: int) -> CachedFile:
    """A stored file's chunks as the chunker returned them (for the same blob at another path
    with the same stem): records from the chunk store, terms tokenised again, nothing parsed."""
    start, end = int(segment.file_rows[local]), int(segment.file_rows[local + 1])
    records = []
    for row in range(start, end):
        record = json.loads(segment.meta_bytes(row, row + 1))
        for key in ("id", "path", "blob"):
            record.pop(key)
        record["text"] = segment.text_bytes(row, row + 1).decode("utf-8")
        records.append(record)
    docs = [record_documents(r) for r in records]
    extra = segment.extras.get(segment.paths[local], {})
    return CachedFile(
        None,
        records,
        [d[0] for d in docs],
        [d[1] for d in docs],
        extra.get("redacted", {}),
        extra.get("fallback"),
    )


def change_times(
    repository: Any, commit: Any, base: Base | None, indexed: list[str], kept: set[str]
) -> dict[str, int]:
    """Last-change time per file, exactly as a full build's history walk would find it.

    When the base commit is on the target's first-parent chain, only the commits in between are
    walked: a kept file untouched there keeps its time. Otherwise every file is walked again.
    """
    paths = set(indexed)
    if base is None:
        full: dict[str, int] = last_change_times(repository, commit, paths)
        return full
    recent, unresolved = last_change_times(
        repository, commit, paths, stop_at=base.manifest["commit"], partial=True
    )
    if unresolved is None:  # base commit not on the first-parent chain
        walked: dict[str, int] = last_change_times(repository, commit, paths)
        return walked
    times = dict(recent)
    todo = set()
    for path in unresolved:
        if path in kept:
            segment, local = base.live[path]
            times[path] = int(segment.times[local])
        else:
            todo.add(path)
    if todo:
        times.update(last_change_times(repository, commit, todo))
    return times
