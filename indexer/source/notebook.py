"""Jupyter notebooks as sources: cells, not JSON windows.

The notebook JSON is parsed with the standard `json` module (nbformat would add a runtime
dependency for what is a plain JSON layout). Each code cell is source in the kernel's language,
chunked like a small module (definitions as functions/classes, the rest as `cell` chunks); each
markdown cell is split into sections by heading; raw cells, outputs, attachments and metadata are
dropped. A chunk carries its cell (`cell`, counted from 1 in file order, markdown cells included)
and lines relative to that cell, so its location is `path#cell=7:3-9`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .languages import is_code

INVALID_NOTEBOOK = "invalid_notebook"  # fallback reason: indexed as text windows instead

# Kernel language names (kernelspec.language / language_info.name) that differ from ours.
_KERNEL_LANGUAGES = {
    "python3": "python",
    "python2": "python",
    "ipython": "python",
    "ipython3": "python",
    "c++": "cpp",
    "cpp17": "cpp",
    "c#": "csharp",
    "js": "javascript",
    "node": "javascript",
    "ts": "typescript",
    "sh": "bash",
    "shell": "bash",
}

_CELL_LOCATION = re.compile(
    r"(?P<path>.+?)#cell=(?P<cell>\d+)(?::(?P<start>\d+)(?:-(?P<end>\d+))?)?"
)


@dataclass(frozen=True)
class Cell:
    number: int  # 1-based position among all cells
    kind: str  # code | markdown
    source: str


@dataclass(frozen=True)
class Notebook:
    language: str  # the kernel's language, lowercased ("python", "r", "julia")
    cells: list[Cell]


def is_notebook(path: str) -> bool:
    return path.lower().endswith(".ipynb")


def kernel_language(metadata: dict[str, Any]) -> str:
    """The language of a notebook's kernel in our names (`python3` -> `python`)."""
    names = []
    kernelspec = metadata.get("kernelspec")
    if isinstance(kernelspec, dict):
        names.append(kernelspec.get("language"))
    info = metadata.get("language_info")
    if isinstance(info, dict):
        names.append(info.get("name"))
    for name in names:
        if isinstance(name, str) and name.strip():
            lowered = name.strip().lower()
            return _KERNEL_LANGUAGES.get(lowered, lowered)
    return "python"  # nbformat's default kernel


def parse(data: bytes) -> Notebook | None:
    """The notebook's code and markdown cells, or None if `data` is not a notebook."""
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(raw, dict):
        return None
    raw_cells = raw.get("cells")
    worksheets = raw.get("worksheets")
    if raw_cells is None and isinstance(worksheets, list):  # nbformat 3
        raw_cells = [c for w in worksheets if isinstance(w, dict) for c in w.get("cells", [])]
    if not isinstance(raw_cells, list):
        return None
    metadata = raw.get("metadata")
    language = kernel_language(metadata if isinstance(metadata, dict) else {})
    cells = []
    for number, cell in enumerate(raw_cells, start=1):
        if not isinstance(cell, dict):
            return None
        kind = cell.get("cell_type")
        source = cell.get("input" if "input" in cell else "source", "")  # v3 code: "input"
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):
            return None
        if kind == "heading":  # nbformat 3 headings are markdown headings
            level = cell.get("level")
            depth = level if isinstance(level, int) and 1 <= level <= 6 else 1
            kind, source = "markdown", "#" * depth + " " + source
        if kind in ("code", "markdown"):
            cells.append(Cell(number, kind, source))
    return Notebook(language, cells)


ChunkSource = Callable[[str, str, bytes], list[dict[str, Any]]]  # chunker.chunk_records


def notebook_records(
    stem: str, data: bytes, chunk_records: ChunkSource
) -> list[dict[str, Any]] | None:
    """Path-independent chunk records of a notebook (each cell cut by `chunk_records`), or
    None when it does not parse (the caller falls back to text windows and counts the file)."""
    notebook = parse(data)
    if notebook is None:
        return None
    # A kernel language without a tree-sitter grammar here is cut into text windows.
    code_as = notebook.language if is_code(notebook.language) else "text"
    records: list[dict[str, Any]] = []
    for cell in notebook.cells:
        language = notebook.language if cell.kind == "code" else "markdown"
        cut_as = code_as if cell.kind == "code" else "markdown"
        for record in chunk_records(stem, cut_as, cell.source.encode("utf-8")):
            if cell.kind == "code" and record["kind"] in ("module", "text"):
                record.update(kind="cell", qualname=f"<cell {cell.number}>")
            record.update(cell=cell.number, language=language)
            records.append(record)
    return records


def fallback_reason(language: str, records: list[dict[str, Any]]) -> str | None:
    """Why a file was indexed as text windows instead of its own format, if it was."""
    if language == "notebook" and records and "cell" not in records[0]:
        return INVALID_NOTEBOOK
    return None


def script(data: bytes, symbols: list[list[Any]]) -> tuple[bytes, list[list[Any]]]:
    """The code cells joined into one script for the code graph, and `symbols` (graph rows
    `[id, qualname, kind, start, end, ids, cell]` in cell lines) moved to script lines."""
    notebook = parse(data)
    if notebook is None:
        return b"", []
    parts: list[str] = []
    offsets: dict[int, int] = {}
    line = 0
    for cell in notebook.cells:
        if cell.kind != "code":
            continue
        offsets[cell.number] = line
        text = cell.source if cell.source.endswith("\n") else cell.source + "\n"
        parts.append(text)
        line += text.count("\n")
    moved = []
    for sym in symbols:
        shift = offsets.get(sym[6], 0) if len(sym) > 6 else 0
        moved.append([*sym[:3], sym[3] + shift, sym[4] + shift, *sym[5:]])
    return "".join(parts).encode("utf-8"), moved


def sources_text(data: bytes) -> str:
    """Every cell's source, in order: the least a reader of the whole notebook reads."""
    notebook = parse(data)
    if notebook is None:
        return data.decode("utf-8", errors="replace")
    return "\n\n".join(cell.source for cell in notebook.cells)


def cell_source(data: bytes, number: int) -> str | None:
    """The source of cell `number` (1-based), for reading a cell's lines back."""
    notebook = parse(data)
    if notebook is None:
        return None
    return next((c.source for c in notebook.cells if c.number == number), None)


def split_location(ref: str) -> tuple[str, int, int | None, int | None] | None:
    """`path#cell=7` or `path#cell=7:3-9` -> (path, cell, start, end); None otherwise."""
    match = _CELL_LOCATION.fullmatch(ref.strip())
    if match is None:
        return None
    start = int(match["start"]) if match["start"] else None
    end = int(match["end"]) if match["end"] else None
    return match["path"], int(match["cell"]), start, end


def location(path: str, cell: int | None, start_line: int, end_line: int | None = None) -> str:
    """`path:start-end` (or `path:start`), `path#cell=N:start-end` for a notebook cell's lines."""
    where = f"{path}#cell={cell}" if cell is not None else path
    return f"{where}:{start_line}" + (f"-{end_line}" if end_line is not None else "")
