"""Columns read lazily: a sequence whose items are made when read, a memory-mapped text
column (one value per line), and the columns of several segments end to end."""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TypeVar, overload

import numpy as np

from ..errors import CorruptIndexError
from .integrity import REBUILD
from .segment_format import map_file

T = TypeVar("T")


class LazySequence(Sequence[T]):
    """A sequence whose items are made when read: slices, negative indexes and equality as a
    list's; subclasses give `_item(i)` for 0 <= i < len."""

    def _item(self, i: int) -> T:
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> list[T]: ...
    def __getitem__(self, i: int | slice) -> T | list[T]:
        if isinstance(i, slice):
            return [self._item(j) for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return self._item(i)

    def __eq__(self, other: object) -> bool:  # as the list it stands for
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


class Lines(LazySequence[str]):
    """A text column read lazily: `column[i]` decodes line i alone. The file is memory-mapped
    and its line starts found by one numpy pass, so opening a 157k-row column costs ~1 ms
    instead of decoding and splitting every value; iterating decodes it all, once."""

    def __init__(self, path: Path, count: int) -> None:
        self.name = path.name
        self.data = map_file(path)
        raw = np.frombuffer(self.data, dtype=np.uint8) if len(self.data) else np.zeros(0, np.uint8)
        breaks = np.flatnonzero(raw == 10)
        if (len(breaks) + 1 if count else 0) != count:
            raise CorruptIndexError(f"index file {path.name} is damaged; {REBUILD}")
        self.starts = np.empty(count + 1, dtype=np.int64)  # line i: starts[i]:starts[i+1]-1
        if count:
            self.starts[0] = 0
            self.starts[1:-1] = breaks + 1
            self.starts[-1] = len(self.data) + 1
        self._all: list[str] | None = None
        self._reads = 0

    def __len__(self) -> int:
        return len(self.starts) - 1

    def _item(self, i: int) -> str:
        if self._all is not None:
            return self._all[i]
        self._reads += 1
        if self._reads > 64 and self._reads * 16 > len(self):  # most of it: decode it all
            return self.tolist()[i]
        start, end = int(self.starts[i]), int(self.starts[i + 1]) - 1
        return bytes(self.data[start:end]).decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        return iter(self.tolist())

    def tolist(self) -> list[str]:
        if self._all is None:
            text = bytes(self.data).decode("utf-8")
            self._all = text.split("\n") if len(self) else []
        return self._all


class Chain(LazySequence[str]):
    """Columns of several segments end to end, read where asked (bisection works on it)."""

    def __init__(self, parts: Sequence[Sequence[str]]) -> None:
        self.parts = list(parts)
        self.starts = np.cumsum([0] + [len(p) for p in self.parts]).tolist()

    def __len__(self) -> int:
        return int(self.starts[-1])

    def _item(self, i: int) -> str:
        k = bisect.bisect_right(self.starts, i) - 1
        value: str = self.parts[k][i - int(self.starts[k])]
        return value

    def __iter__(self) -> Iterator[str]:
        for part in self.parts:
            yield from part
