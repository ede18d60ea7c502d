"""Builds: git tree -> chunks (parallel, cached by blob) -> BM25 + dense vectors -> a snapshot.

Workers (pipeline.py, run by cluster.py on a local pool or a Dask cluster) turn each file into
finished rows in one pass; this module streams them into the snapshot in path order (rows.py)
and writes the manifest.

A full build and an incremental update are the same assembly: every file of the target tree is
either *kept* from a base snapshot (same path, same blob: its metadata, text, BM25 postings and
vector are copied, never recomputed) or *fresh* (chunks from the blob cache, or chunked now).
A full build is an assembly with no base. Rows are always in path order and the BM25 vocabulary
is sorted, so an updated index is byte-for-byte the index a full build would make.
"""

from __future__ import annotations

import json
import mmap
import os
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import IndexerError
from ..source.chunker import CHUNKER_VERSION, Chunk
from ..source.gitsource import (
    SourceFile,
    coverage_warnings,
    last_change_times,
    list_tree,
    open_repository,
    repo_root,
    resolve_commit,
)
from .blobcache import BlobCache
from .cluster import run_batches
from .dense import DenseIndex
from .integrity import CHUNK_SUMS, chunk_sums
from .lexical import LexicalIndex
from .pipeline import BuildContext, FileResult
from .rows import RowCollector
from .store import (
    SnapshotWriter,
    current_snapshot,
    default_index_dir,
    make_current,
    read_manifest,
    snapshots_of,
)
from .vectors import StaticVectors, default_table_dir


@dataclass
class BuildReport:
    commit: str
    files: int
    chunks: int
    skipped: dict[str, int]
    seconds: float
    snapshot: str
    bytes: int
    languages: dict[str, int] = field(default_factory=dict)
    mode: str = "full"  # full | incremental | unchanged | reused (a kept snapshot of that commit)
    reused_files: int = 0  # kept from the base snapshot
    cached_files: int = 0  # taken from the blob cache
    chunked_files: int = 0  # parsed now
    searchable_seconds: float = 0.0  # until the new snapshot answered searches (graph follows)
    warnings: list[str] = field(default_factory=list)  # nothing indexed, most files skipped
    redacted: dict[str, int] = field(default_factory=dict)  # secret values replaced, by kind
    fallback: dict[str, int] = field(default_factory=dict)  # indexed as text: reason -> files

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


# -- chunking (worker processes) -----------------------------------------------------------------


class Progress:
    """A one-line progress bar on a terminal's stderr; silent otherwise."""

    def __init__(self, label: str, total: int, enabled: bool | None = None) -> None:
        self.label, self.total, self.done = label, total, 0
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.last = 0.0

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and (now - self.last > 0.1 or self.done >= self.total):
            self.last = now
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            sys.stderr.write(
                f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}"
            )
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled and self.total:
            sys.stderr.write("\n")
            sys.stderr.flush()


# -- the base snapshot an update starts from ------------------------------------------------------


