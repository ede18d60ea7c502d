"""What a long-lived search process keeps resident: the spans of the terms it looked up, not
the pages it read to find them, nor per-row digests it reads a few of per query; and the same
answers as a process that answers one command."""

from __future__ import annotations

import gc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from indexer.api import Index
from indexer.index import lexical_view
from indexer.index.build import build_index
from indexer.index.segment import SYMBOLS_READ_KEPT
from indexer.index.segment_format import StoredInts
from indexer.index.store import current_generation

from .conftest import MakeRepo
from .test_dense import many_functions, resident_kb

# A report's worth of words (more than columns.BATCH_MIN distinct terms: the batched lookup)
# and identifier queries.
QUERIES = [
    "the value returned by the parser is wrong when the input holds several records and the "
    "retry loop gives up before the connection closes; expected the total of every line item "
    "with tax, but the function raises an error about a missing currency while formatting "
    "numbers; the logging handler swallows exceptions raised by the scheduler thread, and "
    "the cache keeps stale entries after the database migration renames columns",
    "value",
    "format_money",
]


def answers(index: Index) -> list[list[tuple[str, float]]]:
    return [[(r.id, round(r.score, 6)) for r in index.search(q, k=10)] for q in QUERIES]


def test_a_long_lived_process_keeps_no_lookup_pages(make_repo: MakeRepo, tmp_path: Path) -> None:
    files = many_functions(files=60)
    files["money.py"] = "def format_money(amount, currency):\n    return f'{amount} {currency}'\n"
    build_index(make_repo(files), index_dir=tmp_path / "idx", progress=False)
    served = Index(current_generation(tmp_path / "idx"))
    once = Index(current_generation(tmp_path / "idx"))
    once.one_shot = True
    assert answers(served) == answers(once)
    for segment in served.space.segments:
        terms = segment.terms
        assert "_samples" in vars(terms)  # the report's terms were looked up in one batch
        for array in (np.frombuffer(terms.data, np.uint8), terms.starts, segment.postings[0]):
            assert resident_kb(array) == 0
    # The symbols read: dropped once more than SYMBOLS_READ_KEPT were read, then read at random.
    (segment,) = served.space.segments
    symbols = segment.symbols
    names = [served.chunk_at(row, with_text=False).symbol for row in range(len(served))]
    for name in names:
        served.search(name, k=10)  # a symbol: its candidates' symbols are read
        if symbols.reads == 0:  # dropped at the end of this search
            break
    else:
        raise AssertionError("the symbols' pages were never dropped")
    assert resident_kb(np.frombuffer(symbols.data, np.uint8)) == 0
    served.search("format_money", k=10)
    assert 0 < symbols.reads <= SYMBOLS_READ_KEPT  # the identifier's candidates were read
    assert resident_kb(np.frombuffer(symbols.data, np.uint8)) <= 4 * symbols.reads  # no 64 KB
    # a one-shot process releases nothing: its pages go with it
    segment = once.space.segments[0]
    assert resident_kb(segment.postings[0]) > 0


def test_a_search_leaves_no_reference_cycles(make_repo: MakeRepo, tmp_path: Path) -> None:
    # What a search drops is freed at once: garbage in cycles waits for a collection, which
    # comes in the middle of some later search (0.4-0.9 ms at 38k chunks).
    build_index(make_repo(many_functions(files=20)), index_dir=tmp_path / "idx", progress=False)
    for one_shot in (False, True):
        index = Index(current_generation(tmp_path / "idx"))
        index.one_shot = one_shot
        answers(index)  # caches filled
        gc.collect()
        gc.disable()
        try:
            first = answers(index)
            assert gc.collect() == 0
        finally:
            gc.enable()
        assert first == answers(index)


def test_digests_are_read_row_by_row_or_held(make_repo: MakeRepo, tmp_path: Path) -> None:
    build_index(make_repo(many_functions(files=3)), index_dir=tmp_path / "idx", progress=False)
    index = Index(current_generation(tmp_path / "idx"))
    segment = index.space.segments[0]
    stored = segment.row_sums
    assert isinstance(stored, StoredInts)
    # A process that searches again and again holds the metadata digests (a search checks a
    # dozen records); one answering a single command reads them row by row too.
    held = np.load(segment.directory / "meta_sums.npy")
    assert np.array_equal(segment.row_meta_sums, held)
    once = Index(current_generation(tmp_path / "idx"))
    once.one_shot = True
    once_meta = once.space.segments[0].row_meta_sums
    assert isinstance(once_meta, StoredInts)
    assert [once_meta[i] for i in range(len(once_meta))] == held.tolist()
    whole = np.load(segment.directory / "chunk_sums.npy")
    assert [stored[i] for i in range(len(stored))] == whole.tolist()
    with pytest.raises(IndexError):
        stored[len(stored)]
    assert "sums" not in vars(segment)  # the whole array was never read
    index.chunk_at(0)  # checked against its digests
    # offsets into files under 4 GB are held as uint32
    assert all(o.dtype == np.uint32 for o in segment.offsets)


