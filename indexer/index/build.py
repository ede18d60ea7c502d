"""Builds: git tree -> chunks (parallel, cached by blob) -> BM25 + dense vectors -> a snapshot.

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
import re
import sys
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import IndexerError
from ..source.chunker import CHUNKER_VERSION, Chunk, chunk_records, materialize, path_stem
from ..source.gitsource import (
    SourceFile,
    content_skip_reason,
    coverage_warnings,
    last_change_times,
    list_tree,
    open_repository,
    repo_root,
    resolve_commit,
)
from ..source.notebook import fallback_reason
from ..source.pathclass import content_flags
from ..source.secrets import redact
from .blobcache import BlobCache, CachedFile
from .dense import DenseIndex, faiss_id
from .integrity import CHUNK_SUMS, chunk_sum, chunk_sums
from .lexical import LexicalIndex, postings_of
from .store import (
    SnapshotWriter,
    current_snapshot,
    default_index_dir,
    make_current,
    read_manifest,
    snapshots_of,
)
from .tokens import code_terms, lexical_terms, path_terms, stem
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


@cache
def _worker_repo(path: str) -> Any:
    import pygit2

    return pygit2.Repository(path)


def record_documents(record: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Path-independent BM25 and dense terms of one chunk record (text + symbol names)."""
    names = f"{record['qualname']} {record['symbol']}"
    lexical = lexical_terms(record["text"]) + lexical_terms(names) * 2
    dense = code_terms(record["text"]) + code_terms(names) * 2
    return lexical, dense


def path_documents(path: str) -> tuple[list[str], list[str]]:
    """The path's share of every chunk's terms, so `oauth2` finds `security/oauth2.py`."""
    terms = path_terms(path)
    return [stem(t) for t in terms], terms


def chunk_blob(data: bytes, path: str, language: str) -> CachedFile:
    reason = content_skip_reason(path, data)
    if reason:
        return CachedFile(reason, [], [], [])
    # The one place file text enters chunking: secrets never reach texts, terms or vectors.
    data, redacted = redact(data)
    records = chunk_records(path_stem(path), language, data)
    docs = [record_documents(r) for r in records]
    fallback = fallback_reason(language, records)
    return CachedFile(None, records, [d[0] for d in docs], [d[1] for d in docs], redacted, fallback)


def chunk_batch(repo_path: str, items: list[tuple[str, str, str]]) -> list[CachedFile]:
    """Worker: read blobs from git and chunk them. Any failure skips the file, never the build."""
    repo = _worker_repo(repo_path)
    results: list[CachedFile] = []
    for path, blob, language in items:
        try:
            results.append(chunk_blob(repo[blob].data, path, language))
        except Exception as exc:  # a parser bug must not break the build
            results.append(CachedFile(f"error:{type(exc).__name__}", [], [], []))
    return results


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


def chunk_files(
    repo_path: str, items: list[tuple[str, str, str]], jobs: int, progress: Progress
) -> list[CachedFile]:
    batches = [items[i : i + 32] for i in range(0, len(items), 32)]
    results: list[CachedFile] = []
    if jobs <= 1 or len(items) < 200:
        for batch in batches:
            results.extend(chunk_batch(repo_path, batch))
            progress.advance(len(batch))
        return results
    from joblib import delayed

    from .workers import parallel

    pool = parallel(jobs, return_as="generator", batch_size=1)
    for batch_result in pool(delayed(chunk_batch)(repo_path, b) for b in batches):
        results.extend(batch_result)
        progress.advance(len(batch_result))
    return results


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


@dataclass
class _Fresh:
    """A file chunked (or taken from the cache) for this build."""

    chunks: list[Chunk]
    lexical: list[list[str]]
    dense: list[list[str]]


