"""What a build or an update writes: one new segment for what changed, and a new generation.

An update compares the target tree with the live generation: a file at the same path with the
same blob (and the same last-change time) stays where it is; a changed or added file goes into
the new segment (rows copied from any stored segment that holds that path and blob, e.g. a
revert, else chunked now); the older segments list changed and removed paths as deleted. A full
build is the same with no base: one segment of every file. Killed at any point, the previous
generation stays current (indexer/store.py).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ..errors import CorruptIndexError, IndexerError
from ..source.chunker import CHUNKER_VERSION, materialize, path_stem
from ..source.gitsource import (
    SourceFile,
    close_reader,
    list_tree,
    open_reader,
    open_repository,
    repo_root,
    resolve_commit,
    tree_changes,
)
from .blobcache import CachedFile
from .build import BuildReport, Progress
from .cluster import run_batches
from .generation_summary import summary
from .graph.write import extract_facts
from .pipeline import BuildContext, static_table
from .segment import Segment
from .segment_format import SEGMENT_MANIFEST
from .store import (
    current_generation,
    default_index_dir,
    generations_of,
    make_current,
    publish_generation,
    publish_lock,
    read_generation,
)
from .stream import SegmentStream, chunks_per_segment
from .update_base import Base, change_times, held, open_base, stored_entry
from .vectors import default_table_dir
from .writer import BuiltFile, CopiedFile, FreshFile, stored_ranges


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
    # An update reads git through one `git cat-file` process (no pygit2 import: gitcat.py).
    repository = open_reader(repo) if incremental else open_repository(repo)
    args = (rev, index_dir, jobs, progress, vectors_dir)
    try:
        try:
            return _build(repository, *args, incremental, backend, scheduler, limit, started)
        except CorruptIndexError:
            if not incremental:
                raise
            # The base's files are hashed as the update reads them: a damaged one found then
            # (nothing is published yet) is rebuilt from scratch, as a base that cannot be
            # opened is.
            return _build(repository, *args, False, backend, scheduler, limit, started)
    finally:
        close_reader(repository)


def _build(
    repository: Any,
    rev: str | None,
    index_dir: str | os.PathLike[str] | None,
    jobs: int | None,
    progress: bool | None,
    vectors_dir: str | os.PathLike[str] | None,
    incremental: bool,
    backend: str,
    scheduler: str | None,
    limit: int,
    started: float,
) -> BuildReport:
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
        return _report(base.path, base.manifest, started, "unchanged", base.n_live)

    # An update reads only what differs from the base commit's tree (a diff costs what the
    # change costs); a full listing when the diff cannot tell (see gitsource.tree_changes).
    changes = tree_changes(repository, base.manifest["commit"], commit) if base else None
    # `live`: the base's live files among the paths looked at (all of them for a listing);
    # every other live file stays where it is, untouched and unlisted.
    live: dict[str, tuple[Segment, int]] = {}
    if changes is None:
        listing = list_tree(repository, commit)
        files = sorted(listing.files, key=lambda f: f.path)
        skipped = {p: ["", r] for r, ps in listing.skipped.items() for p in ps}
        live = base.live_files() if base is not None else {}
        touched = set(live) | {f.path for f in files}
    else:
        assert base is not None
        files, deleted, by_name = changes
        touched = deleted | {f.path for f in files} | set(by_name)
        for path in touched:
            if (at := base.live_at(path)) is not None:
                live[path] = at
        skipped = {p: v for p, v in base.skipped.items() if p not in touched}
        skipped.update({p: ["", r] for p, r in by_name.items()})
        files.sort(key=lambda f: f.path)
    kept: set[str] = set()  # looked at, and kept in place (the same blob)
    stored: dict[str, SourceFile] = {}
    stored_files: dict[str, tuple[Segment, int]] = {}
    to_chunk: list[SourceFile] = []
    renamed: dict[str, tuple[SourceFile, CachedFile]] = {}
    for f in files:
        at = live.get(f.path)
        if base is not None and at is not None and at[0].blobs[at[1]] == f.blob:
            kept.add(f.path)
        elif base is not None and base.skipped.get(f.path, [None])[0] == f.blob:
            skipped[f.path] = base.skipped[f.path]
        elif base is not None and (at := base.stored_at(f.path, f.blob)) is not None:
            stored[f.path] = f
            stored_files[f.path] = (at[0], at[1])
        elif base is not None and (
            same := base.same_content(f.blob, f.language or "text", path_stem(f.path))
        ):
            renamed[f.path] = (f, stored_entry(same[0], same[1]))
        else:
            to_chunk.append(f)

    # One pass per file in the workers (pipeline.py): rows, postings, vectors and graph facts.
    # The pool starts first, so the history walk for change times overlaps the workers.
    bar = Progress("indexing", len(to_chunk), progress)
    items = [(f.path, f.blob, f.language or "text") for f in to_chunk]
    context = BuildContext(repository.path, str(table_dir))
    jobs_ = jobs or min(os.cpu_count() or 1, 8)
    results = run_batches(context, items, jobs_, backend, scheduler)
    listed = {*kept, *stored, *renamed, *(f.path for f in to_chunk)}
    in_place = {path: live[path] for path in kept}
    times, moved = change_times(repository, commit, base, listed, touched, in_place)
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
        if base is not None:  # same blob, another last change: rows copied with the new time
            for path in kept:
                segment, local = live[path]
                if int(segment.times[local]) != times[path]:
                    others.append(CopiedFile(path, times[path], segment, local))
            for path, when in moved.items():  # not looked at, but changed and changed back
                at = base.live_at(path)
                assert at is not None
                others.append(CopiedFile(path, when, at[0], at[1]))
        stream.flush(others, _facts(repository.path, renamed, others, jobs))
        # In place and published under the publish lock: garbage collection by another
        # writer never sees the new segments unlisted (store.py).
        with publish_lock(target):
            entries, sizes = _entries(base, stream.paths | (set(live) - kept))
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
    n_reused = (base.n_live - len(live) if base is not None else 0) + len(kept)
    mode = "incremental" if base is not None else "full"
    report = _report(generation, manifest, started, mode, n_reused, sizes)
    report.cached_files, report.chunked_files = len(stored) + len(renamed), len(to_chunk)
    report.searchable_seconds = report.seconds
    report.written_bytes = written + generation.stat().st_size
    return report


def _entries(base: Base | None, changed: set[str]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The base's segments that still serve a file, each with the paths it no longer serves
    (`changed`: live files rewritten or gone), and their sizes. A path is looked up in each
    segment by bisection: the cost follows the change, not the segments' files."""
    entries: list[dict[str, Any]] = []
    sizes: dict[str, int] = {}
    if base is None:
        return entries, sizes
    for (segment, _), dead in zip(base.parts, base.dead, strict=True):
        gone = dead | {p for p in changed if held(segment, p) is not None}
        if len(gone) >= segment.n_files and len(gone & set(segment.paths)) >= segment.n_files:
            continue  # it serves nothing any more
        entries.append({"name": segment.name, "deleted": sorted(gone)})
        sizes[segment.name] = _size(segment)
    return entries, sizes


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


def _size(segment: Segment) -> int:
    """A segment's bytes on disk: its files as its manifest lists them (their sizes are checked
    when it is opened) and the manifest itself."""
    assert segment.directory is not None
    listed = sum(int(info["bytes"]) for info in segment.manifest["artifacts"].values())
    return listed + (segment.directory / SEGMENT_MANIFEST).stat().st_size


def _report(
    path: Path,
    manifest: dict[str, Any],
    started: float,
    mode: str,
    reused: int,
    sizes: dict[str, int] | None = None,
) -> BuildReport:
    """`sizes`: bytes of segments already known (others are measured on disk)."""
    from .store import segment_dir

    counts = manifest["counts"]
    size = 0
    for entry in manifest["segments"]:
        if sizes is not None and entry["name"] in sizes:
            size += sizes[entry["name"]]
        else:
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
