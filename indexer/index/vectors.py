"""Static word vectors: a token -> vector table, and text embedding as a weighted mean.

The table is distilled offline from a sentence-transformer (see scripts/distill_static_vectors.py
and notebooks/). It is stored as a JSON vocabulary, an int8 matrix with one float scale per row,
and one frequency weight per row (SIF-style: frequent tokens weigh less). Embedding is pure numpy.
"""

from __future__ import annotations

import json
import mmap
import os
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, repeat
from pathlib import Path

import numpy as np

from ..errors import IndexerError
from . import npy
from .dense import mapped_file
from .dense_pq import CENTROIDS_FILE, valid_codebook
from .tokens import code_terms

EMBED_DOCS = 256  # documents summed at once: (their distinct terms x dims) floats at a time
TABLE_FILES = ("vocab.json", "vectors.npy", "scales.npy", "weights.npy", "card.json")


def default_table_dir() -> Path:
    """`artifacts/static_vectors` of the source checkout (or the copy packaged beside the code)."""
    override = os.environ.get("INDEXER_VECTORS")  # a table of your own (e.g. from notebooks/)
    if override:
        return Path(override)
    here = Path(__file__).resolve().parents[1]  # the indexer package
    for candidate in (
        here.parent / "artifacts" / "static_vectors",
        here / "data" / "static_vectors",
    ):
        if (candidate / "vocab.json").exists():
            return candidate
    return here.parent / "artifacts" / "static_vectors"


