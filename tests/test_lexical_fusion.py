import math

import numpy as np
import pytest

from indexer.errors import IndexerError
from indexer.index.lexical import K1, B, LexicalIndex, top_rows
from indexer.search.fusion import FusionConfig, confidence, recency_score, rrf


def test_bm25_matches_hand_computation() -> None:
    docs = [["apple", "banana"], ["apple", "apple", "cherry"], ["durian"]]
    index = LexicalIndex.build(docs)
    bm25, coverage = index.score(["apple"])
    n, df, avgdl = 3, 2, (2 + 3 + 1) / 3
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))

    def expected(tf: int, dl: int) -> float:
        return idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl))

    assert bm25[0] == pytest.approx(expected(1, 2), rel=1e-5)
    assert bm25[1] == pytest.approx(expected(2, 3), rel=1e-5)
    assert bm25[2] == 0
    assert coverage.tolist() == [1.0, 1.0, 0.0]


def test_coverage_counts_unknown_query_terms() -> None:
    index = LexicalIndex.build([["alpha"], ["beta"]])
    _, coverage = index.score(["alpha", "zzz-unknown"])
    assert 0 < coverage[0] < 1 and coverage[1] == 0


def test_lexical_roundtrip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    index = LexicalIndex.build([["a", "b"], ["b", "c"]])
    index.save(tmp_path)
    loaded = LexicalIndex.load(tmp_path)
    assert np.allclose(loaded.score(["b", "c"])[0], index.score(["b", "c"])[0])


def test_rrf_sums_weighted_reciprocal_ranks() -> None:
    rows, scores = rrf([(np.array([7, 8]), 1.0), (np.array([8, 9]), 0.5)], k=60)
    assert rows.tolist() == [7, 8, 9]  # order of first appearance
    fused = dict(zip(rows.tolist(), scores.tolist(), strict=True))
    assert fused[8] == pytest.approx(1 / 62 + 0.5 / 61)
    assert fused[7] == pytest.approx(1 / 61)
    assert fused[9] == pytest.approx(0.5 / 62)
    assert max(fused, key=fused.__getitem__) == 8


def test_rrf_skips_zero_weight_lists_and_handles_empty() -> None:
    rows, scores = rrf([(np.array([3, 1]), 0.0), (np.array([], dtype=np.int64), 1.0)], k=60)
    assert len(rows) == 0 and len(scores) == 0
    rows, _ = rrf([(np.array([3, 1]), 0.0), (np.array([5]), 1.0)], k=60)
    assert rows.tolist() == [5]


def test_top_rows_equals_a_stable_full_sort() -> None:
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 5, size=2000).astype(np.float32)  # many ties
    for n in (1, 10, 200, 5000):
        expected = np.nonzero(scores > 0)[0]
        expected = expected[np.argsort(-scores[expected], kind="stable")][:n]
        assert top_rows(scores, n).tolist() == expected.tolist()


def test_confidence_formula_and_recency() -> None:
    cfg = FusionConfig.default()
    rec = recency_score(np.array([1000, 1000 - 365 * 86400]), 1000, 365.0)
    assert rec.tolist() == pytest.approx([1.0, 0.5])
    conf = confidence(np.array([1.0, 0.2]), np.array([1.0, 0.0]), np.array([1.0, 0.0]), cfg)
    assert conf[0] == pytest.approx(1.0)
    assert conf[1] == pytest.approx(0.0)


def test_fusion_config_rejects_bad_values() -> None:
    with pytest.raises(IndexerError, match="rrf_k"):
        FusionConfig.from_dict({"rrf_k": -3})
    with pytest.raises(IndexerError, match="unknown key"):
        FusionConfig.from_dict({"rerank": {"nonsense": 1}})
    with pytest.raises(IndexerError, match="not a number"):
        FusionConfig.from_dict({"confidence_weights": {"similarity": "high"}})
    with pytest.raises(IndexerError, match="JSON object"):
        FusionConfig.from_dict([1, 2])
    assert FusionConfig.from_dict({"rrf_k": 20})["rrf_k"] == 20


def test_shipped_fusion_json_is_valid() -> None:
    from indexer.search.fusion import default_fusion_path

    assert default_fusion_path().exists()
    FusionConfig.load(default_fusion_path())


def test_bad_fusion_file_gives_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "fusion.json"
    path.write_text("{not json")
    with pytest.raises(IndexerError, match="invalid fusion settings"):
        FusionConfig.load(path)
