"""A team on real git: a bare "origin", CI publishing from one clone, developers pulling in
another with `indexer pull --remote origin` (feature branches, detached HEAD, behind, ahead)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pygit2
import pytest

from indexer import Index

from .conftest import run_cli, write_files
from .test_hooks import GIT_ENV, git


def clone(origin: Path, dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(origin), str(dest)], check=True, env=GIT_ENV)
    return dest


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").stdout.strip()


def commit_file(repo: Path, name: str, text: str, push: bool = False) -> str:
    write_files(repo, {name: text})
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"add {name}")
    if push:
        git(repo, "push", "-q", "origin", "HEAD")
    return head(repo)


def ci_run(repo: Path) -> dict:
    proc = run_cli("ci", "--remote", "origin", "--push", "--json", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def pull(repo: Path, *extra: str) -> dict:
    proc = run_cli("pull", "--remote", "origin", "--json", *extra, cwd=repo)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def team(sample_repo: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    origin = tmp_path / "origin.git"
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(sample_repo), str(origin)], check=True, env=GIT_ENV
    )
    return origin, clone(origin, tmp_path / "ci"), clone(origin, tmp_path / "dev")


def test_ci_publishes_and_a_clone_pulls_with_one_command(team: tuple[Path, Path, Path]) -> None:
    _, ci, dev = team
    first = ci_run(ci)
    assert first["started_from"] is None and first["pushed"] is True  # the first run builds
    result = pull(dev)
    assert result["indexed_commit"] == head(dev) and result["updated"] is False
    assert not (dev / ".git" / "indexer" / "blobcache").exists()  # nothing was chunked
    assert Index.open(dev).search("InvoiceCalculator")[0].qualname == "InvoiceCalculator"
    again = pull(dev)  # pulling again changes nothing
    assert again["updated"] is False and again["adopted"] is False


def test_every_ci_run_chains_so_plain_fetches_fast_forward(
    team: tuple[Path, Path, Path],
) -> None:
    origin, ci, dev = team
    first = ci_run(ci)["publish"]
    pull(dev)
    commit_file(ci, "later.py", "def published_later():\n    return 2\n", push=True)
    second = ci_run(ci)
    assert second["started_from"] == first["ref"]
    publish = second["publish"]
    repo = pygit2.Repository(str(origin))
    published = repo.references[publish["ref"]].peel(pygit2.Commit)
    assert [str(p) for p in published.parent_ids] == [first["commit"]]
    # The documented plain fetch (no '+') fast-forwards in a clone that fetched before.
    git(dev, "fetch", "-q", "origin", "refs/indexer/*:refs/indexer/*")
    git(dev, "pull", "-q", "origin")
    assert pull(dev)["indexed_commit"] == head(dev)
    assert Index.open(dev).search("published_later")[0].symbol == "published_later"


def test_ci_with_nothing_changed_does_not_move_the_ref(team: tuple[Path, Path, Path]) -> None:
    origin, ci, _ = team
    first = ci_run(ci)["publish"]
    again = ci_run(ci)
    assert again["publish"]["changed"] is False and again["pushed"] is False
    repo = pygit2.Repository(str(origin))
    assert str(repo.references[first["ref"]].target) == first["commit"]
    proc = run_cli("publish", cwd=ci)
    assert proc.returncode == 0 and "nothing to publish" in proc.stdout


def test_a_feature_branch_and_a_detached_head_use_the_default_branch_index(
    team: tuple[Path, Path, Path],
) -> None:
    _, ci, dev = team
    main_ref = ci_run(ci)["publish"]["ref"]
    git(dev, "checkout", "-q", "-b", "feature-x")
    commit_file(dev, "feature.py", "def feature_only_helper():\n    return 3\n")
    result = pull(dev)
    assert result["ref"] == main_ref and result["updated"] is True
    assert result["chunked_files"] == 1
    assert Index.open(dev).search("feature_only_helper")[0].symbol == "feature_only_helper"

    git(dev, "checkout", "-q", "--detach", "HEAD~1")
    result = pull(dev)
    assert result["ref"] == main_ref and Index.open(dev).commit == head(dev)


def test_clones_behind_and_ahead_of_the_published_commit(
    team: tuple[Path, Path, Path],
) -> None:
    _, ci, dev = team
    commit_file(ci, "newer.py", "def only_in_newer_commit():\n    return 4\n", push=True)
    ci_run(ci)
    # Behind: dev never pulled the source commit the index was built for.
    behind = pull(dev)
    assert behind["indexed_commit"] != head(dev) and behind["updated"] is True
    index = Index.open(dev)
    assert index.commit == head(dev)
    assert all(r.path != "newer.py" for r in index.search("only_in_newer_commit"))
    # Ahead: a local commit on top of the published one.
    git(dev, "pull", "-q", "origin")
    commit_file(dev, "mine.py", "def local_unpushed_work():\n    return 5\n")
    ahead = pull(dev)
    assert ahead["updated"] is True and ahead["chunked_files"] == 1
    assert Index.open(dev).search("local_unpushed_work")[0].symbol == "local_unpushed_work"


def test_ci_on_a_detached_checkout_publishes_for_its_branch(
    team: tuple[Path, Path, Path],
) -> None:
    _, ci, dev = team
    branch = git(ci, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
    git(ci, "checkout", "-q", "--detach")  # what many CI systems check out
    published = ci_run(ci)["publish"]
    assert published["ref"] == f"refs/indexer/{branch}"
    assert pull(dev)["ref"] == published["ref"]


def test_pull_errors_are_one_line(team: tuple[Path, Path, Path], tmp_path: Path) -> None:
    _, _, dev = team
    proc = run_cli("pull", "--remote", "origin", cwd=dev)
    assert proc.returncode == 2 and "no published index" in proc.stderr
    assert proc.stderr.count("\n") == 1
    proc = run_cli("pull", "--remote", "nowhere", cwd=dev)
    assert proc.returncode == 2 and "fetching published indexes from nowhere failed" in (
        proc.stderr
    )
    proc = run_cli("ci", "--push", cwd=dev)
    assert proc.returncode == 2 and "--push needs --remote" in proc.stderr
