"""The reader: N segments seen as one index, exactly as a full build would lay it out.

The global row space holds the LIVE rows only, files in path order and each file's rows in chunk
order, whatever segment they sit in: a row is a position in that order, so an incremental index
(several segments, some files deleted from older ones) has the very arrays a full build has, and
every tie broken by row is broken by (path, position in file), never by segment order.

`RowSpace(parts)` takes (segment, paths it no longer serves) pairs: the generation's segments
with their deletes, plus any in-memory segment (`Segment.of(SegmentData)`) and paths masked in
every other segment (the working-tree overlay of issue 13, see docs/freshness.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CorruptIndexError
from .dense import CodeScan, DenseIndex, decode
from .graph.model import FileGraph
from .segment import REBUILD, Segment, SegmentData
from .store import read_generation, segment_dir


class RowSpace:
    def __init__(self, parts: Sequence[tuple[Segment, Iterable[str]]]) -> None:
        self.segments = [segment for segment, _ in parts]
        sizes = [s.n_rows for s in self.segments]
        self.seg_offsets = np.zeros(len(sizes) + 1, dtype=np.int64)  # "cat": segments end to end
        np.cumsum(sizes, out=self.seg_offsets[1:])
        live_files: list[np.ndarray] = []
        self.deleted: list[set[str]] = []
        for segment, deleted in parts:
            gone = set(deleted)
            self.deleted.append(gone)
            keep = [i for i, p in enumerate(segment.paths) if p not in gone] if gone else None
            live_files.append(
                np.arange(segment.n_files) if keep is None else np.asarray(keep, dtype=np.int64)
            )
        self.identity = len(parts) == 1 and len(live_files[0]) == self.segments[0].n_files
        # Global files in path order: (segment, local file) of each.
        empty = [np.zeros(0, dtype=np.int64)]
        seg_of = np.concatenate(
            [np.full(len(f), i, dtype=np.int64) for i, f in enumerate(live_files)] + empty
        )
        local = np.concatenate([*live_files, *empty]).astype(np.int64)
        paths = [
            self.segments[s].paths[f] for s, f in zip(seg_of.tolist(), local.tolist(), strict=True)
        ]
        if not self.identity:
            order = np.asarray(sorted(range(len(paths)), key=paths.__getitem__), dtype=np.int64)
            seg_of, local = seg_of[order], local[order]
            paths = [paths[i] for i in order.tolist()]
            if any(paths[i] == paths[i + 1] for i in range(len(paths) - 1)):
                raise CorruptIndexError(f"two live segments serve the same file; {REBUILD}")
        self.paths = paths
        self.file_seg, self.file_local = seg_of, local
        starts = np.zeros(len(paths), dtype=np.int64)
        lengths = np.zeros(len(paths), dtype=np.int64)
        for i, segment in enumerate(self.segments):
            mine = seg_of == i
            bounds = segment.file_rows
            starts[mine] = self.seg_offsets[i] + bounds[local[mine]]
            lengths[mine] = bounds[local[mine] + 1] - bounds[local[mine]]
        self.n_rows = int(lengths.sum())
        self.n_files = len(paths)
        self.file_starts = np.zeros(len(paths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.file_starts[1:])
        # global row -> cat row, and back (-1: not live)
        self.global_to_cat = np.repeat(starts - self.file_starts[:-1], lengths) + np.arange(
            self.n_rows, dtype=np.int64
        )
        self.cat_to_global = np.full(int(self.seg_offsets[-1]), -1, dtype=np.int64)
        self.cat_to_global[self.global_to_cat] = np.arange(self.n_rows, dtype=np.int64)
        self.chunk_file = np.repeat(np.arange(len(paths), dtype=np.int32), lengths)

    # -- columns in global row order -------------------------------------------------------------
    def gather(self, column: str) -> np.ndarray:
        """A per-row array of every segment (`fids`, `flags`, `doc_lengths`, ...) in row order."""
        if self.identity:
            return np.asarray(getattr(self.segments[0], column))
        if not self.segments:
            return np.zeros(0, dtype=np.int64)
        whole = np.concatenate([np.asarray(getattr(s, column)) for s in self.segments])
        return whole[self.global_to_cat]

    def gather_list(self, column: str) -> list[str]:
        if self.identity:
            return list(getattr(self.segments[0], column))
        whole: list[str] = []
        for s in self.segments:
            whole.extend(getattr(s, column))
        return [whole[i] for i in self.global_to_cat.tolist()]

    def local_to_global(self, i: int) -> np.ndarray | None:
        """Global row of each row of segment i (-1: deleted), or None where it is the identity."""
        if self.identity:
            return None
        return self.cat_to_global[self.seg_offsets[i] : self.seg_offsets[i + 1]]

    def locate(self, row: int) -> tuple[Segment, int]:
        cat = int(self.global_to_cat[row])
        i = int(np.searchsorted(self.seg_offsets, cat, side="right")) - 1
        return self.segments[i], cat - int(self.seg_offsets[i])

    @cached_property
    def files(self) -> list[dict[str, Any]]:
        """Per-file records in path order: path, blob, time, language (+ redacted, fallback)."""
        out = []
        for path, s, f in zip(
            self.paths, self.file_seg.tolist(), self.file_local.tolist(), strict=True
        ):
            segment = self.segments[s]
            record: dict[str, Any] = {
                "path": path,
                "blob": segment.blobs[f],
                "time": int(segment.times[f]),
                "language": segment.languages[f],
            }
            record.update(segment.extras.get(path, {}))
            out.append(record)
        return out

    @cached_property
    def dead_rows(self) -> list[int]:
        """Rows of each segment that are not live (deleted or masked)."""
        if self.identity:
            return [0]
        return [
            int((self.cat_to_global[a:b] < 0).sum())
            for a, b in zip(
                self.seg_offsets[:-1].tolist(), self.seg_offsets[1:].tolist(), strict=True
            )
        ]

    def graph_segments(self) -> list[tuple[Path | list[FileGraph], set[str]]]:
        """Each segment's graph facts (its directory; an in-memory segment: its facts) and the
        paths it no longer serves, older first: what indexer/index/graph reads."""
        out: list[tuple[Path | list[FileGraph], set[str]]] = []
        for segment, deleted in zip(self.segments, self.deleted, strict=True):
            if segment.directory is not None:
                out.append((segment.directory, deleted))
            else:
                facts = segment.graph_facts.items()
                out.append(([FileGraph.from_dict(p, d) for p, d in facts], deleted))
        return out

    def graph_facts(self) -> dict[str, dict[str, Any]]:
        """path -> stored graph facts of every live file."""
        out: dict[str, dict[str, Any]] = {}
        for path, s in zip(self.paths, self.file_seg.tolist(), strict=True):
            fact = self.segments[s].graph_facts.get(path)
            if fact is not None:
                out[path] = fact
        return out


class DenseView:
    """One FAISS scan over the codes of every live row, laid out in global row order when the
    view is first searched: the cost of a query does not depend on the number of segments, and
    deleted or masked rows are simply absent. Results are ordered by (similarity, row), so ties
    do not depend on segment order."""

    def __init__(self, space: RowSpace, whole: DenseIndex | None = None) -> None:
        self.space = space
        self.whole = whole  # codes of every row of `space` in row order (a table swapped in)

    @cached_property
    def ranges(self) -> np.ndarray:
        dense = [self.whole] if self.whole is not None else [s.dense for s in self.space.segments]
        if not dense:
            return np.zeros(0, dtype=np.float32)
        if any(not np.array_equal(d.ranges, dense[0].ranges) for d in dense[1:]):
            raise CorruptIndexError(f"segments of one index have different vector codes; {REBUILD}")
        return dense[0].ranges

    @cached_property
    def _scan(self) -> CodeScan:
        space = self.space

        def fill() -> Iterator[tuple[Any, np.ndarray]]:
            if self.whole is not None:
                for start, codes in self.whole.blocks():
                    yield slice(start, start + len(codes)), codes
                return
            for i, segment in enumerate(space.segments):
                to_global = space.local_to_global(i)
                for start, codes in segment.dense.blocks():
                    if to_global is None:
                        yield slice(start, start + len(codes)), codes
                    else:
                        rows = to_global[start : start + len(codes)]
                        live = rows >= 0
                        yield rows[live], codes[live]

        return CodeScan(space.n_rows, self.ranges, fill())

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(similarities, global rows) of the k nearest live rows, best first."""
        if self.space.n_rows == 0 or k <= 0:
            return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.int64)
        sims, rows = self._scan.search(query, k)
        valid = rows >= 0
        sims, rows = sims[valid], rows[valid].astype(np.int64)
        order = np.lexsort((rows, -sims))
        return sims[order], rows[order]

    def reconstruct(self, rows: np.ndarray) -> np.ndarray:
        """Stored (decoded) vectors of global rows."""
        return decode(self._scan.codes[np.asarray(rows, dtype=np.int64)], self.ranges)


