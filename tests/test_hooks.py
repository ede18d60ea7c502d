"""Hooks installed by the command, run by real `git commit`/`checkout`/`rebase`."""

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pygit2
import pytest

from indexer.api import Index
from indexer.index.store import current_snapshot

from .conftest import PYTHON_BILLING, run_cli, write_files

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "T",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "T",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args],
        cwd=repo,
        env=GIT_ENV,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").stdout.strip()


def wait_for_index(repo: Path, commit: str, timeout: float = 90) -> None:
    index_dir = repo / ".git" / "indexer"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if Index(current_snapshot(index_dir)).commit == commit:
                return
        except Exception:
            pass
        time.sleep(0.2)
    log = (index_dir / "update.log").read_text() if (index_dir / "update.log").exists() else ""
    raise AssertionError(f"index never reached {commit}; log:\n{log}")


def test_install_chains_user_hooks_and_uninstall_restores_them(sample_repo: Path) -> None:
    hooks = sample_repo / ".git" / "hooks"
    user_hook = hooks / "post-commit"
    user_hook.write_bytes(
        b'#!/bin/sh\necho user-hook-ran >> "$(git rev-parse --git-dir)/user-hook.log"\n'
    )
    user_hook.chmod(0o750)
    original = user_hook.read_bytes()

    proc = run_cli("hooks", "install", "--json", cwd=sample_repo)
    assert proc.returncode == 0, proc.stderr
    actions = {c["hook"]: c["action"] for c in json.loads(proc.stdout)}
    assert actions == {
        "post-commit": "chained",
        "post-merge": "installed",
        "post-checkout": "installed",
        "post-rewrite": "installed",
    }
    write_files(sample_repo, {"extra.py": "def hooked_function():\n    return 1\n"})
    git(sample_repo, "add", "extra.py")
    git(sample_repo, "commit", "-q", "-m", "with hooks")
    assert "user-hook-ran" in (sample_repo / ".git" / "user-hook.log").read_text()
    wait_for_index(sample_repo, head(sample_repo))
    assert Index.open(sample_repo).search("hooked_function")[0].symbol == "hooked_function"

    assert run_cli("hooks", "install", cwd=sample_repo).returncode == 0  # idempotent
    proc = run_cli("hooks", "uninstall", "--json", cwd=sample_repo)
    assert {c["hook"]: c["action"] for c in json.loads(proc.stdout)}["post-commit"] == "restored"
    assert user_hook.read_bytes() == original
    assert stat.S_IMODE(user_hook.stat().st_mode) == 0o750
    assert not (hooks / "post-merge").exists()
    assert not list(hooks.glob("*.indexer-chained"))


def test_hooks_path_is_respected(sample_repo: Path) -> None:
    git(sample_repo, "config", "core.hooksPath", ".githooks")
    assert run_cli("hooks", "install", cwd=sample_repo).returncode == 0
    assert (sample_repo / ".githooks" / "post-commit").exists()
    assert not (sample_repo / ".git" / "hooks" / "post-commit").exists()