class BaseSnapshot:
    """Read access to the rows of a previous snapshot, for copying kept files."""

    def __init__(self, snapshot: Path) -> None:
        self.path = snapshot
        self.manifest = read_manifest(snapshot)
        if self.manifest.get("chunker_version") != CHUNKER_VERSION:
            raise IndexerError("base index was made by another chunker version")
        # Fully verified: kept rows are copied into the next snapshot, damage must not spread.
        read_manifest(snapshot, verify=True)
        self.files: list[dict[str, Any]] = json.loads((snapshot / "files.json").read_text())
        self.skipped: dict[str, list[str]] = json.loads((snapshot / "skipped.json").read_text())
        chunk_file = np.load(snapshot / "chunk_file.npy", allow_pickle=False)
        starts = np.searchsorted(chunk_file, np.arange(len(self.files)), side="left")
        ends = np.searchsorted(chunk_file, np.arange(len(self.files)), side="right")
        self.rows = {
            f["path"]: (int(s), int(e)) for f, s, e in zip(self.files, starts, ends, strict=True)
        }
        self.blob_of = {f["path"]: f["blob"] for f in self.files}
        self.time_of = {f["path"]: int(f["time"]) for f in self.files}
        self.language_of = {f["path"]: f.get("language", "") for f in self.files}
        self.redacted_of = {f["path"]: f["redacted"] for f in self.files if "redacted" in f}
        self.fallback_of = {f["path"]: f["fallback"] for f in self.files if "fallback" in f}
        self.meta_offsets = np.load(snapshot / "chunk_offsets.npy", allow_pickle=False)
        self.text_offsets = np.load(snapshot / "text_offsets.npy", allow_pickle=False)
        self.flags = np.load(snapshot / "chunk_flags.npy", allow_pickle=False)
        self.columns: dict[str, list[str]] = json.loads((snapshot / "columns.json").read_text())
        self.lexical = LexicalIndex.load(snapshot)
        self.fids, self.vectors = DenseIndex.load(snapshot, mmap=False).stored()
        self._meta = _map(snapshot / "chunks.jsonl")
        self._texts = _map(snapshot / "texts.bin")
        self._sums = (
            np.load(snapshot / CHUNK_SUMS, allow_pickle=False)
            if CHUNK_SUMS in self.manifest["files"]
            else None
        )

    def sums_of(self, start: int, end: int) -> np.ndarray:
        """Kept rows' digests: verified with the whole base, or computed for an older one."""
        if self._sums is not None:
            return np.asarray(self._sums[start:end], dtype=np.int64)
        meta_offsets, text_offsets = self.meta_offsets, self.text_offsets
        return np.asarray(
            chunk_sums(
                self._meta,
                meta_offsets[start : end + 1],
                self._texts,
                text_offsets[start : end + 1],
            ),
            dtype=np.int64,
        )

    def meta_bytes(self, start: int, end: int) -> bytes:
        return bytes(self._meta[int(self.meta_offsets[start]) : int(self.meta_offsets[end])])

    def chunks(self, path: str) -> list[Chunk]:
        start, end = self.rows[path]
        out = []
        for row in range(start, end):
            record = json.loads(self.meta_bytes(row, row + 1))
            out.append(Chunk(**record, text=self.text_bytes(row, row + 1).decode("utf-8")))
        return out

    def text_bytes(self, start: int, end: int) -> bytes:
        return bytes(self._texts[int(self.text_offsets[start]) : int(self.text_offsets[end])])


def _map(path: Path) -> bytes | mmap.mmap:
    with path.open("rb") as fh:
        if path.stat().st_size == 0:
            return b""
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def open_base(index_dir: Path) -> BaseSnapshot | None:
    try:
        return BaseSnapshot(current_snapshot(index_dir))
    except (IndexerError, OSError, ValueError, KeyError, RuntimeError):
        return None  # nothing usable: build from scratch


# -- assembly ------------------------------------------------------------------------------------


