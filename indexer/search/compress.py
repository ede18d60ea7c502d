"""Compressed chunks: signature, docstring and the lines that matter, with elision markers.

A compressed function is its signature, the first sentence of its docstring and the few body
lines that mention the query's terms (else its return/raise lines); a class is its header,
docstring and member signatures. Every gap is marked `...L12-40` (file lines 12-40 elided) and
the block's first line is `## path:start-end`, so `indexer show path:start-end` fetches the rest.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..index.tokens import split_identifier
from ..source.chunker import Chunk
from ..source.notebook import location as notebook_location
from ..source.notebook import split_location
from .line_scoring import MAX_ANSWER_LINES, answer_lines, query_weights

MAX_KEPT_LINES = 1  # body lines kept by the unweighted scoring (see compress)
MAX_MEMBERS = 4  # member signatures kept for a class
MAX_MEMBER_CHARS = 60
MAX_LINE_CHARS = 100
MAX_SIGNATURE_CHARS = 100
MAX_DOC_CHARS = 60
MAX_NAME_CHARS = 60
_IMPORTANT = re.compile(r"^\s*(return|raise|throw|yield|panic\(|assert)\b")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def location(chunk: Chunk) -> str:
    """`path:start-end` (`path#cell=N:start-end` in a notebook): what `indexer show` (and the
    MCP `show` tool) accept besides the id."""
    return notebook_location(chunk.path, chunk.cell, chunk.start_line, chunk.end_line)


def reference(chunk: Chunk) -> str:
    """One line that names the chunk and how to fetch it (`indexer show path:start-end`)."""
    name = _clip(chunk.qualname or chunk.symbol, MAX_NAME_CHARS).replace(" ", "")
    return f"{location(chunk)} {name}"


def header(chunk: Chunk, named_below: bool = False) -> str:
    """`## path:start-end name`; the name is left out when the signature below shows it
    (a function or class outside any class). The location doubles as the chunk's handle:
    a 16-hex id would cost ~9 tokens per result."""
    if not named_below:
        return f"## {reference(chunk)}"
    return f"## {location(chunk)}"


_LOCATION = re.compile(r"(.+):(\d+)(?:-(\d+))?")


def parse_location(ref: str) -> tuple[str, int, int | None]:
    """(path, start, end or None) of `path:start-end` / `path:start`; IndexerError otherwise."""
    from ..errors import IndexerError

    match = _LOCATION.fullmatch(ref.strip())
    if match is None:
        raise IndexerError(f"not a chunk id or path:start-end location: {ref!r}")
    end = int(match.group(3)) if match.group(3) else None
    return match.group(1), int(match.group(2)), end


def row_at_location(index: Any, ref: str) -> int:
    """The row of the chunk at `path:start-end` (or `path:start`): the chunk starting there,
    else the smallest chunk containing that line. In a notebook, `path#cell=N:start-end` counts
    lines within cell N, and `path#cell=N` is the cell's first chunk."""
    from ..errors import IndexerError

    in_cell = split_location(ref)
    cell: int | None = None
    if in_cell is not None:
        path, cell, first, end = in_cell
        start = first if first is not None else 1
    else:
        path, start, end = parse_location(ref)
    whole_cell = in_cell is not None and in_cell[2] is None
    file_index = next((i for i, f in enumerate(index.files) if f["path"] == path), None)
    if file_index is None:
        raise IndexerError(f"{path!r} is not an indexed file of this repository")
    best: tuple[int, int] | None = None
    for row in np.nonzero(index._chunk_file == file_index)[0].tolist():
        c = index.chunk_at(int(row), with_text=False)
        if c.cell != cell:
            continue
        if c.start_line == start and (end is None or c.end_line == end):
            return int(row)
        if whole_cell and (best is None or c.start_line < best[0]):
            best = (c.start_line, int(row))  # the cell's first chunk
        elif not whole_cell and c.start_line <= start <= c.end_line:
            span = c.end_line - c.start_line
            if best is None or span < best[0]:
                best = (span, int(row))
    if best is None:
        raise IndexerError(f"no chunk at {ref} in the index")
    return best[1]


def full(chunk: Chunk) -> str:
    return f"{header(chunk)}\n{chunk.text}"


