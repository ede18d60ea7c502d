"""What an agent receives must be the repository's content: every chunk of a snapshot checked
against the git blob it came from.

Used when adopting a shared index (`indexer pull`: anyone who can push a ref could otherwise
feed every agent code of their choosing) and by `indexer verify`. For each indexed file, the
path must hold that blob in the indexed commit; for each chunk, its path, blob, language and id
must be those of its file, and its text must be lines of the (redacted) blob: exactly its line
range, or for class summaries and split definitions, runs of the blob's lines in order with
`...` elision markers between them; in a notebook, lines of the chunk's cell; a data file's
shape chunk, exactly the summary of the blob. Signatures, docstrings and names must occur in the
file.
Ranking data (BM25 postings, vectors) is not re-derived: it can reorder results, never change
what they say.
"""

from __future__ import annotations

import io
import itertools
import json
import re
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import IndexerError
from ..index import npy
from ..index.dense import faiss_id
from ..index.graph.fact_files import FACTS_LINES, FACTS_META, FACTS_OFFSETS
from ..index.integrity import CHUNK_SUMS, check_rows, chunk_sums, meta_sum
from ..index.segment_format import LINE_STARTS, TEXT_BLOCKS, TEXTS, decompress_texts
from ..source.chunker import chunk_id, path_stem
from ..source.datafiles import data_records
from ..source.notebook import cell_source
from ..source.secrets import redact

_SPECIAL_NAMES = frozenset({"", "<module>", "<anonymous>"})
_CELL_NAME = re.compile(r"<cell \d+>")  # a notebook cell's code outside definitions


class ProvenanceError(IndexerError):
    """A chunk that is not what the repository holds."""


def check_provenance(
    read: Callable[[str], bytes], manifest: dict[str, Any], repo: Any, commit: str
) -> int:
    """Verify every segment of a generation against git; `read("segment/file")` returns a
    file's bytes. A file a segment no longer serves (deleted) must still be its blob's content,
    as a later update may copy its rows back. Returns the number of chunks checked; raises
    ProvenanceError (one line) on the first mismatch."""
    names = set(manifest["files"])
    checked = 0
    try:
        for entry in manifest["segments"]:
            segment = entry["name"]

            def read_one(name: str, segment: str = segment) -> bytes:
                return read(f"{segment}/{name}")

            mine = {n.split("/", 1)[1] for n in names if n.split("/", 1)[0] == segment}
            checked += _check(read_one, mine, repo, commit, set(entry.get("deleted", [])))
        return checked
    except ProvenanceError:
        raise
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, zlib.error) as exc:
        raise ProvenanceError(f"its files are malformed ({type(exc).__name__})") from None


def _array(read: Callable[[str], bytes], name: str) -> np.ndarray:
    array: np.ndarray = npy.load(io.BytesIO(read(name)))
    return array


def _lines(read: Callable[[str], bytes], name: str, count: int | None = None) -> list[str]:
    """A text column (indexer/index/segment_format.py); `count` rows when known (an empty file
    is one empty value or none)."""
    raw = read(name)
    data = raw.decode("utf-8")
    if count is None:
        values = data.split("\n") if data else []
    else:
        values = data.split("\n") if count else []
    # The line starts a reader uses must be those of this text (a forged table would make
    # the columns read other values than the ones checked here).
    starts = _array(read, name.removesuffix(".txt") + LINE_STARTS)
    expected = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum([len(v.encode("utf-8")) + 1 for v in values], out=expected[1:])
    if not np.array_equal(starts, expected):
        raise ProvenanceError(f"its {name} line table does not match the column")
    return values