def build_index(
    repo: str | os.PathLike[str] | None = None,
    rev: str | None = None,
    index_dir: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    progress: bool | None = None,
    vectors_dir: str | os.PathLike[str] | None = None,
    incremental: bool = False,
    backend: str = "local",
    scheduler: str | None = None,
) -> BuildReport:
    """Index the tree of `rev` (default HEAD). With `incremental`, reuse the current snapshot
    and the blob cache: only blobs never seen before are chunked. `backend` is where the
    per-file work runs: "local" (a process pool of `jobs`) or "dask" (the cluster whose
    scheduler is at `scheduler`; workers read the repository at the same path)."""
    started = time.perf_counter()
    repository = open_repository(repo)
    commit = resolve_commit(repository, rev)
    target = Path(index_dir) if index_dir else default_index_dir(repository.path)
    table_dir = Path(vectors_dir) if vectors_dir else default_table_dir()
    table = StaticVectors.load(table_dir)
    if incremental:
        reused = _switch_to_indexed(target, str(commit.id), table.card, started)
        if reused is not None:
            return reused
    base = open_base(target) if incremental else None
    if base is not None and base.manifest["vectors"].get("card") != table.card:
        base = None  # another vector table: every vector changes
    if base is not None and base.manifest["commit"] == str(commit.id) and _has_graph(base.path):
        return _report(base.path, base.manifest, started, "unchanged", len(base.files))

    listing = list_tree(repository, commit)
    files = sorted(listing.files, key=lambda f: f.path)
    cache_store = BlobCache(target / "blobcache")

    kept_paths: set[str] = set()
    to_index: list[SourceFile] = []
    skipped: dict[str, list[str]] = {p: ["", r] for r, ps in listing.skipped.items() for p in ps}
    for f in files:
        if base is not None and base.blob_of.get(f.path) == f.blob:
            kept_paths.add(f.path)
        elif base is not None and base.skipped.get(f.path, [None])[0] == f.blob:
            skipped[f.path] = base.skipped[f.path]
        else:
            to_index.append(f)

    # A full build takes the graph facts from the workers' pass; an update's graph step reuses
    # the base graph and reads the fresh files' chunks.
    context = BuildContext(
        repository.path, str(table_dir), str(cache_store.directory), base is None
    )
    items = [(f.path, f.blob, f.language or "text") for f in to_index]
    batches = run_batches(context, items, jobs or min(os.cpu_count() or 1, 8), backend, scheduler)
    bar = Progress("indexing", len(to_index), progress)
    writer = SnapshotWriter(target)
    try:
        assembled = _assemble(writer.path, files, kept_paths, batches, base, table, skipped, bar)
        bar.close()
        indexed = assembled.indexed
        times = _change_times(repository, commit, base, indexed, kept_paths)
        for record in assembled.file_records:
            record["time"] = times.get(record["path"], 0)
        (writer.path / "files.json").write_text(
            json.dumps(assembled.file_records), encoding="utf-8"
        )
        manifest = assembled.manifest
        manifest.update(
            commit=str(commit.id),
            commit_time=int(commit.commit_time),
            chunker_version=CHUNKER_VERSION,
            repo_root=str(repo_root(repository)),
            vectors={
                "dims": table.dim,
                "vocab_size": len(table.vocab),
                "card": table.card,
                "dir": str(table_dir),
            },
        )
        # An update publishes the searchable snapshot first and adds the code graph (whose
        # global name resolution is the slowest step) in a second snapshot right after.
        defer_graph = base is not None and _has_graph(base.path)
        if base is None:
            _write_facts(writer.path, assembled.facts)
        elif not defer_graph:
            _write_graph(writer.path, repository.path, indexed, base, assembled.chunks)
        snapshot = writer.publish(manifest)
    except BaseException:
        writer.abort()
        raise
    searchable_after = time.perf_counter() - started
    if defer_graph:
        published = read_manifest(snapshot)
        graph_writer = SnapshotWriter(target)
        try:
            graph_writer.link_from(snapshot, published["files"])
            _write_graph(graph_writer.path, repository.path, indexed, base, assembled.chunks)
            snapshot = graph_writer.publish(manifest, known=published["files"])
        except BaseException:
            graph_writer.abort()
            raise
    cache_store.trim()
    mode = "incremental" if base is not None else "full"
    report = _report(snapshot, read_manifest(snapshot), started, mode, len(kept_paths))
    report.cached_files = assembled.cached
    report.chunked_files = len(to_index) - assembled.cached
    report.searchable_seconds = round(searchable_after, 3)
    return report


