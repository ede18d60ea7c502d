"""Full build: git tree -> chunks (parallel) -> BM25 + dense vectors -> a published snapshot."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from .chunker import CHUNKER_VERSION, Chunk, chunk_file
from .dense import DenseIndex, faiss_id
from .gitsource import (
    content_skip_reason,
    last_change_times,
    list_tree,
    open_repository,
    repo_root,
    resolve_commit,
)
from .languages import SPECS
from .lexical import LexicalIndex
from .pathclass import path_flags
from .store import SnapshotWriter, default_index_dir
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

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class FileResult:
    path: str
    skip_reason: str | None
    chunks: list[Chunk]
    lexical: list[list[str]]
    dense: list[list[str]]


@cache
def _worker_repo(path: str) -> Any:
    import pygit2

    return pygit2.Repository(path)


def chunk_documents(chunk: Chunk) -> tuple[list[str], list[str]]:
    """Terms for BM25 and for the dense embedding of one chunk (text + path + symbol names)."""
    names = f"{chunk.qualname} {chunk.symbol}"
    lexical = lexical_terms(chunk.text)
    lexical += [stem(t) for t in path_terms(chunk.path)]
    lexical += lexical_terms(names) * 2
    dense = code_terms(chunk.text) + path_terms(chunk.path) + code_terms(names) * 2
    return lexical, dense


def chunk_batch(repo_path: str, items: list[tuple[str, str, str]]) -> list[FileResult]:
    """Worker: read blobs from git and chunk them. Any failure skips the file, never the build."""
    repo = _worker_repo(repo_path)
    results: list[FileResult] = []
    for path, blob, language in items:
        try:
            data = repo[blob].data
            reason = content_skip_reason(path, data)
            if reason:
                results.append(FileResult(path, reason, [], [], []))
                continue
            chunks = chunk_file(path, language, blob, data)
            docs = [chunk_documents(c) for c in chunks]
            results.append(
                FileResult(path, None, chunks, [d[0] for d in docs], [d[1] for d in docs])
            )
        except Exception as exc:  # a parser bug must not break the build
            results.append(FileResult(path, f"error:{type(exc).__name__}", [], [], []))
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
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _batches(items: list[tuple[str, str, str]], n: int) -> list[list[tuple[str, str, str]]]:
    return [items[i : i + n] for i in range(0, len(items), n)]


def chunk_files(
    repo_path: str, items: list[tuple[str, str, str]], jobs: int, progress: Progress
) -> list[FileResult]:
    batches = _batches(items, 32)
    results: list[FileResult] = []
    if jobs <= 1 or len(items) < 200:
        for batch in batches:
            results.extend(chunk_batch(repo_path, batch))
            progress.advance(len(batch))
        return results
    from joblib import Parallel, delayed

    parallel = Parallel(n_jobs=jobs, return_as="generator", batch_size=1)
    for batch_result in parallel(delayed(chunk_batch)(repo_path, b) for b in batches):
        results.extend(batch_result)
        progress.advance(len(batch_result))
    return results


def build_index(
    repo: str | os.PathLike[str] | None = None,
    rev: str | None = None,
    index_dir: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    progress: bool | None = None,
    vectors_dir: str | os.PathLike[str] | None = None,
) -> BuildReport:
    started = time.perf_counter()
    repository = open_repository(repo)
    commit = resolve_commit(repository, rev)
    target = Path(index_dir) if index_dir else default_index_dir(repository.path)
    table = StaticVectors.load(Path(vectors_dir) if vectors_dir else default_table_dir())
    listing = list_tree(repository, commit)
    items = [(f.path, f.blob, f.language or "text") for f in listing.files]
    jobs = jobs or min(os.cpu_count() or 1, 8)

    bar = Progress("chunking", len(items), progress)
    results = chunk_files(repository.path, items, jobs, bar)
    bar.close()

    skipped: dict[str, list[str]] = {k: list(v) for k, v in listing.skipped.items()}
    chunks: list[Chunk] = []
    lexical_docs: list[list[str]] = []
    dense_docs: list[list[str]] = []
    indexed_files: list[str] = []
    blob_of = {f.path: f.blob for f in listing.files}
    for result in sorted(results, key=lambda r: r.path):
        if result.skip_reason:
            skipped.setdefault(result.skip_reason, []).append(result.path)
            continue
        indexed_files.append(result.path)
        chunks.extend(result.chunks)
        lexical_docs.extend(result.lexical)
        dense_docs.extend(result.dense)

    times = last_change_times(repository, commit, set(indexed_files))
    lexical = LexicalIndex.build(lexical_docs)
    vectors = table.embed_many(dense_docs)
    fids = np.array([faiss_id(c.id) for c in chunks], dtype=np.int64)
    dense = DenseIndex.build(vectors, fids)

    writer = SnapshotWriter(target)
    try:
        write_chunk_store(writer.path, chunks, indexed_files, blob_of, times)
        np.save(writer.path / "chunk_fids.npy", fids)
        lexical.save(writer.path)
        dense.save(writer.path)
        languages: dict[str, int] = {}
        for c in chunks:
            languages[c.language] = languages.get(c.language, 0) + 1
        manifest = {
            "commit": str(commit.id),
            "commit_time": int(commit.commit_time),
            "chunker_version": CHUNKER_VERSION,
            "repo_root": str(repo_root(repository)),
            "vectors": {
                "dims": table.dim,
                "vocab_size": len(table.vocab),
                "card": table.card,
                "dir": str(Path(vectors_dir or default_table_dir())),
            },
            "counts": {
                "files": len(indexed_files),
                "chunks": len(chunks),
                "skipped": {k: len(v) for k, v in sorted(skipped.items())},
            },
            "languages": dict(sorted(languages.items())),
            "skipped_examples": {k: v[:5] for k, v in sorted(skipped.items())},
        }
        snapshot = writer.publish(manifest)
    except BaseException:
        writer.abort()
        raise
    size = sum(p.stat().st_size for p in snapshot.iterdir())
    return BuildReport(
        commit=str(commit.id),
        files=len(indexed_files),
        chunks=len(chunks),
        skipped={k: len(v) for k, v in sorted(skipped.items())},
        seconds=round(time.perf_counter() - started, 3),
        snapshot=str(snapshot),
        bytes=size,
        languages=dict(sorted(languages.items())),
    )


_TOP_LEVEL_ASSIGNMENT = re.compile(
    r"^(?:export\s+)?(?:(?:pub|const|let|var|static|final|public|private|readonly|type)\s+)*"
    r"([A-Za-z_$][A-Za-z0-9_$]*)\s*(?::[^=\n]{0,80})?=(?!=)",
    re.MULTILINE,
)


def module_definitions(text: str) -> str:
    """Names a module-level block assigns at top level (`TAX_RATE = ...`), space-separated."""
    return " ".join(dict.fromkeys(m.group(1) for m in _TOP_LEVEL_ASSIGNMENT.finditer(text)))


def write_chunk_store(
    directory: Path,
    chunks: list[Chunk],
    files: list[str],
    blob_of: dict[str, str],
    times: dict[str, int],
) -> None:
    """chunks.jsonl (metadata), texts.bin (UTF-8 texts), offsets and per-chunk columns."""
    file_index = {path: i for i, path in enumerate(files)}
    meta_offsets = [0]
    text_offsets = [0]
    with (
        (directory / "chunks.jsonl").open("wb") as meta,
        (directory / "texts.bin").open("wb") as texts,
    ):
        for c in chunks:
            record = c.to_dict()
            text = record.pop("text").encode("utf-8")
            line = json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n"
            meta.write(line)
            texts.write(text)
            meta_offsets.append(meta_offsets[-1] + len(line))
            text_offsets.append(text_offsets[-1] + len(text))
    np.save(directory / "chunk_offsets.npy", np.asarray(meta_offsets, dtype=np.int64))
    np.save(directory / "text_offsets.npy", np.asarray(text_offsets, dtype=np.int64))
    np.save(
        directory / "chunk_file.npy",
        np.asarray([file_index[c.path] for c in chunks], dtype=np.int32),
    )
    np.save(
        directory / "chunk_flags.npy",
        np.asarray([path_flags(c.path) for c in chunks], dtype=np.uint8),
    )
    columns = {
        "symbols": [c.symbol for c in chunks],
        "kinds": [c.kind for c in chunks],
        "defines": [module_definitions(c.text) if c.kind == "module" else "" for c in chunks],
    }
    (directory / "columns.json").write_text(
        json.dumps(columns, ensure_ascii=False), encoding="utf-8"
    )
    file_records = [{"path": p, "blob": blob_of[p], "time": times.get(p, 0)} for p in files]
    (directory / "files.json").write_text(json.dumps(file_records), encoding="utf-8")


__all__ = ["SPECS", "BuildReport", "build_index"]
