"""What a build or an update writes: one new segment for what changed, and a new generation.

An update compares the target tree with the live generation: a file at the same path with the
same blob (and the same last-change time) stays where it is; a changed or added file goes into
the new segment (rows copied from any stored segment that holds that path and blob, e.g. a
revert, else chunked now); the older segments list changed and removed paths as deleted. A full
build is the same with no base: one segment of every file. Killed at any point, the previous
generation stays current (indexer/store.py).
"""

from __future__ import annotations

import bisect
import json
import os
import time
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import IndexerError
from ..source.chunker import CHUNKER_VERSION, materialize, path_stem
from ..source.gitsource import (
    SourceFile,
    coverage_warnings,
    last_change_times,
    list_tree,
    open_repository,
    repo_root,
    resolve_commit,
    tree_changes,
)
from .blobcache import CachedFile
from .build import BuildReport, Progress
from .cluster import run_batches
from .columns import Lines
from .graph.write import extract_facts
from .pipeline import BuildContext, record_documents, static_table
from .reader import open_generation
from .segment import Segment
from .store import (
    current_generation,
    default_index_dir,
    generations_of,
    make_current,
    publish_generation,
    read_generation,
)
from .stream import SegmentStream, chunks_per_segment
from .vectors import default_table_dir
from .writer import BuiltFile, CopiedFile, FreshFile, stored_ranges


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


def build(
    repo: str | os.PathLike[str] | None,
    rev: str | None,
    index_dir: str | os.PathLike[str] | None,
    jobs: int | None,
    progress: bool | None,
    vectors_dir: str | os.PathLike[str] | None,
    incremental: bool,
    backend: str = "local",
    scheduler: str | None = None,
    segment_chunks: int | None = None,
) -> BuildReport:
    started = time.perf_counter()
    limit = chunks_per_segment(segment_chunks)
    repository = open_repository(repo)
    commit = resolve_commit(repository, rev)
    target = Path(index_dir) if index_dir else default_index_dir(repository.path)
    table_dir = Path(vectors_dir) if vectors_dir else default_table_dir()
    table = static_table(str(table_dir))  # the in-process indexing below shares it
    if incremental:
        reused = _switch_to_indexed(target, str(commit.id), table.card, started)
        if reused is not None:
            return reused
    base = open_base(target, table.card) if incremental else None
    if base is not None and base.manifest["commit"] == str(commit.id):
        return _report(base.path, base.manifest, started, "unchanged", len(base.live))

    # An update reads only what differs from the base commit's tree (a diff costs what the
    # change costs); a full listing when the diff cannot tell (see gitsource.tree_changes).
    changes = tree_changes(repository, base.manifest["commit"], commit) if base else None
    kept: set[str] = set()
    if changes is None:
        listing = list_tree(repository, commit)
        files = sorted(listing.files, key=lambda f: f.path)
        skipped = {p: ["", r] for r, ps in listing.skipped.items() for p in ps}
    else:
        assert base is not None
        files, deleted, by_name = changes
        touched = deleted | {f.path for f in files} | set(by_name)
        kept = set(base.live) - touched
        skipped = {p: v for p, v in base.skipped.items() if p not in touched}
        skipped.update({p: ["", r] for p, r in by_name.items()})
        files.sort(key=lambda f: f.path)
    stored: dict[str, SourceFile] = {}
    stored_files: dict[str, tuple[Segment, int]] = {}
    to_chunk: list[SourceFile] = []
    renamed: dict[str, tuple[SourceFile, CachedFile]] = {}
    for f in files:
        live = base.live.get(f.path) if base is not None else None
        if base is not None and live is not None and live[0].blobs[live[1]] == f.blob:
            kept.add(f.path)
        elif base is not None and base.skipped.get(f.path, [None])[0] == f.blob:
            skipped[f.path] = base.skipped[f.path]
        elif base is not None and (at := base.stored_at(f.path, f.blob)) is not None:
            stored[f.path] = f
            stored_files[f.path] = at
        elif base is not None and (
            same := base.same_content(f.blob, f.language or "text", path_stem(f.path))
        ):
            renamed[f.path] = (f, stored_entry(*same))
        else:
            to_chunk.append(f)

    # One pass per file in the workers (pipeline.py): rows, postings, vectors and graph facts.
    # The pool starts first, so the history walk for change times overlaps the workers.
    bar = Progress("indexing", len(to_chunk), progress)
    items = [(f.path, f.blob, f.language or "text") for f in to_chunk]
    context = BuildContext(repository.path, str(table_dir))
    jobs_ = jobs or min(os.cpu_count() or 1, 8)
    results = run_batches(context, items, jobs_, backend, scheduler)
    listed = sorted([*kept, *stored, *renamed, *(f.path for f in to_chunk)])
    times = _change_times(repository, commit, base, listed, kept)
    ranges = stored_ranges(base.parts[0][0].dense) if base is not None and base.parts else None
    # Segments are written as the results stream in (stream.py): memory bounded by a segment.
    stream = SegmentStream(target, table, ranges, limit)
    try:
        for batch in results:
            bar.advance(len(batch))
            for result in batch:
                if result.skip_reason:
                    skipped[result.path] = [result.blob, result.skip_reason]
                else:
                    stream.add(BuiltFile(result.path, times[result.path], result))
        bar.close()
        others: list[FreshFile | CopiedFile] = []
        for path, (f, entry) in renamed.items():
            others.append(FreshFile(path, f.blob, f.language or "text", times[path], entry))
        assert base is not None or not (kept or stored)
        for path in stored:
            segment, local = stored_files[path]
            others.append(CopiedFile(path, times[path], segment, local))
        for path in kept:
            segment, local = base.live[path]  # type: ignore[union-attr]
            if int(segment.times[local]) != times[path]:  # same blob, another last change
                others.append(CopiedFile(path, times[path], segment, local))
        stream.flush(others, _facts(repository.path, renamed, others, jobs))
        indexed = sorted(kept | stream.paths)
        entries = []
        if base is not None:
            changed = stream.paths | (set(base.live) - set(indexed))
            for segment, dead in base.parts:
                gone = set(dead) | (changed & set(segment.paths))
                if len(gone & set(segment.paths)) < segment.n_files:
                    entries.append({"name": segment.name, "deleted": sorted(gone)})
        names, written = stream.finish(str(commit.id))
        entries += [{"name": name, "deleted": []} for name in names]
        manifest = {
            "commit": str(commit.id),
            "commit_time": int(commit.commit_time),
            "chunker_version": CHUNKER_VERSION,
            "repo_root": str(repo_root(repository)),
            "vectors": {
                "dims": table.dim,
                "vocab_size": len(table.vocab),
                "card": table.card,
                "dir": str(table_dir),
            },
            "segments": entries,
            **summary(target, entries, skipped, base),
        }
        generation = publish_generation(target, manifest)
    except BaseException:
        stream.abort()
        raise
    mode = "incremental" if base is not None else "full"
    report = _report(generation, read_generation(generation), started, mode, len(kept))
    report.cached_files, report.chunked_files = len(stored) + len(renamed), len(to_chunk)
    report.searchable_seconds = report.seconds
    report.written_bytes = written + generation.stat().st_size
    return report


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


