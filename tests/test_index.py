"""End to end: build from a real git repository, search through the API and the real CLI."""

import json
from pathlib import Path

import pytest

from indexer import Index, build_index
from indexer.errors import IndexerError

from .conftest import commit_all, run_cli, write_files


@pytest.fixture
def built(sample_repo: Path) -> Path:
    build_index(sample_repo, progress=False)
    return sample_repo


def top(index: Index, query: str, k: int = 5) -> list[str]:
    return [r.qualname for r in index.search(query, k=k)]


def test_exact_name_queries_return_the_definition_first(built: Path) -> None:
    index = Index.open(built)
    assert top(index, "InvoiceCalculator")[0] == "InvoiceCalculator"
    assert top(index, "retry_with_backoff")[0] == "retry_with_backoff"
    assert top(index, "ShoppingCart")[0] == "ShoppingCart"
    assert top(index, "ServeHTTP")[0] == "HealthChecker.ServeHTTP"
    assert top(index, "push_overwrite")[0] == "RingBuffer.push_overwrite"


def test_paraphrase_without_shared_words_is_found(built: Path) -> None:
    index = Index.open(built)
    query = "repeat an operation when it fails, waiting longer between attempts"
    assert "retry_with_backoff" in top(index, query)
    assert "ShoppingCart" in top(index, "shopping basket")


def test_module_level_code_is_findable(built: Path) -> None:
    index = Index.open(built)
    results = index.search("TAX_RATE", k=5)
    assert results[0].kind == "module" and results[0].path == "billing/invoice.py"
    assert "CURRENCY_SYMBOLS" in index.show(results[0].id).text


def test_untracked_and_ignored_files_are_not_indexed(built: Path) -> None:
    index = Index.open(built)
    paths = {f["path"] for f in index.files}
    assert "ignored_secret.py" not in paths and "untracked_draft.py" not in paths
    assert all(r.path != "ignored_secret.py" for r in index.search("leaked_password_function"))


def test_results_carry_scores_and_positions(built: Path) -> None:
    result = Index.open(built).search("format_money", k=3)[0]
    assert result.path == "billing/invoice.py" and result.symbol == "format_money"
    assert result.start_line < result.end_line
    assert 0 < result.confidence <= 1 and result.score > 0
    assert result.keyword > 0 and 0 <= result.recency <= 1


def test_nonsense_query_returns_nothing(built: Path) -> None:
    assert Index.open(built).search("zqxjkv wvpfmt") == []


def test_chunk_ids_are_stable_across_rebuilds(built: Path) -> None:
    first = Index.open(built)
    ids = {first.chunk_at(i, with_text=False).id for i in range(len(first))}
    build_index(built, progress=False)
    second = Index.open(built)
    assert second.snapshot != first.snapshot
    assert {second.chunk_at(i, with_text=False).id for i in range(len(second))} == ids


def test_build_a_given_revision_and_recency(sample_repo: Path) -> None:
    first = commit_all(sample_repo, "noop")  # same tree
    write_files(sample_repo, {"net/retry.py": "def brand_new_helper():\n    return 42\n"})
    commit_all(sample_repo, "change retry", when=1_800_000_000)
    report = build_index(sample_repo, rev=first, progress=False)
    assert report.commit == first
    # That commit exactly (the files on disk, overlaid by default, are HEAD's).
    committed = Index.open(sample_repo, worktree=False)
    assert top(committed, "retry_with_backoff")[0] == "retry_with_backoff"
    build_index(sample_repo, progress=False)
    index = Index.open(sample_repo)
    assert top(index, "brand_new_helper")[0] == "brand_new_helper"
    result = index.search("brand_new_helper")[0]
    other = index.search("format_money")[0]
    assert result.recency > other.recency  # changed later than the billing code


def test_cli_search_json_matches_the_api(built: Path) -> None:
    proc = run_cli(
        "search", "InvoiceCalculator subtotal", "--repo", str(built), "--json", "-k", "4"
    )
    assert proc.returncode == 0, proc.stderr
    records = json.loads(proc.stdout)
    for field in ("id", "path", "start_line", "end_line", "symbol", "kind", "score", "confidence"):
        assert all(field in r for r in records)
    api = [r.to_dict() for r in Index.open(built).search("InvoiceCalculator subtotal", k=4)]
    assert records == api
    assert all(not Path(r["path"]).is_absolute() for r in records)


