"""Builds: git tree -> finished files (parallel workers) -> segments (indexer/index/).

This module holds the entry points. Workers (pipeline.py, run by cluster.py on a local pool or a
Dask cluster) turn each file into finished rows in one pass; update.py decides what an update
writes: one new segment for the changed files and a new generation (see docs/freshness.md).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

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
    segment_chunks: int | None = None,
) -> BuildReport:
    """Index the tree of `rev` (default HEAD). With `incremental`, keep the current
    generation's segments and write one new segment for what changed. `backend` is where the
    per-file work runs: "local" (a process pool of `jobs`) or "dask" (the cluster whose
    scheduler is at `scheduler`; workers read the repository at the same path). The build writes
    a segment every `segment_chunks` chunks (default: $INDEXER_SEGMENT_CHUNKS or 262144), so its
    memory is bounded by a segment, not by the repository."""
    from .update import build

    return build(
        repo,
        rev,
        index_dir,
        jobs,
        progress,
        vectors_dir,
        incremental,
        backend,
        scheduler,
        segment_chunks,
    )


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
