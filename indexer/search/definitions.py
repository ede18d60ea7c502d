"""Exact definitions of a name (identifier queries): which rows define it.

The table holds every defined name (lowercased: definitions' symbols and module-level names) as
sorted (hash, row) arrays, 12 bytes a name, where a dict of lists took ~23 MB at 163k chunks. A
hash is not a name: every row found is checked against its own names, so the rows are exactly
those of a name -> rows dictionary (tests/test_definitions.py).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import numpy as np


class DefinitionTable:
    def __init__(self, symbols: Sequence[str], defines: Sequence[str]) -> None:
        self.symbols, self.defines = symbols, defines
        hashes, rows = array("q"), array("i")
        for row, (symbol, names) in enumerate(zip(symbols, defines, strict=True)):
            for name in {symbol.lower(), *names.lower().split()} - {""}:
                hashes.append(hash(name))
                rows.append(row)
        keys = np.frombuffer(hashes, dtype=np.int64)
        order = np.argsort(keys, kind="stable")  # a name's rows stay in row order
        self.keys, self.rows = keys[order], np.frombuffer(rows, dtype=np.int32)[order]

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