def _switch_to_indexed(target: Path, commit: str, card: Any, started: float) -> BuildReport | None:
    """Switching back to a commit indexed recently (the last few snapshots are kept): make that
    snapshot current again instead of assembling an identical one."""
    try:
        current = current_snapshot(target)
    except IndexerError:
        current = None
    for snapshot in snapshots_of(target, commit):
        if snapshot == current:
            return None  # already current: the usual checks decide
        try:
            manifest = read_manifest(snapshot)
        except IndexerError:
            continue
        if (
            manifest.get("commit") == commit
            and manifest.get("chunker_version") == CHUNKER_VERSION
            and manifest.get("vectors", {}).get("card") == card
            and _has_graph(snapshot)
        ):
            make_current(target, snapshot)
            report = _report(snapshot, manifest, started, "reused", manifest["counts"]["files"])
            report.searchable_seconds = report.seconds
            return report
    return None


def _has_graph(snapshot: Path) -> bool:
    from .graph import GRAPH_FILES

    return (snapshot / GRAPH_FILES).is_file()


def update_index(
    repo: str | os.PathLike[str] | None = None,
    rev: str | None = None,
    index_dir: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    progress: bool | None = None,
) -> BuildReport:
    """Bring the index to `rev` (default HEAD), re-chunking only blobs it has not seen."""
    return build_index(repo, rev, index_dir, jobs, progress, incremental=True)


def _write_graph(
    directory: Path,
    repo_path: str,
    indexed: list[SourceFile],
    base: BaseSnapshot | None,
    fresh: dict[str, list[Chunk]],
) -> None:
    """graph.json: the code graph of the indexed files (graph.py). Files kept from a
    base snapshot that has a graph reuse their stored part; only fresh files are parsed."""
    from .graph import GRAPH_FILES, write_graph

    base_has_graph = base is not None and (base.path / GRAPH_FILES).is_file()
    chunks: list[Chunk] = []
    for f in indexed:
        if f.path in fresh:
            chunks.extend(fresh[f.path])
        elif base is not None and not base_has_graph:
            chunks.extend(base.chunks(f.path))
    write_graph(
        directory,
        repo_path,
        [f.path for f in indexed],
        {f.path: f.blob for f in indexed},
        chunks,
        base=base.path if base_has_graph and base is not None else None,
    )


def _write_facts(directory: Path, facts: dict[str, bytes]) -> None:
    """The code graph from the facts the workers extracted (a full build parses nothing
    here); the rows' nodes come from the snapshot's own row files, written before."""
    from .graph import CodeGraph, FileGraph, save_rank_arrays

    files = {p: FileGraph.from_dict(p, json.loads(facts.pop(p))) for p in sorted(facts)}
    graph = CodeGraph.from_files(files)
    graph.save(directory)
    save_rank_arrays(directory, graph, [])


def _report(
    snapshot: Path, manifest: dict[str, Any], started: float, mode: str, reused: int
) -> BuildReport:
    counts = manifest["counts"]
    return BuildReport(
        commit=manifest["commit"],
        files=counts["files"],
        chunks=counts["chunks"],
        skipped=counts["skipped"],
        fallback=counts.get("fallback", {}),
        seconds=round(time.perf_counter() - started, 3),
        snapshot=str(snapshot),
        bytes=sum(f["bytes"] for f in manifest["files"].values()),
        languages=manifest.get("languages", {}),
        mode=mode,
        reused_files=reused,
        warnings=list(manifest.get("warnings", [])),
        redacted=counts.get("redacted", {}),
    )


def _change_times(
    repository: Any,
    commit: Any,
    base: BaseSnapshot | None,
    indexed: list[SourceFile],
    kept_paths: set[str],
) -> dict[str, int]:
    """Last-change time per file, exactly as a full build's history walk would find it.

    When the base commit is on the target's first-parent chain, only the commits in between are
    walked: a kept file untouched there keeps its time. Otherwise every file is walked again.
    """
    paths = {f.path for f in indexed}
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
        if path in kept_paths and path in base.time_of:
            times[path] = base.time_of[path]
        else:
            todo.add(path)
    if todo:
        times.update(last_change_times(repository, commit, todo))
    return times


