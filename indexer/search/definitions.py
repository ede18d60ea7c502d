"""Exact definitions of a name (identifier queries): which rows define it.

Each segment stores the names its rows define as sorted (key, row) arrays
(indexer/index/defined_names.py): a lookup reads a few pages of each segment's table, maps the
rows it finds to global rows (deleted ones dropped) and checks them against their own names
(one row per key where a segment's keys each stand for one name), so the rows are exactly those
of a name -> rows dictionary (tests/test_definitions.py). Nothing is built per process: a dict
of lists took ~23 MB at 163k chunks, and a table of hashes built on the first identifier query
0.45 s.
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
    # The pages a lookup reads stay mapped: dropping them after each lookup saved 0.8 MB of a
    # long-lived process at 163k chunks, and cost 2-3 % of a question's or a report's time
    # (reports name dozens of identifiers: their binary searches faulted the pages back).
    def __init__(self, space: RowSpace) -> None:
        self.space = space

    def _global(self, i: int, local: np.ndarray) -> np.ndarray:
        """Live global rows of segment i's local rows (in no particular order)."""
        segment, space = self.space.segments[i], self.space
        if len(local) and (int(local.min()) < 0 or int(local.max()) >= segment.n_rows):
            raise CorruptIndexError(f"index file {defined_names.ROWS} is damaged; {REBUILD}")
        cat = local.astype(np.int64) + int(space.seg_offsets[i])
        rows: np.ndarray = cat if space.concatenated else space.cat_to_global[cat]
        return rows[rows >= 0]

    def rows_keyed(self, names: Iterable[str]) -> np.ndarray:
        """Global rows that may define one of `names` (by key: a superset, sorted, to be
        checked)."""
        sought = defined_names.wanted(names)
        found = []
        for i, segment in enumerate(self.space.segments):
            keys, rows, _ = segment.defined_names
            parts = defined_names.keyed(keys, rows, sought)
            if parts:  # one mapping per segment, not per name (a report names dozens)
                found.append(self._global(i, np.concatenate(parts)))
        if not found:
            return np.zeros(0, dtype=np.int64)
        out: np.ndarray = np.sort(np.concatenate(found))
        return out

    def rows_defining(self, name: str) -> list[int]:
        """Rows whose symbol or module-level names include `name` (lowercased), in row order.
        A row is checked against its own names; where every key of a segment stands for one
        name, the first row of the key is checked for all of them."""
        if not name:
            return []
        sought = defined_names.wanted([name])
        found = []
        for i, segment in enumerate(self.space.segments):
            keys, rows, unique = segment.defined_names
            symbols, defines = segment.symbols, segment.defines
            for part in defined_names.keyed(keys, rows, sought):
                local = part.tolist()
                check = local[:1] if unique else local
                kept = [r for r in check if name in defined_names.names_of(symbols[r], defines[r])]
                if unique:
                    kept = local if kept else []
                found.append(self._global(i, np.asarray(kept, dtype=np.int64)))
        if not found:
            return []
        rows_global: list[int] = np.sort(np.concatenate(found)).tolist()
        return rows_global


def definitions_first(rows: np.ndarray, columns: RowColumns, limit: int | None) -> np.ndarray:
    """`rows` (sorted) with the definitions before the module-level names, each in row order;
    the first `limit` only. Kinds are read a block at a time until `limit` definitions are
    found: a one-shot search decodes them row by row (`__init__` defines ~9,000 rows at 163k
    chunks, of which the ranking takes 400)."""
    module_code = columns.code("module")
    step = len(rows) if limit is None or columns.keep_codes else max(2 * limit, 256)
    definitions: list[np.ndarray] = []
    modules: list[np.ndarray] = []
    got, at = 0, 0
    while at < len(rows) and (limit is None or got < limit):
        block = rows[at : at + step]
        module = columns.kind_codes(block) == module_code
        definitions.append(block[~module])
        modules.append(block[module])
        got += len(definitions[-1])
        at += step
    # (stopped early: `limit` definitions, and no module row can come before them)
    out = np.concatenate([*definitions, *modules, np.zeros(0, dtype=np.int64)])
    return out if limit is None else out[:limit]
