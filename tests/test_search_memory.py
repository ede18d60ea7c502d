"""What a long-lived search process keeps resident: the spans of the terms it looked up, not
the pages it read to find them, nor per-row digests it reads a few of per query; and the same
answers as a process that answers one command."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from indexer.api import Index
from indexer.index import lexical_view
from indexer.index.build import build_index
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
    # a one-shot process releases nothing: its pages go with it
    segment = once.space.segments[0]
    assert resident_kb(segment.postings[0]) > 0


def test_digests_are_read_row_by_row(make_repo: MakeRepo, tmp_path: Path) -> None:
    build_index(make_repo(many_functions(files=3)), index_dir=tmp_path / "idx", progress=False)
    index = Index(current_generation(tmp_path / "idx"))
    segment = index.space.segments[0]
    stored = segment.row_sums
    assert isinstance(stored, StoredInts) and isinstance(segment.row_meta_sums, StoredInts)
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


def answers_of(index: Index, query: str) -> list[tuple[str, float]]:
    return [(r.id, round(r.score, 6)) for r in index.search(query, k=10, with_text=True)]
