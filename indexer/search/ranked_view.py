"""A generation view with what the ranking keeps per index: exact definitions by name, the
project's own names, and per-file values the reranker fills in as files are ranked (their
path words, path-class fixes, compound-name keys); `Index` (indexer/api.py) is one."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from ..index.tokens import path_terms
from ..index.view import GenerationView

if TYPE_CHECKING:
    from .arrays import FileValues
    from .definitions import DefinitionTable
    from .path_table import PathTable


class RankedView(GenerationView):
    """A generation view and the ranking's per-index tables, each made on first use."""

    @cached_property
    def _definitions(self) -> DefinitionTable:
        from .definitions import DefinitionTable

        return DefinitionTable(self.space)

    def defining_rows(self, names: set[str], limit: int | None = None) -> np.ndarray:
        """Rows that define one of `names` exactly (definitions before module-level names, each
        in row order); the first `limit` of them only."""
        from .definitions import definitions_first

        found = {r for name in names for r in self._definitions.rows_defining(name)}
        return definitions_first(np.asarray(sorted(found), dtype=np.int64), self.row_columns, limit)

    @cached_property
    def project_terms(self) -> set[str]:
        """The project's own names (its top-level code directories, `src/<name>`): words that
        every report about it says, so they never ask for tests or docs by themselves."""
        from ..source.pathclass import directory_flags

        names = {top for top in self.space.top_directories() if not directory_flags(top + "/")}
        return {t for name in names for t in path_terms(name)}

    @cached_property
    def path_table(self) -> PathTable:
        """Per file: its stem's and its directory's words as ids, filled as files are ranked
        (indexer/search/path_table.py)."""
        from .path_table import PathTable

        return PathTable(self.space.paths)

    @cached_property
    def flag_fixes(self) -> FileValues:
        """Per file: the path-class flags to drop and to add (rerank.corrected_flags)."""
        from .arrays import FileValues
        from .rerank import flag_fix

        return FileValues(self.space.n_files, lambda f: flag_fix(self, f), np.uint16)

    @cached_property
    def compound_keys(self) -> FileValues:
        """Per file: hash of its stem as two query words spell it (rerank.compound_words)."""
        from .path_names import compound_key

        return self._path_hashes(compound_key)

    @cached_property
    def stem_keys(self) -> FileValues:
        """Per file: hash of its lowercased stem (rerank.py: written paths, exact names)."""
        from .path_names import stem_key

        return self._path_hashes(stem_key)

    @cached_property
    def module_keys(self) -> FileValues:
        """Per file: hash of the last part of its module name (rerank.py: dotted names)."""
        from .path_names import module_key

        return self._path_hashes(module_key)

    def _path_hashes(self, key: Callable[[str], str]) -> FileValues:
        """Per file: hash(key(its path)), computed as files are first ranked."""
        from .arrays import FileValues

        paths = self.space.paths
        return FileValues(self.space.n_files, lambda f: hash(key(paths[f])), np.int64)
