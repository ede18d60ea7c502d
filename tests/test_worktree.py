"""Which uncommitted files the overlay takes, masks or skips: real repositories, real `git`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2
import pytest

from indexer.index.gitdir import worktree_root
from indexer.index.overlay import WorktreeOverlay, blob_id
from indexer.source.worktree import scan_worktree

from .conftest import PYTHON_BILLING, PYTHON_NET, MakeRepo, commit_all, diverge, git


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def committed_blobs(root: Path) -> dict[str, str]:
    lines = git(root, "ls-tree", "-r", "HEAD").splitlines()
    return {line.split("\t", 1)[1]: line.split()[2] for line in lines}


def overlay_of(root: Path) -> tuple[WorktreeOverlay, object]:
    overlay = WorktreeOverlay(root)
    return overlay, overlay.refresh(head(root), committed_blobs(root))


@pytest.fixture
def repo(make_repo: MakeRepo) -> Path:
    return make_repo(
        {
            "billing/invoice.py": PYTHON_BILLING,
            "net/retry.py": PYTHON_NET,
            "docs/notes.md": "# Notes\n\nNothing yet.\n",
            ".gitignore": "build/\n*.log\n",
        }
    )


def test_a_clean_tree_has_no_overlay(repo: Path) -> None:
    _, state = overlay_of(repo)
    assert not state and state.masked == [] and state.files == []


def test_modified_added_and_deleted_files(repo: Path) -> None:
    (repo / "net/retry.py").write_text(PYTHON_NET + "\ndef jittered_backoff():\n    pass\n")
    (repo / "net/pool.py").write_text("def connection_pool_size():\n    return 4\n")
    (repo / "docs/notes.md").unlink()
    (repo / "build").mkdir()
    (repo / "build/out.py").write_text("def generated_thing():\n    pass\n")  # ignored by git
    (repo / "debug.log").write_text("noise\n")
    _, state = overlay_of(repo)
    assert [(f.path, f.state) for f in state.files] == [
        ("net/pool.py", "added"),
        ("net/retry.py", "modified"),
    ]
    assert state.removed == ["docs/notes.md"]
    assert state.masked == ["docs/notes.md", "net/pool.py", "net/retry.py"]
    retry = state.files[1]
    assert retry.blob == blob_id((repo / "net/retry.py").read_bytes())
    assert "jittered_backoff" in [r["symbol"] for r in retry.entry.records]


def test_a_rename_masks_the_old_path_and_overlays_the_new_one(repo: Path) -> None:
    git(repo, "mv", "net/retry.py", "net/backoff.py")
    _, state = overlay_of(repo)
    assert [f.path for f in state.files] == ["net/backoff.py"]
    assert state.masked == ["net/backoff.py", "net/retry.py"]
    (repo / "billing/invoice.py").rename(repo / "billing/bill.py")  # not staged: the same
    _, state = overlay_of(repo)
    assert [f.path for f in state.files] == ["billing/bill.py", "net/backoff.py"]
    assert state.removed == ["billing/invoice.py", "net/retry.py"]


def test_touched_or_reverted_files_are_not_overlaid(repo: Path) -> None:
    overlay, _ = overlay_of(repo)
    path = repo / "net/retry.py"
    path.write_text(PYTHON_NET + "# edit\n")
    assert overlay.refresh(head(repo), committed_blobs(repo)).masked == ["net/retry.py"]
    path.write_text(PYTHON_NET)  # back to the committed bytes
    assert not overlay.refresh(head(repo), committed_blobs(repo))


def test_binary_huge_and_secret_files_are_skipped_like_builds(repo: Path) -> None:
    (repo / "blob.py").write_bytes(b"\0\1\2binary" * 100)
    (repo / "huge.py").write_text("x = 1\n" * 400_000)  # 2.4 MB
    (repo / "logo.png").write_bytes(b"\x89PNG....")
    (repo / ".env").write_text("API_KEY=sk-live-1234567890abcdef\n")
    (repo / "net/retry.py").write_text(PYTHON_NET + '\nAWS_SECRET = "AKIAIOSFODNN7EXAMPLE"\n')
    _, state = overlay_of(repo)
    assert state.skipped == {
        "binary": ["logo.png", "blob.py"],
        "secret": [".env"],
        "too_large": ["huge.py"],
    }
    assert [f.path for f in state.files] == ["net/retry.py"]
    text = "".join(r["text"] for r in state.files[0].entry.records)
    assert "AKIAIOSFODNN7EXAMPLE" not in text and "[REDACTED:" in text
    assert state.files[0].entry.redacted


def test_a_committed_file_that_becomes_binary_is_masked(repo: Path) -> None:
    (repo / "net/retry.py").write_bytes(b"\0" * 50)
    _, state = overlay_of(repo)
    assert state.files == [] and state.masked == ["net/retry.py"]
    assert state.skipped == {"binary": ["net/retry.py"]}


def test_indexerignore_on_disk_applies(repo: Path) -> None:
    (repo / ".indexerignore").write_text("drafts/\n")
    (repo / "drafts").mkdir()
    (repo / "drafts/idea.py").write_text("def idea():\n    pass\n")
    _, state = overlay_of(repo)
    assert state.skipped.get("ignored") == ["drafts/idea.py"]
    assert [f.path for f in state.files] == [".indexerignore"]


def test_a_merge_conflict_overlays_the_file_with_its_markers(repo: Path) -> None:
    base = head(repo)
    diverge(repo, "net/retry.py", "attempts=5", "attempts=9", "attempts=7")
    done = subprocess.run(["git", "merge", "other"], cwd=repo, capture_output=True, text=True)
    assert done.returncode != 0
    _, state = overlay_of(repo)
    assert state.merging and [(f.path, f.state) for f in state.files] == [
        ("net/retry.py", "conflicted")
    ]
    text = "".join(r["text"] for r in state.files[0].entry.records)
    assert "<<<<<<<" in text and "attempts=7" in text and "attempts=9" in text
    assert base != head(repo)


def test_a_sparse_checkout_leaves_other_files_to_the_commit(repo: Path) -> None:
    git(repo, "sparse-checkout", "set", "net")
    assert not (repo / "billing/invoice.py").exists()
    (repo / "net/retry.py").write_text(PYTHON_NET + "# edited\n")
    _, state = overlay_of(repo)
    assert state.masked == ["net/retry.py"]  # billing/ is not deleted, only not checked out


def test_an_index_behind_head_overlays_what_changed_since(repo: Path) -> None:
    indexed = head(repo)
    blobs = committed_blobs(repo)
    (repo / "net/retry.py").write_text(PYTHON_NET + "def later():\n    pass\n")
    commit_all(repo, "later")
    state = WorktreeOverlay(repo).refresh(indexed, blobs)
    assert [f.path for f in state.files] == ["net/retry.py"]


def test_a_bare_repository_has_no_working_tree(tmp_path: Path) -> None:
    pygit2.init_repository(str(tmp_path / "bare.git"), bare=True)
    assert worktree_root(tmp_path / "bare.git") is None
    assert worktree_root(tmp_path / "bare.git" / "refs") is None


def test_a_linked_worktree_overlays_its_own_edits(repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked))
    (linked / "net/retry.py").write_text(PYTHON_NET + "# only in the linked tree\n")
    assert worktree_root(linked / "net") == linked
    linked_scan = scan_worktree(linked, head(repo))
    main_scan = scan_worktree(repo, head(repo))
    assert [c.path for c in linked_scan.changes] == ["net/retry.py"]
    assert main_scan.paths == set()


def test_a_watched_overlay_is_never_stale(repo: Path) -> None:
    overlay = WorktreeOverlay(repo, watch=True)
    commit, blobs = head(repo), committed_blobs(repo)
    assert not overlay.refresh(commit, blobs)
    assert overlay.refresh(commit, blobs) is overlay.refresh(commit, blobs)  # nothing moved
    (repo / "net/retry.py").write_text(PYTHON_NET + "# one\n")
    assert overlay.refresh(commit, blobs).masked == ["net/retry.py"]
    (repo / "new/deeper").mkdir(parents=True)
    assert overlay.refresh(commit, blobs).masked == ["net/retry.py"]
    (repo / "new/deeper/mod.py").write_text("def fresh_function():\n    pass\n")
    state = overlay.refresh(commit, blobs)
    assert state.masked == ["net/retry.py", "new/deeper/mod.py"]
    (repo / "new/deeper/mod.py").write_text("def renamed_function():\n    pass\n")
    state = overlay.refresh(commit, blobs)
    assert [r["symbol"] for r in state.files[1].entry.records] == ["renamed_function"]
    git(repo, "checkout", "-q", "--", "net/retry.py")
    (repo / "new/deeper/mod.py").unlink()
    assert not overlay.refresh(commit, blobs)
    overlay.close()


def test_a_watch_covers_untracked_directories_that_existed_before_it(repo: Path) -> None:
    (repo / "later/empty").mkdir(parents=True)
    overlay = WorktreeOverlay(repo, watch=True)
    commit, blobs = head(repo), committed_blobs(repo)
    assert not overlay.refresh(commit, blobs)
    (repo / "later/empty/mod.py").write_text("def arrived_later():\n    pass\n")
    assert overlay.refresh(commit, blobs).masked == ["later/empty/mod.py"]
    overlay.close()


def test_another_repositorys_tree_is_never_overlaid(repo: Path, make_repo: MakeRepo) -> None:
    other = make_repo({"net/retry.py": "def elsewhere():\n    pass\n"})
    (other / "net/retry.py").write_text("def edited_elsewhere():\n    pass\n")
    state = WorktreeOverlay(other).refresh(head(repo), committed_blobs(repo))
    assert state.unrelated and not state and state.files == []
