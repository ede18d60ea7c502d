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
from ..source.gitsource import changes_since, last_change_times
from .blobcache import CachedFile
from .columns import Lines
from .pipeline import record_documents
from .segment import Segment
from .store import current_generation, read_generation, segment_dir


def held(segment: Segment, path: str) -> int | None:
    """The index of `path` among the segment's files (live or not), by bisection."""
    paths = segment.paths
    i = bisect.bisect_left(paths, path)
    return i if i < len(paths) and paths[i] == path else None


@dataclass
class Base:
    """The live generation an update starts from. Nothing here steps through every file: a
    path is looked up in each segment's sorted path column (the big corpus has 10k files in 10
    segments; an update's cost must follow the change)."""

    path: Path
    manifest: dict[str, Any]
    parts: list[tuple[Segment, list[str]]]

    def __post_init__(self) -> None:
        self.dead = [set(deleted) for _, deleted in self.parts]
        self.skipped: dict[str, list[str]] = self.manifest.get("skipped", {})

    def live_at(self, path: str) -> tuple[Segment, int] | None:
        """The segment and index that serve `path`, or None."""
        for k in range(len(self.parts) - 1, -1, -1):
            segment = self.parts[k][0]
            local = held(segment, path)
            if local is not None and path not in self.dead[k]:
                return segment, local
        return None

    def live_files(self) -> dict[str, tuple[Segment, int]]:
        """path -> (segment, file) of every live file: for a full listing, which reads every
        file anyway (built with C-level zips, no Python step per file)."""
        live: dict[str, tuple[Segment, int]] = {}
        for (segment, _), gone in zip(self.parts, self.dead, strict=True):
            at = zip(repeat(segment), range(segment.n_files), strict=False)
            placed = zip(segment.paths, at, strict=True)
            if gone:
                live.update(item for item in placed if item[0] not in gone)
            else:
                live.update(placed)
        return live

    @property
    def n_live(self) -> int:
        counts = self.manifest.get("counts", {})
        return int(counts["files"]) if "files" in counts else len(self.live_files())

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
    """The current generation, its segments opened with every file's size checked; a small file
    (those a search hashes on open) is hashed when the update first reads it (segment.py), so a
    10-segment index is not hashed file by file for a 1-file update."""
    try:
        path = current_generation(index_dir)
        manifest = read_generation(path)
        parts = []
        for entry in manifest["segments"]:
            deleted = entry.get("deleted", [])
            if not isinstance(deleted, list):
                return None
            segment = Segment.open(segment_dir(path, entry["name"]), hash_small=False)
            parts.append((segment, deleted))
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
    repository: Any,
    commit: Any,
    base: Base | None,
    paths: set[str],
    touched: set[str],
    kept: dict[str, tuple[Segment, int]] | None = None,
) -> tuple[dict[str, int], dict[str, int]]:
    """Last-change times exactly as a full build's history walk finds them: (the time of each
    of `paths`, the new time of every other live file of `base` whose time moved).

    When the base commit is on the target's first-parent chain, only the commits in between
    are read: a file they do not touch keeps its time (`kept`: where those of `paths` that are
    kept in place are stored). Otherwise every file is walked again. `touched`: the paths the
    update looked at (every other live file is kept in place, unlisted).
    """
    if base is None:
        return last_change_times(repository, commit, paths), {}
    recent = changes_since(repository, commit, base.manifest["commit"])
    if recent is None:  # base commit not on the first-parent chain
        live = base.live_files()
        others = {p for p in live if p not in touched and p not in paths}
        walked = last_change_times(repository, commit, paths | others)
        moved = {}
        for p in others:
            segment, local = live[p]
            if int(segment.times[local]) != walked[p]:
                moved[p] = walked[p]
        return {p: walked[p] for p in paths}, moved
    times = {p: recent[p] for p in paths if p in recent}
    for p, (segment, local) in (kept or {}).items():
        if p not in times:
            times[p] = int(segment.times[local])
    missing = paths - times.keys()
    if missing:
        times.update(last_change_times(repository, commit, missing))
    moved = {}
    for p, when in recent.items():
        if p in touched or p in paths:
            continue
        at = base.live_at(p)
        if at is not None and int(at[0].times[at[1]]) != when:
            moved[p] = when
    return times, moved