def test_checkout_and_rebase_keep_the_index_at_head(sample_repo: Path) -> None:
    assert run_cli("hooks", "install", cwd=sample_repo).returncode == 0
    main = git(sample_repo, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
    git(sample_repo, "checkout", "-q", "-b", "feature")
    write_files(sample_repo, {"feature.py": "def feature_only_function():\n    return 2\n"})
    git(sample_repo, "add", "feature.py")
    git(sample_repo, "commit", "-q", "-m", "feature")
    wait_for_index(sample_repo, head(sample_repo))
    git(sample_repo, "checkout", "-q", main)
    write_files(sample_repo, {"main.py": "def main_only_function():\n    return 3\n"})
    git(sample_repo, "add", "main.py")
    git(sample_repo, "commit", "-q", "-m", "main work")
    git(sample_repo, "checkout", "-q", "feature")
    git(sample_repo, "rebase", "-q", main)
    wait_for_index(sample_repo, head(sample_repo))
    index = Index.open(sample_repo)
    assert index.search("feature_only_function")[0].symbol == "feature_only_function"
    assert index.search("main_only_function")[0].symbol == "main_only_function"


def test_a_failing_update_never_breaks_the_commit(sample_repo: Path, tmp_path: Path) -> None:
    assert run_cli("build", cwd=sample_repo).returncode == 0
    assert run_cli("hooks", "install", cwd=sample_repo).returncode == 0
    before = Index.open(sample_repo).commit
    # The background update cannot load its vector table: a real failure inside the hook.
    env = {**GIT_ENV, "INDEXER_VECTORS": str(tmp_path / "no-such-table")}
    write_files(sample_repo, {"x.py": "def x():\n    pass\n"})
    git(sample_repo, "add", "x.py")
    result = subprocess.run(["git", "commit", "-q", "-m", "x"], cwd=sample_repo, env=env)
    assert result.returncode == 0
    failure = sample_repo / ".git" / "indexer" / "last_failure.json"
    deadline = time.monotonic() + 60
    while not failure.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "static vector table" in json.loads(failure.read_text())["error"]
    data = json.loads(run_cli("status", "--json", cwd=sample_repo).stdout)
    assert "static vector table" in data["freshness"]["last_failure"]["error"]
    assert data["freshness"]["state"].startswith("behind by 1")
    assert Index.open(sample_repo).commit == before  # the previous index is still served
    human = run_cli("status", cwd=sample_repo).stdout
    assert "last failure" in human and "behind by 1" in human


def test_a_burst_of_commits_coalesces_and_ends_at_head(sample_repo: Path) -> None:
    assert run_cli("build", cwd=sample_repo).returncode == 0
    assert run_cli("hooks", "install", cwd=sample_repo).returncode == 0
    for i in range(20):
        write_files(sample_repo, {"burst.py": f"def burst_{i}():\n    return {i}\n"})
        git(sample_repo, "add", "burst.py")
        git(sample_repo, "commit", "-q", "-m", f"burst {i}")
    wait_for_index(sample_repo, head(sample_repo))
    time.sleep(1.0)  # let stragglers finish
    log = (sample_repo / ".git" / "indexer" / "update.log").read_text()
    updates = sum(1 for line in log.splitlines() if " update to " in line)
    assert 1 <= updates < 20
    assert Index.open(sample_repo).search("burst_19")[0].symbol == "burst_19"


def test_killed_update_leaves_the_previous_index(make_repo) -> None:  # type: ignore[no-untyped-def]
    files = {
        f"pkg/mod{i}.py": PYTHON_BILLING.replace("InvoiceCalculator", f"Calc{i}")
        for i in range(400)
    }
    repo = make_repo(files)
    assert run_cli("build", cwd=repo).returncode == 0
    before = Index.open(repo).commit
    write_files(
        repo, {f"pkg/mod{i}.py": f"def changed_{i}():\n    return {i}\n" for i in range(400)}
    )
    r = pygit2.Repository(str(repo))
    r.index.add_all()
    r.index.write()
    git(repo, "commit", "-q", "-m", "change all")
    for delay in (0.3, 0.8, 1.5):
        proc = subprocess.Popen(
            [sys.executable, "-m", "indexer", "update", "--repo", str(repo)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        index = Index.open(repo)  # readable whatever the moment of the kill
        assert index.commit in (before, head(repo))
        assert index.search("changed_1") is not None
    assert run_cli("update", cwd=repo).returncode == 0
    assert Index.open(repo).commit == head(repo)


@pytest.mark.skipif(
    shutil.which("pre-commit") is None
    and not (Path(sys.executable).parent / "pre-commit").exists(),
    reason="pre-commit is not installed (pip install -e '.[dev]')",
)
def test_pre_commit_framework_runs_the_hook(sample_repo: Path, tmp_path: Path) -> None:
    """A user's .pre-commit-config.yaml names this repository (at its HEAD commit) and installs
    the post-commit hook type; a real `git commit` then refreshes the index in the background."""
    project = Path(__file__).resolve().parents[1]
    rev = git(project, "rev-parse", "HEAD").stdout.strip()
    pre_commit = str(Path(sys.executable).parent / "pre-commit")
    env = {**GIT_ENV, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    (sample_repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {project}\n    rev: {rev}\n    hooks:\n      - id: indexer\n"
    )

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [pre_commit, *args],
            cwd=sample_repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc

    run(
        "install",
        "-t",
        "post-commit",
        "-t",
        "post-merge",
        "-t",
        "post-checkout",
        "-t",
        "post-rewrite",
    )
    run("install-hooks")  # builds the hook's environment once, outside the commit
    write_files(
        sample_repo, {"via_pre_commit.py": "def installed_by_pre_commit():\n    return 1\n"}
    )
    git(sample_repo, "add", "via_pre_commit.py", ".pre-commit-config.yaml")
    commit = subprocess.run(
        ["git", "commit", "-q", "-m", "through pre-commit"],
        cwd=sample_repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert commit.returncode == 0, commit.stdout + commit.stderr
    wait_for_index(sample_repo, head(sample_repo))
    found = Index.open(sample_repo).search("installed_by_pre_commit")
    assert found[0].symbol == "installed_by_pre_commit"


def test_the_commit_never_waits_for_the_update(sample_repo: Path) -> None:
    """While another update holds the lock, `git commit` still returns at once (the hook only
    leaves a pending mark); the next commit's update brings the index to HEAD."""
    from indexer.fresh.freshness import PENDING, update_lock

    assert run_cli("build", cwd=sample_repo).returncode == 0
    assert run_cli("hooks", "install", cwd=sample_repo).returncode == 0
    index_dir = sample_repo / ".git" / "indexer"
    built = head(sample_repo)
    with update_lock(index_dir, wait=True):
        write_files(sample_repo, {"held.py": "def held_back():\n    return 1\n"})
        git(sample_repo, "add", "held.py")
        git(sample_repo, "commit", "-q", "-m", "while locked")
        deadline = time.monotonic() + 60
        while not (index_dir / PENDING).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (index_dir / PENDING).exists()  # the background update ran and gave way
        assert Index(current_snapshot(index_dir)).commit == built
    write_files(sample_repo, {"after.py": "def after_release():\n    return 2\n"})
    git(sample_repo, "add", "after.py")
    git(sample_repo, "commit", "-q", "-m", "after")
    wait_for_index(sample_repo, head(sample_repo))
    index = Index.open(sample_repo, worktree=False)
    assert index.search("held_back")[0].symbol == "held_back"
    assert index.search("after_release")[0].symbol == "after_release"


def test_a_commit_during_a_background_merge_is_searchable_without_waiting(
    sample_repo: Path,
) -> None:
    """A merge copies rows without the update lock: the hook's update of a commit that lands
    meanwhile publishes at once, and the merge publishes on top of it afterwards."""
    from indexer.fresh.freshness import merge_lock
    from indexer.index.merge import PreparedMerge, commit, prepare

    assert run_cli("build", cwd=sample_repo).returncode == 0
    for i in range(2):
        write_files(sample_repo, {f"extra{i}.py": f"def extra_{i}():\n    return {i}\n"})
        git(sample_repo, "add", "-A")
        git(sample_repo, "commit", "-q", "-m", f"extra {i}")
        assert run_cli("update", cwd=sample_repo).returncode == 0
    assert run_cli("hooks", "install", cwd=sample_repo).returncode == 0
    index_dir = sample_repo / ".git" / "indexer"
    with merge_lock(index_dir, wait=False) as held:  # a background merge in progress
        assert held
        prepared = prepare(index_dir, everything=True)
        assert isinstance(prepared, PreparedMerge)
        write_files(sample_repo, {"during.py": "def during_merge():\n    return 1\n"})
        git(sample_repo, "add", "-A")
        git(sample_repo, "commit", "-q", "-m", "during the merge")
        wait_for_index(sample_repo, head(sample_repo), timeout=60)  # not after the merge
        assert Index.open(sample_repo).search("during_merge")[0].symbol == "during_merge"
        result = commit(prepared)
    assert result["merged"] == 3 and result["rebased"]
    index = Index.open(sample_repo)
    assert index.commit == head(sample_repo) and index.status()["segments"] == 2
    assert index.search("during_merge")[0].symbol == "during_merge"
    assert index.search("extra_1")[0].symbol == "extra_1"