def build_index(
    repo: str | os.PathLike[str] | None = None,
    rev: str | None = None,
    index_dir: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    progress: bool | None = None,
    vectors_dir: str | os.PathLike[str] | None = None,
    incremental: bool = False,
) -> BuildReport:
    """Index the tree of `rev` (default HEAD). With `incremental`, reuse the current snapshot
    and the blob cache: only blobs never seen before are chunked."""
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

    kept: list[SourceFile] = []
    to_chunk: list[SourceFile] = []
    fresh: dict[str, CachedFile] = {}
    skipped: dict[str, list[str]] = {p: ["", r] for r, ps in listing.skipped.items() for p in ps}
    for f in files:
        if base is not None and base.blob_of.get(f.path) == f.blob:
            kept.append(f)
            continue
        if base is not None and base.skipped.get(f.path, [None])[0] == f.blob:
            skipped[f.path] = base.skipped[f.path]
            continue
        cached = cache_store.get(f.blob, f.language or "text", path_stem(f.path))
        if cached is not None:
            fresh[f.path] = cached
        else:
            to_chunk.append(f)
    cached_count = len(fresh)

    bar = Progress("chunking", len(to_chunk), progress)
    items = [(f.path, f.blob, f.language or "text") for f in to_chunk]
    results = chunk_files(repository.path, items, jobs or min(os.cpu_count() or 1, 8), bar)
    bar.close()
    for f, result in zip(to_chunk, results, strict=True):
        fresh[f.path] = result
        if not (result.skip_reason or "").startswith("error:"):
            cache_store.put(f.blob, f.language or "text", path_stem(f.path), result)

    kept_paths = {f.path for f in kept}
    indexed = []
    for f in files:
        entry = fresh.get(f.path)
        if entry is not None and entry.skip_reason:
            skipped[f.path] = [f.blob, entry.skip_reason]
        elif entry is not None or f.path in kept_paths:
            indexed.append(f)

    times = _change_times(repository, commit, base, indexed, kept_paths)
    writer = SnapshotWriter(target)
    try:
        manifest = _assemble(writer.path, indexed, kept_paths, fresh, base, table, times, skipped)
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
        if not defer_graph:
            _write_graph(writer.path, repository.path, indexed, base, fresh)
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
            _write_graph(graph_writer.path, repository.path, indexed, base, fresh)
            snapshot = graph_writer.publish(manifest, known=published["files"])
        except BaseException:
            graph_writer.abort()
            raise
    cache_store.trim()
    mode = "incremental" if base is not None else "full"
    report = _report(snapshot, read_manifest(snapshot), started, mode, len(kept))
    report.cached_files, report.chunked_files = cached_count, len(to_chunk)
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
    fresh: dict[str, CachedFile],
) -> None:
    """graph.json: the code graph of the indexed files (indexer/index/graph.py). Files kept from a
    base snapshot that has a graph reuse their stored part; only fresh files are parsed."""
    from .graph import GRAPH_FILES, write_graph

    base_has_graph = base is not None and (base.path / GRAPH_FILES).is_file()
    chunks: list[Chunk] = []
    for f in indexed:
        if f.path in fresh:
            chunks.extend(materialize(fresh[f.path].records, f.path, f.language or "text", f.blob))
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


