"""Columns read lazily: a sequence whose items are made when read, a memory-mapped text
column (one value per line), and the columns of several segments end to end."""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import TypeVar, overload

import numpy as np

from ..errors import CorruptIndexError
from . import npy
from .integrity import REBUILD
from .segment_format import line_starts_path, map_file, release_pages

T = TypeVar("T")
# Lines.find_many bisects a few values one by one until a process has looked up SAMPLE_AFTER
BATCH_MIN, SAMPLE_AFTER = 32, 256
SAMPLE = 32  # Lines.find_many: every SAMPLE-th line's first bytes are kept (8 bytes each)


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

    def __init__(self, path: Path, count: int, keep: bool = True) -> None:
        self.name = path.name
        self.data = map_file(path)
        # line i: starts[i]:starts[i+1]-1; written beside the column (segment format 5)
        self.starts = _stored_starts(path, count, len(self.data))
        self._all: list[str] | None = None
        self.reads = 0  # values read one by one (a long-lived process drops their pages)
        # A column read by bisection (the BM25 vocabulary) is decoded whole once most of it
        # has been read; a per-row column (`keep=False`) never is: a long-lived process would
        # end up holding every row's string (~8 MB a column at 163k rows).
        self.keep = keep
        self._lookups = 0

    def __len__(self) -> int:
        return len(self.starts) - 1

    def _item(self, i: int) -> str:
        if self._all is not None:
            return self._all[i]
        self.reads += 1
        if self.keep and self.reads > 64 and self.reads * 16 > len(self):  # most: decode all
            return self.tolist()[i]
        start, end = int(self.starts[i]), int(self.starts[i + 1]) - 1
        value: str = self.data[start:end].decode("utf-8")
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self.tolist() if self.keep else self.values())

    def find(self, value: str) -> int | None:
        """The line equal to `value` in a sorted column (the BM25 vocabulary), or None."""
        return self.find_many([value])[0]

    def find_many(self, values: Sequence[str]) -> list[int | None]:
        """find() of every value at once. Lines are compared by their first 8 UTF-8 bytes as
        one integer (sorted lines, no NUL: sorted integers), located in numpy: among every
        SAMPLE-th line first, then among the lines of that stretch. A value under 8 bytes is
        then found or not; a longer one is bisected as a string among the few lines that share
        its first 8 bytes. A report's 71 terms: 0.2-0.35 ms a 150k-term segment, against
        1.3-1.6 ms for 71 bisections of ~17 decoded lines (once sampled; a new process pays
        ~0.5 ms a segment more to sample, so a few values are bisected until then)."""
        n = len(self)
        if n == 0 or not values:
            return [None] * len(values)
        self._lookups += len(values)
        if (
            len(values) < BATCH_MIN
            and self._lookups <= SAMPLE_AFTER
            and "_samples" not in vars(self)
        ):
            # A few values in a process that has not sampled the column: the samples would
            # fault in the whole file (~0.5 ms a segment), more than a few bisections cost.
            return [self._bisect(v, 0, n) for v in values]
        raw = [v.encode("utf-8") for v in values]
        keys = _prefix(
            np.frombuffer(b"".join(r[:8].ljust(8, b"\0") for r in raw), np.uint8).reshape(-1, 8)
        )
        # The first line >= each key and the first line > it (>= key + 1: UTF-8 has no 0xff).
        both = np.concatenate([keys, keys + np.uint64(1)])
        samples = self._samples
        stretch = np.searchsorted(samples, both, side="left") - 1  # its last sample < key
        np.maximum(stretch, 0, out=stretch)
        rows = stretch[:, None] * SAMPLE + np.arange(SAMPLE)[None, :]
        np.minimum(rows, n - 1, out=rows)
        below = (self._line_prefixes(rows.reshape(-1)).reshape(rows.shape) < both[:, None]).sum(1)
        bound = np.minimum(stretch * SAMPLE + below, n).tolist()
        out: list[int | None] = []
        for k, (value, data) in enumerate(zip(values, raw, strict=True)):
            lo, hi = bound[k], bound[k + len(values)]
            if lo == hi:
                out.append(None)
            elif len(data) < 8 and b"\0" not in data:
                out.append(lo)  # the one line with these bytes and nothing after them
            else:
                out.append(self._bisect(value, lo, hi))
        return out

    def _bisect(self, value: str, lo: int, hi: int) -> int | None:
        j = bisect.bisect_left(self, value, lo, hi)
        return j if j < hi and self[j] == value else None

    @cached_property
    def _samples(self) -> np.ndarray:
        """The first 8 bytes of every SAMPLE-th line (the lines are bisected in stretches)."""
        samples = self._line_prefixes(np.arange(0, len(self), SAMPLE))
        release_pages(self.data)  # a long-lived process keeps only the lines it reads again
        return samples

    def _line_prefixes(self, rows: np.ndarray) -> np.ndarray:
        """The first 8 UTF-8 bytes of lines `rows` as big-endian integers (0-padded)."""
        starts = self.starts.view(np.ndarray)  # a memmap's every result is one: slower
        begins = starts.take(rows)
        keep = np.minimum(starts.take(rows + 1) - 1 - begins, 8)  # bytes of the line
        words = self._words
        at = np.minimum(begins, len(words) - 1)  # the file's last 7 bytes start no word
        values = words[at].astype(np.uint64)
        values <<= ((begins - at) * 8).astype(np.uint64)
        drop = ((8 - keep) * 8).astype(np.uint64)  # low bits past the line's end: zero
        half = drop >> np.uint64(1)
        values >>= half
        values >>= drop - half  # (a shift by 64 is undefined: two shifts of at most 32)
        values <<= drop - half
        values <<= half
        return values

    @cached_property
    def _words(self) -> np.ndarray:
        """The big-endian 8-byte integer at every byte offset of the file: a view, no copy."""
        data = self.data if len(self.data) >= 8 else bytes(self.data).ljust(8, b"\0")
        return np.ndarray((len(data) - 7,), dtype=">u8", buffer=data, strides=(1,))

    def take(self, rows: np.ndarray) -> list[str]:
        """The values of `rows` (0 <= row < len), in that order: one pass, no per-item calls."""
        if self._all is not None:
            return [self._all[r] for r in rows.tolist()]
        data = self.data
        self.reads += len(rows)
        begins, ends = self.starts[rows].tolist(), (self.starts[rows + 1] - 1).tolist()
        return [data[a:b].decode("utf-8") for a, b in zip(begins, ends, strict=True)]

    def values(self) -> list[str]:
        """Every value, decoded now and not kept."""
        if self._all is not None:
            return self._all
        if not len(self):
            return []
        text = bytes(self.data).decode("utf-8")
        release_pages(self.data)
        return text.split("\n")

    def tolist(self) -> list[str]:
        if self._all is None:
            self._all = self.values()
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