class JsonVocab(Mapping[str, int]):
    """term -> row of a `vocab.json` list, looked up in the file's bytes instead of decoding
    48k strings into a dict (~8 ms of every cold search, which embeds a handful of terms).
    Exact for a file written by `json.dumps(list)` without escapes (checked: no backslash):
    every `"` then delimits a term, so the k-th opening quote starts term k. Like the dict
    it replaces, a repeated term maps to its last row. After MAX_SCANS lookups (a long-lived
    process) the terms' hashes are sorted once, and a lookup is a binary search checked
    against the term's bytes: 0.6 MB where a dict of the terms held 6 MB. A build asks for
    the dict itself (`as_dict`)."""

    # Lookups by scan before the hash table is cheaper. A scan costs ~30 us a term, the table
    # ~12 ms once: a long-lived process makes it at its first lookup (`expect_many_lookups`).
    MAX_SCANS = 64

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.quotes = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == ord('"'))
        self._dict: dict[str, int] | None = None
        self._keys: np.ndarray | None = None  # hash(term) of every term, sorted
        self._rows: np.ndarray | None = None  # the row of each key (equal keys: rows ascending)
        self._scans = 0

    @classmethod
    def of(cls, data: bytes) -> Mapping[str, int]:
        """The lazy form for a plain list; a dict for anything else (escapes, not a list)."""
        if b"\\" in data or not data.lstrip().startswith(b"[") or data.count(b'"') % 2:
            terms = json.loads(data)
            return dict(zip(terms, range(len(terms)), strict=True))
        return cls(data)

    def expect_many_lookups(self) -> None:
        """Sort the terms' hashes at the first lookup, not after MAX_SCANS scans (a process
        that searches more than once)."""
        self.MAX_SCANS = 0

    def as_dict(self) -> dict[str, int]:
        """The whole vocabulary as a dict (for many lookups: a build)."""
        if self._dict is None:
            terms = json.loads(self.data)
            self._dict = dict(zip(terms, range(len(terms)), strict=True))
        return self._dict

    def _hashed(self) -> tuple[np.ndarray, np.ndarray]:
        if self._keys is None or self._rows is None:
            terms = json.loads(self.data)  # the strings live only while they are hashed
            keys = np.fromiter(map(hash, terms), dtype=np.int64, count=len(terms))
            order = np.argsort(keys, kind="stable")
            self._keys, self._rows = keys[order], order.astype(np.int32)
        return self._keys, self._rows

    def _is(self, row: int, term: bytes) -> bool:
        start = int(self.quotes[2 * row]) + 1
        return self.data[start : int(self.quotes[2 * row + 1])] == term

    def rows_of(self, terms: Sequence[str]) -> np.ndarray:
        """The row of each term (-1: not in the vocabulary), int64."""
        if self._dict is not None:
            table = self._dict
            return np.fromiter((table.get(t, -1) for t in terms), np.int64, len(terms))
        if self._keys is None and self._scans + len(terms) <= self.MAX_SCANS:
            found = map(self._find, terms)
            return np.fromiter((-1 if r is None else r for r in found), np.int64, len(terms))
        keys, rows = self._hashed()
        out = np.full(len(terms), -1, dtype=np.int64)
        if not len(keys):
            return out
        wanted = np.fromiter(map(hash, terms), dtype=np.int64, count=len(terms))
        at = np.minimum(keys.searchsorted(wanted), len(keys) - 1)
        for i in np.flatnonzero(keys[at] == wanted).tolist():
            term = terms[i]
            if not _plain(term):
                continue
            needle, j = term.encode("ascii"), int(at[i])
            while j < len(keys) and keys[j] == wanted[i]:  # the last row of the term wins
                if self._is(int(rows[j]), needle):
                    out[i] = int(rows[j])
                j += 1
        return out

    def _find(self, term: str) -> int | None:
        if self._dict is not None:
            return self._dict.get(term)
        if self._keys is not None or self._scans >= self.MAX_SCANS:
            row = int(self.rows_of([term])[0])
            return None if row < 0 else row
        self._scans += 1
        if not _plain(term):
            return None  # json.dumps would have escaped it: it cannot be in a plain list
        # The terms of its length and first byte, narrowed a byte at a time while many are
        # left, then compared: ~30 us, where `bytes.rfind` took 0.3-0.6 ms (a quote every few
        # bytes defeats its skips). The highest row wins, as in the dict.
        needle = term.encode("ascii")
        raw, starts, lengths, firsts = self._layout
        if not needle:
            rows = np.flatnonzero(lengths == 0)
        else:
            rows = np.flatnonzero((lengths == len(needle)) & (firsts == needle[0]))
            j = 1
            while len(rows) > 8 and j < len(needle):
                rows = rows[raw.take(starts.take(rows) + j) == needle[j]]
                j += 1
        for row in rows[::-1].tolist():
            start = int(starts[row])
            if self.data[start : start + len(needle)] == needle:
                return int(row)
        return None

    @cached_property
    def _layout(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The bytes as an array; each term's first byte's offset, its length and that byte
        (for the scan)."""
        raw = np.frombuffer(self.data, dtype=np.uint8)
        starts = self.quotes[0::2] + 1
        return raw, starts, self.quotes[1::2] - starts, raw.take(starts)

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and self._find(term) is not None

    def __getitem__(self, term: str) -> int:
        found = self._find(term)
        if found is None:
            raise KeyError(term)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self.as_dict())

    def __len__(self) -> int:
        return len(self.quotes) // 2


def _plain(term: str) -> bool:
    """A term json.dumps writes as it is (no escape): the only kind a plain list holds."""
    return '"' not in term and "\\" not in term and term.isascii() and term.isprintable()


@dataclass
class StaticVectors:
    vocab: Mapping[str, int]
    vectors: np.ndarray  # int8 (V, D)
    scales: np.ndarray  # float32 (V,)
    weights: np.ndarray  # float32 (V,)
    card: dict[str, object]
    # (D / 4, 16, 4) float32 centroids of the compact dense codes (indexer/index/dense_pq.py),
    # trained offline for this table; None: the table has none (searches scan exactly)
    pq_centroids: np.ndarray | None = None

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    @classmethod
    def load(cls, directory: Path | None = None) -> StaticVectors:
        directory = directory or default_table_dir()
        try:
            terms = JsonVocab.of((directory / "vocab.json").read_bytes())
            vectors = npy.load(directory / "vectors.npy", "r")
            scales = npy.load(directory / "scales.npy")
            weights = npy.load(directory / "weights.npy")
            card = json.loads((directory / "card.json").read_text(encoding="utf-8"))
            centroids = None
            if (directory / CENTROIDS_FILE).exists():
                centroids = npy.load(directory / CENTROIDS_FILE)
        except (OSError, ValueError) as exc:
            raise IndexerError(
                f"static vector table missing or unreadable in {directory}: {exc}"
            ) from exc
        if (
            vectors.dtype != np.int8
            or vectors.shape[0] != len(terms)
            or scales.shape[0] != len(terms)
        ):
            raise IndexerError(f"static vector table in {directory} is inconsistent; regenerate it")
        if centroids is not None and not valid_codebook(centroids, vectors.shape[1]):
            raise IndexerError(
                f"{CENTROIDS_FILE} in {directory} does not fit its table; regenerate it"
            )
        return cls(terms, vectors, scales, weights, card, centroids)

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        terms = sorted(self.vocab, key=self.vocab.__getitem__)
        (directory / "vocab.json").write_text(json.dumps(terms), encoding="utf-8")
        np.save(directory / "vectors.npy", self.vectors)
        np.save(directory / "scales.npy", self.scales.astype(np.float32))
        np.save(directory / "weights.npy", self.weights.astype(np.float32))
        (directory / "card.json").write_text(json.dumps(self.card, indent=2), encoding="utf-8")
        if self.pq_centroids is not None:
            np.save(directory / CENTROIDS_FILE, np.asarray(self.pq_centroids, dtype=np.float32))

    def quantizer_ranges(self) -> np.ndarray:
        """Per dimension, the largest |component| of any unit-length table row: the code range
        of the dense index (a chunk vector is a normalised mean of rows, so it rarely exceeds
        it; the rare excess is clipped). A function of the table alone, never of a corpus."""
        return self._quantizer_ranges

    @cached_property
    def _quantizer_ranges(self) -> np.ndarray:  # computed once per table (~0.1 s)
        # 4096 rows at a time: a float copy of the whole table is ~100 MiB of a build's peak.
        # Row norms and maxima do not depend on the blocks: the same ranges, bit for bit.
        out = np.zeros(self.dim, dtype=np.float32)
        for start in range(0, len(self.vectors), 4096):
            rows = self.vectors[start : start + 4096].astype(np.float32)
            rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
            np.maximum(out, np.abs(rows).max(axis=0), out=out)
        base: object = self.vectors
        while base is not None and not isinstance(base, mmap.mmap):
            base = getattr(base, "base", None)  # a memmap, or a plain view of one
        if base is not None:  # pages read once: not this process's memory any more
            base.madvise(mmap.MADV_DONTNEED)
        return out

    def term_weights(self, terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(rows, weights) of the known terms, in the order they first occur."""
        vocab, counted = self.vocab, Counter(terms)
        distinct = list(counted)
        if isinstance(vocab, JsonVocab):
            rows = vocab.rows_of(distinct)
        else:
            rows = np.fromiter((vocab.get(t, -1) for t in distinct), np.int64, len(distinct))
        known = rows >= 0
        ids = rows[known]
        counts = np.fromiter(counted.values(), dtype=np.int64, count=len(counted))[known]
        return ids, self._weights(ids, counts)

    def _weights(self, ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Each term's weight: (1 + log(count in the text)) in float64, then float32, times its
        row's frequency weight and scale."""
        tf = (np.log(counts.astype(np.float64)) + 1.0).astype(np.float32)
        weights: np.ndarray = tf * self.weights[ids] * self.scales[ids]
        return weights

    @cached_property
    def _file(self) -> tuple[int, int] | None:
        """(descriptor, offset of row 0) of a memory-mapped table; None for one in memory."""
        return mapped_file(self.vectors, self)

    def table_rows(self, ids: np.ndarray) -> np.ndarray:
        """Rows of the table, read from its file when mapped: a query's few hundred rows
        through the map would leave their pages, and their neighbours', resident (~7 MB of a
        long-lived process after 64 queries)."""
        where = self._file
        if where is None or not len(ids):
            return np.asarray(self.vectors[ids])
        fd, base = where
        width = self.dim  # int8: a byte per dimension
        data = b"".join([os.pread(fd, width, base + width * i) for i in ids.tolist()])
        if len(data) != width * len(ids):
            raise IndexerError("the static vector table is truncated; regenerate it")
        return np.frombuffer(data, dtype=np.int8).reshape(len(ids), width)

    def embed_terms(self, terms: Sequence[str]) -> np.ndarray:
        ids, w = self.term_weights(terms)
        out = np.zeros(self.dim, dtype=np.float32)
        if len(ids):
            out = (self.table_rows(ids).astype(np.float32) * w[:, None]).sum(axis=0)
            norm = float(np.linalg.norm(out))
            if norm > 0:
                out /= norm
        return out

    def embed(self, text: str) -> np.ndarray:
        return self.embed_terms(code_terms(text))

    def embed_many(self, term_lists: Sequence[Sequence[str]]) -> np.ndarray:
        """Embeddings of many documents (a file's chunks), each a function of its own terms
        only, in `embed_terms`'s arithmetic: a document gets the same vector whether it is
        embedded in a full build or alone in an incremental update."""
        return self.embed_counts([Counter(terms) for terms in term_lists])

    def embed_counts(self, counted: Sequence[Mapping[str, int]]) -> np.ndarray:
        """`embed_many` of documents given as their term counts in first-seen order (what
        Counter makes of their terms). The lookups, weights and table rows of all the
        documents are gathered at once; each row is one product."""
        n = len(counted)
        out = np.zeros((n, self.dim), dtype=np.float32)
        vocab = self.vocab.as_dict() if isinstance(self.vocab, JsonVocab) else self.vocab
        sizes = np.fromiter(map(len, counted), dtype=np.int64, count=n)
        total = int(sizes.sum())
        ids = np.fromiter(
            map(vocab.get, chain.from_iterable(counted), repeat(-1)), dtype=np.int64, count=total
        )
        counts = np.fromiter(
            chain.from_iterable(c.values() for c in counted), dtype=np.int64, count=total
        )
        known = ids >= 0
        ids, counts = ids[known], counts[known]
        per_doc = np.bincount(np.repeat(np.arange(n), sizes)[known], minlength=n)
        w = self._weights(ids, counts)
        bounds = [0, *np.cumsum(per_doc).tolist()]
        for start in range(0, n, EMBED_DOCS):  # blocks of documents bound the float rows
            stop = min(start + EMBED_DOCS, n)
            lo, hi = bounds[start], bounds[stop]
            rows = self.vectors[ids[lo:hi]].astype(np.float32)
            for d in range(start, stop):
                a, b = bounds[d] - lo, bounds[d + 1] - lo
                if b > a:
                    out[d] = w[lo + a : lo + b] @ rows[a:b]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out
