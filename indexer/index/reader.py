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

import bisect
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import CorruptIndexError
from .columns import Chain, LazySequence, RowText
from .integrity import REBUILD
from .segment import Segment
from .store import read_generation, segment_dir

if TYPE_CHECKING:
    from .graph.model import FileGraph
    from .segment_data import SegmentData


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
        self.concatenated = self.identity
        if self.identity:  # one segment, nothing deleted: its own order, nothing to compute
            only = self.segments[0]
            self.paths: Sequence[str] = only.paths
            self.file_seg = np.zeros(only.n_files, dtype=np.int64)
            self.file_local = np.arange(only.n_files, dtype=np.int64)
            self.n_rows, self.n_files = only.n_rows, only.n_files
            self.file_starts = np.asarray(only.file_rows, dtype=np.int64)
            return
        self.concatenated = _in_path_order(parts)
        if self.concatenated:  # segments of one streamed build: row order is theirs end to end
            n_files = [s.n_files for s in self.segments]
            self.paths = Chain([s.paths for s in self.segments])
            self.file_seg = np.repeat(np.arange(len(n_files), dtype=np.int64), n_files)
            self.file_local = np.concatenate(
                [np.arange(n, dtype=np.int64) for n in n_files] + [np.zeros(0, np.int64)]
            )
            self.n_rows, self.n_files = int(self.seg_offsets[-1]), sum(n_files)
            begins = [
                np.asarray(s.file_rows[:-1], dtype=np.int64) + off
                for s, off in zip(self.segments, self.seg_offsets.tolist(), strict=False)
            ]
            self.file_starts = np.concatenate([*begins, [self.n_rows]]).astype(np.int64)
            return
        # Global files in path order: (segment, local file) of each.
        empty = [np.zeros(0, dtype=np.int64)]
        seg_of = np.concatenate(
            [np.full(len(f), i, dtype=np.int64) for i, f in enumerate(live_files)] + empty
        )
        local = np.concatenate([*live_files, *empty]).astype(np.int64)
        paths = [
            self.segments[s].paths[f] for s, f in zip(seg_of.tolist(), local.tolist(), strict=True)
        ]
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
        self._starts = starts

    @cached_property
    def global_to_cat(self) -> np.ndarray:
        """Global row -> row of the segments laid end to end."""
        if self.concatenated:
            return np.arange(self.n_rows, dtype=np.int64)
        lengths = np.diff(self.file_starts)
        return np.repeat(self._starts - self.file_starts[:-1], lengths) + np.arange(
            self.n_rows, dtype=np.int64
        )

    @cached_property
    def cat_to_global(self) -> np.ndarray:
        """Row of the segments laid end to end -> global row (-1: not live)."""
        if self.concatenated:
            return np.arange(self.n_rows, dtype=np.int64)
        out = np.full(int(self.seg_offsets[-1]), -1, dtype=np.int64)
        out[self.global_to_cat] = np.arange(self.n_rows, dtype=np.int64)
        return out

    @cached_property
    def chunk_file(self) -> np.ndarray:
        if self.identity:
            return np.asarray(self.segments[0].chunk_file, dtype=np.int32)
        if self.concatenated:
            first = np.cumsum([0] + [s.n_files for s in self.segments])[:-1]
            parts = [
                np.asarray(s.chunk_file, dtype=np.int32) + int(f)
                for s, f in zip(self.segments, first.tolist(), strict=True)
            ]
            for s in self.segments:  # what they need of it is their file bounds
                if s.directory is not None and s.file_rows is not None:
                    s.__dict__.pop("chunk_file", None)
            return np.concatenate([*parts, np.zeros(0, np.int32)]).astype(np.int32)
        lengths = np.diff(self.file_starts)
        return np.repeat(np.arange(self.n_files, dtype=np.int32), lengths)

    # -- columns in global row order -------------------------------------------------------------
    def gather(self, column: str, keep: bool = True) -> np.ndarray:
        """A per-row array of every segment (`fids`, `flags`, `doc_lengths`, ...) in row order;
        without `keep`, the stored segments do not keep theirs (read once, for a table made
        from it)."""
        if not self.segments:
            return np.zeros(0, dtype=np.int64)
        parts = [np.asarray(getattr(s, column)) for s in self.segments]
        if not keep:
            for s in self.segments:
                if s.directory is not None:
                    s.__dict__.pop(column, None)  # a cached_property: read again if asked
        if self.identity:
            return parts[0]
        whole = np.concatenate(parts)
        if self.concatenated:
            return whole
        out: np.ndarray = whole[self.global_to_cat]
        return out

    def gather_list(self, column: str) -> RowText:
        """A per-row text column (`symbols`, `kinds`, `defines`) in row order, read where
        asked: nothing decoded at open, nothing kept."""
        parts = [getattr(s, column) for s in self.segments]
        to_cat = None if self.concatenated else self.global_to_cat
        return RowText(parts, self.seg_offsets.tolist(), to_cat)

    def local_to_global(self, i: int) -> np.ndarray | None:
        """Global row of each row of segment i (-1: deleted), or None where it is the identity."""
        if self.identity:
            return None
        found = self.row_map(i)
        if isinstance(found, np.ndarray):
            return found
        return np.arange(found, found + self.segments[i].n_rows)

    def row_map(self, i: int) -> np.ndarray | int:
        """Segment i's local -> global rows: an offset where they are its rows shifted (no
        array held for a fresh build's segments), else local_to_global's array."""
        if self.identity or self.concatenated:
            return int(self.seg_offsets[i])
        return self.cat_to_global[self.seg_offsets[i] : self.seg_offsets[i + 1]]

    def locate(self, row: int) -> tuple[Segment, int]:
        if self.identity:
            return self.segments[0], row
        cat = row if self.concatenated else int(self.global_to_cat[row])
        starts = self._seg_starts
        i = bisect.bisect_right(starts, cat) - 1
        return self.segments[i], cat - starts[i]

    @cached_property
    def _seg_starts(self) -> list[int]:
        """Where each segment starts in the segments laid end to end (a list: `locate` runs for
        every chunk a search reads, and numpy scalars cost more than the lookup)."""
        starts: list[int] = self.seg_offsets.tolist()
        return starts

    @cached_property
    def files(self) -> FileRecords:
        """Per-file records in path order: path, blob, time, language (+ redacted, fallback),
        each made when asked (a search reads those of its candidates' files only)."""
        return FileRecords(self)

    @cached_property
    def file_times(self) -> np.ndarray:
        """int64 last-change time of every file, in path order."""
        if self.identity:
            return np.asarray(self.segments[0].times, dtype=np.int64)
        firsts = np.zeros(len(self.segments) + 1, dtype=np.int64)
        np.cumsum([s.n_files for s in self.segments], out=firsts[1:])
        every = np.concatenate([np.asarray(s.times, dtype=np.int64) for s in self.segments])
        times: np.ndarray = every[firsts[self.file_seg] + self.file_local]
        return times

    def file_record(self, f: int) -> dict[str, Any]:
        segment, local = self.segments[int(self.file_seg[f])], int(self.file_local[f])
        path = self.paths[f]
        record: dict[str, Any] = {
            "path": path,
            "blob": segment.blobs[local],
            "time": int(segment.times[local]),
            "language": segment.languages[local],
        }
        record.update(segment.extras.get(path, {}))
        return record

    def top_directories(self) -> set[str]:
        """Each file's top directory (`src/<name>` and `lib/<name>` count as `<name>`). The
        paths are sorted: one bisection passes every file of a directory (a few steps where a
        regular expression over 10k paths took ~5 ms)."""
        paths, out, i = self.paths, set(), 0
        while i < len(paths):
            top, sep, rest = paths[i].partition("/")
            if not sep:  # a file at the root: no directory
                i += 1
                continue
            name, prefix = top, top
            if top in ("src", "lib"):
                second, nested, _ = rest.partition("/")
                if not nested:  # `src/x.py` names `src`
                    out.add(top)
                    i += 1
                    continue
                name, prefix = second, f"{top}/{second}"
            out.add(name)
            # every `<prefix>/...` sorts before `<prefix>0` ("0" follows "/")
            i = bisect.bisect_left(paths, prefix + "0", lo=i)
        return out

    def file_of_path(self, path: str) -> int | None:
        """The file index of `path` (paths are sorted), or None."""
        i = bisect.bisect_left(self.paths, path)
        return i if i < len(self.paths) and self.paths[i] == path else None

    @cached_property
    def dead_rows(self) -> list[int]:
        """Rows of each segment that are not live (deleted or masked)."""
        if self.concatenated:
            return [0] * len(self.segments)
        return [
            int((self.cat_to_global[a:b] < 0).sum())
            for a, b in zip(
                self.seg_offsets[:-1].tolist(), self.seg_offsets[1:].tolist(), strict=True
            )
        ]

    def graph_segments(self) -> list[tuple[Path | list[FileGraph], set[str]]]:
        """Each segment's graph facts (its directory; an in-memory segment: its facts) and the
        paths it no longer serves, older first: what indexer/index/graph reads."""
        from .graph.model import FileGraph

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


