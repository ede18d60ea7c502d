"""The symbol, kind and defined-names columns of every live row, as the ranking reads them.

Strings are read from the segments' mapped columns where asked (`RowText`), so a long-lived
process does not hold one Python string per row and column (~25 MB each at 163k rows). What
the ranking tests for hundreds of candidates per query, the kind of a row, is also kept as a
two-byte code per row once a process has searched (numpy tests instead of string reads); a
one-shot command codes only the rows it reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import cached_property

import numpy as np

from .columns import RowText, values_of
from .reader import RowSpace
from .tokens import split_parts as _split


def symbol_key(name: str) -> int:
    """32 bits of the name's hash: a row's key costs 4 bytes (a match is checked anyway)."""
    return hash(name) & 0xFFFFFFFF


# A row's part bits: one of 31 bits per identifier part of its symbol, and KNOWN once set.
KNOWN = 1 << 31


def part_bits(parts: Iterable[str]) -> int:
    """The bits of identifier parts (`split_identifier`'s): a symbol whose parts are all among
    a query's terms has no bit outside the terms' bits."""
    bits = 0
    for part in parts:
        bits |= 1 << (hash(part) % 31)
    return bits


class RowColumns:
    def __init__(self, space: RowSpace, keep_codes: bool) -> None:
        self.space = space
        self.symbols: RowText = space.gather_list("symbols")
        self.kinds: RowText = space.gather_list("kinds")
        self.defines: RowText = space.gather_list("defines")
        self.keep_codes = keep_codes  # code every row's kind once (a long-lived process)
        self._codes: dict[str, int] = {}
        self.names: list[str] = []  # kind of each code

    def code(self, kind: str) -> int:
        """The code of a kind (new kinds get the next code: codes hold within this object)."""
        found = self._codes.get(kind)
        if found is None:
            found = self._codes[kind] = len(self.names)
            self.names.append(kind)
        return found

    def codes_of(self, kinds: Iterable[str]) -> np.ndarray:
        return np.asarray([self.code(k) for k in kinds], dtype=np.uint16)

    @cached_property
    def _all_codes(self) -> np.ndarray:
        return self._per_row("kinds", self.code, np.uint16)

    @cached_property
    def _symbol_keys(self) -> np.ndarray:
        return self._per_row("symbols", lambda v: symbol_key(v.lower()), np.uint32)

    def _per_row(self, column: str, value: Callable[[str], int], dtype: type) -> np.ndarray:
        """`value` of every live row's `column`, decoded one segment at a time."""
        out: np.ndarray = np.zeros(self.space.n_rows, dtype=dtype)
        for rows, values in self.by_segment(column):
            local: np.ndarray = np.fromiter(map(value, values), dtype=dtype, count=len(values))
            if isinstance(rows, slice):
                out[rows] = local
            else:
                live = rows >= 0
                out[rows[live]] = local[live]
        return out

    def symbol_keys(self, rows: np.ndarray) -> np.ndarray | None:
        """`symbol_key(symbol.lower())` of each of `rows`, where kept (a long-lived process): a
        key that matches is checked against the symbol itself, a key that does not rules it
        out."""
        return self._symbol_keys[rows] if self.keep_codes else None

    def alone(self, row: int) -> bool:
        """Whether no other row of the row's file has its kind and symbol (by key), where the
        codes are kept (a long-lived process; else False: not known). Such a row is no part of
        a split definition, so a search's result needs no look at its file's rows."""
        return self.keep_codes and bool(self._alone[row])

    @cached_property
    def _alone(self) -> np.ndarray:
        """Each row's `alone`, from one sort of every row by (file, kind, symbol key): ~4 ms at
        163k rows, once a process."""
        files, codes, keys = self.space.chunk_file, self._all_codes, self._symbol_keys
        if len(files) and (int(files.max()) >= 1 << 24 or len(self.names) > 1 << 8):
            order = np.lexsort((keys, codes, files))
        else:  # one 64-bit key: a sort 7x faster than lexsort's three
            key = (files.astype(np.uint64) << 40) | (codes.astype(np.uint64) << 32) | keys
            order = np.argsort(key, kind="stable")
        twin = np.ones(max(len(files) - 1, 0), dtype=bool)  # the same as the next, sorted
        for column in (files, codes, keys):
            ordered = column[order]
            twin &= ordered[1:] == ordered[:-1]
        shared = np.zeros(len(files), dtype=bool)
        shared[1:] |= twin
        shared[:-1] |= twin
        alone = np.empty(len(files), dtype=bool)
        alone[order] = ~shared
        return alone

    def spelled_by(self, rows: np.ndarray, bits: int) -> np.ndarray | None:
        """Which of `rows` may have a symbol whose parts all have their bits in `bits` (every
        such row, and a few others), where the rows' part bits are kept (a long-lived
        process): the rows not met before have their symbols read once. None: not kept."""
        if not self.keep_codes:
            return None
        known = self._part_bits[rows]
        new = np.flatnonzero(known == 0)
        if len(new):
            found = [KNOWN | part_bits(_split(s)) for s in self.symbols.take(rows[new])]
            known[new] = found
            self._part_bits[rows[new]] = found
        spelled: np.ndarray = (known & ~np.uint32(bits | KNOWN)) == 0
        return spelled

    @cached_property
    def _part_bits(self) -> np.ndarray:
        """Each row's part bits (KNOWN set), 0 for a row not met yet: filled as queries go."""
        return np.zeros(self.space.n_rows, dtype=np.uint32)

    def kind_of(self, row: int) -> str:
        if self.keep_codes:
            return self.names[int(self._all_codes[row])]
        return self.kinds[row]

    def kind_codes(self, rows: np.ndarray) -> np.ndarray:
        """The kind code of each of `rows` (global)."""
        if self.keep_codes:
            codes: np.ndarray = self._all_codes[rows]
            return codes
        kinds = self.kinds.take(rows)
        return np.fromiter(map(self.code, kinds), dtype=np.uint16, count=len(kinds))

    def is_kind(self, codes: np.ndarray, kinds: Iterable[str]) -> np.ndarray:
        """Which of `codes` is one of `kinds` (a table over the codes: np.isin costs ~0.1 ms)."""
        wanted = self.codes_of(kinds)
        table = np.zeros(len(self.names), dtype=bool)
        table[wanted] = True
        out: np.ndarray = table[codes]
        return out

    def by_segment(self, column: str) -> Iterator[tuple[slice | np.ndarray, list[str]]]:
        """Each segment's values of `column` (decoded, not kept) with where its rows are:
        a slice of global rows, or each local row's global row (-1: not live)."""
        space = self.space
        starts = space.seg_offsets.tolist()
        for i, segment in enumerate(space.segments):
            values = values_of(getattr(segment, column))
            if space.concatenated:
                yield slice(starts[i], starts[i + 1]), values
            else:
                to_global = space.local_to_global(i)
                assert to_global is not None
                yield to_global, values
