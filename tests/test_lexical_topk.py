"""Pruned BM25 (LexicalView.top) equals exhaustive scoring bit for bit on real indexes: this
package's own source, streamed into several segments, then updated (deletes: rows out of path
order) and merged into one segment (precomputed scores)."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pygit2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexer import Index
from indexer.errors import CorruptIndexError
from indexer.index import lexical_pass, lexical_topk, postings
from indexer.index.build import build_index, update_index
from indexer.index.lexical import top_rows
from indexer.index.lexical_view import LexicalView
from indexer.index.merge import merge
from indexer.index.store import current_generation

from .conftest import commit_all

ROOT = Path(__file__).resolve().parents[1]
MODES: dict[str, dict[str, float]] = {
    "shipped": {},
    "lean": {"LEAN_POSTINGS": 10**9},
    "race reads": {"LEAN_POSTINGS": 0, "PRUNE_MAX": 1.1, "SCAN_NS": 0},
    "race looks up": {"LEAN_POSTINGS": 0, "PRUNE_MAX": 1.1, "PAIR_NS": 0, "NEEDLE_NS": 0},
}


@pytest.fixture(scope="module")
def views(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Index]:
    """Three indexes of the same real code: 'streamed' (several segments laid end to end),
    'updated' (an update deleted and rewrote files of older segments), 'merged' (one); and
    each again with its postings read by pread ('..., pread')."""
    tmp = tmp_path_factory.mktemp("topk")
    repo = tmp / "repo"
    shutil.copytree(
        ROOT / "indexer", repo / "indexer", ignore=shutil.ignore_patterns("__pycache__")
    )
    pygit2.init_repository(str(repo))
    commit_all(repo, "source")
    streamed = tmp / "streamed"
    build_index(repo, index_dir=streamed, progress=False, segment_chunks=300)
    updated = tmp / "updated"
    shutil.copytree(streamed, updated)
    for path in sorted((repo / "indexer" / "search").glob("*.py"))[:3]:
        path.unlink()
    cli = repo / "indexer" / "serve" / "cli.py"
    cli.write_text(cli.read_text() + "\n\ndef added_for_the_update():\n    return 'return'\n")
    commit_all(repo, "update")
    update_index(repo, index_dir=updated, progress=False)
    merged = tmp / "merged"
    shutil.copytree(updated, merged)
    merge(merged, everything=True)
    out = {
        name: Index(current_generation(directory))
        for name, directory in (("streamed", streamed), ("updated", updated), ("merged", merged))
    }
    assert len(out["streamed"].lexical.space.segments) > 3
    assert not out["updated"].lexical.space.concatenated
    assert len(out["merged"].lexical.space.segments) == 1
    # The same indexes read with pread, as a large index's postings are (these are too small)
    saved = postings.PREAD_MIN
    postings.PREAD_MIN = 0
    try:
        for name, index in list(out.items()):
            read = out[f"{name}, pread"] = Index(index.snapshot)
            assert not any(source.mapped for source in read.lexical._sources)
    finally:
        postings.PREAD_MIN = saved
    return out


def vocabulary(view: LexicalView) -> tuple[list[str], list[str]]:
    """(every term, the 60 commonest) of the view's segments."""
    df: dict[str, int] = {}
    for segment in view.space.segments:
        indptr = np.asarray(segment.postings[0])
        for term, n in zip(segment.terms, np.diff(indptr).tolist(), strict=True):
            df[term] = df.get(term, 0) + n
    common = sorted(df, key=lambda t: -df[t])[:60]
    return sorted(df), common


def assert_top_equals_exhaustive(
    view: LexicalView,
    terms: Sequence[str],
    boosts: dict[str, float],
    n: int,
    allowed: np.ndarray | None,
    also: np.ndarray,
) -> None:
    bm25, coverage = view.score(terms, boosts)
    expected = top_rows(bm25 if allowed is None else np.where(allowed, bm25, 0), n)
    hits = view.top(terms, boosts, n, allowed, also=also)
    np.testing.assert_array_equal(hits.rows, expected)
    assert hits.scores.dtype == np.float32
    np.testing.assert_array_equal(hits.scores, bm25[expected])  # bit for bit
    asked = np.concatenate([expected, also])
    np.testing.assert_array_equal(hits.coverage(asked), coverage[asked])
    # Rows the search never saw: looked up when asked.
    others = np.arange(0, view.n_docs, 7)
    np.testing.assert_array_equal(hits.coverage(others), coverage[others])