def _facts(
    repo_path: str,
    fresh: dict[str, Any],
    new_files: list[FreshFile | CopiedFile],
    jobs: int | None,
) -> dict[str, dict[str, Any]]:
    """Graph facts of the new segment's renamed files (parsed) and copied ones (copied); the
    workers' results carry their own."""
    items = [
        (path, f.blob, materialize(r.records, path, f.language or "text", f.blob))
        for path, (f, r) in fresh.items()
    ]
    facts = extract_facts(repo_path, items, jobs or min(os.cpu_count() or 1, 8))
    for c in new_files:
        if isinstance(c, CopiedFile) and c.path in c.segment.graph_facts:
            facts[c.path] = c.segment.graph_facts[c.path]
    return facts


def summary(
    index_dir: Path,
    entries: list[dict[str, Any]],
    skipped: dict[str, list[str]],
    base: Base | None = None,
) -> dict[str, Any]:
    """The generation's counts, languages, skipped files and warnings, from its segments."""
    from .store import SEGMENTS

    totals = _Totals.of_base(base, entries) if base is not None else None
    if totals is None:  # every live file of every segment
        totals = _Totals()
        opened = {s.name: s for s, _ in base.parts} if base is not None else {}
        for entry in entries:
            segment = opened.get(entry["name"]) or Segment.open(
                index_dir / SEGMENTS / entry["name"]
            )
            gone = set(entry["deleted"])
            for i, path in enumerate(segment.paths):
                if path not in gone:
                    totals.add(segment, i, 1)
    else:  # the base's totals, less the files gone since, plus the new segments' files
        known = {s.name for s, _ in base.parts}  # type: ignore[union-attr]
        for entry in entries:
            if entry["name"] not in known:
                segment = Segment.open(index_dir / SEGMENTS / entry["name"])
                for i in range(segment.n_files):
                    totals.add(segment, i, 1)
    if not totals.consistent():
        return summary(index_dir, entries, skipped)  # a count that fell to zero: recount
    n_files, n_chunks = totals.files, totals.chunks
    languages, redactions, fallbacks = totals.languages, totals.redacted, totals.fallback
    skip_counts: dict[str, int] = {}
    examples: dict[str, list[str]] = {}
    for path, (_, reason) in sorted(skipped.items()):
        skip_counts[reason] = skip_counts.get(reason, 0) + 1
        if len(examples.setdefault(reason, [])) < 5:
            examples[reason].append(path)
    return {
        "counts": {
            "files": n_files,
            "chunks": n_chunks,
            "skipped": dict(sorted(skip_counts.items())),
            "redacted": dict(sorted(redactions.items())),
            "fallback": dict(sorted(fallbacks.items())),
        },
        "languages": dict(sorted(languages.items())),
        "skipped": dict(sorted(skipped.items())),
        "skipped_examples": examples,
        "warnings": coverage_warnings(n_files, skip_counts),
    }


