"""The plain data of the code graph: one file's facts and the vocabulary of nodes and edges."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...source.chunks import Chunk

EDGE_TYPES = ("DEFINES", "IMPORTS", "CALLS", "INHERITS")
HOW = (
    "scope",
    "import",
    "self",
    "super",
    "class",
    "local",
    "package",
    "name",
    "resolved",
    "unresolved",
)
RESOLVED_LANGUAGES = frozenset({"python", "javascript", "typescript", "tsx", "go", "java"})
JS_LANGUAGES = frozenset({"javascript", "typescript", "tsx"})
SYMBOL_KINDS = frozenset({"function", "method", "class"})


@dataclass
class FileGraph:
    """One file's facts, independent of every other file. Lists of plain lists stay compact."""

    path: str
    language: str
    blob: str = ""  # the git blob it was extracted from
    package: str = ""  # Java package / Go package name
    default: str = ""  # JS/TS: the name of the `export default` definition
    # [node id (first chunk id), qualname, kind, start_line, end_line, [all chunk ids]], and in a
    # notebook the cell (lines count within it)
    symbols: list[list[Any]] = field(default_factory=list)
    # [spec as written (Python keeps its leading dots), imported name or "", bound alias or ""]
    imports: list[list[str]] = field(default_factory=list)
    # [caller qualname ("" = module level), called name, receiver, line]
    calls: list[list[Any]] = field(default_factory=list)
    # [class qualname, base as written]
    bases: list[list[str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "language": self.language,
            "blob": self.blob,
            "package": self.package,
            "default": self.default,
            "symbols": self.symbols,
            "imports": self.imports,
            "calls": self.calls,
            "bases": self.bases,
        }

    @classmethod
    def from_dict(cls, path: str, raw: dict[str, Any]) -> FileGraph:
        return cls(
            path,
            raw["language"],
            raw.get("blob", ""),
            raw.get("package", ""),
            raw.get("default", ""),
            raw["symbols"],
            raw["imports"],
            raw["calls"],
            raw["bases"],
        )


def symbols_from_chunks(chunks: Sequence[Chunk]) -> list[list[Any]]:
    """The file's definitions (symbol node = its first chunk id), merged by qualname."""
    by_name: dict[str, list[Any]] = {}
    for c in chunks:
        if c.kind not in SYMBOL_KINDS or not c.qualname:
            continue
        entry = by_name.get(c.qualname)
        if entry is None:
            cell = [c.cell] if c.cell is not None else []  # notebook: lines within that cell
            by_name[c.qualname] = [c.id, c.qualname, c.kind, c.start_line, c.end_line, [c.id]]
            by_name[c.qualname].extend(cell)
        elif c.cell is not None and entry[6:] != [c.cell]:
            entry[5].append(c.id)  # redefined in a later cell: the first definition stays
        else:
            entry[3] = min(entry[3], c.start_line)
            entry[4] = max(entry[4], c.end_line)
            entry[5].append(c.id)
    return list(by_name.values())


def short_name(qualname: str) -> str:
    return qualname.rsplit(".", 1)[-1]


def walk(
    node: str, depth: int, step: Callable[[str], Iterable[tuple[str, str]]]
) -> list[tuple[str, int, str]]:
    """(node, distance, how) reached breadth-first from `node` within `depth` hops, `step`
    giving each node's (neighbour, how) in edge order; unresolved names are not expanded."""
    seen = {node: 0}
    found: list[tuple[str, int, str]] = []
    queue = deque([node])
    while queue:
        current = queue.popleft()
        dist = seen[current]
        if dist >= depth:
            continue
        for other, how in step(current):
            if other in seen:
                continue
            seen[other] = dist + 1
            found.append((other, dist + 1, how))
            if not other.startswith(("name:", "module:")):
                queue.append(other)
    return found