@pytest.mark.parametrize(
    "name", ["streamed", "updated", "merged", "streamed, pread", "updated, pread", "merged, pread"]
)
@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_pruned_top_rows_equal_exhaustive_scoring(
    views: dict[str, Index], name: str, data: st.DataObject
) -> None:
    view = views[name].lexical
    every, common = vocabulary(view)
    word = st.one_of(st.sampled_from(every), st.sampled_from(common), st.just("zzz-unknown"))
    # Up to issue-sized queries: many common terms, repeats, boosts like the report's weights.
    terms = data.draw(st.lists(word, min_size=1, max_size=120))
    boosts = data.draw(
        st.dictionaries(st.sampled_from(terms), st.sampled_from([0.0, 0.6, 1.0, 2.0]))
    )
    n = data.draw(st.sampled_from([1, 10, 400, 5000]))
    allowed = None
    if data.draw(st.booleans()):
        seed = data.draw(st.integers(0, 2**32 - 1))
        share = data.draw(st.sampled_from([0.01, 0.3, 0.9]))
        allowed = np.random.default_rng(seed).random(view.n_docs) < share
    also = np.asarray(
        data.draw(st.lists(st.integers(0, view.n_docs - 1), max_size=300)), dtype=np.int64
    )
    # This index is small: most queries would take the lean path. Force each path: pruning
    # (the race reading postings, or looking rows up in them) and the lean pass.
    mode = data.draw(st.sampled_from(sorted(MODES)))
    saved = {name: getattr(lexical_topk, name) for name in MODES[mode]}
    for name, value in MODES[mode].items():
        setattr(lexical_topk, name, value)
    try:
        assert_top_equals_exhaustive(view, terms, boosts, n, allowed, also)
    finally:
        for name, value in saved.items():
            setattr(lexical_topk, name, value)