def _in_path_order(parts: Sequence[tuple[Segment, Iterable[str]]]) -> bool:
    """Segments with nothing deleted whose files follow each other in path order (what a
    streamed build writes): the global order is theirs end to end, nothing to sort or map."""
    last = None
    for segment, deleted in parts:
        if any(True for _ in deleted):
            return False
        if segment.n_files == 0:
            continue
        first = segment.paths[0]
        if last is not None and not last < first:
            return False
        last = segment.paths[segment.n_files - 1]
    return True


class FileRecords(LazySequence[dict[str, Any]]):
    """`space.files[f]`: the record of file f, made when asked (cached)."""

    def __init__(self, space: RowSpace) -> None:
        self.space = space
        self._made: dict[int, dict[str, Any]] = {}

    def __len__(self) -> int:
        return self.space.n_files

    def _item(self, f: int) -> dict[str, Any]:
        record = self._made.get(f)
        if record is None:
            record = self._made[f] = self.space.file_record(f)
        return record


class BlobOf(Mapping[str, str]):
    """path -> blob id of every live file, looked up by bisection (nothing built at open)."""

    def __init__(self, space: RowSpace) -> None:
        self.space = space

    def __getitem__(self, path: str) -> str:
        f = self.space.file_of_path(path)
        if f is None:
            raise KeyError(path)
        segment = self.space.segments[int(self.space.file_seg[f])]
        return segment.blobs[int(self.space.file_local[f])]

    def __iter__(self) -> Iterator[str]:
        return iter(self.space.paths)

    def __len__(self) -> int:
        return self.space.n_files


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