def find_sorted(column: Sequence[str], wanted: Sequence[str]) -> list[int | None]:
    """The position of each `wanted` value in a sorted column (a segment's vocabulary, mapped
    or in memory), or None."""
    if isinstance(column, Lines):
        return column.find_many(wanted)
    out: list[int | None] = []
    for value in wanted:
        j = bisect.bisect_left(column, value)
        out.append(j if j < len(column) and column[j] == value else None)
    return out


def values_of(column: Sequence[str]) -> list[str]:
    """Every value of a segment's column, decoded now (a mapped column keeps nothing)."""
    return column.values() if isinstance(column, Lines) else list(column)


class RowText(LazySequence[str]):
    """A per-row text column of every live row in global row order, read from the segments'
    columns where asked: nothing is decoded at open and nothing is kept, whatever the number
    of segments or deleted rows. `to_cat`: global row -> row of the segments laid end to end
    (None: the same), `seg_starts`: where each segment starts in that order."""

    def __init__(
        self, parts: Sequence[Sequence[str]], seg_starts: Sequence[int], to_cat: np.ndarray | None
    ) -> None:
        self.parts = list(parts)
        self.seg_starts = list(seg_starts)
        self.to_cat = to_cat
        self.n = len(to_cat) if to_cat is not None else int(self.seg_starts[-1])

    def __len__(self) -> int:
        return self.n

    def _item(self, i: int) -> str:
        c = i if self.to_cat is None else int(self.to_cat[i])
        if len(self.parts) == 1:
            return self.parts[0][c]
        k = bisect.bisect_right(self.seg_starts, c) - 1
        return self.parts[k][c - self.seg_starts[k]]

    def take(self, rows: Sequence[int] | np.ndarray) -> list[str]:
        """The values of `rows` (global), in that order, read segment by segment."""
        cats = np.asarray(rows, dtype=np.int64)
        if len(cats) <= 4:  # a few values: one lookup each costs less than grouping them
            return [self._item(r) for r in cats.tolist()]
        if self.to_cat is not None:
            cats = self.to_cat[cats]
        if len(self.parts) == 1:
            return _take(self.parts[0], cats)
        starts = np.asarray(self.seg_starts, dtype=np.int64)
        seg = np.searchsorted(starts, cats, side="right") - 1
        out: list[str] = [""] * len(cats)
        for k in sorted(set(seg.tolist())):  # np.unique would import numpy.ma (cold start)
            mine = np.flatnonzero(seg == k)
            values = _take(self.parts[k], cats[mine] - starts[k])
            for i, value in zip(mine.tolist(), values, strict=True):
                out[i] = value
        return out

    def __iter__(self) -> Iterator[str]:
        if self.to_cat is None:
            for part in self.parts:
                yield from values_of(part)
        else:
            yield from (self._item(i) for i in range(self.n))


def _take(column: Sequence[str], rows: np.ndarray) -> list[str]:
    if isinstance(column, Lines):
        return column.take(rows)
    return [column[r] for r in rows.tolist()]


def _prefix(columns: np.ndarray) -> np.ndarray:
    """Rows of 8 bytes (or one row) as big-endian uint64."""
    return np.ascontiguousarray(columns, dtype=np.uint8).view(">u8").astype(np.uint64).reshape(-1)


def _stored_starts(path: Path, count: int, size: int) -> np.ndarray:
    """The line starts written beside a text column, checked against it."""
    starts_path = line_starts_path(path)
    try:
        starts: np.ndarray = npy.load(starts_path, "r")
    except (OSError, ValueError) as exc:
        raise CorruptIndexError(f"index file {starts_path.name} is damaged; {REBUILD}") from exc
    expected_end = size + 1 if count else 0
    if (
        starts.ndim != 1
        or starts.dtype.kind not in "iu"
        or len(starts) != count + 1
        or int(starts[0]) != 0
        or int(starts[-1]) != expected_end
    ):
        raise CorruptIndexError(f"index file {starts_path.name} is damaged; {REBUILD}")
    return starts
