"""Per-file graph facts stored with each segment, and the code graph built from the live ones.

Glue until indexer/graph.py stores and resolves facts itself (issue 8 point 2): a segment keeps
`FileGraph.to_dict()` of each of its files (extracted once, when the file enters a segment);
`related` resolves names over the live files' facts when it first needs the graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..source.chunks import Chunk
    from .graph import CodeGraph
    from .reader import RowSpace


def file_language(path: str, chunks: Sequence[Chunk]) -> str:
    """The language graph extraction parses a file as (a notebook's first chunk may be
    markdown: its code cells' language is the file's)."""
    from ..source.languages import SPECS, detect_language

    languages = [c.language for c in chunks if c.language in SPECS] or [c.language for c in chunks]
    return languages[0] if languages else detect_language(path) or ""


def extract_facts(
    repo_path: str, files: Sequence[tuple[str, str, Sequence[Chunk]]], jobs: int
) -> dict[str, dict[str, Any]]:
    """(path, blob, chunks) of each file -> path -> FileGraph.to_dict(), parsed from git."""
    from .graph import _extract_batch, _symbols_from_chunks

    items = [
        (path, file_language(path, chunks), blob, _symbols_from_chunks(chunks))
        for path, blob, chunks in files
    ]
    batches = [items[i : i + 32] for i in range(0, len(items), 32)]
    results: list[Any] = []
    if jobs <= 1 or len(items) < 200:
        for batch in batches:
            results.extend(_extract_batch(repo_path, batch))
    else:
        from joblib import delayed

        from .workers import parallel

        for part in parallel(jobs, batch_size=1)(
            delayed(_extract_batch)(repo_path, b) for b in batches
        ):
            results.extend(part)
    return {fg.path: fg.to_dict() for fg in results}


def graph_of(space: RowSpace) -> CodeGraph:
    """The resolved code graph of every live file."""
    from .graph import CodeGraph, FileGraph

    facts = space.graph_facts()
    return CodeGraph.from_files({p: FileGraph.from_dict(p, d) for p, d in sorted(facts.items())})
