"""A long query leaves its common words out of BM25 (query.common_df): they hold most of its
postings and rank nothing."""

from __future__ import annotations

import copy

import pytest

from indexer import Index, build_index
from indexer.errors import IndexerError
from indexer.search.fusion import FusionConfig
from indexer.search.query import parse_query

from .conftest import MakeRepo

# Every file has "value" and "total"; one also has "frobnicate".
FILES = {
    f"pkg/mod{i}.py": f"def helper_{i}(value):\n    total = value + {i}\n    return total\n"
    for i in range(10)
}
FILES["pkg/odd.py"] = "def frobnicate(value):\n    total = value * 2\n    return total\n"
# Long (40+ words): mostly the common words, and the rare one once.
REPORT = "frobnicate breaks " + " ".join(["the value and the total are wrong"] * 7)


def with_common(index: Index, share: float) -> Index:
    values = copy.deepcopy(index.fusion.values)
    values["query"]["common_df"] = share
    return Index(index.snapshot, FusionConfig(values))


def test_without_common_keeps_rare_and_unknown_terms(make_repo: MakeRepo) -> None:
    root = make_repo(dict(FILES))
    build_index(root, progress=False)
    lexical = Index.open(root).lexical
    terms = ["valu", "frobnic", "zzzunknown", "total"]
    assert lexical.df("valu") == lexical.n_docs  # every chunk: common
    assert lexical.without_common(terms, 0.5) == ["frobnic", "zzzunknown"]
    assert lexical.without_common(terms, 1.0) == terms  # no term above every row
    assert lexical.without_common(["valu", "total"], 0.5) == ["valu", "total"]  # all common


def test_a_long_query_ranks_only_chunks_with_its_rare_words(make_repo: MakeRepo) -> None:
    root = make_repo(dict(FILES))
    build_index(root, progress=False)
    index = Index.open(root)
    q = parse_query(REPORT)
    assert q.kind(int(index.fusion["long_query_words"])) == "long"

    def bm25_files(share: float) -> set[str]:
        ranked = with_common(index, share).rank(q, 20, cut=False, retrievers=("bm25",))
        return {index.chunk_at(row, with_text=False).path for row, _ in ranked}

    assert bm25_files(0.0) == set(FILES)  # every chunk has the common words
    assert bm25_files(0.5) == {"pkg/odd.py"}


def test_a_short_query_keeps_its_common_words(make_repo: MakeRepo) -> None:
    root = make_repo(dict(FILES))
    build_index(root, progress=False)
    index = with_common(Index.open(root), 0.5)
    ranked = index.rank(parse_query("frobnicate value"), 20, cut=False, retrievers=("bm25",))
    assert len(ranked) == len(FILES)


def test_common_df_is_a_share() -> None:
    values = copy.deepcopy(FusionConfig.default().values)
    values["query"]["common_df"] = 1.5
    with pytest.raises(IndexerError, match="common_df"):
        FusionConfig.from_dict(values)