class _Totals:
    """Files, chunks, chunks per language, redactions and fallbacks of a generation's live
    files, added file by file (or taken from the base generation and corrected)."""

    def __init__(self) -> None:
        self.files = self.chunks = 0
        self.languages: dict[str, int] = {}
        self.redacted: dict[str, int] = {}
        self.fallback: dict[str, int] = {}
        self.touched: list[tuple[dict[str, int], str]] = []

    def add(self, segment: Segment, i: int, sign: int) -> None:
        rows = segment.file_rows
        n = int(rows[i + 1]) - int(rows[i])
        self.files += sign
        self.chunks += sign * n
        self._bump(self.languages, segment.languages[i], sign * n)
        extra = segment.extras.get(segment.paths[i], {})
        for kind, count in extra.get("redacted", {}).items():
            self._bump(self.redacted, kind, sign * count)
        if extra.get("fallback"):
            self._bump(self.fallback, extra["fallback"], sign)

    def _bump(self, table: dict[str, int], key: str, by: int) -> None:
        table[key] = table.get(key, 0) + by
        if by < 0:
            self.touched.append((table, key))

    def consistent(self) -> bool:
        """False when a subtraction left a count at zero or below: whether the key stays
        (a live file with no chunks) is for a recount to say."""
        return all(table[key] > 0 for table, key in self.touched)

    @classmethod
    def of_base(cls, base: Base, entries: list[dict[str, Any]]) -> _Totals | None:
        """The base generation's totals less its files that `entries` no longer serve (an
        update's cost follows its change, not the number of files); None: recount."""
        counts = base.manifest.get("counts", {})
        keys = ("files", "chunks", "redacted", "fallback")
        if not all(k in counts for k in keys) or "languages" not in base.manifest:
            return None
        totals = cls()
        totals.files, totals.chunks = int(counts["files"]), int(counts["chunks"])
        totals.languages = dict(base.manifest["languages"])
        totals.redacted, totals.fallback = dict(counts["redacted"]), dict(counts["fallback"])
        now = {e["name"]: set(e["deleted"]) for e in entries}
        for segment, dead in base.parts:
            before = set(dead)
            after = now.get(segment.name)
            if after is None:  # every file it served is gone
                gone = [p for p in segment.paths if p not in before]
            else:
                gone = sorted(after - before)
            for path in gone:
                i = bisect.bisect_left(segment.paths, path)
                if i < segment.n_files and segment.paths[i] == path:
                    totals.add(segment, i, -1)
        return totals


def _switch_to_indexed(target: Path, commit: str, card: Any, started: float) -> BuildReport | None:
    """Switching back to a commit indexed recently (the last generations are kept): make that
    generation current again instead of assembling an identical one."""
    try:
        current: Path | None = current_generation(target)
    except IndexerError:
        current = None
    for path in generations_of(target, commit):
        if path == current:
            return None  # already current: the usual checks decide
        try:
            manifest = read_generation(path)
        except IndexerError:
            continue
        if (
            manifest.get("commit") == commit
            and manifest.get("chunker_version") == CHUNKER_VERSION
            and manifest.get("vectors", {}).get("card") == card
        ):
            make_current(target, path)
            report = _report(path, manifest, started, "reused", manifest["counts"]["files"])
            report.searchable_seconds = report.seconds
            return report
    return None


def _report(
    path: Path, manifest: dict[str, Any], started: float, mode: str, reused: int
) -> BuildReport:
    from .store import segment_dir

    counts = manifest["counts"]
    size = 0
    for entry in manifest["segments"]:
        size += sum(p.stat().st_size for p in segment_dir(path, entry["name"]).iterdir())
    return BuildReport(
        commit=manifest["commit"],
        files=counts["files"],
        chunks=counts["chunks"],
        skipped=counts["skipped"],
        fallback=counts.get("fallback", {}),
        seconds=round(time.perf_counter() - started, 3),
        snapshot=str(path),
        bytes=size,
        languages=manifest.get("languages", {}),
        mode=mode,
        reused_files=reused,
        warnings=list(manifest.get("warnings", [])),
        redacted=counts.get("redacted", {}),
        segments=len(manifest["segments"]),
    )


def _change_times(
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
