"""Builds: git tree -> chunks (parallel worker processes) -> segments (indexer/index/).

This module holds the worker side (reading blobs, chunking, tokenising) and the entry points;
indexer/index/update.py decides what an update writes: one new segment for the changed files
and a new generation (see docs/freshness.md).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ..source.chunker import chunk_records, path_stem
from ..source.gitsource import content_skip_reason
from ..source.notebook import fallback_reason
from ..source.secrets import redact
from .blobcache import CachedFile
from .tokens import code_terms, lexical_terms
from .writer import module_definitions, path_documents


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
    mode: str = "full"  # full | incremental | unchanged | reused (a kept generation of that commit)
    reused_files: int = 0  # served by the segments kept from the base generation
    cached_files: int = 0  # rows copied from a stored segment (a reverted or re-timed file)
    chunked_files: int = 0  # parsed now
    searchable_seconds: float = 0.0  # until the new generation answered searches
    segments: int = 0  # live segments of the generation
    written_bytes: int = 0  # bytes this build or update wrote (new segment + manifest)
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


def build_index(
    repo: str | os.PathLike[str] | None = None,
    rev: str | None = None,
    index_dir: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    progress: bool | None = None,
    vectors_dir: str | os.PathLike[str] | None = None,
    incremental: bool = False,
) -> BuildReport:
    """Index the tree of `rev` (default HEAD). With `incremental`, keep the current
    generation's segments and write one new segment for what changed."""
    from .update import build

    return build(repo, rev, index_dir, jobs, progress, vectors_dir, incremental)


def update_index(
    repo: str | os.PathLike[str] | None = None,
    rev: str | None = None,
    index_dir: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    progress: bool | None = None,
) -> BuildReport:
    """Bring the index to `rev` (default HEAD), chunking only files it does not hold."""
    return build_index(repo, rev, index_dir, jobs, progress, incremental=True)


__all__ = ["BuildReport", "build_index", "module_definitions", "path_documents", "update_index"]
