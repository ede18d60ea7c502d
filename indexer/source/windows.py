"""Chunks cut by lines: bounded, overlapping windows of text files and of module-level code,
and markdown by section. The code chunker (indexer/source/chunker.py) builds on these for
everything outside a definition."""

from __future__ import annotations

from typing import Any

import numpy as np

MODULE_BLOCK_LINES = 60  # module-level code and text windows
WINDOW_OVERLAP = 8


class LineChunker:
    """One file's lines and the chunk records made of them so far: windows of text, markdown
    sections, runs of module-level code. Path-independent except for `stem` (module chunks'
    name), so results can be reused for the same blob under another path (index/blobcache.py)."""

    def __init__(self, stem: str, data: bytes) -> None:
        self.stem = stem
        self.data = data
        self.lines = data.decode("utf-8", errors="replace").splitlines()
        self.line_starts = _line_starts(data)
        self.records: list[dict[str, Any]] = []

    # -- output ----------------------------------------------------------------------------------
    def emit(
        self,
        kind: str,
        symbol: str,
        qualname: str,
        start_line: int,
        end_line: int,
        text: str,
        signature: str = "",
        docstring: str = "",
    ) -> None:
        if not text.strip():
            return
        start_byte = self.line_starts[min(start_line, len(self.line_starts) - 1)]
        end_byte = self.line_starts[min(end_line + 1, len(self.line_starts) - 1)]
        self.records.append(
            {
                "kind": kind,
                "symbol": symbol,
                "qualname": qualname,
                "signature": signature,
                "docstring": docstring,
                "start_line": start_line + 1,
                "end_line": end_line + 1,
                "start_byte": start_byte,
                "end_byte": end_byte,
                "text": text,
            }
        )

    def line_text(self, start: int, end: int) -> str:
        return "\n".join(self.lines[start : end + 1])

    # -- windows for text and module-level code ------------------------------------------------
    def windows(
        self, kind: str, symbol: str, qualname: str, start: int, end: int, size: int
    ) -> None:
        if end - start + 1 <= size:
            self.emit(kind, symbol, qualname, start, end, self.line_text(start, end))
            return
        step = max(1, size - WINDOW_OVERLAP)
        pos = start
        while pos <= end:
            stop = min(end, pos + size - 1)
            self.emit(kind, symbol, qualname, pos, stop, self.line_text(pos, stop))
            if stop == end:
                break
            pos += step

    def text_file(self, language: str) -> None:
        if language == "markdown":
            self.markdown()
        else:
            self.windows("text", self.stem, "", 0, len(self.lines) - 1, MODULE_BLOCK_LINES)

    def markdown(self) -> None:
        sections: list[tuple[int, str]] = [(0, self.stem)]
        fenced = False
        for number, line in enumerate(self.lines):
            if line.lstrip().startswith(("```", "~~~")):
                fenced = not fenced
            elif not fenced and line.startswith("#"):
                heading = line.lstrip("#").strip()
                if number == 0:
                    sections[0] = (0, heading)
                else:
                    sections.append((number, heading))
        for i, (start, heading) in enumerate(sections):
            end = sections[i + 1][0] - 1 if i + 1 < len(sections) else len(self.lines) - 1
            if end >= start:
                self.windows("section", heading, heading, start, end, MODULE_BLOCK_LINES)

    def module_code(self, covered: list[bool]) -> None:
        """Imports, constants and top-level statements: runs of lines outside definitions."""
        block_start: int | None = None
        for number in range(len(self.lines) + 1):
            inside = number < len(self.lines) and not covered[number]
            if inside and block_start is None:
                block_start = number
            elif not inside and block_start is not None:
                start, end = block_start, number - 1
                while start <= end and not self.lines[start].strip():
                    start += 1
                while end >= start and not self.lines[end].strip():
                    end -= 1
                if start <= end:
                    self.windows("module", self.stem, "<module>", start, end, MODULE_BLOCK_LINES)
                block_start = None


def _line_starts(data: bytes) -> list[int]:
    """The byte offset of every line, then len(data): one vectorised pass, not a find per line
    (a build meets millions of lines)."""
    newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    return [0, *(newlines + 1).tolist(), len(data)]
