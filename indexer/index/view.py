"""Read access to one generation: the arrays, chunks and graph the search side reads.

`GenerationView` opens a generation's segments (cheap checks only) and loads each part on first
use, so a cold `indexer search` reads only what it needs. Every per-row array is in the global
row order of indexer/index/reader.py (live rows, path order), exactly as one full build lays it
out; `indexer.api.Index` adds searching, status and the graph commands on top.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import CorruptIndexError, IndexerError
from ..source.chunks import Chunk
from .columns import Lines
from .dense_view import DenseView
from .integrity import REBUILD, check_chunk, corrupt_as_error, meta_sum
from .lexical_view import LexicalView
from .reader import BlobOf, RowSpace, open_generation, open_space
from .row_columns import RowColumns
from .segment import Segment
from .vectors import JsonVocab, StaticVectors

if TYPE_CHECKING:
    from .graph.codegraph import CodeGraph
    from .graph.model import FileGraph
    from .segment_data import SegmentData

Overlay = tuple["SegmentData | None", Iterable[str]]
RECORD_CACHE = 256  # decoded records kept per view (Chunk is frozen: sharing is safe)


class GenerationView:
    def __init__(
        self,
        snapshot: Path,
        vectors: StaticVectors | None = None,
        overlay: Overlay | None = None,
        opened: GenerationView | None = None,
    ) -> None:
        self.snapshot = snapshot  # the generation manifest: <index dir>/generations/<name>.json
        # `opened`: a view of the same generation whose open segments (and what they have
        # read) are shared, as a working-tree view shares its commit's.
        generation = (
            (opened.manifest, opened._parts)
            if opened is not None
            else corrupt_as_error(open_generation)(snapshot)
        )
        self.manifest: dict[str, Any] = generation[0]
        self._parts: list[tuple[Segment, list[str]]] = generation[1]
        self._vectors = vectors
        self._overlay = overlay
        # A process answering one command (the CLI without a server): numpy dense scan.
        self.one_shot: bool = opened.one_shot if opened is not None else False

    @cached_property
    def vectors(self) -> StaticVectors:
        if self._vectors is not None:
            return self._vectors
        info = self.manifest.get("vectors", {})
        table = StaticVectors.load(Path(info["dir"]) if info.get("dir") else None)
        if table.dim != info.get("dims") or len(table.vocab) != info.get("vocab_size"):
            raise IndexerError(
                "the static vector table changed since this index was built; run `indexer build`"
            )
        if not self.one_shot and isinstance(table.vocab, JsonVocab):
            table.vocab.expect_many_lookups()  # its first searches scan no bytes
        return table

    @cached_property
    def space(self) -> RowSpace:
        """The live rows of every segment (and the overlay) in one row space."""
        space = corrupt_as_error(open_space)(self._parts, self._overlay)
        if not self.one_shot:  # many queries: decode the paths once, not per access
            space.paths = list(space.paths)
            for segment in space.segments:
                corrupt_as_error(segment.hold_meta_sums)()
        else:
            # One command reads the paths of its candidates' files one by one (~700 of 10k at
            # 163k chunks): decoding every path once a sixteenth of them was read cost a cold
            # search 1.9 ms there.
            for segment in space.segments:
                if isinstance(segment.paths, Lines):
                    segment.paths.keep = False
        return space

    @cached_property
    def lexical(self) -> LexicalView:
        if not self.one_shot:
            # A process that searches again and again: fixed glibc thresholds, so that a large
            # query's buffers, dropped after it (postings.Scratch.trim), go back to the OS
            # instead of staying in a heap that only grows, and bounded query-word caches
            # (workers.search_heap; with them 1,491 varied queries at 163k chunks leave RSS at
            # 103 MB instead of 111). A one-shot CLI does not import ctypes for it.
            from .workers import search_heap

            search_heap()
        return LexicalView(self.space, one_shot=self.one_shot)

    @cached_property
    def dense(self) -> DenseView:
        return DenseView(self.space, one_shot=self.one_shot)

    @cached_property
    def _fids(self) -> np.ndarray:
        return self.space.gather("fids")

    @cached_property
    def _fid_lookup(self) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(self._fids)
        return self._fids[order], order

    def _rows_of_fids(self, fids: np.ndarray) -> np.ndarray:
        sorted_fids, order = self._fid_lookup
        pos = np.searchsorted(sorted_fids, fids)
        return order[np.clip(pos, 0, len(order) - 1)].astype(np.int64)

    @cached_property
    def _chunk_file(self) -> np.ndarray:
        return self.space.chunk_file

    @cached_property
    def _chunk_flags(self) -> np.ndarray:
        return self.space.gather("flags")

    @cached_property
    def row_columns(self) -> RowColumns:
        """Symbols, kinds and defined names per row (indexer/index/row_columns.py); a process
        that searches more than once codes every row's kind once."""
        return RowColumns(self.space, keep_codes=not self.one_shot)

    @cached_property
    def files(self) -> Sequence[dict[str, Any]]:
        """Per-file records in path order, each made when read."""
        return self.space.files

    @cached_property
    def _file_times(self) -> np.ndarray:
        return self.space.file_times

    @cached_property
    def blob_of(self) -> Mapping[str, str]:
        """path -> blob id of every indexed file (looked up, not built)."""
        return BlobOf(self.space)

    @property
    def commit(self) -> str:
        return str(self.manifest["commit"])

    def __len__(self) -> int:
        if self._overlay is None:
            return int(self.manifest["counts"]["chunks"])
        return self.space.n_rows

    @cached_property
    def _records(self) -> OrderedDict[int, Chunk]:
        """Recently decoded records without text (a search reads its results' records more
        than once: folding split definitions, then the results)."""
        return OrderedDict()

    @corrupt_as_error
    def chunk_at(self, row: int, with_text: bool = True) -> Chunk:
        if not with_text and row in self._records:
            self._records.move_to_end(row)
            return self._records[row]
        segment, local = self.space.locate(row)
        line = segment.meta_bytes(local, local + 1)
        if not with_text:  # the metadata's own digest: no text to decompress
            if meta_sum(line) != int(segment.row_meta_sums[local]):
                raise CorruptIndexError(f"chunk {row} of the index is damaged; {REBUILD}")
            chunk = self._records[row] = Chunk.from_record(line, "")
            if len(self._records) > RECORD_CACHE:
                self._records.popitem(last=False)
            return chunk
        raw = segment.text_bytes(local, local + 1)
        check_chunk(segment.row_sums, local, line, raw)  # never serve damaged text or metadata
        return Chunk.from_record(line, raw.decode("utf-8"))

    def row_of(self, chunk_id: str) -> int:
        if not re.fullmatch(r"[0-9a-f]{16}", chunk_id):
            raise IndexerError(f"not a chunk id: {chunk_id!r} (expected 16 hex digits)")
        from .dense import faiss_id

        sorted_fids, order = self._fid_lookup
        fid = faiss_id(chunk_id)
        pos = int(np.searchsorted(sorted_fids, fid))
        if pos >= len(sorted_fids) or sorted_fids[pos] != fid:
            raise IndexerError(f"no chunk with id {chunk_id} in the index")
        return int(order[pos])

    @cached_property
    def graph(self) -> CodeGraph:
        """The whole code graph, resolved from the live files' facts (ranking signals, export;
        `related` resolves only what it asks: indexer/index/graph/related.py)."""
        from .graph.codegraph import CodeGraph
        from .graph.related import facts_view

        return CodeGraph.from_view(facts_view(self))

    def graph_segments(self) -> list[tuple[Path | list[FileGraph], set[str]]]:
        """Where the code-graph facts of the live files are: each segment's directory (an
        in-memory segment: its facts) and the paths it no longer serves."""
        return self.space.graph_segments()

    def close(self) -> None:
        """Release the memory maps and loaded arrays (the index can be reopened)."""
        for segment, _ in self._parts:
            segment.close()
        for name in (
            *("space", "lexical", "dense", "graph", "_graph_query", "_fids", "_fid_lookup"),
            "_records",
            "row_columns",
        ):
            self.__dict__.pop(name, None)
