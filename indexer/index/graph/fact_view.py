"""The live files of several segments' graph facts as one repository (FactsView), and the same
questions answered from facts held in memory (FilesSource): what resolution reads."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

from .facts import KIND_NAMES, FactsSegment, MemoryFacts, read_facts
from .model import FileGraph, short_name
from .name_keys import name_key


class FactsView:
    """The live files of several segments as one repository: what resolution reads."""

    def __init__(
        self, segments: Sequence[tuple[Path | Iterable[FileGraph], Collection[str]]]
    ) -> None:
        """`segments`: (directory, or the facts of an in-memory segment such as the working-tree
        overlay; paths it no longer serves), older first."""
        self.segments: list[FactsSegment | MemoryFacts] = [
            read_facts(d, deleted) if isinstance(d, Path) else MemoryFacts(d, deleted)
            for d, deleted in segments
        ]
        self.where: dict[str, tuple[int, int]] = {}
        for s, seg in enumerate(self.segments):
            for row, path in enumerate(seg.paths):
                if seg.live[row]:
                    self.where[path] = (s, row)
        self._paths = sorted(self.where)
        self._files: dict[str, FileGraph] = {}
        self._heads: dict[str, FileGraph] = {}

    @property
    def paths(self) -> Sequence[str]:
        return self._paths

    def language(self, path: str) -> str:
        s, row = self.where[path]
        return self.segments[s].languages[row]

    def file(self, path: str) -> FileGraph:
        fg = self._files.get(path)
        if fg is None:
            s, row = self.where[path]
            fg = self._files[path] = self.segments[s].file(row)
        return fg

    def calls_named(self, path: str, names: Collection[str]) -> list[list[Any]]:
        """The file's call sites of any of `names`, in order."""
        if path in self._files:
            return [c for c in self._files[path].calls if c[1] in names]
        s, row = self.where[path]
        return self.segments[s].calls_named(row, names)

    def head(self, path: str) -> FileGraph:
        """The file's facts but its call sites (all resolution reads)."""
        fg = self._files.get(path) or self._heads.get(path)
        if fg is None:
            s, row = self.where[path]
            fg = self._heads[path] = self.segments[s].file(row, calls=False)
        return fg

    def files(self) -> dict[str, FileGraph]:
        return {p: self.file(p) for p in self._paths}

    def lookup(self, tag: str, name: str) -> list[tuple[str, int]]:
        """(path, kind code) of the entries under a tagged name, in no particular order."""
        key = name_key(tag, name)
        return [(seg.paths[row], kind) for seg in self.segments for row, kind in seg.lookup(key)]

    def files_with(self, tag: str, names: Iterable[str]) -> list[str]:
        """Sorted paths of the live files with an entry under any of the tagged names."""
        return sorted({p for name in names for p, _ in self.lookup(tag, name)})

    def definitions(self, name: str) -> list[tuple[str, str]]:
        return [(p, KIND_NAMES.get(kind, "")) for p, kind in self.lookup("d", name)]


class FilesSource:
    """In-memory facts (a test, a standalone graph): the same questions FactsView answers."""

    def __init__(self, files: dict[str, FileGraph]) -> None:
        self._files = files
        self._paths = sorted(files)
        self._defs: dict[str, list[tuple[str, str]]] = {}
        for path in self._paths:
            for sym in files[path].symbols:
                self._defs.setdefault(short_name(sym[1]), []).append((path, sym[2]))

    @property
    def paths(self) -> Sequence[str]:
        return self._paths

    def language(self, path: str) -> str:
        return self._files[path].language

    def file(self, path: str) -> FileGraph:
        return self._files[path]

    def head(self, path: str) -> FileGraph:
        return self._files[path]

    def files(self) -> dict[str, FileGraph]:
        return {p: self._files[p] for p in self._paths}

    def definitions(self, name: str) -> list[tuple[str, str]]:
        return self._defs.get(name, [])
