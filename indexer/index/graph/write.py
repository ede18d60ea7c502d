"""The build's graph step: the facts of the files that enter a new segment, extracted from their
blobs (in worker processes for many files). No name is resolved here: resolution happens when a
question is asked (related.py)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from ...source.chunks import Chunk
from ...source.gitsource import reader_for
from ...source.languages import detect_language
from ...source.specs import SPECS
from .extract import extract_file
from .model import FileGraph


@cache
def _repo(path: str) -> Any:
    import pygit2

    return pygit2.Repository(path)


def _extract_batch(repo_path: str, batch: list[tuple[str, str, str, Sequence[Chunk]]]) -> list[Any]:
    """Worker: read blobs from git and extract (parsing dominates the graph step)."""
    repo = reader_for(repo_path) or _repo(repo_path)  # an update's `git cat-file` reader
    out = []
    for path, language, blob, chunks in batch:
        data = bytes(repo[blob].data) if language in SPECS else b""
        out.append(extract_file(path, language, data, chunks, blob=blob))
    return out


def file_language(path: str, chunks: Sequence[Chunk]) -> str:
    """The language extraction parses a file as (a notebook's first chunk may be markdown: its
    code cells' language is the file's)."""
    languages = [c.language for c in chunks if c.language in SPECS] or [c.language for c in chunks]
    return languages[0] if languages else detect_language(path) or ""


def extract_facts(
    repo_path: str, files: Sequence[tuple[str, str, Sequence[Chunk]]], jobs: int
) -> dict[str, dict[str, Any]]:
    """(path, blob, chunks) of each file -> path -> FileGraph.to_dict(), parsed from git."""
    items = [(path, file_language(path, chunks), blob, chunks) for path, blob, chunks in files]
    batches = [items[i : i + 32] for i in range(0, len(items), 32)]
    results: list[FileGraph] = []
    if jobs <= 1 or len(items) < 200:
        for batch in batches:
            results.extend(_extract_batch(repo_path, batch))
    else:
        from joblib import delayed

        from ..workers import parallel

        for part in parallel(jobs, batch_size=1)(
            delayed(_extract_batch)(repo_path, b) for b in batches
        ):
            results.extend(part)
    return {fg.path: fg.to_dict() for fg in results}