def _check(
    read: Callable[[str], bytes], names: set[str], repo: Any, commit: str, deleted: set[str]
) -> int:
    import pygit2

    tree = repo[commit].peel(pygit2.Commit).tree
    paths_, blobs = _lines(read, "file_paths.txt"), _lines(read, "file_blobs.txt")
    languages = _lines(read, "file_languages.txt")
    files = [
        {"path": p, "blob": b, "language": lang}
        for p, b, lang in zip(paths_, blobs, languages, strict=True)
    ]
    texts_of: dict[str, _FileText] = {}
    for f in files:
        path, blob = f["path"], f["blob"]
        if path in deleted:  # no longer served: still the content of the blob it names
            try:
                data = bytes(repo[blob].data)
            except (KeyError, ValueError):
                raise ProvenanceError(
                    f"{path!r} names blob {blob[:12]} git does not have"
                ) from None
            texts_of[path] = _FileText(redact(data)[0])
            continue
        try:
            entry = tree[path]
        except KeyError:
            raise ProvenanceError(f"{path!r} is not a file of commit {commit[:12]}") from None
        if str(entry.id) != blob:
            raise ProvenanceError(f"{path!r} is not blob {blob[:12]} in commit {commit[:12]}")
        texts_of[path] = _FileText(redact(bytes(repo[entry.id].data))[0])

    meta = read("chunks.jsonl")
    texts = decompress_texts(read(TEXTS), _array(read, TEXT_BLOCKS))
    meta_offsets, text_offsets = _array(read, "chunk_offsets.npy"), _array(read, "text_offsets.npy")
    rows = len(meta_offsets) - 1
    check_rows(rows, meta, texts, meta_offsets, text_offsets)
    chunk_file, fids = _array(read, "chunk_file.npy"), _array(read, "chunk_fids.npy")
    columns = {n: _lines(read, f"{n}.txt", rows) for n in ("symbols", "kinds", "defines")}
    if (
        len(chunk_file) != rows
        or len(fids) != rows
        or any(len(c) != rows for c in columns.values())
    ):
        raise ProvenanceError("its row arrays disagree in length")
    if "meta_sums.npy" in names and not np.array_equal(
        _array(read, "meta_sums.npy"),
        [meta_sum(meta[int(a) : int(b)]) for a, b in itertools.pairwise(meta_offsets.tolist())],
    ):
        raise ProvenanceError("its metadata checksums do not match its chunks")
    if CHUNK_SUMS in names and not np.array_equal(
        _array(read, CHUNK_SUMS), chunk_sums(meta, meta_offsets, texts, text_offsets)
    ):
        raise ProvenanceError("its chunk checksums do not match its chunks")

    from ..index.writer import module_definitions

    ordinals: dict[tuple[str, str, str], int] = {}
    paths: dict[str, str] = {}
    for row in range(rows):
        record = json.loads(meta[int(meta_offsets[row]) : int(meta_offsets[row + 1])])
        text = texts[int(text_offsets[row]) : int(text_offsets[row + 1])].decode("utf-8")
        owner = files[int(chunk_file[row])]
        where = f"chunk {record.get('id')!r} ({record.get('path')!r})"
        # A notebook's chunks carry their cell's language (python, markdown, ...).
        language = owner["language"] if "cell" not in record else record["language"]
        if (record["path"], record["blob"], record["language"]) != (
            owner["path"],
            owner["blob"],
            language,
        ) or ("cell" in record and owner["language"] != "notebook"):
            raise ProvenanceError(f"{where} does not belong to the file it is filed under")
        key = (record["path"], record["kind"], record["qualname"])
        ordinal = ordinals.get(key, 0)
        ordinals[key] = ordinal + 1
        if record["id"] != chunk_id(*key, ordinal) or faiss_id(record["id"]) != int(fids[row]):
            raise ProvenanceError(f"{where} has an id that does not match its place")
        source: _FileText | None = texts_of[record["path"]]
        if "cell" in record:  # lines count within the cell (indexer/source/notebook.py)
            source = source.cell(record["cell"]) if source is not None else None
        if source is None:
            raise ProvenanceError(f"{where} names a cell its notebook does not have")
        if record["kind"] == "data":
            problem = source.explain_data(record, text, owner["language"])
        else:
            problem = source.explain(record, text)
        if problem:
            raise ProvenanceError(f"{where} {problem}")
        defined = record["kind"] in ("module", "cell")
        expected_defines = module_definitions(text) if defined else ""
        if (
            columns["symbols"][row] != record["symbol"]
            or columns["kinds"][row] != record["kind"]
            or columns["defines"][row] != expected_defines
        ):
            raise ProvenanceError(f"{where} disagrees with the ranking columns")
        paths[record["id"]] = record["path"]
    if FACTS_META in names:
        facts = json.loads(read(FACTS_META))
        _check_graph(facts["paths"], _fact_lines(read), paths, set(texts_of))
    return rows


