"""How a query names a file: by its path's words (stemmed, abbreviated, compounded), by a
written path, by a dotted module name, or by the file's exact stem. The reranker
(indexer/search/rerank.py) multiplies a candidate by how well its file is named."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np

from .path_table import GENERIC_STEMS
from .query import Query

if TYPE_CHECKING:
    from .ranked_view import RankedView

# PathWords.may_name tests at most this many strings (a report names more: no test, the table)
MAX_PIECES = 64


def path_match(index: RankedView, file: int, q: Query, named: PathWords | None = None) -> float:
    """How well the query's terms name the file: its stem fully, its directories half.
    A word matches as written or stemmed (`defaults/` is named by "default"), and two adjacent
    query words name a compound stem (`testclient.py` by "test client"). The reranker scores
    its candidates' files at once (`index.path_table`, indexer/search/path_table.py)."""
    files = np.asarray([file], dtype=np.int64)
    return float(index.path_table.scores(named or PathWords(q), files)[0])


class PathWords:
    """Which path words one query names: as written, stemmed, or as an abbreviation (`config`
    by "configuration", `util` by "utility": a path word of 4+ letters that starts a query
    word of 6+ letters). Every form that counts is in `hits`, so a word is one set test."""

    def __init__(self, q: Query) -> None:
        hits = set(q.path_match_terms)
        for word in q.path_match_prefixes:  # words a path word may abbreviate
            hits.update(word[:j] for j in range(4, len(word) + 1))
        self.hits = frozenset(hits)
        # Every path word is a piece of the lowercased path, and its stem a prefix of it, or
        # for `...ies` its start + "y": the strings a path must hold to be named at all.
        self._pieces: tuple[str, ...] | None = None  # (more than MAX_PIECES: a report)
        if len(self.hits) <= MAX_PIECES:
            pieces = self.hits | {h[:-1] + "ies" for h in self.hits if h.endswith("y")}
            self._pieces = tuple(pieces) if len(pieces) <= MAX_PIECES else None

    def may_name(self, path: str) -> bool:
        """False only for a path none of whose words the query names, without its entry in the
        path table: a new process would make them for hundreds of candidates' files, ~10-20 us
        each."""
        if self._pieces is None:
            return True
        lower = path.lower()
        return any(piece in lower for piece in self._pieces)


def compound_key(path: str) -> str:
    """A file's stem as two query words spell it together: lowercased, no `_` or `-`."""
    name = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return name.lower().replace("_", "").replace("-", "")


def names_path(path: str, named: tuple[str, ...]) -> bool:
    """Whether a report names this file: a written path ends with the file's last two parts
    (or is its exact name when the name is distinctive, not `__init__.py`)."""
    parts = path.split("/")
    tail = "/".join(parts[-2:])
    for written in named:
        written = written.lstrip("./")
        if written in (path, tail) or written.endswith("/" + tail):
            return True
        if "/" not in written and written == parts[-1] and not written.startswith("__"):
            return True
    return False


def names_module(path: str, dotted: tuple[tuple[str, ...], ...]) -> bool:
    """Whether a dotted name spells this file's module: `std.fs.cwd` names `lib/std/fs.zig`,
    `pkg.core.Basic` names `pkg/core.py` and `pkg/core/__init__.py` (the last directory and the
    file's stem, adjacent in the name)."""
    parts = _module_parts(path)
    if len(parts) < 2:
        return False
    tail = (parts[-2], parts[-1])
    return any(tail in itertools.pairwise(name) for name in dotted)


def stem_key(path: str) -> str:
    """A file's stem, lowercased: what a written path, an exact name and a symbol must spell
    for `names_path` and `named_exactly` to hold (the reranker hashes it per file)."""
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower()


def module_key(path: str) -> str:
    """The last part of a file's module (its stem, or its directory for `__init__.py`): a word
    of the dotted name whenever `names_module` holds; "" when no dotted name can name it."""
    parts = _module_parts(path)
    return parts[-1] if len(parts) >= 2 else ""


def _module_parts(path: str) -> list[str]:
    """A file's module name as parts: its path lowercased, without its extension or a
    generic stem (`__init__`, `mod`)."""
    parts = path.lower().rsplit(".", 1)[0].split("/")
    if parts[-1] in GENERIC_STEMS:
        parts.pop()
    return parts


def written_stems(named: tuple[str, ...]) -> set[str]:
    """The `stem_key` a file must have for `names_path(path, named)` to hold: each written
    path's last part, lowercased, without its extension."""
    return {stem_key(written.lstrip("./")) for written in named}


def named_exactly(path: str, names: set[str]) -> bool:
    """`SqlMapper.cs` is named exactly `sqlmapper`; `SqlMapper.Async.cs` is not (partial
    classes, helpers split by concern)."""
    return stem_key(path) in names
