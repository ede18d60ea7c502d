"""Exact definitions of a name (identifier queries): which rows define it.

The table holds every defined name (lowercased: definitions' symbols and module-level names) as
sorted (hash, row) arrays, 12 bytes a name, where a dict of lists took ~23 MB at 163k chunks. A
hash is not a name: every row found is checked against its own names, so the rows are exactly
those of a name -> rows dictionary (tests/test_definitions.py).
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..index.row_columns import RowColumns


class DefinitionTable:
    def __init__(self, columns: RowColumns) -> None:
        self.symbols, self.defines = columns.symbols, columns.defines
        hashes, rows = array("q"), array("i")
        # One segment's columns decoded at a time (nothing kept): a row's names are read back
        # from the mapped columns when a lookup checks them.
        pieces = zip(columns.by_segment("symbols"), columns.by_segment("defines"), strict=True)
        for (where, symbols), (_, defines) in pieces:
            live = range(where.start, where.stop) if isinstance(where, slice) else where.tolist()
            for row, symbol, names in zip(live, symbols, defines, strict=True):
                if row < 0:
                    continue
                for name in {symbol.lower(), *names.lower().split()} - {""}:
                    hashes.append(hash(name))
                    rows.append(row)
        keys = np.frombuffer(hashes, dtype=np.int64)
        # Rows in row order within a name (a segment's rows are not in global order when
        # files were deleted or updated, so order by (hash, row), not by insertion).
        row_ids = np.frombuffer(rows, dtype=np.int32)
        order = np.lexsort((row_ids, keys))
        self.keys, self.rows = keys[order], row_ids[order]

    def rows_keyed(self, names: set[str]) -> np.ndarray:
        """Rows that may define one of `names` (by hash: a superset, sorted, to be checked)."""
        keys = np.asarray([hash(n) for n in names if n], dtype=np.int64)
        lo = np.searchsorted(self.keys, keys)
        hi = np.searchsorted(self.keys, keys, side="right")
        found = [self.rows[a:b] for a, b in zip(lo.tolist(), hi.tolist(), strict=True) if b > a]
        return np.sort(np.concatenate(found)) if found else np.zeros(0, dtype=np.int32)

    def rows_defining(self, name: str) -> list[int]:
        """Rows whose symbol or module-level names include `name` (lowercased), in row order."""
        if not name:
            return []
        key = hash(name)
        keys = self.keys
        found = self.rows[np.searchsorted(keys, key) : np.searchsorted(keys, key, side="right")]
        symbols, defines = self.symbols, self.defines
        return [
            r
            for r in found.tolist()
            if symbols[r].lower() == name or name in defines[r].lower().split()
        ]
