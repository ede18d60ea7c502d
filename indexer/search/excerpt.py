"""Exact lines of an indexed file (CLI `show PATH:START-END`, MCP `retrieve`): read from git at
the indexed commit, or from disk for a file the working-tree overlay serves
(indexer/index/overlay.py); only for indexed files, with secret values redacted as in the index
(indexer/source/secrets.py)."""

from __future__ import annotations

import posixpath
from typing import Any

from ..errors import IndexerError

MAX_LINES = 400


def clean_path(path: str) -> str:
    """A repository-relative path, or an IndexerError for one that leaves the repository."""
    clean = posixpath.normpath(path.strip().replace("\\", "/"))
    if path.strip().startswith("/") or clean == ".." or clean.startswith("../"):
        raise IndexerError(f"{path!r} is outside the repository; give a path relative to it")
    return clean


def file_lines(
    index: Any, path: str, start_line: int, end_line: int | None, limit: int | None = None
) -> list[str]:
    """Lines start_line..end_line (1-based, inclusive; end clipped to the file's length); in a
    notebook, `path#cell=N` counts the lines of cell N (indexer/source/notebook.py)."""
    path, _, cell = path.strip().partition("#cell=")
    if cell and not cell.isdigit():
        raise IndexerError(f"not a notebook cell: #cell={cell} (expected #cell=N)")
    clean = clean_path(path)
    record = next((f for f in index.files if f["path"] == clean), None)
    if record is None:
        raise IndexerError(f"{clean!r} is not an indexed file of this repository")
    end = start_line + (limit or MAX_LINES) - 1 if end_line is None else end_line
    if start_line < 1 or end < start_line:
        raise IndexerError("start_line must be >= 1 and end_line >= start_line")
    if limit is not None and end - start_line + 1 > limit:
        raise IndexerError(
            f"at most {limit} lines per request; use `search` or `show` for the part you need"
        )
    data = file_data(index, record)
    if cell:
        from ..source.notebook import cell_source

        source = cell_source(data, int(cell))
        if source is None:
            raise IndexerError(f"{clean} has no code or markdown cell {cell}")
        clean, data = f"{clean}#cell={cell}", source.encode("utf-8")
    lines = data.decode("utf-8", "replace").splitlines()
    if start_line > len(lines):
        raise IndexerError(f"{clean} has only {len(lines)} lines")
    return lines[start_line - 1 : min(end, len(lines))]


def file_data(index: Any, record: dict[str, Any]) -> bytes:
    """An indexed file's bytes as the index holds them (secret values redacted): on disk for an
    uncommitted file of the working tree, else the blob of the indexed commit."""
    from ..source.secrets import redact

    path = record["path"]
    if path in index._worktree_paths:
        try:
            raw = (index.worktree.root / path).read_bytes()
        except OSError as exc:
            raise IndexerError(f"{path} changed on disk: it cannot be read ({exc})") from None
    else:
        import pygit2

        repo: Any = pygit2.Repository(index.manifest["repo_root"])
        raw = bytes(repo[record["blob"]].data)
    return redact(raw)[0]
