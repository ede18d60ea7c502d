"""Per-file graph facts on disk, one set per segment (fact_view.py reads several as one).

A segment directory holds, for the files it serves (sorted by path):
- `graph_facts.json`: format, paths and languages (one entry per file);
- `graph_facts_z.bin` + `graph_facts_offsets.npy`: one zlib block per file (its facts as JSON,
  then a tab and its call sites as JSON), so a reader inflates and decodes only the files a
  question touches (and resolution, which never reads call sites, parses only the first part);
  JSON facts compress ~6x, and uncompressed they were a quarter of the index;
- `graph_facts_keys.npy` (int64, sorted) + `graph_facts_values.npy` (int32: file row << 2 | kind):
  the name index, 64-bit hashes of "tag\\0name" -> the files that define (d: short name,
  q: qualname, k: chunk id), call (c), import (i) a name or import it under another name (a),
  name a base class (b: its last component), or import a module they call (m: a path component)
  or a Go/Java package (g: its last component). Resolution looks names up here instead of
  scanning the repository.
Nothing is pickled; the arrays are memory-mapped.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import zlib
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import CorruptIndexError
from .. import npy
from .fact_files import (
    FACTS_KEYS,
    FACTS_LINES,
    FACTS_META,
    FACTS_OFFSETS,
    FACTS_VALUES,
)
from .model import JS_LANGUAGES, FileGraph, short_name
from .name_keys import name_key

FACTS_VERSION = 2
FACTS_LEVEL = 6  # zlib level of a file's block (canonical: every writer uses it)
KIND_CODES = {"function": 1, "method": 2, "class": 3}
KIND_NAMES = {v: k for k, v in KIND_CODES.items()}


def _components(text: str) -> list[str]:
    return [p for p in re.split(r"[/.\\]", text) if p]


def file_keys(fg: FileGraph) -> list[tuple[int, int]]:
    """(key, kind code) of one file's name-index entries; one `d` entry per definition."""
    out = [(name_key("d", short_name(s[1])), KIND_CODES.get(s[2], 0)) for s in fg.symbols]
    names: set[tuple[str, str]] = set()
    for sym in fg.symbols:
        names.add(("q", sym[1]))
        names.update(("k", cid) for cid in sym[5])
    bare = set()
    for _, name, recv, _ in fg.calls:
        names.add(("c", name))
        if recv == "":
            bare.add(name)
    for _, base in fg.bases:
        names.add(("b", base.split("<", 1)[0].split("[", 1)[0].rsplit(".", 1)[-1]))
    for spec, name, alias in fg.imports:
        if name not in ("", "*"):
            names.add(("i", name))
            if (alias or name) != name:
                names.add(("a", name))  # imported under another name
        if fg.language in ("go", "java"):
            tail = spec.rsplit("/" if fg.language == "go" else ".", 1)[-1]
            names.add(("g", tail))
        elif fg.language == "python" or (fg.language in JS_LANGUAGES and name == ""):
            # an import that may bind a module the file then calls by its bare name
            bound = alias or (spec.split(".", 1)[0] if name == "" else name)
            if bound in bare:
                parts = _components(spec) + ([name] if name not in ("", "*") else [])
                names.update(("m", p) for p in parts or ["*"])
    out.extend((name_key(tag, name), 0) for tag, name in sorted(names))
    return out


def module_tokens(path: str) -> list[str]:
    """The `m` names under which an import of the file at `path` is indexed."""
    return [*_components(path), "*"]


@dataclass
class EncodedFacts:
    """One file's facts as a segment stores them: its compressed block and its name-index
    entries. A build worker encodes them, so the main process only concatenates."""

    path: str
    language: str
    line: bytes  # the file's line as its stored zlib block
    keys: np.ndarray  # int64 name keys
    kinds: np.ndarray  # int32 kind codes


def encode_facts(fg: FileGraph) -> EncodedFacts:
    entries = file_keys(fg)
    return EncodedFacts(
        fg.path,
        fg.language,
        zlib.compress(_line(fg), FACTS_LEVEL),
        np.fromiter((k for k, _ in entries), dtype=np.int64, count=len(entries)),
        np.fromiter((c for _, c in entries), dtype=np.int32, count=len(entries)),
    )


