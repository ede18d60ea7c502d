"""Publishing artifacts on a git ref and pulling them into a clone."""

import json
import subprocess
from pathlib import Path

import pygit2
import pytest

from indexer import Index
from indexer.errors import IndexerError
from indexer.fresh.share import publish, pull

from .conftest import commit_all, run_cli, write_files
from .test_hooks import GIT_ENV, git


def test_publish_touches_neither_work_tree_nor_index_nor_head(sample_repo: Path) -> None:
    assert run_cli("build", cwd=sample_repo).returncode == 0
    repo = pygit2.Repository(str(sample_repo))
    head_before = str(repo.head.target)
    status_before = repo.status()
    index_before = [(e.path, str(e.id)) for e in repo.index]
    proc = run_cli("publish", "--json", cwd=sample_repo)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["ref"].startswith("refs/indexer/")
    assert result["indexed_commit"] == head_before
    repo = pygit2.Repository(str(sample_repo))
    assert str(repo.head.target) == head_before
    assert repo.status() == status_before
    assert [(e.path, str(e.id)) for e in repo.index] == index_before
    tree = repo.references[result["ref"]].peel(pygit2.Commit).tree
    assert "manifest.json" in [e.name for e in tree]


def clone_with_index(origin: Path, dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(origin), str(dest)], check=True, env=GIT_ENV)
    git(dest, "fetch", "-q", "origin", "refs/indexer/*:refs/indexer/*")
    return dest


def test_a_clone_searches_without_building(sample_repo: Path, tmp_path: Path) -> None:
    assert run_cli("build", cwd=sample_repo).returncode == 0
    assert run_cli("publish", cwd=sample_repo).returncode == 0
    clone = clone_with_index(sample_repo, tmp_path / "clone")
    proc = run_cli("pull", "--json", cwd=clone)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["updated"] is False
    assert json.loads(proc.stdout)["adopted"] is True  # nothing was chunked
    results = Index.open(clone).search("InvoiceCalculator")
    assert results[0].qualname == "InvoiceCalculator"


def test_pull_for_an_ancestor_updates_incrementally(sample_repo: Path, tmp_path: Path) -> None:
    assert run_cli("ci", cwd=sample_repo).returncode == 0  # build + publish, as CI does
    clone = clone_with_index(sample_repo, tmp_path / "clone")
    write_files(clone, {"later.py": "def added_after_publish():\n    return 1\n"})
    git(clone, "add", "later.py")
    git(clone, "commit", "-q", "-m", "later")
    result = pull(str(clone))
    assert result["updated"] is True and result["chunked_files"] == 1
    index = Index.open(clone)
    assert index.commit == git(clone, "rev-parse", "HEAD").stdout.strip()
    assert index.search("added_after_publish")[0].symbol == "added_after_publish"


def _with_file(repo: pygit2.Repository, tree: pygit2.Tree | None, path: str, data: bytes) -> object:
    """`tree` with the file at `path` (slash-separated) replaced or added."""
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    head, _, rest = path.partition("/")
    if not rest:
        builder.insert(head, repo.create_blob(data), pygit2.enums.FileMode.BLOB)
    else:
        sub = tree[head] if tree is not None and head in tree else None
        builder.insert(head, _with_file(repo, sub, rest, data), pygit2.enums.FileMode.TREE)  # type: ignore[arg-type]
    return builder.write()


def _republish_with(repo_path: Path, ref: str, change: dict[str, bytes]) -> None:
    repo = pygit2.Repository(str(repo_path))
    tree = repo.references[ref].peel(pygit2.Commit).tree
    for name, data in change.items():
        if name.startswith("segment:"):  # a file of the published segment
            segment = next(iter(tree["segments"])).name  # type: ignore[attr-defined]
            name = f"segments/{segment}/{name.split(':', 1)[1]}"
        tree = repo[_with_file(repo, tree, name, data)]  # type: ignore[index]
    sig = pygit2.Signature("x", "x@example.com")
    commit = repo.create_commit(None, sig, sig, "tampered", tree.id, [])
    repo.references.create(ref, commit, force=True)


def test_tampered_or_foreign_artifacts_are_rejected(sample_repo: Path) -> None:
    assert run_cli("build", cwd=sample_repo).returncode == 0
    ref = publish(str(sample_repo))["ref"]
    before = Index.open(sample_repo).snapshot

    _republish_with(sample_repo, ref, {"segment:texts_z.bin": b"malicious"})
    with pytest.raises(IndexerError, match="checksum"):
        pull(str(sample_repo))
    proc = run_cli("pull", cwd=sample_repo)
    assert proc.returncode == 2 and "rejected" in proc.stderr and "Traceback" not in proc.stderr

    publish(str(sample_repo))
    _republish_with(sample_repo, ref, {"evil.py": b"import os; os.system('x')"})
    with pytest.raises(IndexerError, match="unexpected file"):
        pull(str(sample_repo))

    publish(str(sample_repo))
    repo = pygit2.Repository(str(sample_repo))
    manifest = json.loads(repo.references[ref].peel(pygit2.Commit).tree["manifest.json"].data)
    manifest["format_version"] = 99
    _republish_with(sample_repo, ref, {"manifest.json": json.dumps(manifest).encode()})
    with pytest.raises(IndexerError, match="format"):
        pull(str(sample_repo))
    assert Index.open(sample_repo).snapshot == before  # the local index was never touched


def test_pull_errors_are_clear_and_unrelated_histories_are_updated(
    sample_repo: Path, tmp_path: Path
) -> None:
    proc = run_cli("pull", cwd=sample_repo)
    assert proc.returncode == 2 and "no published index" in proc.stderr
    assert run_cli("build", cwd=sample_repo).returncode == 0
    assert run_cli("publish", cwd=sample_repo).returncode == 0
    # An index published for a commit that is not an ancestor of HEAD: adopted, then updated
    # by a tree diff (an orphan branch shares no history at all).
    repo = pygit2.Repository(str(sample_repo))
    first = str(repo.head.target)
    git(sample_repo, "checkout", "-q", "--orphan", "other")
    write_files(sample_repo, {"o.py": "def on_the_orphan_branch():\n    return 1\n"})
    git(sample_repo, "add", "o.py")
    commit_all(sample_repo, "orphan")
    proc = run_cli("pull", "--ref", "refs/indexer/" + _branch_of(repo, first), cwd=sample_repo)
    assert proc.returncode == 0, proc.stderr
    index = Index.open(sample_repo)
    assert index.commit == git(sample_repo, "rev-parse", "HEAD").stdout.strip()
    assert index.search("on_the_orphan_branch")[0].symbol == "on_the_orphan_branch"
    proc = run_cli("pull", "--ref", "refs/indexer/nothing-here", cwd=sample_repo)
    assert proc.returncode == 2 and "no published index at refs/indexer/nothing-here" in (
        proc.stderr
    )


def _branch_of(repo: pygit2.Repository, commit: str) -> str:
    for name in repo.branches.local:
        if str(repo.branches[name].target) == commit:
            return name
    raise AssertionError("no branch")
