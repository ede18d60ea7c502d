"""The build's per-file pass: one worker reads a blob once and returns the file finished.

For every file a worker reads the blob, chunks it, extracts the file's graph facts from the same
syntax tree (then frees it), tokenises each chunk once (lexical terms are the stemmed code terms
of the same pass) and embeds the chunks (float16). What comes back is a plain `FileResult`: the
segment's rows of that file, compact (texts as the segment's zlib block, metadata and graph lines
compressed while they wait), ready to be appended (writer.py), so the main process only
collects. Workers run in processes forked from the build, in the build's own process, on a loky
pool or on a Dask cluster (cluster.py); every argument and result is plain data, and a worker
needs nothing but the repository path (a shared filesystem on a cluster) and the vector table's
directory.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ..source.chunker import materialize, parse_and_chunk, path_stem
from ..source.chunks import Chunk
from ..source.gitsource import content_skip_reason, reader_for
from ..source.notebook import fallback_reason
from ..source.pathclass import content_flags
from ..source.secrets import redact
from .blobcache import CachedFile
from .dense import faiss_id
from .graph.facts import EncodedFacts, encode_facts
from .integrity import chunk_sum, meta_sum
from .segment_format import TEXT_LEVEL
from .segment_postings import MAX_TF
from .tokens import add_counts, plus_terms, text_counts
from .vectors import JsonVocab, StaticVectors
from .workers import release_memory
from .writer import meta_line, module_definitions, path_documents

BATCH_FILES = 32  # files per task: big enough to amortise a task, small enough to stream
# Metadata lines and graph-fact lines wait in the build's main process until their segment is
# written: compressed (~5x, 10 ms per MB) they take a fifth of the memory.
TRAVEL_LEVEL = 1
RELEASE_AFTER_BYTES = 64 * 1024  # a batch with a file this large returns its heap pages


@dataclass(frozen=True)
class BuildContext:
    """What a worker needs besides the files: plain paths, so it travels to a cluster."""

    repo_path: str
    table_dir: str


@dataclass
class FileResult:
    """One file, finished: its segment rows (in file order) and everything derived from them."""

    path: str
    blob: str
    language: str
    skip_reason: str | None = None
    redacted: dict[str, int] = field(default_factory=dict)
    fallback: str | None = None
    flags: int = 0  # path classes of the file (indexer/source/pathclass.py)
    meta_z: bytes = b""  # chunks.jsonl lines, concatenated, zlib level 1 while they travel
    texts_z: bytes = b""  # chunk texts, concatenated, as one zlib block (the segment's format)
    meta_lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    text_lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sums: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    meta_sums: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    fids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    symbols: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    defines: list[str] = field(default_factory=list)
    # BM25 postings of the file: its distinct terms; per chunk, how many postings it has; then
    # each posting's term (index into `terms`) and raw frequency, chunk after chunk
    terms: list[str] = field(default_factory=list)
    term_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    posting_terms: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    posting_tfs: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint16))
    doc_lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    vectors: np.ndarray | None = None  # float16 (chunks, dims)
    # the file's graph facts as the segment stores them (line + name keys), encoded here so
    # the main process only concatenates (the line as its stored zlib block)
    graph: EncodedFacts | None = None

    @property
    def n_chunks(self) -> int:
        return len(self.fids)


# -- tokenising ----------------------------------------------------------------------------------


def record_documents(record: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    """Path-independent BM25 and dense term counts of one chunk record (its text, then its
    symbol names twice), in first-seen order: each text tokenised once, and counted as the
    postings and the embedding count them."""
    dense, lexical = text_counts(record["text"])
    names_dense, names_lexical = text_counts(f"{record['qualname']} {record['symbol']}")
    add_counts(lexical, names_lexical, 2)
    add_counts(dense, names_dense, 2)
    return lexical, dense


def chunk_blob(data: bytes, path: str, language: str) -> tuple[CachedFile, Any]:
    """Chunks and path-independent terms of one blob, and the syntax tree of `data` (None when
    it was not parsed as is)."""
    entry, tree = parse_blob(data, path, language)
    tokenise(entry)
    return entry, tree


def parse_blob(data: bytes, path: str, language: str) -> tuple[CachedFile, Any]:
    """Chunks of one blob, not yet tokenised (`tokenise`), and the syntax tree of `data` (None
    when it was not parsed as is)."""
    reason = content_skip_reason(path, data)
    if reason:
        return CachedFile(reason, [], [], []), None
    # The one place file text enters chunking: secrets never reach texts, terms or vectors.
    clean, redacted = redact(data)
    records, tree = parse_and_chunk(path_stem(path), language, clean)
    fallback = fallback_reason(language, records)
    entry = CachedFile(None, records, [], [], redacted, fallback)
    return entry, tree if clean == data else None  # the graph reads the blob as it is


def tokenise(entry: CachedFile) -> None:
    """The path-independent BM25 and dense terms of each of the entry's chunks."""
    docs = [record_documents(r) for r in entry.records]
    entry.lexical, entry.dense = [d[0] for d in docs], [d[1] for d in docs]


# -- the worker ----------------------------------------------------------------------------------


@cache
def _repository(path: str) -> Any:
    import pygit2

    return pygit2.Repository(path)


@cache
def static_table(directory: str) -> StaticVectors:
    """The static vector table of `directory`, loaded once per process (a worker, or an
    update that embeds in-process). Its vocabulary is a dict: a build looks up millions of
    terms, the lazy vocabulary of a cold search (vectors.JsonVocab) costs a Python call each."""
    table = StaticVectors.load(Path(directory))
    vocab = table.vocab.as_dict() if isinstance(table.vocab, JsonVocab) else dict(table.vocab)
    # and its matrix a plain array over the same map: indexing a np.memmap costs a subclass
    # view per chunk embedded
    return replace(table, vocab=vocab, vectors=table.vectors.view(np.ndarray))


