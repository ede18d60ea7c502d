"""Assembling a segment: fresh files (chunked now) and rows copied from other segments.

One function makes every segment (a full build, an update's new segment, a merge), always with
files in path order, each file's rows in chunk order, postings sorted by (term, row) over a sorted
vocabulary, vectors re-encoded with the corpus-independent codec of the vector table (quantizer
ranges and compact-code centroids): a segment merged from others is byte for byte the segment a
full build of the same files writes.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import IndexerError
from ..source.chunks import materialize
from ..source.pathclass import content_flags
from . import dense_pq
from .blobcache import CachedFile
from .dense import Codec, DenseIndex, decode, encode, faiss_id
from .graph.facts import EncodedFacts
from .integrity import chunk_sum, meta_sum
from .segment import Segment
from .segment_data import SegmentData
from .segment_format import TEXT_LEVEL
from .segment_postings import merged_postings, own_scores
from .tokens import path_terms, plus_terms, stem
from .vectors import StaticVectors


@dataclass
class FreshFile:
    """A file chunked for this segment (or taken from a worker's result)."""

    path: str
    blob: str
    language: str
    time: int
    entry: CachedFile


@dataclass
class BuiltFile:
    """A file a build worker finished (pipeline.FileResult): rows, postings and vectors ready."""

    path: str
    time: int
    result: Any  # pipeline.FileResult (pipeline imports this module)


@dataclass
class CopiedFile:
    """A file whose rows are copied from a stored segment (a merge, or a new change time)."""

    path: str
    time: int
    segment: Segment
    local: int  # the file's index in that segment


@dataclass(frozen=True)
class StoredRows:
    """Rows start:end of a stored segment's dense codes, copied as they are where the segment
    to write has the same codec (what decoding and encoding them again gives back)."""

    dense: DenseIndex
    start: int
    end: int

    def vectors(self) -> np.ndarray:
        """fp16 vectors of the rows (another codec: encoded again)."""
        return decode(self.dense.codes[self.start : self.end], self.dense.ranges).astype(np.float16)


@dataclass
class _Parts:
    """The growing columns of the segment being assembled."""

    meta: list[bytes] = field(default_factory=list)
    texts: list[bytes] = field(default_factory=list)  # per file: its raw chunk texts ...
    blocks: list[bytes | None] = field(default_factory=list)  # ... or their zlib block (built)
    meta_lengths: list[np.ndarray] = field(default_factory=list)
    text_lengths: list[np.ndarray] = field(default_factory=list)
    fids: list[np.ndarray] = field(default_factory=list)
    sums: list[np.ndarray] = field(default_factory=list)
    meta_sums: list[np.ndarray] = field(default_factory=list)
    chunk_file: list[np.ndarray] = field(default_factory=list)
    flags: list[np.ndarray] = field(default_factory=list)
    vectors: list[np.ndarray | StoredRows] = field(default_factory=list)  # fp16, or as stored
    symbols: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    defines: list[str] = field(default_factory=list)
    fresh_terms: list[dict[str, int]] = field(default_factory=list)  # term counts per row
    fresh_dense: list[dict[str, int]] = field(default_factory=list)
    fresh_rows: list[int] = field(default_factory=list)
    copied: dict[int, tuple[Segment, list[np.ndarray], list[int]]] = field(default_factory=dict)
    built: list[tuple[int, Any]] = field(default_factory=list)  # (first row, FileResult)


# json.dumps(record, ensure_ascii=False) without a new encoder for every call (a build writes
# one line per chunk): the same bytes.
_META = json.JSONEncoder(ensure_ascii=False)


def meta_line(record: dict[str, Any]) -> bytes:
    """A chunk's line of chunks.jsonl."""
    return _META.encode(record).encode("utf-8") + b"\n"


def path_documents(path: str) -> tuple[list[str], list[str]]:
    """The path's share of every chunk's terms, so `oauth2` finds `security/oauth2.py`."""
    terms = path_terms(path)
    return [stem(t) for t in terms], terms


_TOP_LEVEL_ASSIGNMENT = re.compile(
    r"^(?:export\s+)?(?:(?:pub|const|let|var|static|final|public|private|readonly|type)\s+)*"
    r"([A-Za-z_$][A-Za-z0-9_$]*)\s*(?::[^=\n]{0,80})?=(?!=)",
    re.MULTILINE,
)


def module_definitions(text: str) -> str:
    """Names a module-level block assigns at top level (`TAX_RATE = ...`), space-separated."""
    return " ".join(dict.fromkeys(m.group(1) for m in _TOP_LEVEL_ASSIGNMENT.finditer(text)))


def _add_fresh(parts: _Parts, f: FreshFile, file_index: int, row: int) -> int:
    chunks = materialize(f.entry.records, f.path, f.language, f.blob)
    path_lex, path_dense = path_documents(f.path)
    ids = np.empty(len(chunks), dtype=np.int64)
    texts = []
    for i, c in enumerate(chunks):
        record = c.to_dict()
        text = record.pop("text").encode("utf-8")
        line = meta_line(record)
        parts.meta.append(line)
        texts.append(text)
        parts.sums.append(np.array([chunk_sum(line, text)], dtype=np.int64))
        parts.meta_sums.append(np.array([meta_sum(line)], dtype=np.int64))
        parts.meta_lengths.append(np.array([len(line)], dtype=np.int64))
        parts.text_lengths.append(np.array([len(text)], dtype=np.int64))
        ids[i] = faiss_id(c.id)
        parts.symbols.append(c.symbol)
        parts.kinds.append(c.kind)
        parts.defines.append(module_definitions(c.text) if c.kind in ("module", "cell") else "")
        parts.fresh_terms.append(plus_terms(f.entry.lexical[i], path_lex))
        parts.fresh_dense.append(plus_terms(f.entry.dense[i], path_dense))
        parts.fresh_rows.append(row + i)
    parts.texts.append(b"".join(texts))
    parts.blocks.append(None)
    parts.fids.append(ids)
    flags = content_flags(f.path, "\n".join(r["text"] for r in f.entry.records))
    parts.chunk_file.append(np.full(len(chunks), file_index, dtype=np.int32))
    parts.flags.append(np.full(len(chunks), flags, dtype=np.uint8))
    parts.vectors.append(np.zeros((len(chunks), 0), dtype=np.float16))  # embedded below
    return len(chunks)


def _add_built(parts: _Parts, f: BuiltFile, file_index: int, row: int) -> int:
    r = f.result
    n = int(r.n_chunks)
    parts.meta.append(zlib.decompress(r.meta_z))
    parts.texts.append(b"")
    parts.blocks.append(r.texts_z)
    parts.meta_lengths.append(r.meta_lengths)
    parts.text_lengths.append(r.text_lengths)
    parts.fids.append(r.fids)
    parts.sums.append(r.sums)
    parts.meta_sums.append(r.meta_sums)
    parts.symbols.extend(r.symbols)
    parts.kinds.extend(r.kinds)
    parts.defines.extend(r.defines)
    parts.chunk_file.append(np.full(n, file_index, dtype=np.int32))
    parts.flags.append(np.full(n, r.flags, dtype=np.uint8))
    parts.vectors.append(r.vectors if n else np.zeros((0, 0), dtype=np.float16))
    parts.built.append((row, r))
    return n


def _add_copied(parts: _Parts, f: CopiedFile, file_index: int, row: int) -> int:
    s = f.segment
    start, end = int(s.file_rows[f.local]), int(s.file_rows[f.local + 1])
    n = end - start
    meta_off, text_off = s.offsets
    parts.meta.append(s.meta_bytes(start, end))
    if s.directory is None:  # in memory (a working-tree overlay): raw texts
        parts.texts.append(s.text_bytes(start, end))
        parts.blocks.append(None)
    else:  # the stored block as it is: what compressing the file's texts again would give
        parts.texts.append(b"")
        parts.blocks.append(s.packed_block(f.local, checked=True))
    parts.meta_lengths.append(np.diff(meta_off[start : end + 1]))
    parts.text_lengths.append(np.diff(text_off[start : end + 1]))
    parts.fids.append(np.asarray(s.fids[start:end]))
    parts.sums.append(np.asarray(s.sums[start:end]))
    parts.meta_sums.append(np.asarray(s.meta_sums[start:end]))
    parts.symbols.extend(s.symbols[start:end])
    parts.kinds.extend(s.kinds[start:end])
    parts.defines.extend(s.defines[start:end])
    parts.chunk_file.append(np.full(n, file_index, dtype=np.int32))
    parts.flags.append(np.asarray(s.flags[start:end]))
    parts.vectors.append(StoredRows(s.dense, start, end))
    _, sources, targets = parts.copied.setdefault(id(s), (s, [], []))
    sources.append(np.arange(start, end))
    targets.append(row)
    return n


def stored_ranges(dense: DenseIndex) -> Codec:
    """The codec a stored segment was encoded with (the table's, see dense.py): read back
    instead of computed from the whole table again (~0.1 s)."""
    return dense.codec()


def table_codec(table: StaticVectors) -> Codec:
    if table.pq_centroids is None:
        raise IndexerError(
            "the static vector table has no pq_centroids.npy (the compact dense codes); "
            "make it with scripts/train_dense_codebook.py"
        )
    return Codec(table.quantizer_ranges(), table.pq_centroids)


def assemble(
    files: list[FreshFile | CopiedFile | BuiltFile],
    table: StaticVectors,
    facts: dict[str, dict[str, Any]],
    ranges: Codec | None = None,
    encoded: Sequence[EncodedFacts] = (),
) -> SegmentData:
    """The segment of `files` (sorted here by path); `facts`: graph facts by path, or
    `encoded` as stored (a merge's); `ranges`: the codec of the segments it extends
    (`stored_ranges`; None: the table's)."""
    files = sorted(files, key=lambda f: f.path)
    parts = _Parts()
    paths, blobs, languages, times = [], [], [], []
    extras: dict[str, dict[str, Any]] = {}
    row = 0
    for file_index, f in enumerate(files):
        paths.append(f.path)
        times.append(f.time)
        if isinstance(f, BuiltFile):
            blobs.append(f.result.blob)
            languages.append(f.result.language)
            extra = {"redacted": f.result.redacted, "fallback": f.result.fallback}
            row += _add_built(parts, f, file_index, row)
        elif isinstance(f, FreshFile):
            blobs.append(f.blob)
            languages.append(f.language)
            extra = {"redacted": f.entry.redacted, "fallback": f.entry.fallback}
            row += _add_fresh(parts, f, file_index, row)
        else:
            blobs.append(f.segment.blobs[f.local])
            languages.append(f.segment.languages[f.local])
            extra = dict(f.segment.extras.get(f.path, {}))
            row += _add_copied(parts, f, file_index, row)
        kept = {k: v for k, v in extra.items() if v}
        if kept:
            extras[f.path] = kept
    dense = _dense(parts, table, row, ranges)
    lexical = merged_postings(
        parts.fresh_terms, parts.fresh_rows, parts.built, parts.copied.values(), row
    )

    def offsets(lengths: list[np.ndarray]) -> np.ndarray:
        out = np.zeros(row + 1, dtype=np.int64)
        if lengths:
            np.cumsum(np.concatenate(lengths), out=out[1:])
        return out

    def joined(arrays: list[np.ndarray], dtype: Any) -> np.ndarray:
        return np.concatenate(arrays).astype(dtype) if arrays else np.zeros(0, dtype=dtype)

    # A segment to write keeps its texts compressed, one zlib block a file: a build's as its
    # workers compressed them, a copied file's as its segment stores it (a merge of 163k chunks
    # held every text raw, twice); only the working-tree overlay's, served from memory, are raw.
    packed = _packed_texts(parts) if any(b is not None for b in parts.blocks) else None

    return SegmentData(
        paths=paths,
        blobs=blobs,
        languages=languages,
        times=np.asarray(times, dtype=np.int64),
        extras=extras,
        chunk_file=joined(parts.chunk_file, np.int32),
        flags=joined(parts.flags, np.uint8),
        fids=joined(parts.fids, np.int64),
        sums=joined(parts.sums, np.int64),
        meta_sums=joined(parts.meta_sums, np.int64),
        meta=parts.meta if packed else b"".join(parts.meta),  # to write: not joined
        meta_offsets=offsets(parts.meta_lengths),
        texts=b"" if packed else b"".join(parts.texts),
        text_offsets=offsets(parts.text_lengths),
        symbols=parts.symbols,
        kinds=parts.kinds,
        defines=parts.defines,
        terms=lexical.terms,
        indptr=lexical.indptr,
        docs=lexical.docs,
        tfs=lexical.tfs,
        doc_lengths=lexical.doc_lengths,
        scores=own_scores(lexical.indptr, lexical.docs, lexical.tfs, lexical.doc_lengths),
        dense=dense,
        graph_facts={p: facts[p] for p in paths if p in facts},
        encoded_facts=[*encoded, *(r.graph for _, r in parts.built if r.graph is not None)],
        packed_texts=packed,
    )


def _packed_texts(parts: _Parts) -> tuple[np.ndarray, list[bytes]]:
    """(block offsets, blocks) of the segment's texts, one zlib block per file: the workers'
    and the copied files' blocks as they are, the others compressed here
    (segment_format.compress_texts); written one after the other, never joined."""
    blocks = [
        b if b is not None else zlib.compress(t, TEXT_LEVEL)
        for t, b in zip(parts.texts, parts.blocks, strict=True)
    ]
    starts = np.zeros(len(blocks) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, blocks), dtype=np.int64, count=len(blocks)), out=starts[1:])
    return starts, blocks


