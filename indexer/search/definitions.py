"""Exact definitions of a name (identifier queries): which rows define it.

Each segment stores the names its rows define as sorted (key, row) arrays
(indexer/index/defined_names.py): a lookup reads a few pages of each segment's table, maps the
rows it finds to global rows (deleted ones dropped) and checks each against its own names, so
the rows are exactly those of a name -> rows dictionary (tests/test_definitions.py). Nothing is
built per process: a dict of lists took ~23 MB at 163k chunks, and a table of hashes built on
the first identifier query 0.45 s.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from ..errors import CorruptIndexError
from ..index import defined_names
from ..index.integrity import REBUILD

if TYPE_CHECKING:
    from ..index.reader import RowSpace
    from ..index.row_columns import RowColumns


class DefinitionTable:
    def __init__(self, space: RowSpace, columns: RowColumns) -> None:
        self.space = space
        self.symbols, self.defines = columns.symbols, columns.defines

    def rows_keyed(self, names: Iterable[str]) -> np.ndarray:
        """Global rows that may define one of `names` (by key: a superset, sorted, to be
        checked)."""
        names = list(names)
        space = self.space
        found = []
        for i, segment in enumerate(space.segments):
            keys, rows = segment.defined_names
            local = defined_names.lookup(keys, rows, names)
            if not len(local):
                continue
            if int(local.min()) < 0 or int(local.max()) >= segment.n_rows:
                raise CorruptIndexError(f"index file {defined_names.ROWS} is damaged; {REBUILD}")
            cat = local.astype(np.int64) + int(space.seg_offsets[i])
            rows_global = cat if space.concatenated else space.cat_to_global[cat]
            found.append(rows_global[rows_global >= 0])
        if not found:
            return np.zeros(0, dtype=np.int64)
        out: np.ndarray = np.sort(np.concatenate(found))
        return out

    def rows_defining(self, name: str) -> list[int]:
        """Rows whose symbol or module-level names include `name` (lowercased), in row order."""
        if not name:
            return []
        symbols, defines = self.symbols, self.defines
        return [
            r
            for r in self.rows_keyed([name]).tolist()
            if symbols[r].lower() == name or name in defines[r].lower().split()
        ]