def open_generation(
    path: Path, verify: bool = False
) -> tuple[dict[str, Any], list[tuple[Segment, list[str]]]]:
    """The generation manifest (with `files`: every segment file's size and digest, keyed
    `segment/file`) and its segments, each opened with its cheap checks (all with `verify`)."""
    manifest = read_generation(path)
    parts: list[tuple[Segment, list[str]]] = []
    files: dict[str, Any] = {}
    for entry in manifest["segments"]:
        segment = Segment.open(segment_dir(path, entry["name"]), verify)
        deleted = entry.get("deleted", [])
        if not isinstance(deleted, list):
            raise CorruptIndexError(f"index manifest {path} is damaged; {REBUILD}")
        parts.append((segment, deleted))
        for name, info in segment.manifest["artifacts"].items():
            files[f"{segment.name}/{name}"] = info
    return {**manifest, "files": files}, parts


def open_space(
    parts: list[tuple[Segment, list[str]]],
    overlay: tuple[SegmentData | None, Iterable[str]] | None = None,
) -> RowSpace:
    if overlay is None:
        return RowSpace(parts)
    data, masked = overlay
    hidden = set(masked) | set(data.paths if data is not None else ())
    merged: list[tuple[Segment, Iterable[str]]] = [(s, hidden.union(d)) for s, d in parts]
    if data is not None:
        merged.append((Segment.of(data, "overlay"), ()))
    return RowSpace(merged)
