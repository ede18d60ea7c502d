"""The build's segments, written while the workers still run: memory bounded by a segment.

Workers' results arrive file by file in path order (cluster.py). The main process keeps them
only until they hold `segment_chunks` chunks, then assembles and writes that segment (writer.py)
and lets the rows go: the build's memory is bounded by the segment size, not by the repository,
and writing a segment overlaps the workers' parsing of the next files. The segments stay
temporary directories (invisible to garbage collection and to readers) until the build
publishes its generation; a killed build leaves the previous generation live. The boundaries
depend only on the files and their chunk counts, so a local build and a Dask build write the
same segments, byte for byte. Search over them equals search over one segment (the reader's row
space is path-ordered whatever the segments: indexer/index/reader.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..errors import IndexerError, env_whole_number
from .dense import Codec
from .store import SEGMENTS, SegmentWriter, new_name
from .vectors import StaticVectors
from .workers import fixed_heap, release_memory
from .writer import BuiltFile, CopiedFile, FreshFile, assemble, table_codec

# ~2.5 KiB of main-process memory per chunk waiting for its segment, about twice that while the
# segment is assembled (a 163k-chunk build's main process peaks at 792 MB as one segment, 411 MB
# at 64k chunks, 214 MiB at 16k; the wall is the same). A query reads each of its terms' postings
# once per segment, and one segment stores its BM25 scores precomputed, so fewer, larger segments
# answer faster: a repository under 256k chunks is one segment (163k chunks in one segment against
# three: issue texts -18 %, questions -7 %, identifiers -6 to -9 %; docs/benchmarks.md).
DEFAULT_SEGMENT_CHUNKS = 1 << 18
SEGMENT_CHUNKS_ENV = "INDEXER_SEGMENT_CHUNKS"


def chunks_per_segment(value: int | None = None) -> int:
    """The chunks a build puts in one segment: `value`, else $INDEXER_SEGMENT_CHUNKS, else the
    default."""
    if value is None:
        value = env_whole_number(SEGMENT_CHUNKS_ENV, DEFAULT_SEGMENT_CHUNKS)
    if value < 1:
        raise IndexerError(f"the segment size must be at least 1 chunk, not {value}")
    return value


class SegmentStream:
    """Collects finished files and writes a segment each time they hold `limit` chunks."""

    def __init__(
        self, index_dir: Path, table: StaticVectors, ranges: Codec | None, limit: int
    ) -> None:
        self.index_dir, self.table, self.limit = index_dir, table, limit
        fixed_heap()  # the collector allocates and frees a segment's arrays again and again
        self.ranges = table_codec(table) if ranges is None else ranges
        self.pending: list[BuiltFile] = []
        self.pending_chunks = 0
        self.writers: list[SegmentWriter] = []
        self.paths: set[str] = set()  # every file written so far

    def add(self, f: BuiltFile) -> None:
        # Each batch of results arrives with its own copies of the terms and kinds every file
        # shares: one copy of each while the segment waits.
        f.result.terms = list(map(sys.intern, f.result.terms))
        f.result.kinds = list(map(sys.intern, f.result.kinds))
        self.pending.append(f)
        self.pending_chunks += f.result.n_chunks
        if self.pending_chunks >= self.limit:
            self.flush()

    def flush(
        self,
        others: list[FreshFile | CopiedFile] | None = None,
        facts: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        """Write the pending files (and `others`, with their graph `facts`) as one segment."""
        files: list[FreshFile | CopiedFile | BuiltFile] = [*self.pending, *(others or [])]
        if not files:
            return
        data = assemble(files, self.table, facts or {}, self.ranges)
        self.pending, self.pending_chunks = [], 0
        del files
        writer = SegmentWriter(self.index_dir)
        self.writers.append(writer)
        data.save(writer.path)
        self.paths.update(data.paths)
        del data
        release_memory()

    def finish(self, commit: str) -> tuple[list[str], int]:
        """Rename the written segments into place: (their names, bytes written)."""
        names, written = [], 0
        for writer in self.writers:
            name = new_name(commit)
            writer.finish(name)
            names.append(name)
            written += sum(p.stat().st_size for p in (self.index_dir / SEGMENTS / name).iterdir())
        self.writers = []
        return names, written

    def abort(self) -> None:
        for writer in self.writers:
            writer.abort()
        self.writers = []