@dataclass
class _Assembled:
    indexed: list[SourceFile]  # files with rows (possibly none), in path order
    file_records: list[dict[str, Any]]  # files.json, times still to fill in
    manifest: dict[str, Any]  # the manifest fields the rows determine
    facts: dict[str, bytes]  # path -> graph.FileGraph as JSON (full builds)
    chunks: dict[str, list[Chunk]]  # path -> chunks of fresh files (updates' graph step)
    cached: int = 0  # fresh files whose chunks came from the blob cache


def _assemble(
    directory: Path,
    files: list[SourceFile],
    kept_paths: set[str],
    batches: Iterable[list[FileResult]],
    base: BaseSnapshot | None,
    table: StaticVectors,
    skipped: dict[str, list[str]],
    progress: Progress,
) -> _Assembled:
    """Write every row file of the snapshot, appending fresh files as the workers finish
    them (in path order, kept files copied in between); returns what the rest needs."""
    results = _results(batches, progress)
    rows = RowCollector(directory, table.dim)
    out = _Assembled([], [], {}, {}, {})
    languages: dict[str, int] = {}
    redactions: dict[str, int] = {}  # secret values replaced, by kind (source/secrets.py)
    fallbacks: dict[str, int] = {}  # files indexed as text, by reason (source/notebook.py)
    try:
        for f in files:
            if f.path in kept_paths and base is not None:
                start, end = base.rows[f.path]
                rows.add_kept(base, f.path)
                n = end - start
                language = base.language_of.get(f.path, "")
                redacted = base.redacted_of.get(f.path)
                fallback = base.fallback_of.get(f.path)
            elif f.path in skipped:
                continue
            else:
                result = next(results)
                assert result.path == f.path, (result.path, f.path)
                out.cached += result.from_cache
                if result.skip_reason:
                    skipped[f.path] = [f.blob, result.skip_reason]
                    continue
                rows.add(result)
                if result.graph is not None:
                    out.facts[f.path] = result.graph
                if result.chunks is not None:
                    out.chunks[f.path] = result.chunks
                n, language = result.n_chunks, result.language
                redacted, fallback = result.redacted, result.fallback
            out.indexed.append(f)
            record = {"path": f.path, "blob": f.blob, "time": 0, "language": f.language or "text"}
            out.file_records.append(record)
            if redacted:
                record["redacted"] = redacted
                for kind, count in redacted.items():
                    redactions[kind] = redactions.get(kind, 0) + count
            if fallback:  # an invalid notebook indexed as text windows
                record["fallback"] = fallback
                fallbacks[fallback] = fallbacks.get(fallback, 0) + 1
            languages[language] = languages.get(language, 0) + n
        rows.finish(table.quantizer_ranges(), base)
    except BaseException:
        rows.abort()
        raise
    (directory / "skipped.json").write_text(
        json.dumps(dict(sorted(skipped.items()))), encoding="utf-8"
    )
    skip_counts: dict[str, int] = {}
    for _, reason in skipped.values():
        skip_counts[reason] = skip_counts.get(reason, 0) + 1
    examples: dict[str, list[str]] = {}
    for path, (_, reason) in sorted(skipped.items()):
        if len(examples.setdefault(reason, [])) < 5:
            examples[reason].append(path)
    out.manifest = {
        "counts": {
            "files": len(out.indexed),
            "chunks": rows.rows,
            "skipped": dict(sorted(skip_counts.items())),
            "redacted": dict(sorted(redactions.items())),
            "fallback": dict(sorted(fallbacks.items())),
        },
        "languages": dict(sorted(languages.items())),
        "skipped_examples": examples,
        "warnings": coverage_warnings(len(out.indexed), skip_counts),
    }
    return out


def _results(batches: Iterable[list[FileResult]], progress: Progress) -> Iterator[FileResult]:
    for batch in batches:
        progress.advance(len(batch))
        yield from batch


__all__ = ["BuildReport", "build_index", "update_index"]
