"""How a query names a file: by its path's words (stemmed, abbreviated, compounded), by a
written path, by a dotted module name, or by the file's exact stem. The reranker
(indexer/search/rerank.py) multiplies a candidate by how well its file is named."""

from __future__ import annotations

import functools
import itertools
from typing import TYPE_CHECKING

from ..index.tokens import path_terms, stem
from .query import Query

if TYPE_CHECKING:
    from .ranked_view import RankedView

# (stem words, their union, directory words, their union): objects shared between files.
Forms = tuple[frozenset[str], ...]
PathForms = tuple[Forms, frozenset[str], Forms, frozenset[str]]

# A file named like these is named by its directory: `defaults/index.js`, `pkg/__init__.py`.
_GENERIC_STEMS = frozenset({"index", "__init__", "mod", "init"})
# PathWords.may_name tests at most this many strings (a report names more: no test, the forms)
MAX_PIECES = 64


def path_match(index: RankedView, file: int, q: Query, named: PathWords | None = None) -> float:
    """How well the query's terms name the file: its stem fully, its directories half.
    A word matches as written or stemmed (`defaults/` is named by "default"), and two adjacent
    query words name a compound stem (`testclient.py` by "test client")."""
    return (named or PathWords(q)).score(file_forms(index, file))


def file_forms(index: RankedView, file: int) -> PathForms:
    """The file's stem and directory word forms, made once per index and file."""
    cache = index.path_term_cache
    cached = cache[file]
    if cached is None:
        parts = index.space.paths[file].rsplit("/", 1)
        name = parts[-1].rsplit(".", 1)[0]
        directory = parts[0] if len(parts) == 2 else ""
        if name.lower() in _GENERIC_STEMS and directory:
            directory, _, name = directory.rpartition("/")
        cached = cache[file] = (*_path_forms(name), *_path_forms(directory))
    return cached


class PathWords:
    """Which path words one query names: as written, stemmed, or as an abbreviation (`config`
    by "configuration", `util` by "utility": a path word of 4+ letters that starts a query
    word of 6+ letters). Every form that counts is in `hits`, so a word is one set test."""

    def __init__(self, q: Query) -> None:
        hits = set(q.path_match_terms)
        for word in q.path_match_prefixes:  # words a path word may abbreviate
            hits.update(word[:j] for j in range(4, len(word) + 1))
        self.hits = frozenset(hits)
        # Candidates share directories (and stems): each part's share is counted once a query.
        self._shares: dict[Forms, float] = {}
        # Every path word is a piece of the lowercased path, and its stem a prefix of it, or
        # for `...ies` its start + "y": the strings a path must hold to be named at all.
        pieces = self.hits | {h[:-1] + "ies" for h in self.hits if h.endswith("y")}
        self._pieces = tuple(pieces) if len(pieces) <= MAX_PIECES else None

    def may_name(self, path: str) -> bool:
        """False only for a path none of whose words the query names (without making its
        forms: a new process makes them for hundreds of candidates' files, ~10-20 us each)."""
        if self._pieces is None:
            return True
        lower = path.lower()
        return any(piece in lower for piece in self._pieces)

    def count(self, words: Forms) -> int:
        """How many of a path's words the query names."""
        return len(words) - sum(map(self.hits.isdisjoint, words))  # (map: no Python loop)

    def score(self, forms: PathForms) -> float:
        """path_match of a file with these word forms."""
        stem_words, stem_forms, dir_words, dir_forms = forms
        hits = self.hits
        stem = not stem_forms.isdisjoint(hits)
        if not stem and dir_forms.isdisjoint(hits):
            return 0.0  # most candidates' paths: no word named
        score = self._share(stem_words) if stem else 0.0
        if not dir_forms.isdisjoint(hits):
            score += 0.5 * self._share(dir_words)
        return min(score, 1.5)

    def _share(self, words: Forms) -> float:
        """The fraction of a path part's (non-empty) words the query names, once a query."""
        share = self._shares.get(words)
        if share is None:
            share = self._shares[words] = self.count(words) / len(words)
        return share


@functools.lru_cache(maxsize=16384)
def _word_form(term: str) -> frozenset[str]:
    """A path term as written and stemmed: one object for every path that has the term."""
    return frozenset((term, stem(term)))


@functools.lru_cache(maxsize=16384)
def _path_forms(part: str) -> tuple[Forms, frozenset[str]]:
    """A file stem's or a directory's word forms and their union, shared by every file with
    that stem or in that directory (one copy per file was 7 MB at 163k chunks); a one-word
    part's union is its word's forms."""
    words = tuple(_word_form(t) for t in dict.fromkeys(path_terms(part))) if part else ()
    return words, words[0] if len(words) == 1 else frozenset().union(*words)


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
    parts = path.lower().rsplit(".", 1)[0].split("/")
    if parts[-1] in _GENERIC_STEMS:
        parts.pop()
    if len(parts) < 2:
        return False
    tail = (parts[-2], parts[-1])
    return any(tail in itertools.pairwise(name) for name in dotted)


def named_exactly(path: str, names: set[str]) -> bool:
    """`SqlMapper.cs` is named exactly `sqlmapper`; `SqlMapper.Async.cs` is not (partial
    classes, helpers split by concern)."""
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower() in names