def query_terms(query: str) -> set[str]:
    """Lowercased identifier parts of a query: the unweighted scoring of `compress` (before
    indexer/search/line_scoring.py; kept for benchmarks)."""
    terms: set[str] = set()
    for word in _WORD.findall(query):
        if len(word) > 2:
            terms.add(word.lower())
            terms.update(p for p in split_identifier(word) if len(p) > 2)
    return terms


def _line_terms(line: str) -> set[str]:
    out: set[str] = set()
    for word in _WORD.findall(line):
        out.add(word.lower())
        out.update(split_identifier(word))
    return out


def _clip(line: str, limit: int = MAX_LINE_CHARS) -> str:
    return line if len(line) <= limit else line[: limit - 3].rstrip() + "..."


def _first_sentence(doc: str) -> str:
    first = doc.strip().split("\n\n", 1)[0].replace("\n", " ")
    match = re.match(r"(.+?[.!?])(\s|$)", first)
    return _clip(match.group(1) if match else first, MAX_DOC_CHARS)


def _header_lines(chunk: Chunk, lines: list[str]) -> tuple[int, int]:
    """(first, last) index of the definition's header lines inside the chunk text."""
    start = 0
    name = chunk.symbol
    for i, line in enumerate(lines[:40]):
        if name and name in line and not line.lstrip().startswith(("#", "//", "/*", "*", "@")):
            start = i
            break
    target = len("".join(chunk.signature.split()))
    seen = 0
    end = start
    for i in range(start, min(len(lines), start + 12)):
        seen += len("".join(lines[i].split()))
        end = i
        if seen >= target:
            break
    return start, end


def compress(
    chunk: Chunk,
    terms: Mapping[str, float] | set[str] | None = None,
    members: Sequence[str] = (),
    max_kept: int | None = None,
) -> str:
    """The compressed block of one chunk (first line: `## path:start-end name`). `terms` are
    weighted query terms (indexer/search/line_scoring.py); a plain set scores lines by counting them
    and keeps MAX_KEPT_LINES (the scoring before weights, kept for benchmarks)."""
    lines = chunk.text.splitlines()
    if not lines:
        return header(chunk)
    terms = terms or set()
    out: list[tuple[int, str]] = []  # (index in chunk text, line); -1 for synthetic lines
    if chunk.kind in ("function", "method", "class") and chunk.signature:
        first, last = _header_lines(chunk, lines)
        # The signature on one line (already whitespace-normalised by the chunker).
        out.append((first, _indent(lines[first]) + _clip(chunk.signature, MAX_SIGNATURE_CHARS)))
        expected_skip = set(range(first + 1, last + 1))
        indent = _indent(lines[first]) + "    "
        if chunk.docstring:
            out.append(
                (-1, indent + _doc_comment(chunk.language, _first_sentence(chunk.docstring)))
            )
        body_from = _after_docstring(lines, last + 1) if chunk.language == "python" else last + 1
    else:
        # The first line that says something (not a bare quote, brace or comment opener).
        first = next(
            (i for i, line in enumerate(lines) if line.strip().strip("\"'`/*#{}()[];-! ")),
            0,
        )
        out.append((first, _clip(lines[first])))
        expected_skip = set()
        indent = ""
        body_from = first + 1
    if chunk.kind == "class":
        kept_members = _pick(members, terms, MAX_MEMBERS)
        for sig in kept_members:
            out.append((-1, indent + _clip(sig, MAX_MEMBER_CHARS)))
        if len(members) > len(kept_members):
            out.append((-1, f"{indent}...+{len(members) - len(kept_members)} members"))
    else:
        if isinstance(terms, set):
            kept = _important_lines(lines, body_from, terms, max_kept or MAX_KEPT_LINES)
        else:
            limit = max_kept or MAX_ANSWER_LINES
            kept = answer_lines(lines, body_from, terms, chunk.symbol, max_lines=limit)
        for i in kept:
            out.append((i, _clip(lines[i])))
    named_below = (
        chunk.kind in ("function", "class")
        and "." not in chunk.qualname
        and bool(chunk.symbol)
        and chunk.symbol in out[0][1]
    )
    body = _with_markers(chunk, lines, out, expected_skip)
    return "\n".join([header(chunk, named_below), *body])