def test_cli_build_show_status(sample_repo: Path) -> None:
    proc = run_cli("build", "--json", cwd=sample_repo)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["files"] >= 5 and report["chunks"] > 10
    assert "unsupported" not in report["skipped"]  # every text file is indexed, .gitignore too
    chunk_id = json.loads(run_cli("search", "format_money", "--json", cwd=sample_repo).stdout)[0][
        "id"
    ]
    shown = run_cli("show", chunk_id, "--repo", str(sample_repo))
    assert shown.returncode == 0 and "def format_money" in shown.stdout
    shown_json = json.loads(run_cli("show", chunk_id, "--json", cwd=sample_repo).stdout)
    assert shown_json["qualname"] == "format_money" and "text" in shown_json
    status = json.loads(run_cli("status", "--json", cwd=sample_repo).stdout)
    assert status["commit"] == report["commit"]
    assert status["counts"]["chunks"] == report["chunks"]
    assert status["artifact_bytes"] > 0
    human = run_cli("status", cwd=sample_repo)
    assert report["commit"] in human.stdout and "\x1b[" not in human.stdout


def test_artifacts_live_in_the_git_dir_and_keep_git_status_clean(built: Path) -> None:
    import pygit2

    assert (built / ".git" / "indexer" / "CURRENT").exists()
    repo = pygit2.Repository(str(built))
    assert not any("indexer" in p for p in repo.status())


def test_empty_query_is_an_error(built: Path) -> None:
    with pytest.raises(IndexerError, match="empty"):
        Index.open(built).search("   ")


def test_stored_records_decode_as_the_chunks_they_describe(built: Path) -> None:
    """`Chunk.from_record` (a search decodes each result's record with it) gives what
    `Chunk(**record, text=...)` gives, fields in the same order, for every row of a real index;
    a notebook cell's record keeps its cell, and a record of other fields is refused."""
    from indexer.source.chunks import Chunk

    index = Index.open(built)
    assert len(index) > 10
    for row in range(len(index)):
        segment, local = index.space.locate(row)
        line = segment.meta_bytes(local, local + 1)
        for with_text in (False, True):
            chunk = index.chunk_at(row, with_text=with_text)
            expected = Chunk(**json.loads(line), text=chunk.text)
            assert chunk == expected and hash(chunk) == hash(expected)
            assert list(chunk.to_dict().items()) == list(expected.to_dict().items())
        assert index.chunk_at(row, with_text=True).text  # the text is read where asked
    record = json.loads(line) | {"kind": "cell", "cell": 3}
    cell = Chunk.from_record(json.dumps(record).encode(), "x = 1")
    assert cell == Chunk(**record, text="x = 1") and cell.to_dict()["cell"] == 3
    assert list(cell.to_dict()) == list(Chunk(**record, text="x = 1").to_dict())
    for bad in (b"[1, 2]", json.dumps(record | {"extra": 1}).encode(), b'{"id": "a"}'):
        with pytest.raises(TypeError):
            Chunk.from_record(bad, "")


def test_saturation_of_the_head_alone_is_the_head_of_the_whole(built: Path) -> None:
    """`saturate(..., head=h)` (a search returns k rows: a partition, then a sort of k) gives
    the first h rows of the whole saturated order, ties in fused order, with their values."""
    import numpy as np

    from indexer.search.rerank import saturate

    index = Index.open(built)
    rng = np.random.default_rng(7)
    rows = np.arange(len(index), dtype=np.int64)
    for _ in range(50):
        scores = rng.integers(1, 6, len(rows)).astype(np.float64) / 5  # many ties
        order = np.argsort(-scores, kind="stable")
        ranked = rows[order], scores[order], rng.random(len(rows)).astype(np.float32)
        whole = saturate(index, *ranked)
        for head in (1, 3, 10, len(rows) - 1, len(rows), len(rows) + 5):
            got = saturate(index, *ranked, head=head)
            for part, full in zip(got, whole, strict=True):
                assert part.tolist() == full[:head].tolist()
