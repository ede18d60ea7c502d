"""The build's graph step: extract the facts of the files a build (re)chunked and write them
into the snapshot being built; files kept from the base snapshot keep their facts as they are.
No name is resolved here: resolution happens when a question is asked (related.py)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from ...source.chunker import Chunk
from ...source.languages import SPECS, detect_language
from .extract import extract_file
from .facts import FACTS_META, copy_facts, write_facts
from .model import FileGraph


@cache
def _repo(path: str) -> Any:
    import pygit2

    return pygit2.Repository(path)


def _extract_batch(repo_path: str, batch: list[tuple[str, str, str, list[Chunk]]]) -> list[Any]:
    """Worker: read blobs from git and extract (parsing dominates the graph step)."""
    repo = _repo(repo_path)
    out = []
    for path, language, blob, chunks in batch:
        data = bytes(repo[blob].data) if language in SPECS else b""
        out.append(extract_file(path, language, data, chunks, blob=blob))
    return out


def file_language(path: str, chunks: Sequence[Chunk]) -> str:
    """A notebook's first chunk may be markdown: its code cells' language is the file's."""
    languages = [c.language for c in chunks if c.language in SPECS] or [c.language for c in chunks]
    return languages[0] if languages else detect_language(path) or ""


def extract_facts(
    repo_path: str,
    blob_of: dict[str, str],
    chunks: Sequence[Chunk],
    paths: Sequence[str],
    jobs: int | None = None,
) -> list[FileGraph]:
    """The facts of `paths` (blobs read from git, in `jobs` processes); `chunks` holds theirs."""
    by_path: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_path.setdefault(c.path, []).append(c)
    items = []
    for path in paths:  # every indexed file, even an empty __init__.py (a package)
        file_chunks = by_path.get(path, [])
        items.append((path, file_language(path, file_chunks), blob_of[path], file_chunks))
    jobs = jobs or min(os.cpu_count() or 1, 8)
    batches = [items[i : i + 32] for i in range(0, len(items), 32)]
    results: list[FileGraph] = []
    if jobs <= 1 or len(items) < 200:
        for batch in batches:
            results.extend(_extract_batch(repo_path, batch))
        return results
    from joblib import delayed

    from ..workers import parallel

    for part in parallel(jobs, batch_size=1)(
        delayed(_extract_batch)(repo_path, b) for b in batches
    ):
        results.extend(part)
    return results


def write_graph(
    directory: Path,
    repo_path: str,
    files: Sequence[str],
    blob_of: dict[str, str],
    chunks: Sequence[Chunk],
    jobs: int | None = None,
    base: Path | None = None,
    kept: Sequence[str] = (),
) -> None:
    """Write the facts of the indexed `files` into `directory`. With `base` (a previous
    snapshot that has facts), the `kept` files' facts are copied from it and only the other
    files are parsed; `chunks` must hold the chunks of those other files."""
    if base is not None and (base / FACTS_META).is_file():
        keep = set(kept)
        fresh = extract_facts(repo_path, blob_of, chunks, [p for p in files if p not in keep], jobs)
        copy_facts(base, directory, keep, fresh)
    else:
        write_facts(directory, extract_facts(repo_path, blob_of, chunks, files, jobs))
