"""A segment's chunk records as a search reads them: each row's metadata line and compressed text,
their offsets and digests (a mixin of `Segment`, indexer/index/segment.py)."""

from __future__ import annotations

import zlib
from collections import OrderedDict
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import CorruptIndexError
from .integrity import REBUILD
from .segment_format import TEXT_BLOCKS, TEXTS, FileSlices, StoredInts

BLOCK_CACHE = 32  # decompressed file blocks kept per segment (results cluster in few files)
BLOCK_CACHE_BYTES = 1 << 20  # and at most this much of them (one large file: that one alone)


class SegmentRecords:
    """Rows' records and texts, read by rows: the tables load on first use, as Segment's."""

    directory: Path | None
    n_files: int
    n_rows: int

    if TYPE_CHECKING:  # Segment's

        @property
        def file_rows(self) -> np.ndarray: ...

        def _path(self, name: str) -> Path: ...

        def _array(self, name: str, rows: int, mmap_mode: Any = None) -> np.ndarray: ...

    @cached_property
    def sums(self) -> np.ndarray:
        return self._array("chunk_sums.npy", self.n_rows)

    @cached_property
    def meta_sums(self) -> np.ndarray:
        return self._array("meta_sums.npy", self.n_rows)

    @cached_property
    def row_sums(self) -> Any:
        """sums[row], read row by row (a search's results; nothing held)."""
        return self._row_values("chunk_sums.npy", "sums")

    @cached_property
    def row_meta_sums(self) -> Any:
        """meta_sums[row], read row by row (unless `hold_meta_sums` loaded them)."""
        return self._row_values("meta_sums.npy", "meta_sums")

    def hold_meta_sums(self) -> None:
        """Keep the metadata digests (8 bytes a row) and the records' offsets (checked once) in
        memory for a process that searches again and again: each of a search's ~12 records is
        a pread less (~4 us of ~20), or three."""
        if self.directory is not None:
            self.__dict__.pop("row_meta_sums", None)  # a reader closes its file when dropped
            self.meta_sums  # noqa: B018 (loaded: row_meta_sums reads it)
            self.offsets  # noqa: B018

    def _row_values(self, name: str, held: str) -> Any:
        if self.directory is None or held in self.__dict__:  # in memory already
            return getattr(self, held)
        return StoredInts(self._array(name, self.n_rows, mmap_mode="r"))

    @cached_property
    def stores(self) -> tuple[Any, Any]:
        """chunks.jsonl and the compressed texts, read by slices (segments never change)."""
        return FileSlices(self._path("chunks.jsonl")), FileSlices(self._path(TEXTS))

    @cached_property
    def text_blocks(self) -> np.ndarray:
        blocks = self._array(TEXT_BLOCKS, self.n_files + 1)
        if (
            blocks.dtype.kind not in "iu"
            or (len(blocks) and int(blocks[0]) != 0)
            or np.any(np.diff(blocks) < 0)
            or int(blocks[-1]) != len(self.stores[1])
        ):
            raise CorruptIndexError(f"index file {TEXT_BLOCKS} is damaged; {REBUILD}")
        return blocks

    @cached_property
    def _blocks(self) -> OrderedDict[int, bytes]:
        return OrderedDict()

    def _block(self, f: int) -> bytes:
        """File f's texts, decompressed (a few recent blocks are kept)."""
        cache = self._blocks
        block = cache.get(f)
        if block is None:
            block = self._unpacked(f, self.packed_block(f))
            cache[f] = block
            held = sum(len(b) for b in cache.values())
            while len(cache) > BLOCK_CACHE or (len(cache) > 1 and held > BLOCK_CACHE_BYTES):
                held -= len(cache.popitem(last=False)[1])
        else:
            cache.move_to_end(f)
        return block

    def packed_block(self, f: int, checked: bool = False) -> bytes:
        """File f's texts as stored: one zlib block (a stored segment's); `checked`: after
        making sure it holds the texts' length (a merge copies it without its texts)."""
        blocks = self.text_blocks
        packed = bytes(self.stores[1][int(blocks[f]) : int(blocks[f + 1])])
        if checked:
            self._unpacked(f, packed)
        return packed

    def _unpacked(self, f: int, packed: bytes) -> bytes:
        text_off, rows = self.offsets[1], self.file_rows
        block = zlib.decompress(packed)
        if len(block) != int(text_off[rows[f + 1]]) - int(text_off[rows[f]]):
            raise CorruptIndexError(f"index file {TEXTS} is damaged; {REBUILD}")
        return block

    @cached_property
    def offsets(self) -> tuple[np.ndarray, np.ndarray]:
        from .integrity import check_rows

        offsets = (
            self._array("chunk_offsets.npy", self.n_rows + 1),
            self._array("text_offsets.npy", self.n_rows + 1),
        )
        # Texts are checked against their own end here, and against each block when read.
        texts = self.stores[1] if self.directory is None else range(int(offsets[1][-1]))
        check_rows(self.n_rows, self.stores[0], texts, *offsets)
        # Offsets within files under 4 GB are held as uint32: half the memory (2.5 MB at 163k
        # rows) for the life of a process that reads a few rows a query.
        return tuple(  # type: ignore[return-value]
            o.astype(np.uint32) if len(o) and int(o[-1]) <= np.iinfo(np.uint32).max else o
            for o in offsets
        )

    def meta_bytes(self, start: int, end: int) -> bytes:
        if self.directory is None or "offsets" in self.__dict__:
            meta_off = self.offsets[0]
            first, last = int(meta_off[start]), int(meta_off[end])
        else:
            # A new process's few records: two offsets each, bounds checked (the record by its
            # digest), not every row's loaded and checked (2.4 ms of a cold search at 163k rows)
            stored = self._meta_offsets
            first, last = stored[start], stored[end]
            if not 0 <= first <= last <= len(self.stores[0]):
                raise CorruptIndexError(f"index file chunk_offsets.npy is damaged; {REBUILD}")
        return bytes(self.stores[0][first:last])

    @cached_property
    def _meta_offsets(self) -> StoredInts:
        offsets = self._array("chunk_offsets.npy", self.n_rows + 1, mmap_mode="r")
        if offsets.dtype.kind not in "iu":
            raise CorruptIndexError(f"index file chunk_offsets.npy is damaged; {REBUILD}")
        return StoredInts(offsets)

    def text_bytes(self, start: int, end: int) -> bytes:
        text_off = self.offsets[1]
        if self.directory is None:  # in memory: plain bytes
            return bytes(self.stores[1][int(text_off[start]) : int(text_off[end])])
        if end <= start:
            return b""
        # the files of rows start and end - 1 (by the file bounds: chunk_file is not kept)
        first, last = (np.searchsorted(self.file_rows, [start, end - 1], side="right") - 1).tolist()
        base = int(text_off[self.file_rows[first]])
        data = b"".join(self._block(f) for f in range(first, last + 1))
        return data[int(text_off[start]) - base : int(text_off[end]) - base]