def test_a_view_forgets_its_terms_between_searches(
    make_repo: MakeRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past TERMS_KEPT looked-up terms, a search starts by forgetting them (a server asked
    ever new words does not grow with them): the same answers, also while other threads
    search the same index and forget them under it."""
    build_index(make_repo(many_functions(files=30)), index_dir=tmp_path / "idx", progress=False)
    queries = [*QUERIES, "open a tcp connection with retries", *QUERIES]
    expected = [answers_of(Index(current_generation(tmp_path / "idx")), q) for q in queries]
    monkeypatch.setattr(lexical_view, "TERMS_KEPT", 3)
    index = Index(current_generation(tmp_path / "idx"))
    sizes = []
    for query, want in zip(queries, expected, strict=True):
        assert answers_of(index, query) == want
        sizes.append(len(index.lexical._spans))
    assert max(sizes) > 20  # the report's terms were kept while it was answered
    assert sizes[1] < 10  # and forgotten when the next search started
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda q: answers_of(index, q), queries * 4))
    assert got == expected * 4


def answers_of(index: Index, query: str) -> list[tuple[str, float, float, float]]:
    """Each result's id, score, keyword coverage and confidence (threads searching one index
    read the coverage from the view's buffers or, when another holds them, the postings)."""
    found = index.search(query, k=10, with_text=True)
    return [(r.id, round(r.score, 6), r.keyword, r.confidence) for r in found]


def test_a_search_drops_its_largest_buffers(make_repo: MakeRepo, tmp_path: Path) -> None:
    """A long query's postings buffers above SCRATCH_KEEP_BYTES are dropped once it is
    answered (the next one makes them again); the smaller ones are kept for the next search."""
    from indexer.index import postings

    build_index(make_repo(many_functions(files=20)), index_dir=tmp_path / "idx", progress=False)
    index = Index(current_generation(tmp_path / "idx"))
    question = "format the amount of money in a currency"
    want = answers_of(index, question)
    scratch = index.lexical._scratch
    assert scratch is not None and scratch._buffers  # kept: all are small
    sizes = {name: buf.nbytes for name, buf in scratch._buffers.items()}
    keep = sorted(sizes.values())[len(sizes) // 2]
    scratch.trim(keep)
    assert {n for n, b in scratch._buffers.items()} == {n for n, s in sizes.items() if s <= keep}
    original = postings.SCRATCH_KEEP_BYTES
    try:
        postings.SCRATCH_KEEP_BYTES = 0
        assert answers_of(index, question) == want  # made again, the same answers
        assert not index.lexical._scratch._buffers  # and dropped at the search's end
    finally:
        postings.SCRATCH_KEEP_BYTES = original
    assert answers_of(index, question) == want


def test_a_long_lived_process_bounds_its_query_word_caches(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    """A process that searches again and again (not a one-shot CLI) keeps at most
    SEARCH_WORD_CACHE words in each query-word cache; the symbols' split cache keeps its size."""
    from indexer.caches import ENTRIES
    from indexer.index import tokens, workers

    build_index(make_repo(many_functions(files=3)), index_dir=tmp_path / "idx", progress=False)
    Index(current_generation(tmp_path / "idx")).search("format money", log=False)
    assert tokens._word_terms.__self__.entries == workers.SEARCH_WORD_CACHE  # type: ignore[attr-defined]
    assert tokens._word_lexical.__self__.entries == workers.SEARCH_WORD_CACHE  # type: ignore[attr-defined]
    assert tokens._split_cached.__self__.entries == ENTRIES  # type: ignore[attr-defined]


def test_decompressed_file_texts_are_kept_within_a_byte_bound(
    make_repo: MakeRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A segment keeps the last files' decompressed texts (results cluster in few files), at
    most BLOCK_CACHE of them and BLOCK_CACHE_BYTES in all, the last one read always."""
    from indexer.index import segment_records as segment_module

    build_index(make_repo(many_functions(files=12)), index_dir=tmp_path / "idx", progress=False)
    index = Index(current_generation(tmp_path / "idx"))
    seg = index.space.segments[0]
    one_file = len(seg._block(0))
    monkeypatch.setattr(segment_module, "BLOCK_CACHE_BYTES", 3 * one_file)
    for f in range(len(seg.paths)):
        texts = [
            index.chunk_at(row).text
            for row in range(int(seg.file_rows[f]), int(seg.file_rows[f + 1]))
        ]
        assert all(texts)
        held = sum(len(b) for b in seg._blocks.values())
        assert f in seg._blocks and (held <= 3 * one_file or len(seg._blocks) == 1)
    monkeypatch.setattr(segment_module, "BLOCK_CACHE_BYTES", 0)
    index.chunk_at(0)
    assert list(seg._blocks) == [0]  # the file just read, however large
