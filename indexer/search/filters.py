"""Search filters: `--path GLOB` (repeatable, `!GLOB` excludes), `--lang`, `--kind`.

A glob without `/` matches the file name or any directory name (`*.py`, `tests`); a glob with
`/` matches the whole repository-relative path, and also everything under a directory it
matches (`src/flask`, `src/*/views.py`). `*` in a full-path glob crosses `/` (fnmatch).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import numpy as np

from ..errors import IndexerError

KINDS = ("function", "method", "class", "module", "section", "text")


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Iterable) or not all(isinstance(v, str) and v for v in value):
        raise IndexerError(f"{what} must be a string or a list of non-empty strings")
    return tuple(value)


def path_matches(path: str, glob: str) -> bool:
    glob = glob.strip().strip("/") if glob.strip() != "/" else "*"
    if "/" not in glob:
        return any(fnmatchcase(part, glob) for part in path.split("/"))
    return fnmatchcase(path, glob) or fnmatchcase(path, glob + "/*")


@dataclass(frozen=True)
class SearchFilter:
    paths: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()

    @classmethod
    def of(cls, paths: Any = None, languages: Any = None, kinds: Any = None) -> SearchFilter:
        """Checked filter values (a clear IndexerError for anything else)."""
        kind_list = tuple(k.lower() for k in _strings(kinds, "kinds"))
        unknown = sorted(set(kind_list) - set(KINDS))
        if unknown:
            raise IndexerError(f"unknown kind {unknown[0]!r}; use one of {', '.join(KINDS)}")
        return cls(
            _strings(paths, "paths"),
            tuple(lang.lower() for lang in _strings(languages, "languages")),
            kind_list,
        )

    def __bool__(self) -> bool:
        return bool(self.paths or self.languages or self.kinds)

    def keeps_path(self, path: str) -> bool:
        include = [g for g in self.paths if not g.startswith("!")]
        exclude = [g[1:] for g in self.paths if g.startswith("!")]
        if include and not any(path_matches(path, g) for g in include):
            return False
        return not any(path_matches(path, g) for g in exclude)

    def allowed_rows(
        self, files: Sequence[dict[str, Any]], chunk_file: np.ndarray, kinds: Sequence[str]
    ) -> np.ndarray:
        """A boolean mask over chunk rows: which chunks the filter keeps."""
        keep_file = np.fromiter(
            (
                self.keeps_path(f["path"])
                and (not self.languages or str(f.get("language", "")).lower() in self.languages)
                for f in files
            ),
            dtype=bool,
            count=len(files),
        )
        mask = keep_file[chunk_file] if len(files) else np.zeros(len(chunk_file), dtype=bool)
        if self.kinds:
            wanted = set(self.kinds)
            mask &= np.fromiter((k in wanted for k in kinds), dtype=bool, count=len(kinds))
        return mask