def _fact_lines(read: Callable[[str], bytes]) -> list[bytes]:
    """Each file's line of graph facts, inflated from its block where the offsets put it."""
    data, offsets = read(FACTS_LINES), _array(read, FACTS_OFFSETS)
    bounds = offsets.tolist()
    if not bounds or bounds[0] != 0 or bounds[-1] != len(data) or bounds != sorted(bounds):
        raise ProvenanceError("its code graph facts are not where their offsets say")
    try:
        return [zlib.decompress(data[a:b]) for a, b in itertools.pairwise(bounds)]
    except zlib.error:
        raise ProvenanceError("its code graph facts cannot be inflated") from None


def _check_graph(
    facts_paths: list[str], lines: list[bytes], chunk_paths: dict[str, str], file_paths: set[str]
) -> None:
    """The graph facts describe indexed files, and their symbols are those files' chunks."""
    if len(facts_paths) != len(lines):
        raise ProvenanceError("its code graph facts do not match their file list")
    for path, line in zip(facts_paths, lines, strict=True):
        if path not in file_paths:
            raise ProvenanceError(f"its code graph names a file {path!r} that is not indexed")
        for sym in json.loads(line.partition(b"\t")[0])["symbols"]:
            if any(chunk_paths.get(cid) != path for cid in sym[5]):
                raise ProvenanceError(f"its code graph names a symbol {sym[0]!r} that is no chunk")


def _is_marker(line: str) -> bool:
    return line.strip() == "..."


def _runs(lines: list[str]) -> list[list[str]]:
    """Lines split at `...` markers, empty runs dropped."""
    runs: list[list[str]] = [[]]
    for line in lines:
        if _is_marker(line):
            runs.append([])
        else:
            runs[-1].append(line)
    return [r for r in runs if r]