def write_facts(
    segment_dir: Path, facts: Iterable[FileGraph], encoded: Iterable[EncodedFacts] = ()
) -> None:
    """Write the facts of a segment's files into `segment_dir` (a directory being built):
    `facts` are encoded here, `encoded` were encoded by the build's workers."""
    files = sorted([*map(encode_facts, facts), *encoded], key=lambda e: e.path)
    empty = [np.zeros(0, dtype=np.int64)]
    keys = np.concatenate([e.keys for e in files] + empty)
    rows = np.concatenate(
        [np.full(len(e.kinds), row, dtype=np.int64) for row, e in enumerate(files)] + empty
    )
    kinds = np.concatenate([e.kinds.astype(np.int64) for e in files] + empty)
    values = ((rows << 2) | kinds).astype(np.int32)
    _write(
        segment_dir,
        [e.path for e in files],
        [e.language for e in files],
        [e.line for e in files],
        keys,
        values,
    )


def _line(fg: FileGraph) -> bytes:
    """The file's facts, its call sites apart (after a tab) so resolution decodes only the rest."""
    head = fg.to_dict()
    calls = head.pop("calls")
    return b"%s\t%s\n" % (_json(head), _json(calls))


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _write(
    directory: Path,
    paths: list[str],
    languages: list[str],
    lines: Sequence[bytes],
    keys: np.ndarray,
    values: np.ndarray,
) -> None:
    meta = {"version": FACTS_VERSION, "paths": paths, "languages": languages}
    (directory / FACTS_META).write_text(
        json.dumps(meta, ensure_ascii=False, separators=(",", ":")), encoding="utf-8"
    )
    with (directory / FACTS_LINES).open("wb") as fh:
        fh.writelines(lines)
    offsets = np.zeros(len(lines) + 1, dtype=np.int64)
    np.cumsum([len(line) for line in lines], out=offsets[1:])
    np.save(directory / FACTS_OFFSETS, offsets)
    order = np.lexsort((values, keys))  # canonical: an update writes what a full build writes
    np.save(directory / FACTS_KEYS, keys[order])
    np.save(directory / FACTS_VALUES, values[order])


