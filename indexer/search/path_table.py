"""How well a query's words name many files at once: each file's path words as numbers.

A file's stem and directory are path parts (`file_parts`); a part's words are the distinct
terms of `path_terms`, and a word counts as named when the query's forms (`PathWords.hits`)
hold it as written or stemmed. The table gives every form an id, every part the ids of its
words, and every file the ids of its two parts, filled in as files are first ranked. A query
then marks the forms it holds and scores its candidates' files with a few array operations
(`PathTable.scores`, ~50 us for 300 files), where a Python step per file cost a report's path
match 0.56 ms on sympy and 0.85 ms at 163k chunks (a short question's, with few files named,
about what the arrays cost; docs/benchmarks.md, twentieth pass). The scores are
`path_names.path_match`'s, bit for bit: the same counts divided the same way. Ids instead of
shared word-form objects per file also hold less: search RSS at 163k chunks 98.8 -> 95.1 MB.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..index.tokens import path_terms, stem

if TYPE_CHECKING:
    from .path_names import PathWords

# A file named like these is named by its directory: `defaults/index.js`, `pkg/__init__.py`.
GENERIC_STEMS = frozenset({"index", "__init__", "mod", "init"})
STEM_WEIGHT, DIRECTORY_WEIGHT, MOST = 1.0, 0.5, 1.5


def file_parts(path: str) -> tuple[str, str]:
    """(stem, directory) of a path as a query names it: the file's name without its extension
    and the directories above it, or for a generic name (`index.js`) its directory's last part
    and the directories above that."""
    parts = path.rsplit("/", 1)
    name = parts[-1].rsplit(".", 1)[0]
    directory = parts[0] if len(parts) == 2 else ""
    if name.lower() in GENERIC_STEMS and directory:
        directory, _, name = directory.rpartition("/")
    return name, directory


class _Ints:
    """A growing int32 array (amortised doubling): the table's ids, appended to as files come."""

    def __init__(self) -> None:
        self._data = np.zeros(256, dtype=np.int32)
        self.size = 0

    def extend(self, values: Sequence[int]) -> None:
        end = self.size + len(values)
        if end > len(self._data):
            grown = np.zeros(max(end, 2 * len(self._data)), dtype=np.int32)
            grown[: self.size] = self._data[: self.size]
            self._data = grown
        self._data[self.size : end] = values
        self.size = end

    @property
    def array(self) -> np.ndarray:
        return self._data[: self.size]


class PathTable:
    """Per index: the path parts of the files ranked so far, as ids (see the module's doc)."""

    def __init__(self, paths: Sequence[str]) -> None:
        self._paths = paths
        self.stem = np.full(len(paths), -1, dtype=np.int32)  # part id of each file's stem
        self.directory = np.full(len(paths), -1, dtype=np.int32)  # and of its directory
        self._parts: dict[str, int] = {}
        self._part_start = _Ints()  # of each part's words, and the end of the last part's
        self._part_start.extend([0])
        self._words = _Ints()  # each part's words: the form id of each as written
        self._word_stems = _Ints()  # and of its stem
        self._forms: dict[str, int] = {}
        # Threads searching one index at once: one fills the table or reads it at a time.
        self._lock = threading.Lock()

    def _form(self, text: str) -> int:
        known = self._forms.get(text)
        if known is None:
            known = self._forms[text] = len(self._forms)
        return known

    def _part(self, text: str) -> int:
        known = self._parts.get(text)
        if known is None:
            terms = list(dict.fromkeys(path_terms(text))) if text else []
            self._words.extend([self._form(t) for t in terms])
            self._word_stems.extend([self._form(stem(t)) for t in terms])
            known = self._parts[text] = len(self._parts)
            self._part_start.extend([self._words.size])
        return known

    def _fill(self, files: Iterable[int]) -> None:
        """Give the files' stems and directories their part ids (once per file)."""
        for f in files:
            if self.stem[f] < 0:
                name, directory = file_parts(self._paths[f])
                self.stem[f], self.directory[f] = self._part(name), self._part(directory)

    def scores(self, named: PathWords, files: np.ndarray) -> np.ndarray:
        """path_match of each file (`path_names.path_match`): the share of its stem's words the
        query names, plus half the share of its directory's, at most 1.5; 0 where none."""
        files = np.asarray(files, dtype=np.int64)
        with self._lock:
            self._fill(files[self.stem[files] < 0].tolist())
            return self._scores(named, files)

    def _scores(self, named: PathWords, files: np.ndarray) -> np.ndarray:
        forms = self._forms
        form_hit = np.zeros(len(forms), dtype=bool)
        form_hit[[forms[h] for h in named.hits if h in forms]] = True
        # The words of each file's stem, then of each file's directory, end to end.
        parts = np.concatenate([self.stem[files], self.directory[files]])
        starts = self._part_start.array
        begin = starts[parts]
        length = starts[parts + 1] - begin
        bounds = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum(length, out=bounds[1:])
        at = np.arange(bounds[-1]) + np.repeat(begin - bounds[:-1], length)
        hit = form_hit[self._words.array[at]] | form_hit[self._word_stems.array[at]]
        named_before = np.zeros(len(at) + 1, dtype=np.int64)
        np.cumsum(hit, out=named_before[1:])
        count = named_before[bounds[1:]] - named_before[bounds[:-1]]
        share = np.divide(count, length, out=np.zeros(len(parts)), where=count > 0)
        n = len(files)
        # (x + 0.0 and 0.0 + x are x: the sum path_match makes, whichever part is named)
        scores: np.ndarray = np.minimum(
            STEM_WEIGHT * share[:n] + DIRECTORY_WEIGHT * share[n:], MOST
        )
        return scores