def index_batch(context: BuildContext, items: list[tuple[str, str, str]]) -> list[FileResult]:
    """Worker: (path, blob, language) of some files -> their results, in the same order.
    Any failure skips the file, never the build."""
    # An update in this process reads blobs through its `git cat-file` reader (no pygit2).
    repo = reader_for(context.repo_path) or _repository(context.repo_path)
    table = static_table(context.table_dir)
    results = []
    largest = 0
    for path, blob, language in items:
        try:
            data = bytes(repo[blob].data)
            largest = max(largest, len(data))
            results.append(index_file(data, table, path, blob, language))
        except Exception as exc:  # a parser bug must not break the build
            results.append(FileResult(path, blob, language, f"error:{type(exc).__name__}"))
    if largest > RELEASE_AFTER_BYTES:  # (walking the heap costs ~1 % of a worker's time)
        release_memory()
    return results


def index_file(
    data: bytes, table: StaticVectors, path: str, blob: str, language: str
) -> FileResult:
    """One file's rows, postings, vectors and graph facts from its blob's bytes. The graph
    facts come first: the syntax tree (~80 bytes per byte of source, 60 MiB for a 700 KB
    generated file) is freed before the file is tokenised and its rows made."""
    entry, tree = parse_blob(data, path, language)
    result = FileResult(path, blob, language, entry.skip_reason)
    if entry.skip_reason:
        return result
    result.redacted, result.fallback = entry.redacted, entry.fallback
    chunks = materialize(entry.records, path, language, blob)
    result.graph = encode_facts(graph_facts(path, blob, data, chunks, tree))  # compressed
    del tree
    tokenise(entry)
    _fill_rows(result, chunks, entry, table)
    result.flags = content_flags(path, "\n".join(r["text"] for r in entry.records))
    return result


def _fill_rows(result: FileResult, chunks: list[Chunk], entry: CachedFile, table: Any) -> None:
    """Metadata lines, texts, sums, ids, columns, postings and vectors of the file's chunks."""
    n = len(chunks)
    path_lexical, path_dense = path_documents(result.path)
    metas: list[bytes] = []
    texts: list[bytes] = []
    sums = np.empty(n, dtype=np.int64)
    meta_sums = np.empty(n, dtype=np.int64)
    fids = np.empty(n, dtype=np.int64)
    posting_terms: list[str] = []  # each chunk's distinct terms, chunk after chunk
    posting_tfs: list[int] = []
    per_chunk = np.zeros(n, dtype=np.int32)
    lengths = np.zeros(n, dtype=np.float32)
    dense_docs = []
    for i, c in enumerate(chunks):
        record = c.to_dict()
        text = record.pop("text").encode("utf-8")
        line = meta_line(record)
        metas.append(line)
        texts.append(text)
        sums[i] = chunk_sum(line, text)
        meta_sums[i] = meta_sum(line)
        fids[i] = faiss_id(c.id)
        result.symbols.append(c.symbol)
        result.kinds.append(c.kind)
        result.defines.append(module_definitions(c.text) if c.kind in ("module", "cell") else "")
        counts = plus_terms(entry.lexical[i], path_lexical)
        lengths[i] = sum(counts.values())
        posting_terms.extend(counts)
        posting_tfs.extend(counts.values())
        per_chunk[i] = len(counts)
        dense_docs.append(plus_terms(entry.dense[i], path_dense))
    result.meta_z = zlib.compress(b"".join(metas), TRAVEL_LEVEL)
    # compressed here, as the segment stores it: the main process never holds the raw texts
    result.texts_z = zlib.compress(b"".join(texts), TEXT_LEVEL)
    result.meta_lengths = np.fromiter(map(len, metas), dtype=np.int64, count=n)
    result.text_lengths = np.fromiter(map(len, texts), dtype=np.int64, count=n)
    result.sums, result.meta_sums, result.fids = sums, meta_sums, fids
    local = {t: i for i, t in enumerate(dict.fromkeys(posting_terms))}
    result.terms = list(local)
    result.term_counts = per_chunk
    small = len(local) <= np.iinfo(np.uint16).max + 1  # a file's terms: ~4k at most in sympy
    result.posting_terms = np.fromiter(
        map(local.__getitem__, posting_terms),
        dtype=np.uint16 if small else np.int32,
        count=len(posting_terms),
    )
    tfs = np.fromiter(posting_tfs, dtype=np.int64, count=len(posting_tfs))
    result.posting_tfs = np.minimum(tfs, MAX_TF).astype(np.uint16)
    result.doc_lengths = lengths
    # float16, encoded to the segment's codes by the writer with the ranges of the segments it
    # joins (an update's base); the table's own ranges cost ~0.1 s to compute
    result.vectors = table.embed_counts(dense_docs).astype(np.float16)


def graph_facts(path: str, blob: str, data: bytes, chunks: list[Chunk], tree: Any = None) -> Any:
    """The file's graph facts (graph/) from the blob already read, and from the syntax tree the
    chunker made when it parsed these same bytes with the same grammar: parsed once."""
    from ..source.specs import SPECS
    from .graph.extract import extract_file
    from .graph.write import file_language

    language = file_language(path, chunks)
    same_parse = tree is not None and chunks and chunks[0].language == language
    return extract_file(
        path,
        language,
        data if language in SPECS else b"",
        chunks,
        tree=tree if same_parse else None,
        blob=blob,
    )