def _dense(parts: _Parts, table: StaticVectors, n_rows: int, codec: Codec | None) -> DenseIndex:
    """Fresh rows embedded now (rounded to fp16 like stored ones) and encoded; copied rows'
    8-bit and compact codes copied as stored where their segment has this codec (encoding
    their decoded vectors gives the same codes back: a merge held every source decoded, 84 MB
    of fp16 at 163k chunks, and encoded it all again), else decoded and encoded again.
    Encoded file by file (the arithmetic is per component), so no float copy of the whole
    segment exists at once; a row's compact code depends on its 8-bit code alone
    (dense_pq.encode)."""
    codec = codec or table_codec(table)
    ranges = np.asarray(codec.ranges, dtype=np.float32)
    codes = np.zeros((n_rows, len(ranges)), dtype=np.uint8)
    compact = None
    if codec.centroids is not None:
        compact = np.zeros((len(ranges) // 8, n_rows), dtype=np.uint8)
    encoded = np.ones(n_rows, dtype=bool)  # rows whose compact code is still to make
    row = 0
    for block in parts.vectors:
        if isinstance(block, StoredRows) and _same_codec(block.dense, codec):
            rows = slice(row, row + block.end - block.start)
            codes[rows] = block.dense.codes[block.start : block.end]
            if compact is not None:
                assert block.dense.compact is not None  # same centroids: it has them
                compact[:, rows] = block.dense.compact[:, block.start : block.end]
                encoded[rows] = False
            row += block.end - block.start
            continue
        vectors = block.vectors() if isinstance(block, StoredRows) else block
        if vectors.shape[1]:
            codes[row : row + len(vectors)] = encode(vectors.astype(np.float32), ranges)
        row += len(vectors)
    if parts.fresh_dense:
        rows_of = np.asarray(parts.fresh_rows, dtype=np.int64)
        fresh = table.embed_counts(parts.fresh_dense).astype(np.float16)
        codes[rows_of] = encode(fresh.astype(np.float32), ranges)
    if compact is None:
        return DenseIndex(codes, ranges)
    todo = np.flatnonzero(encoded)
    if len(todo):
        assert codec.centroids is not None
        compact[:, todo] = dense_pq.encode(codes[todo], ranges, codec.centroids)
    return DenseIndex(codes, ranges, compact, codec.centroids)


def _same_codec(dense: DenseIndex, codec: Codec) -> bool:
    """Were a stored segment's codes made with `codec` (its ranges and centroids)?"""
    if not np.array_equal(dense.ranges, np.asarray(codec.ranges, dtype=np.float32)):
        return False
    mine, theirs = dense.centroids, codec.centroids
    if mine is None or theirs is None:
        return mine is None and theirs is None
    return bool(np.array_equal(mine, theirs))
