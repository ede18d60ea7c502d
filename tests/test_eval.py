"""`indexer eval`: metrics against hand-computed cases, the real CLI on a real tree, tuning code."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from indexer.errors import IndexerError
from indexer.eval.evaluate import (
    Case,
    evaluate,
    file_metrics,
    function_recall,
    load_dataset,
    prepare_index,
    summarize,
)
from indexer.eval.tuning import (
    EvalSet,
    config_with,
    cross_validate,
    dense_documents,
    same_fold_choice,
    score_rows,
    with_vectors,
)
from indexer.index.vectors import StaticVectors
from indexer.search.fusion import FusionConfig

from .conftest import SAMPLE_FILES, run_cli, write_files


def test_file_metrics_match_hand_computation() -> None:
    ranked = ["a.py", "b.py", "c.py", "d.py", "e.py", "f.py"]
    m = file_metrics(ranked, ["b.py", "f.py", "zz.py"])
    assert m["file_recall@1"] == 0.0
    assert m["file_recall@5"] == pytest.approx(1 / 3)
    assert m["file_recall@10"] == pytest.approx(2 / 3)
    assert m["mrr"] == pytest.approx(1 / 2)
    dcg = 1 / math.log2(3) + 1 / math.log2(7)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert m["ndcg@10"] == pytest.approx(dcg / ideal)


def test_file_metrics_perfect_and_missing() -> None:
    perfect = file_metrics(["x.py"], ["x.py"])
    assert perfect == {
        "file_recall@1": 1.0,
        "file_recall@5": 1.0,
        "file_recall@10": 1.0,
        "mrr": 1.0,
        "ndcg@10": 1.0,
    }
    missing = file_metrics([f"{i}.py" for i in range(20)], ["15.py"])
    assert missing["file_recall@10"] == 0.0 and missing["ndcg@10"] == 0.0
    assert missing["mrr"] == pytest.approx(1 / 16)  # MRR looks past the top 10


def test_function_recall() -> None:
    keys = [f"m.py::f{i}" for i in range(12)]
    assert function_recall(keys, []) is None
    assert function_recall(keys, ["m.py::f0", "m.py::f11"]) == 0.5
    assert function_recall(keys, ["m.py::f3"], k=3) == 0.0


def test_summarize_means_per_system_and_group() -> None:
    rows = [
        {"id": "1", "group": "g1", "system": "fused", "mrr": 1.0, "latency_ms": 2.0},
        {"id": "2", "group": "g1", "system": "fused", "mrr": 0.5, "latency_ms": 4.0},
        {"id": "3", "group": "g2", "system": "fused", "mrr": 0.0, "latency_ms": 6.0, "tokens": 100},
    ]
    report = summarize(rows, {})
    assert report.systems["fused"]["mrr"] == 0.5
    assert report.systems["fused"]["queries"] == 3
    assert report.systems["fused"]["tokens"] == 100  # only rows that have it
    assert report.groups["g1"]["fused"]["mrr"] == 0.75
    assert report.groups["g2"]["fused"]["latency_ms"] == 6.0


def test_load_dataset_errors(tmp_path: Path) -> None:
    with pytest.raises(IndexerError, match="cannot read dataset"):
        load_dataset(tmp_path / "missing.jsonl", tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "q", "gold_files": ["a"]}\n{"no": "query"}\n')
    with pytest.raises(IndexerError, match=r"bad.jsonl:2: not a dataset record"):
        load_dataset(bad, tmp_path)


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """A tree of real source files and three questions about it, in the dev-set format."""
    tree = tmp_path / "trees" / "shop"
    write_files(tree, SAMPLE_FILES)
    records = [
        {
            "id": "shop/1",
            "repo": "acme/shop",
            "tree": "shop",
            "query": "InvoiceCalculator",
            "gold_files": ["billing/invoice.py"],
            "gold_functions": ["billing/invoice.py::InvoiceCalculator"],
        },
        {
            "id": "shop/2",
            "repo": "acme/shop",
            "tree": "shop",
            "query": "retry a network call with exponential backoff",
            "gold_files": ["net/retry.py"],
            "gold_functions": ["net/retry.py::retry_with_backoff"],
        },
        {
            "id": "shop/3",
            "repo": "acme/shop",
            "tree": "shop",
            "query": "health check endpoint of the server",
            "gold_files": ["server/health.go"],
        },
    ]
    path = tmp_path / "instances.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_eval_cli_json_reports_systems_groups_and_rows(dataset: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    args = [
        "eval",
        "--dataset",
        str(dataset),
        "--repo-root",
        str(dataset.parent / "trees"),
        "--cache-dir",
        str(cache),
        "--json",
    ]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert set(report["systems"]) == {"fused", "bm25", "dense", "file-bm25"}
    fused = report["systems"]["fused"]
    assert fused["queries"] == 3
    assert fused["file_recall@10"] == 1.0  # three easy questions on a tiny tree
    assert fused["function_recall@10"] == 1.0
    assert fused["tokens"] > 0 and fused["latency_ms"] > 0
    assert set(report["groups"]) == {"acme/shop"}
    rows = [r for r in report["queries"] if r["system"] == "fused"]
    assert [r["id"] for r in rows] == ["shop/1", "shop/2", "shop/3"]
    assert rows[0]["top_files"][0] == "billing/invoice.py"
    assert report["builds"]  # the tree was indexed now...
    again = json.loads(run_cli(*args).stdout)
    assert again["builds"] == {}  # ...and reused from the cache the second time
    assert again["systems"]["fused"]["mrr"] == fused["mrr"]


def test_eval_cli_table_and_errors(dataset: Path, tmp_path: Path) -> None:
    common = [
        "--dataset",
        str(dataset),
        "--repo-root",
        str(dataset.parent / "trees"),
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    proc = run_cli("eval", *common, "--systems", "bm25,file-bm25")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].split()[:4] == ["system", "R@1", "R@5", "R@10"]
    assert [line.split()[0] for line in proc.stdout.splitlines()[1:]] == ["bm25", "file-bm25"]

    proc = run_cli("eval", *common, "--systems", "bm25", "--per-repo")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[lines.index("acme/shop") + 2].split()[0] == "bm25"

    proc = run_cli("eval", *common, "--systems", "fused,magic")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "indexer: error: unknown system 'magic'; choose from fused, bm25, dense, file-bm25"
    )

    bad_fusion = tmp_path / "fusion.json"
    bad_fusion.write_text(json.dumps({"rrf_k": 0, "threshold": {"relative": 2}}))
    proc = run_cli("eval", *common, "--fusion", str(bad_fusion))
    assert proc.returncode == 2
    assert "rrf_k" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1

    proc = run_cli(
        "eval",
        "--dataset",
        str(dataset),
        "--repo-root",
        str(tmp_path / "nowhere"),
        "--cache-dir",
        str(tmp_path / "cache"),
    )
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr and "Traceback" not in proc.stderr


def test_vector_variant_view_matches_the_built_index(dataset: Path, tmp_path: Path) -> None:
    """Swapping a table in memory gives exactly what a build with that table gives."""
    cases = load_dataset(dataset, dataset.parent / "trees")
    index, _ = prepare_index(cases[0].tree, tmp_path / "cache")
    table = StaticVectors.load()
    view = with_vectors(index, table, dense_documents(index))
    query = table.embed("retry a network call with exponential backoff")
    sims_built, ids_built = index.dense.search(query, 5)
    sims_view, ids_view = view.dense.search(query, 5)
    assert ids_view.tolist() == ids_built.tolist()
    assert np.allclose(sims_view, sims_built, atol=1e-3)

    eval_set = EvalSet("shop", cases, tmp_path / "cache")
    same = eval_set.run(("dense", "fused"), table=table)
    built = evaluate(cases, tmp_path / "cache", ("dense", "fused"))
    for system in ("dense", "fused"):
        assert same.systems[system]["mrr"] == built.systems[system]["mrr"]


def test_config_with_validates() -> None:
    base = FusionConfig.default()
    tuned = config_with(base, {"rrf_k": 20, "retriever_weights.long.dense": 0.1})
    assert tuned["rrf_k"] == 20 and tuned["retriever_weights"]["long"]["dense"] == 0.1
    assert base["rrf_k"] == 60  # the base is not modified
    with pytest.raises(IndexerError, match=r"threshold.relative: 3 is outside"):
        config_with(base, {"threshold.relative": 3})
    with pytest.raises(IndexerError, match="unknown fusion setting"):
        config_with(base, {"rerank.sparkle": 1.0})


def test_cross_validation_by_repository() -> None:
    def rows(values: dict[str, float]) -> list[dict[str, object]]:
        return [{"group": g, "file_recall@10": v, "mrr": v} for g, v in values.items()]

    # "a" is best overall, but without r1 (or r2) the other repositories prefer "b",
    # which then does badly on the held-out one: cross-validation exposes the overfit.
    results = {
        "a": rows({"r1": 1.0, "r2": 0.9, "r3": 0.0}),
        "b": rows({"r1": 0.2, "r2": 0.0, "r3": 1.0}),
    }
    cv = cross_validate(results)
    assert cv["chosen"] == "a"
    assert cv["picks"] == {"r1": "b", "r2": "b", "r3": "a"}
    assert cv["held_out"] == {"r1": 0.2, "r2": 0.0, "r3": 0.0}
    assert cv["cv_score"] == pytest.approx(0.2 / 3)
    assert score_rows(results["b"], {"r1", "r3"}) == pytest.approx(0.6)


def test_same_fold_choice_ships_the_best_held_out_candidate() -> None:
    def rows(values: dict[str, float]) -> list[dict[str, object]]:
        return [{"group": g, "file_recall@10": v, "mrr": v} for g, v in values.items()]

    defaults = rows({"r1": 0.6, "r2": 0.6, "r3": 0.6})
    current = rows({"r1": 0.5, "r2": 0.7, "r3": 0.5})
    # The tuned candidate is best in-sample but overfits: its selection scores 0.07 on
    # held-out repositories, below both fixed settings on the same folds.
    overfit = rows({"r1": 1.0, "r2": 0.9, "r3": 0.0})
    cv = cross_validate({"tuned": overfit, "b": rows({"r1": 0.2, "r2": 0.0, "r3": 1.0})})
    choice = same_fold_choice({"current": current, "defaults": defaults}, cv)
    assert choice["winner"] == "defaults" and choice["runner_up"] == "current"
    assert choice["held_out"] == {"current": 0.5667, "defaults": 0.6, "tuned": 0.0667}
    assert choice["margin"] == pytest.approx(0.0333) and choice["folds"] == 3

    # A tuned selection that holds up on every fold wins, by its held-out margin.
    good = rows({"r1": 0.8, "r2": 0.8, "r3": 0.7})
    choice = same_fold_choice(
        {"current": current, "defaults": defaults}, cross_validate({"t": good})
    )
    assert choice["winner"] == "tuned" and choice["margin"] == pytest.approx(0.1667)

    # A tie goes to the fixed candidate listed first, never to the tuned one.
    choice = same_fold_choice(
        {"current": defaults, "defaults": defaults}, cross_validate({"t": defaults})
    )
    assert choice["winner"] == "current" and choice["margin"] == 0.0


def test_case_groups_default_to_tree_name(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"query": "q", "gold_files": ["a.py"], "tree": "t1"}) + "\n")
    (case,) = load_dataset(data, tmp_path)
    assert case == Case("1", "t1", tmp_path / "t1", "q", ("a.py",), ())