def _after_docstring(lines: list[str], start: int) -> int:
    """Index of the first body line after a Python docstring (shown as its first sentence)."""
    i = start
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines):
        return start
    stripped = lines[i].strip().lstrip("rRbBuU")
    quote = stripped[:3] if stripped[:3] in ('"""', "'''") else stripped[:1]
    if quote not in ('"""', "'''", '"', "'"):
        return start
    rest = stripped[len(quote) :]
    if quote in rest:
        return i + 1
    for j in range(i + 1, len(lines)):
        if quote in lines[j]:
            return j + 1
    return len(lines)


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _doc_comment(language: str, text: str) -> str:
    if language == "python":
        return f'"""{text}"""'
    if language in ("ruby", "bash", "yaml", "toml"):
        return f"# {text}"
    if language == "lua":
        return f"-- {text}"
    return f"// {text}"


def _pick(candidates: Sequence[str], terms: Iterable[str], limit: int) -> list[str]:
    """Up to `limit` items, those sharing terms with the query first, original order kept."""
    if len(candidates) <= limit:
        return list(candidates)
    wanted = set(terms) | {t for w in terms for t in split_identifier(w)}
    scored = sorted(
        range(len(candidates)),
        key=lambda i: (-len(_line_terms(candidates[i]) & wanted), i),
    )
    keep = sorted(scored[:limit])
    return [candidates[i] for i in keep]


def _important_lines(lines: list[str], start: int, terms: set[str], limit: int) -> list[int]:
    scores: list[tuple[float, int]] = []
    for i in range(start, len(lines)):
        line = lines[i]
        stripped = line.strip()
        if not stripped or stripped in ("...", "}", "{", ")", "end"):
            continue
        score = float(len(_line_terms(line) & terms))
        if score and _IMPORTANT.match(line):
            score += 0.5  # among lines naming the query's terms, outcomes first
        if score > 0:
            scores.append((-score, i))
    return sorted(i for _, i in sorted(scores)[:limit])


def _with_markers(
    chunk: Chunk, lines: list[str], out: Iterable[tuple[int, str]], header_rest: set[int]
) -> list[str]:
    """Insert `...Lx-y` (file line numbers) wherever chunk lines were left out; the rest
    of a multi-line signature (`header_rest`) is shown joined, not elided."""
    rendered: list[str] = []
    # Leading comments and decorators are not marked: the header's line range covers them
    # and the docstring line carries their content.
    expected = next((index for index, _ in out if index >= 0), 0)
    last_indent = ""
    for index, line in out:
        if index >= 0:
            while expected in header_rest:
                expected += 1
            if index > expected:
                rendered.append(_marker(chunk, expected, index - 1, _indent(line) or last_indent))
            expected = index + 1
            last_indent = _indent(line)
        rendered.append(line)
    if expected < len(lines):
        rendered.append(_marker(chunk, expected, len(lines) - 1, last_indent + "    "))
    return rendered


def _marker(chunk: Chunk, first: int, last: int, indent: str) -> str:
    # Chunk text line i is file line start_line + i (split chunks repeat their header: close).
    a = min(chunk.start_line + first, chunk.end_line)
    b = chunk.end_line if last >= len(chunk.text.splitlines()) - 1 else chunk.start_line + last
    b = max(a, min(b, chunk.end_line))
    span = f"L{a}" if a == b else f"L{a}-{b}"
    return f"{indent}...{span}"


def class_members(index: Any, chunk: Chunk) -> list[str]:
    """Signatures of a class chunk's direct members (chunks of the same file)."""
    row = index.row_of(chunk.id)
    file_rows = np.nonzero(index._chunk_file == index._chunk_file[row])[0]
    prefix = chunk.qualname + "."
    out: list[str] = []
    for r in file_rows.tolist():
        member = index.chunk_at(int(r), with_text=False)
        rest = member.qualname[len(prefix) :] if member.qualname.startswith(prefix) else ""
        if rest and "." not in rest and member.signature and member.signature not in out:
            out.append(member.signature)
    return out


def compress_results(index: Any, query: str, results: Sequence[Any]) -> None:
    """Replace each result's text with its compressed block, its confidence on the header
    line (in place)."""
    from .answers import with_confidence

    terms = query_weights(query, index.lexical)
    for r in results:
        chunk = index.show(r.id)
        members = class_members(index, chunk) if chunk.kind == "class" else []
        r.text = with_confidence(compress(chunk, terms, members), r.confidence)