def _assemble(
    directory: Path,
    indexed: list[SourceFile],
    kept_paths: set[str],
    fresh: dict[str, CachedFile],
    base: BaseSnapshot | None,
    table: StaticVectors,
    times: dict[str, int],
    skipped: dict[str, list[str]],
) -> dict[str, Any]:
    """Write every data file of the snapshot; returns the manifest fields it knows."""
    meta_parts: list[bytes] = []
    text_parts: list[bytes] = []
    meta_lengths: list[np.ndarray] = []
    text_lengths: list[np.ndarray] = []
    fids: list[np.ndarray] = []
    sums: list[np.ndarray] = []  # chunk_sums.npy (indexer/index/integrity.py)
    chunk_file: list[np.ndarray] = []
    flags: list[np.ndarray] = []
    symbols: list[str] = []
    kinds: list[str] = []
    defines: list[str] = []
    new_dense: list[list[str]] = []
    new_lexical: list[list[str]] = []
    new_rows: list[int] = []
    base_rows: list[np.ndarray] = []  # base row of each kept row, in new-row order
    kept_new_rows: list[np.ndarray] = []
    languages: dict[str, int] = {}
    redactions: dict[str, int] = {}  # secret values replaced, by kind (indexer/source/secrets.py)
    fallbacks: dict[str, int] = {}  # files indexed as text, by reason (indexer/source/notebook.py)
    file_records = []
    row = 0
    for file_index, f in enumerate(indexed):
        file_records.append(
            {
                "path": f.path,
                "blob": f.blob,
                "time": times.get(f.path, 0),
                "language": f.language or "text",
            }
        )
        if f.path in kept_paths and base is not None:
            start, end = base.rows[f.path]
            n = end - start
            meta_parts.append(base.meta_bytes(start, end))
            text_parts.append(base.text_bytes(start, end))
            meta_lengths.append(np.diff(base.meta_offsets[start : end + 1]))
            text_lengths.append(np.diff(base.text_offsets[start : end + 1]))
            base_rows.append(np.arange(start, end))
            fids.append(base.fids[start:end])
            sums.append(base.sums_of(start, end))
            symbols.extend(base.columns["symbols"][start:end])
            kinds.extend(base.columns["kinds"][start:end])
            defines.extend(base.columns["defines"][start:end])
            kept_new_rows.append(np.arange(row, row + n))
            language = base.language_of.get(f.path, "")
            file_flags = int(base.flags[start]) if n else 0
            redacted = base.redacted_of.get(f.path)
            fallback = base.fallback_of.get(f.path)
        else:
            entry = fresh[f.path]
            language = f.language or "text"
            redacted = entry.redacted
            fallback = entry.fallback
            chunks = materialize(entry.records, f.path, language, f.blob)
            n = len(chunks)
            path_lex, path_dense = path_documents(f.path)
            ids = np.empty(n, dtype=np.int64)
            for i, c in enumerate(chunks):
                record = c.to_dict()
                text = record.pop("text").encode("utf-8")
                line = json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n"
                meta_parts.append(line)
                text_parts.append(text)
                sums.append(np.array([chunk_sum(line, text)], dtype=np.int64))
                meta_lengths.append(np.array([len(line)], dtype=np.int64))
                text_lengths.append(np.array([len(text)], dtype=np.int64))
                ids[i] = faiss_id(c.id)
                symbols.append(c.symbol)
                kinds.append(c.kind)
                defines.append(module_definitions(c.text) if c.kind in ("module", "cell") else "")
                new_lexical.append(entry.lexical[i] + path_lex)
                new_dense.append(entry.dense[i] + path_dense)
                new_rows.append(row + i)
            fids.append(ids)
            file_flags = content_flags(f.path, "\n".join(r["text"] for r in entry.records))
        if redacted:
            file_records[-1]["redacted"] = redacted
            for kind, count in redacted.items():
                redactions[kind] = redactions.get(kind, 0) + count
        if fallback:  # an invalid notebook indexed as text windows
            file_records[-1]["fallback"] = fallback
            fallbacks[fallback] = fallbacks.get(fallback, 0) + 1
        languages[language] = languages.get(language, 0) + n
        chunk_file.append(np.full(n, file_index, dtype=np.int32))
        flags.append(np.full(n, file_flags, dtype=np.uint8))
        row += n
    n_rows = row

    # Texts and metadata: kept rows are copied as bytes, fresh rows were serialised above.
    for name, parts_, lengths_, offsets_name in (
        ("chunks.jsonl", meta_parts, meta_lengths, "chunk_offsets.npy"),
        ("texts.bin", text_parts, text_lengths, "text_offsets.npy"),
    ):
        (directory / name).write_bytes(b"".join(parts_))
        offsets = np.zeros(n_rows + 1, dtype=np.int64)
        if lengths_:
            np.cumsum(np.concatenate(lengths_), out=offsets[1:])
        np.save(directory / offsets_name, offsets)
    np.save(directory / CHUNK_SUMS, np.concatenate(sums) if sums else np.zeros(0, np.int64))
    all_fids = np.concatenate(fids) if fids else np.zeros(0, dtype=np.int64)
    np.save(directory / "chunk_fids.npy", all_fids)
    np.save(
        directory / "chunk_file.npy",
        np.concatenate(chunk_file) if chunk_file else np.zeros(0, dtype=np.int32),
    )
    np.save(
        directory / "chunk_flags.npy",
        np.concatenate(flags) if flags else np.zeros(0, dtype=np.uint8),
    )
    (directory / "columns.json").write_text(
        json.dumps({"symbols": symbols, "kinds": kinds, "defines": defines}, ensure_ascii=False),
        encoding="utf-8",
    )
    (directory / "files.json").write_text(json.dumps(file_records), encoding="utf-8")
    (directory / "skipped.json").write_text(
        json.dumps(dict(sorted(skipped.items()))), encoding="utf-8"
    )

    # Dense: decoded vectors of kept rows (they re-encode to the same codes), fresh embeddings.
    vectors = np.zeros((n_rows, table.dim), dtype=np.float16)
    if base_rows:
        assert base is not None
        vectors[np.concatenate(kept_new_rows)] = base.vectors[np.concatenate(base_rows)]
    if new_dense:
        vectors[np.asarray(new_rows, dtype=np.int64)] = table.embed_many(new_dense)
    DenseIndex.build(vectors.astype(np.float32), all_fids, table.quantizer_ranges()).save(directory)

    # Lexical: base postings of kept rows (remapped) merged with fresh rows' postings.
    lexical = _merge_lexical(base, base_rows, kept_new_rows, new_lexical, new_rows, n_rows)
    lexical.save(directory)

    skip_counts: dict[str, int] = {}
    for _, reason in skipped.values():
        skip_counts[reason] = skip_counts.get(reason, 0) + 1
    examples: dict[str, list[str]] = {}
    for path, (_, reason) in sorted(skipped.items()):
        if len(examples.setdefault(reason, [])) < 5:
            examples[reason].append(path)
    return {
        "counts": {
            "files": len(indexed),
            "chunks": n_rows,
            "skipped": dict(sorted(skip_counts.items())),
            "redacted": dict(sorted(redactions.items())),
            "fallback": dict(sorted(fallbacks.items())),
        },
        "languages": dict(sorted(languages.items())),
        "skipped_examples": examples,
        "warnings": coverage_warnings(len(indexed), skip_counts),
    }