class FactsSegment:
    """The facts one segment directory holds (read lazily; arrays memory-mapped)."""

    def __init__(self, directory: Path, deleted: Collection[str] = ()) -> None:
        self.directory = directory
        try:
            meta = json.loads((directory / FACTS_META).read_text(encoding="utf-8"))
            self.offsets = npy.load(directory / FACTS_OFFSETS, "r")
            self.keys = npy.load(directory / FACTS_KEYS, "r")
            self.values = npy.load(directory / FACTS_VALUES, "r")
        except (OSError, ValueError) as exc:
            raise CorruptIndexError(f"unreadable graph facts in {directory}") from exc
        if not isinstance(meta, dict) or meta.get("version") != FACTS_VERSION:
            raise CorruptIndexError(f"graph facts of an unknown format in {directory}")
        self.paths: list[str] = meta["paths"]
        self.languages: list[str] = meta["languages"]
        if len(self.offsets) != len(self.paths) + 1 or len(self.keys) != len(self.values):
            raise CorruptIndexError(f"graph facts in {directory} do not match their files")
        gone = set(deleted)
        self.live = [p not in gone for p in self.paths]
        self._lines: Any = None
        self._last: tuple[int, bytes] = (-1, b"")  # the row last inflated

    def _stored(self, row: int) -> bytes:
        """The file's line as stored: one zlib block."""
        if self._lines is None:
            with (self.directory / FACTS_LINES).open("rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                self._lines = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        return bytes(self._lines[int(self.offsets[row]) : int(self.offsets[row + 1])])

    def encoded(self, paths: Collection[str]) -> list[EncodedFacts]:
        """The facts of those of `paths` the segment holds, as a build's workers hand them over
        (each file's block as stored, its name-index entries): a merge copies them without
        decoding them (decoded, a 163k-chunk merge's facts took 343 MB). The blocks are zlib's
        canonical output for the same line, so the merged segment is a full build's."""
        rows = [row for row, path in enumerate(self.paths) if path in paths]
        values = np.asarray(self.values, dtype=np.int64)
        order = np.argsort(values >> 2, kind="stable")  # the entries file by file
        bounds = np.searchsorted((values >> 2)[order], np.arange(len(self.paths) + 1))
        keys = np.asarray(self.keys)
        out = []
        for row in rows:
            mine = order[bounds[row] : bounds[row + 1]]
            kinds = (values[mine] & 3).astype(np.int32)
            line = self._stored(row)
            out.append(EncodedFacts(self.paths[row], self.languages[row], line, keys[mine], kinds))
        return out

    def raw(self, row: int) -> bytes:
        if self._last[0] != row:  # `related` reads a file's facts, then its call sites
            block = self._stored(row)
            try:
                self._last = (row, zlib.decompress(block))
            except zlib.error as exc:
                raise CorruptIndexError(f"unreadable graph facts in {self.directory}") from exc
        return self._last[1]

    def file(self, row: int, calls: bool = True) -> FileGraph:
        """A file's facts; without `calls`, its call sites are left out (not decoded)."""
        head, _, rest = self.raw(row).partition(b"\t")
        try:
            raw = json.loads(head)
            raw["calls"] = json.loads(rest) if calls else []
            return FileGraph.from_dict(self.paths[row], raw)
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptIndexError(f"unreadable graph facts in {self.directory}") from exc

    def calls_named(self, row: int, names: Collection[str]) -> list[list[Any]]:
        """The file's call sites whose called name is one of `names`, in order, found in the
        stored JSON without decoding the others (a caller search reads many files for few
        calls). A call site is `["caller","name","recv",line]`: a raw quote never occurs inside
        a JSON string, so `,"name",` is the name (or the receiver: checked after decoding), the
        last `["` before it starts the call site, and the first `]` after it (a receiver is a
        dotted identifier) ends it."""
        rest = self.raw(row).partition(b"\t")[2]
        spans: dict[int, int] = {}
        for name in names:
            needle = b",%s," % _json(name)
            pos = rest.find(needle)
            while pos >= 0:
                spans[rest.rfind(b'["', 0, pos)] = rest.find(b"]", pos + len(needle)) + 1
                pos = rest.find(needle, pos + 1)
        try:
            found = [json.loads(rest[start:end]) for start, end in sorted(spans.items())]
        except ValueError as exc:
            raise CorruptIndexError(f"unreadable graph facts in {self.directory}") from exc
        return [call for call in found if call[1] in names]

    def lookup(self, key: int) -> list[tuple[int, int]]:
        """(file row, kind code) of the live entries under `key`."""
        lo = int(np.searchsorted(self.keys, key, "left"))
        hi = int(np.searchsorted(self.keys, key, "right"))
        out = []
        for value in self.values[lo:hi].tolist():
            if self.live[value >> 2]:
                out.append((value >> 2, value & 3))
        return out


class FactsMapping(Mapping[str, dict[str, Any]]):
    """A stored segment's facts as path -> FileGraph.to_dict(), each file decoded when asked
    (an update that carries one file over from an older segment reads one line)."""

    def __init__(self, segment: FactsSegment) -> None:
        self.segment = segment
        self.rows = {p: i for i, p in enumerate(segment.paths)}

    def __getitem__(self, path: str) -> dict[str, Any]:
        return self.segment.file(self.rows[path]).to_dict()

    def __contains__(self, path: object) -> bool:
        return path in self.rows

    def __iter__(self) -> Iterator[str]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


class MemoryFacts:
    """An in-memory segment's facts, answering what FactsSegment answers."""

    def __init__(self, facts: Iterable[FileGraph], deleted: Collection[str] = ()) -> None:
        self.files = sorted(facts, key=lambda fg: fg.path)
        self.paths = [fg.path for fg in self.files]
        self.languages = [fg.language for fg in self.files]
        gone = set(deleted)
        self.live = [p not in gone for p in self.paths]
        self.index: dict[int, list[tuple[int, int]]] = {}
        for row, fg in enumerate(self.files):
            for key, kind in file_keys(fg):
                self.index.setdefault(key, []).append((row, kind))

    def file(self, row: int, calls: bool = True) -> FileGraph:
        return self.files[row]

    def calls_named(self, row: int, names: Collection[str]) -> list[list[Any]]:
        return [c for c in self.files[row].calls if c[1] in names]

    def lookup(self, key: int) -> list[tuple[int, int]]:
        return [(row, kind) for row, kind in self.index.get(key, []) if self.live[row]]


def read_facts(segment_dir: Path, deleted: Collection[str] = ()) -> FactsSegment:
    """The facts of one segment, with `deleted` paths (served by a newer segment) hidden."""
    return FactsSegment(segment_dir, deleted)