def test_long_reports_are_pruned_and_exact(
    views: dict[str, Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report-sized query of common words leaves most postings unscored, same answer."""
    monkeypatch.setattr(lexical_topk, "LEAN_POSTINGS", 0)  # this index's queries are small
    monkeypatch.setattr(lexical_topk, "PRUNE_MAX", 1.1)
    for index in views.values():
        view = index.lexical
        _, common = vocabulary(view)
        rare = ["dense", "rerank", "fusion", "segment", "manifest", "overlay", "pread"]
        terms = common[:40] * 2 + rare
        boosts = {t: (2.0 if t in rare else 0.6) for t in terms}
        assert_top_equals_exhaustive(view, terms, boosts, 10, None, np.arange(5))
        stats = view.last_stats
        assert stats["scored"] < stats["postings"] / 2, stats


def test_the_one_pass_reads_values_a_chunk_at_a_time(
    views: dict[str, Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scoring every posting holds their rows (for the coverage), not their values: those are
    read a chunk of terms at a time into a buffer as long as the chunk (a report's 770k
    postings at 163k chunks would otherwise keep 3 MB more), and their rows looked up for the
    keyword coverage a chunk at a time too, with the same exact answers and coverage."""
    monkeypatch.setattr(lexical_topk, "LEAN_POSTINGS", 10**9)
    monkeypatch.setattr(lexical_pass, "LEAN_CHUNK", 64)
    for index in views.values():
        view = index.lexical
        _, common = vocabulary(view)
        terms = common[:30]
        view._scratch = None  # fresh buffers: what this search allocates
        view.top(terms, {}, 10)
        assert view._scratch is not None
        buffers = view._scratch._buffers
        total = view.last_stats["postings"]
        longest = max(sum(hi - lo for _, lo, hi in view.spans(t)) for t in terms)
        assert total > 4 * max(longest, 64)  # several chunks
        assert "raw" not in buffers
        assert len(buffers["rows"]) >= total
        assert len(buffers["c_raw"]) < total // 2
        assert_top_equals_exhaustive(view, terms, {}, 10, None, np.arange(5))


@pytest.mark.parametrize(
    "costs",
    [{"PART_NS": 0, "NEEDLE_NS": 0}, {"FLAG_NS": 0}],
    ids=["binary search per part", "a flag per row"],
)
def test_the_coverage_asked_after_a_pass_is_exact_either_way(
    views: dict[str, Index], monkeypatch: pytest.MonkeyPatch, costs: dict[str, int]
) -> None:
    """The rows a one pass read stay in its buffers: a row's coverage asked afterwards is
    looked up in them (each part's rows binary-searched, or every posting's row flagged),
    exactly the reference's, for rows in any order and repeated, without reading again."""
    for name, value in costs.items():
        monkeypatch.setattr(lexical_pass, name, value)
    monkeypatch.setattr(lexical_topk, "LEAN_POSTINGS", 10**9)
    for index in views.values():
        view = index.lexical
        _, common = vocabulary(view)
        terms = [*common[5:25], "segment", "zzz-unknown", "manifest", "segment"]
        _, coverage = view.score(terms, {})
        hits = view.top(terms, {}, 10)
        assert hits.later is not None and len(hits.seen) == 0
        asked = np.concatenate([hits.rows[::-1], np.arange(0, view.n_docs, 11), hits.rows[:3]])
        assert hits.later(asked) is not None  # from the buffers
        np.testing.assert_array_equal(hits.coverage(asked), coverage[asked])
        # Another search reads its postings into the buffers: the first hits read theirs again.
        view.top(terms[:1], {}, 1)
        assert hits.later(asked) is None
        np.testing.assert_array_equal(hits.coverage(asked), coverage[asked])


@pytest.mark.parametrize("n", [1, 10, 400])
def test_a_floor_from_the_strongest_terms_rows_keeps_the_top_rows(
    views: dict[str, Index], monkeypatch: pytest.MonkeyPatch, n: int
) -> None:
    """A large index takes the one pass's floor from the rows of one strong term (a lower
    bound of the n-th best sum as the sample's is): the same top rows, filters or not."""
    monkeypatch.setattr(lexical_pass, "TERM_FLOOR_ROWS", 0)  # these indexes are small
    monkeypatch.setattr(lexical_topk, "LEAN_POSTINGS", 10**9)
    floors: list[float | None] = []
    of_terms = lexical_pass.QueryPass._floor_of_terms

    def seen(self: lexical_pass.QueryPass, n: int) -> float | None:  # called through
        floors.append(of_terms(self, n))
        return floors[-1]

    monkeypatch.setattr(lexical_pass.QueryPass, "_floor_of_terms", seen)
    for index in views.values():
        view = index.lexical
        every, common = vocabulary(view)
        sized = [t for t in every if n <= len(view.score([t], {})[0].nonzero()[0]) <= 8 * n]
        assert sized, n
        for terms in ([*common[:20], *sized[:3]], [sized[-1], *common[30:40]], sized[:5]):
            assert_top_equals_exhaustive(view, terms, {}, n, None, np.arange(3))
            allowed = np.random.default_rng(n).random(view.n_docs) < 0.5
            assert_top_equals_exhaustive(view, terms, {terms[0]: 2.0}, n, allowed, np.arange(3))
    assert any(floor is not None and floor > 0 for floor in floors)  # the terms' floor was used


def test_the_race_looks_rows_up_when_few_are_left(
    views: dict[str, Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Binary search in the terms left, for the rows still in the race: the same answer."""
    for name, value in MODES["race looks up"].items():
        monkeypatch.setattr(lexical_topk, name, value)
    for index in views.values():
        view = index.lexical
        _, common = vocabulary(view)
        terms = [*common[:30], "segment", "manifest", "overlay", "rerank"]
        boosts = {t: 2.0 for t in terms[-4:]}
        assert_top_equals_exhaustive(view, terms, boosts, 20, None, np.arange(0, view.n_docs, 50))
        assert view.last_stats["looked_up"] > 0, view.last_stats


def test_empty_and_unknown_queries(views: dict[str, Index]) -> None:
    view = views["updated"].lexical
    for terms in ([], ["zzz-unknown"], ["zzz-unknown", "yyy-unknown"]):
        hits = view.top(terms, {}, 10, also=np.arange(3))
        assert len(hits.rows) == 0 and len(hits.scores) == 0
        np.testing.assert_array_equal(hits.coverage(np.arange(3)), np.zeros(3, np.float32))


def test_concurrent_searches_of_one_view(views: dict[str, Index]) -> None:
    """Threads searching one view at once each get the sequential answer (one of them borrows
    the view's buffers, the others their own)."""
    view = views["streamed"].lexical
    _, common = vocabulary(view)
    queries = [[*common[i : i + 12], "segment", "query"] for i in range(0, 48, 4)]
    expected = [view.top(q, {}, 100).rows for q in queries]
    results: dict[int, list[np.ndarray]] = {}

    def work(k: int) -> None:
        results[k] = [view.top(q, {}, 100).rows for q in queries]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got in results.values():
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_array_equal(a, b)


def test_search_over_segments_equals_merged(views: dict[str, Index]) -> None:
    """The update's segments and their merge answer every query identically."""
    a, b = views["updated"], views["merged"]
    for q in ("segment manifest generation", "return the dense rows", "LexicalView", "pread"):
        assert [(r.id, r.score, r.confidence) for r in a.search(q)] == [
            (r.id, r.score, r.confidence) for r in b.search(q)
        ]


def test_postings_read_with_pread_from_a_truncated_file_say_how_to_rebuild(
    views: dict[str, Index], tmp_path: Path
) -> None:
    """A postings file cut short under a process that reads it with pread: a one-line
    CorruptIndexError naming the file, not short or stale postings."""
    copy = tmp_path / "index"
    shutil.copytree(views["streamed"].snapshot.parent.parent, copy)
    saved = postings.PREAD_MIN
    postings.PREAD_MIN = 0
    try:
        index = Index(current_generation(copy))
        sources = index.lexical._sources
    finally:
        postings.PREAD_MIN = saved
    assert all(source.direct is not None for source in sources)
    docs = Path(sources[0]._files[0][0])  # type: ignore[index]
    with docs.open("r+b") as fh:
        fh.truncate(sources[0]._files[0][1])  # type: ignore[index]  # the header only
    _, common = vocabulary(index.lexical)
    with pytest.raises(CorruptIndexError, match=r"bm25_docs\.npy is truncated; .*indexer build"):
        index.lexical.top(common[:20], {}, 10)
