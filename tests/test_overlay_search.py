"""Search sees uncommitted edits: the working-tree overlay end to end, on real repositories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from indexer import Index, build_index
from indexer.errors import IndexerError

from .conftest import (
    PYTHON_BILLING,
    PYTHON_NET,
    MakeRepo,
    commit_all,
    diverge,
    git,
    run_cli,
    write_files,
)

NEW_NET = PYTHON_NET.replace("def retry_with_backoff(", "def retry_with_jitter(")


@pytest.fixture
def repo(make_repo: MakeRepo) -> Path:
    root = make_repo(
        {
            "billing/invoice.py": PYTHON_BILLING,
            "net/retry.py": PYTHON_NET,
            "docs/guide.md": "# Guide\n\nHow to reconcile the quarterly ledger.\n",
            ".gitignore": "scratch/\n",
        }
    )
    build_index(root, progress=False)
    return root


def symbols(results: list) -> list[str]:  # type: ignore[type-arg]
    return [r.symbol for r in results]


def test_a_renamed_function_is_found_under_its_new_name_only(repo: Path) -> None:
    (repo / "net/retry.py").write_text(NEW_NET)
    index = Index.open(repo)
    found = index.search("retry_with_jitter", k=3)
    assert found[0].symbol == "retry_with_jitter" and found[0].source == "worktree"
    assert "retry_with_backoff" not in symbols(index.search("retry_with_backoff", k=10))
    assert found[0].to_dict()["source"] == "worktree"
    assert index.search("format_money", k=1)[0].source == "commit"
    # The code graph is the commit's: `related` still knows the committed name.
    assert index.related("retry_with_backoff")[0].symbol.name == "retry_with_backoff"
    committed = Index.open(repo, worktree=False)
    assert committed.search("retry_with_backoff", k=1)[0].symbol == "retry_with_backoff"
    assert "retry_with_jitter" not in symbols(committed.search("retry_with_jitter", k=10))


def test_new_untracked_files_are_found_ignored_ones_never(repo: Path) -> None:
    write_files(
        repo,
        {
            "net/pool.py": "def connection_pool_size():\n    return 4\n",
            "scratch/notes.py": "def scratch_pool_idea():\n    pass\n",
        },
    )
    index = Index.open(repo)
    assert index.search("connection_pool_size", k=1)[0].path == "net/pool.py"
    assert all(r.path != "scratch/notes.py" for r in index.search("scratch_pool_idea"))


def test_a_file_deleted_on_disk_is_no_longer_found(repo: Path) -> None:
    (repo / "docs/guide.md").unlink()
    index = Index.open(repo)
    assert all(r.path != "docs/guide.md" for r in index.search("reconcile quarterly ledger"))
    with pytest.raises(IndexerError, match="not an indexed file"):
        index.lines("docs/guide.md", 1, 2)


def test_a_renamed_file_is_found_at_its_new_path(repo: Path) -> None:
    git(repo, "mv", "net/retry.py", "net/backoff.py")
    results = Index.open(repo).search("retry_with_backoff", k=3)
    assert results[0].path == "net/backoff.py" and results[0].source == "worktree"
    assert all(r.path != "net/retry.py" for r in results)


def test_a_binary_or_huge_new_file_is_skipped_quietly(repo: Path) -> None:
    (repo / "data.py").write_bytes(b"\0binary_marker_token" * 50)
    (repo / "huge.py").write_text("huge_marker_token = 1\n" * 60_000)
    index = Index.open(repo)
    for query in ("binary_marker_token", "huge_marker_token"):
        assert all(r.path not in ("data.py", "huge.py") for r in index.search(query))
    summary = index.status()["worktree"]
    assert summary["skipped"] == {"binary": 1, "too_large": 1} and summary["overlaid"] == 0


def test_show_and_lines_read_the_file_on_disk(repo: Path) -> None:
    (repo / "net/retry.py").write_text(NEW_NET)
    index = Index.open(repo)
    hit = index.search("retry_with_jitter", k=1)[0]
    assert "def retry_with_jitter" in index.show(hit.id).text
    assert index.lines("net/retry.py", hit.start_line, hit.start_line)[0].startswith(
        "def retry_with_jitter("
    )
    shown = run_cli("show", f"net/retry.py:{hit.start_line}", "--repo", str(repo))
    assert shown.returncode == 0 and shown.stdout.startswith("def retry_with_jitter(")
    old = run_cli("show", f"net/retry.py:{hit.start_line}", "--repo", str(repo), "--no-worktree")
    assert old.stdout.startswith("def retry_with_backoff(")


def test_secret_values_in_uncommitted_files_are_redacted(repo: Path) -> None:
    secret = "AKIAIOSFODNN7EXAMPLE"
    (repo / "net/retry.py").write_text(PYTHON_NET + f'\nAWS_KEY = "{secret}"\n')
    (repo / ".env").write_text("DATABASE_PASSWORD=hunter2hunter2\n")
    index = Index.open(repo)
    texts = [r.text or "" for r in index.search("AWS_KEY", k=10, with_text=True)]
    assert texts and all(secret not in t for t in texts)
    assert any("[REDACTED:" in t for t in texts)
    assert all(r.path != ".env" for r in index.search("DATABASE_PASSWORD hunter2hunter2"))
    lines = index.lines("net/retry.py", 1, 400)
    assert secret not in "\n".join(lines)


def test_a_merge_conflict_is_searched_with_its_markers(repo: Path) -> None:
    diverge(repo, "net/retry.py", "attempts=5", "attempts=9", "attempts=7")
    build_index(repo, progress=False)
    subprocess.run(["git", "merge", "other"], cwd=repo, capture_output=True, check=False)
    index = Index.open(repo)
    hits = index.search("retry_with_backoff attempts", k=10, with_text=True)
    texts = "".join(r.text or "" for r in hits if r.path == "net/retry.py")
    assert hits[0].source == "worktree" and "attempts=7" in texts and "attempts=9" in texts
    assert "<<<<<<< HEAD" in index.lines("net/retry.py", 1, 400)
    status = run_cli("status", "--repo", str(repo))
    assert "1 uncommitted file overlaid (1 conflicted)" in status.stdout
    assert "merge in progress" in status.stdout


def test_a_sparse_checkout_keeps_unchecked_files_from_the_commit(repo: Path) -> None:
    git(repo, "sparse-checkout", "set", "net")
    index = Index.open(repo)
    assert index.search("format_money", k=1)[0].path == "billing/invoice.py"
    assert index.status()["worktree"]["overlaid"] == 0


def test_a_bare_repository_searches_its_commit(repo: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    build_index(bare, progress=False)
    index = Index.open(bare)
    assert index.search("format_money", k=1)[0].source == "commit"
    assert index.status()["worktree"] is None
    status = run_cli("status", "--repo", str(bare))
    assert "worktree   not overlaid (no working tree)" in status.stdout


def test_a_linked_worktree_overlays_its_own_edits(repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked))
    (linked / "net/retry.py").write_text(NEW_NET)
    shared = repo / ".git" / "indexer"
    in_linked = Index.open(linked, index_dir=shared)
    assert in_linked.search("retry_with_jitter", k=1)[0].symbol == "retry_with_jitter"
    in_main = Index.open(repo)
    assert "retry_with_jitter" not in symbols(in_main.search("retry_with_jitter", k=10))


def test_cli_json_rev_and_status(repo: Path) -> None:
    (repo / "net/retry.py").write_text(NEW_NET)
    out = run_cli("search", "retry_with_jitter", "--json", "--no-log", "--repo", str(repo))
    assert json.loads(out.stdout)[0]["source"] == "worktree"
    out = run_cli("search", "retry_with_jitter", "--json", "--rev", "HEAD", "--repo", str(repo))
    assert all(r["symbol"] != "retry_with_jitter" for r in json.loads(out.stdout))
    bad = run_cli("search", "retry", "--rev", "HEAD~5", "--repo", str(repo))
    assert bad.returncode == 2 and bad.stderr.startswith("indexer: error: unknown revision")
    status = json.loads(run_cli("status", "--json", "--repo", str(repo)).stdout)
    assert status["worktree"]["overlaid"] == 1 and status["worktree"]["paths"] == ["net/retry.py"]
    human = run_cli("status", "--repo", str(repo)).stdout
    assert "worktree   1 uncommitted file overlaid (1 modified)" in human


def test_the_overlay_equals_a_full_build_of_the_same_edits(repo: Path, tmp_path: Path) -> None:
    """Same top 10, same scores: BM25 statistics, reranking and confidence treat overlay chunks
    like any others (the edits are committed at the indexed commit's time, so recency agrees)."""
    (repo / "net/retry.py").write_text(NEW_NET + "\ndef drain_queue(q):\n    return list(q)\n")
    (repo / "docs/guide.md").unlink()
    write_files(repo, {"billing/refund.py": "def refund_invoice(inv):\n    return -inv\n"})
    queries = ["retry_with_jitter", "refund an invoice", "format money", "drain queue", "TAX_RATE"]
    overlaid = Index.open(repo)
    got = [[r.to_dict() for r in overlaid.search(q)] for q in queries]
    time = pygit2.Repository(str(repo))[pygit2.Repository(str(repo)).head.target].commit_time
    commit_all(repo, "the same edits", when=time)
    build_index(repo, index_dir=tmp_path / "full", progress=False)
    full = Index.open(repo, index_dir=tmp_path / "full", worktree=False)
    want = [[r.to_dict() for r in full.search(q)] for q in queries]
    for g, w in zip(got, want, strict=True):
        for r in g + w:
            r.pop("source")
        assert g == w


def test_a_kept_index_follows_every_edit(repo: Path) -> None:
    """A notebook or a server holds one Index: each search sees the tree as it is then."""
    index = Index.open(repo)  # watched: an unchanged tree costs no `git status`
    assert "retry_with_jitter" not in symbols(index.search("retry_with_jitter", k=5))
    (repo / "net/retry.py").write_text(NEW_NET)
    assert index.search("retry_with_jitter", k=1)[0].symbol == "retry_with_jitter"
    (repo / "net/retry.py").write_text(NEW_NET.replace("retry_with_jitter", "retry_paused"))
    assert index.search("retry_paused", k=1)[0].symbol == "retry_paused"
    (repo / "net/retry.py").write_text(PYTHON_NET)
    assert index.search("retry_with_backoff", k=1)[0].source == "commit"


def test_the_mcp_service_and_the_server_are_never_stale(repo: Path, tmp_path: Path) -> None:
    from indexer.serve.mcp_server import Service

    service = Service(str(repo), None)
    assert service.search("retry_with_jitter", 3, None, False).startswith("low confidence")
    (repo / "net/retry.py").write_text(NEW_NET)
    found = service.search("retry_with_jitter", 3, None, False)
    assert found.startswith("net/retry.py:5-12 retry_with_jitter"), found
    assert "def retry_with_jitter" in service.retrieve("net/retry.py", 1, 20)

    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(run), INDEXER_SAVINGS="0")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "indexer", *args, "--repo", str(repo)]
        return subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)

    assert cli("serve", "--background", "--idle-timeout", "120").returncode == 0
    try:
        query = ("search", "retry_paused", "--json")
        assert all(r["symbol"] != "retry_paused" for r in json.loads(cli(*query).stdout))
        (repo / "net/retry.py").write_text(NEW_NET.replace("retry_with_jitter", "retry_paused"))
        after = json.loads(cli(*query).stdout)
        assert after[0]["symbol"] == "retry_paused" and after[0]["source"] == "worktree"
        status = json.loads(cli("serve", "--status", "--json").stdout)
        assert status["requests"] == 2  # both answered by the server
    finally:
        cli("serve", "--stop")