class _FileText:
    """One blob's redacted text, as the chunker saw it."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.text = data.decode("utf-8", errors="replace")
        self.lines = self.text.splitlines()
        self._flat: str | None = None
        self._found: dict[str, bool] = {}

    @property
    def flat(self) -> str:
        """The whole file, whitespace collapsed (signatures and names are squeezed), then
        again without `*/` (comment docstrings drop it)."""
        if self._flat is None:
            squeezed = " ".join(self.text.split())
            self._flat = squeezed + "\0" + squeezed.replace("*/", "")
        return self._flat

    def occurs(self, fragment: str, region: str) -> bool:
        """`fragment` (whitespace collapsed) in the definition's lines, or else anywhere in the
        file (qualified names start with their enclosing scopes); file-wide answers are cached."""
        squeezed = " ".join(fragment.split())
        if squeezed in region:
            return True
        if squeezed not in self._found:
            self._found[squeezed] = squeezed in self.flat
        return self._found[squeezed]

    def cell(self, number: Any) -> _FileText | None:
        """The source of a notebook cell, as the chunker saw it, or None if there is none."""
        source = cell_source(self.data, number) if isinstance(number, int) else None
        return None if source is None else _FileText(source.encode("utf-8"))

    def explain_data(self, record: dict[str, Any], text: str, language: str) -> str | None:
        """A data file's shape chunk must be exactly what summarising the blob gives."""
        derived = data_records(path_stem(record["path"]), language, self.data)
        if not derived or derived[0] != {**{k: record.get(k) for k in derived[0]}, "text": text}:
            return "has a data summary that is not its file's"
        return None

    def explain(self, record: dict[str, Any], text: str) -> str | None:
        """Why `text` and the record's fields are not this file's content, or None."""
        start, end = int(record["start_line"]) - 1, int(record["end_line"]) - 1
        if not 0 <= start <= end < max(len(self.lines), 1):
            return "points outside its file"
        exact = "\n".join(self.lines[start : end + 1])
        first = (
            start if text == exact else self._elided(text, start, end, record["kind"] == "class")
        )
        if first is None:
            return "has text that is not in its file at that commit"
        # Signature, docstring and names come from the definition's own lines.
        region = " ".join(" ".join(self.lines[first : end + 1]).split())
        region += "\0" + region.replace("*/", "")  # comment docstrings drop `*/`
        if record["signature"] and not self.occurs(record["signature"], region):
            return "has a signature that is not in its file"
        for line in record["docstring"].splitlines():
            if not self.occurs(line, region):
                return "has a docstring that is not in its file"
        stem = path_stem(record["path"])
        for name in (record["symbol"], *record["qualname"].split(".")):
            # Names are whitespace-collapsed and may be cut (chunker._clean_name).
            special = name in _SPECIAL_NAMES or _CELL_NAME.fullmatch(name) is not None
            if not special and name != stem and not self.occurs(name, region):
                return f"names {name!r}, which is not in its file"
        return None

    def _elided(self, text: str, start: int, end: int, summary: bool) -> int | None:
        """Runs of the file's lines, in order, separated by `...` markers: a class summary
        starts at `start`; a split definition is a header run then exactly lines start..end.
        Returns the first line of the definition, or None when the text is not derivable."""
        if not summary:
            # The body is matched whole: it may hold `...` lines of its own (a doctest's).
            body = "\n".join(self.lines[start : end + 1])
            if not text.endswith("\n" + body):
                return None
            header = text[: -len(body) - 1].split("\n")
            if not _is_marker(header[-1]):
                return None
            # The repeated header may reach into a window of a long first statement.
            return self._in_order(_runs(header[:-1]), 0, end + 1)
        runs = _runs(text.split("\n"))
        if not runs:
            return None
        head = runs[0]
        if self.lines[start : start + len(head)] != head:
            return None
        found = self._in_order(runs[1:], start + len(head), end + 1)
        return None if found is None else start

    def _in_order(self, runs: list[list[str]], lo: int, hi: int) -> int | None:
        """Each run found as contiguous lines within [lo, hi), each after the previous one
        (earliest placement is optimal for ordered blocks). Returns where the first run
        starts (`lo` when there are none), or None."""
        pos, first = lo, None
        lines = self.lines
        for run in runs:
            size, head = len(run), run[0]
            found = next(
                (
                    p
                    for p in range(pos, hi - size + 1)
                    if lines[p] == head and lines[p : p + size] == run
                ),
                None,
            )
            if found is None:
                return None
            first = found if first is None else first
            pos = found + size
        return lo if first is None else first


def verify_index(repo_path: str | None, index_dir: str | None = None) -> dict[str, Any]:
    """`indexer verify`: every file's sha256 and size, then every chunk against git."""
    from pathlib import Path

    from ..errors import CorruptIndexError
    from ..index.reader import open_generation
    from ..index.store import SEGMENTS, current_generation, default_index_dir
    from ..source.gitsource import open_repository

    repo = open_repository(repo_path)
    directory = Path(index_dir) if index_dir else default_index_dir(repo.path)
    snapshot = current_generation(directory)
    manifest, _ = open_generation(snapshot, verify=True)
    names = set(manifest["files"])
    try:
        chunks = check_provenance(
            lambda n: (directory / SEGMENTS / n).read_bytes(), manifest, repo, manifest["commit"]
        )
    except ProvenanceError as exc:
        raise CorruptIndexError(f"the index does not match the repository: {exc}") from None
    except OSError as exc:
        raise CorruptIndexError(f"the index is unreadable: {exc}") from None
    return {
        "snapshot": str(snapshot),
        "commit": manifest["commit"],
        "files_checked": len(names),
        "chunks_checked": chunks,
        "ok": True,
    }