def _merge_lexical(
    base: BaseSnapshot | None,
    base_rows: list[np.ndarray],
    kept_new_rows: list[np.ndarray],
    new_lexical: list[list[str]],
    new_rows: list[int],
    n_rows: int,
) -> LexicalIndex:
    """Postings sorted by (term, row), identical to what a full build would produce."""
    lengths = np.zeros(n_rows, dtype=np.float32)
    terms_new, docs_new, tfs_new, lengths_new = postings_of(new_lexical)
    rows_new = np.asarray(new_rows, dtype=np.int64)
    if len(rows_new):
        docs_new = rows_new[docs_new]
        lengths[rows_new] = lengths_new
    vocab_parts: list[str] = list(set(terms_new))
    kept_term_ids = kept_docs = kept_tfs = np.zeros(0, dtype=np.int64)
    old_terms: list[str] = []
    if base is not None and base_rows:
        old_rows = np.concatenate(base_rows)
        new_of_old = np.full(base.lexical.n_docs, -1, dtype=np.int64)
        new_of_old[old_rows] = np.concatenate(kept_new_rows)
        lengths[new_of_old[old_rows]] = np.asarray(base.lexical.doc_lengths)[old_rows]
        term_ids = base.lexical.term_ids()
        docs = np.asarray(base.lexical.docs, dtype=np.int64)
        mask = new_of_old[docs] >= 0
        kept_term_ids, kept_docs = term_ids[mask], new_of_old[docs[mask]]
        kept_tfs = np.asarray(base.lexical.tfs)[mask]
        old_terms = base.lexical.terms
        used = np.unique(kept_term_ids)
        vocab_parts.extend(old_terms[i] for i in used.tolist())
    vocab = sorted(set(vocab_parts))
    ids = {t: i for i, t in enumerate(vocab)}
    if len(old_terms):
        remap = np.zeros(len(old_terms), dtype=np.int64)
        used = np.unique(kept_term_ids)
        remap[used] = [ids[old_terms[i]] for i in used.tolist()]
        kept_term_ids = remap[kept_term_ids]
    fresh_ids = np.fromiter((ids[t] for t in terms_new), dtype=np.int64, count=len(terms_new))
    order = np.lexsort((docs_new, fresh_ids))
    fresh_ids, docs_new, tfs_new = fresh_ids[order], docs_new[order], tfs_new[order]
    if len(kept_docs) == 0:
        return LexicalIndex.from_postings(vocab, fresh_ids, docs_new, tfs_new, lengths)
    # Kept postings stay sorted by (term, row): both remaps are monotonic. Merge the fresh ones
    # in by position instead of sorting millions of postings again.
    stride = n_rows + 1
    positions = np.searchsorted(kept_term_ids * stride + kept_docs, fresh_ids * stride + docs_new)
    return LexicalIndex.from_postings(
        vocab,
        np.insert(kept_term_ids, positions, fresh_ids),
        np.insert(kept_docs, positions, docs_new),
        np.insert(np.asarray(kept_tfs, dtype=np.float32), positions, tfs_new),
        lengths,
    )


_TOP_LEVEL_ASSIGNMENT = re.compile(
    r"^(?:export\s+)?(?:(?:pub|const|let|var|static|final|public|private|readonly|type)\s+)*"
    r"([A-Za-z_$][A-Za-z0-9_$]*)\s*(?::[^=\n]{0,80})?=(?!=)",
    re.MULTILINE,
)


def module_definitions(text: str) -> str:
    """Names a module-level block assigns at top level (`TAX_RATE = ...`), space-separated."""
    return " ".join(dict.fromkeys(m.group(1) for m in _TOP_LEVEL_ASSIGNMENT.finditer(text)))


__all__ = ["BuildReport", "build_index", "module_definitions", "update_index"]
