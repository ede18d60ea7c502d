"""Process and file hygiene, terminal output, hooks edge cases and MCP input (issue 10).
Secrets are in test_secrets.py, shared and local index integrity in test_integrity.py."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from indexer import build_index

from .conftest import MakeRepo, commit_all, run_cli, write_files
from .test_errors import assert_clean_error
from .test_hooks import git, head

# -- terminal injection ----------------------------------------------------------------------

EVIL_NAME = "src/\x1b[31mRED\x1b[0m\x1b]0;pwned\x07.py"
NEWLINE_NAME = "src/new\nline.py"


def test_human_output_escapes_control_characters(make_repo: MakeRepo) -> None:
    root = make_repo(
        {
            EVIL_NAME: "def colorful_handler():\n"
            "    # \x1b]0;retitled\x07 \u202eevil\n"
            "    return 1\n",
            NEWLINE_NAME: "def colorful_splitter():\n    return 2\n",
        }
    )
    assert run_cli("build", cwd=root).returncode == 0
    outputs = [
        run_cli("search", "colorful handler splitter", "--text", cwd=root),
        run_cli("search", "colorful handler", "--compress", cwd=root),
        run_cli("search", "colorful handler", "--budget", "500", cwd=root),
        run_cli("show", "colorful_handler", cwd=root),
        run_cli("related", "colorful_handler", cwd=root),
        run_cli("status", cwd=root),
    ]
    located = run_cli("search", "colorful_handler", "--json", cwd=root)
    chunk_id = json.loads(located.stdout)[0]["id"]
    outputs.append(run_cli("show", chunk_id, cwd=root))
    for proc in outputs:
        assert "\x1b" not in proc.stdout + proc.stderr and "\x07" not in proc.stdout
        assert "\u202e" not in proc.stdout
    search = outputs[0].stdout
    assert "src/\\x1b[31mRED\\x1b[0m\\x1b]0;pwned\\x07.py:1-3" in search
    assert "src/new\\x0aline.py:1-2" in search  # one result, one line
    assert "\\x1b]0;retitled\\x07" in outputs[-1].stdout
    # JSON stays exact: the real name, JSON-escaped.
    assert EVIL_NAME in {r["path"] for r in json.loads(located.stdout)}


# -- orphaned workers and leftovers ----------------------------------------------------------


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.add(int(entry.name))
    return found


def _running(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_workers_exit_when_a_build_is_killed(make_repo: MakeRepo, tmp_path: Path) -> None:
    body = "".join(f"def function_{i}(value):\n    return value * {i}\n\n\n" for i in range(60))
    root = make_repo({f"pkg/module_{n}.py": body for n in range(400)})  # enough for 2 workers
    build = subprocess.Popen(  # 3 jobs: the build's own process and 2 forked workers
        [sys.executable, "-m", "indexer", "build", "--jobs", "3", "--repo", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    children: set[int] = set()
    deadline = time.monotonic() + 120
    while len(children) < 2 and build.poll() is None and time.monotonic() < deadline:
        children |= _children(build.pid)  # the workers
        time.sleep(0.02)
    assert len(children) >= 2, "the build never started its workers"
    build.send_signal(signal.SIGKILL)
    build.wait()
    deadline = time.monotonic() + 15
    while any(_running(p) for p in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    survivors = [p for p in children if _running(p)]
    for pid in survivors:  # do not leak them into the rest of the test run
        os.kill(pid, signal.SIGKILL)
    assert not survivors, "worker processes outlived the killed build"
    # The killed build's temporary segment is removed by the next build.
    segments = root / ".git" / "indexer" / "segments"
    left = list(segments.glob(".tmp-*")) if segments.exists() else []
    assert run_cli("build", "--repo", str(root)).returncode == 0
    assert not any(p.exists() for p in left) and not list(segments.glob(".tmp-*"))


def test_stale_temporaries_are_removed_but_not_a_live_writers(make_repo: MakeRepo) -> None:
    root = make_repo({"a.py": "def a():\n    return 1\n"})
    build_index(root, progress=False)
    segments = root / ".git" / "indexer" / "segments"
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead = subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
        )
        stale = segments / f".tmp-{dead.stdout.strip()}-abc"
        in_use = segments / f".tmp-{live.pid}-def"
        for folder in (stale, in_use):
            folder.mkdir()
            (folder / "texts.bin").write_bytes(b"partial")
        write_files(root, {"b.py": "def b():\n    return 2\n"})
        commit_all(root, "b")
        assert run_cli("update", "--repo", str(root)).returncode == 0
        assert not stale.exists() and in_use.exists()
    finally:
        live.kill()
        live.wait()


# -- hooks edge cases ------------------------------------------------------------------------


def test_uninstall_after_the_user_replaced_the_hook_then_install_again(sample_repo: Path) -> None:
    hooks = sample_repo / ".git" / "hooks"
    (hooks / "post-commit").write_text("#!/bin/sh\necho first\n")
    (hooks / "post-commit").chmod(0o755)
    assert run_cli("hooks", "install", cwd=sample_repo).returncode == 0
    (hooks / "post-commit").write_text("#!/bin/sh\necho replaced by the user\n")
    proc = run_cli("hooks", "uninstall", "--json", cwd=sample_repo)
    actions = {c["hook"]: c["action"] for c in json.loads(proc.stdout)}
    assert actions["post-commit"].startswith("replaced by the user; kept")
    assert (hooks / "post-commit").read_text().endswith("replaced by the user\n")
    assert not (hooks / "post-commit.indexer-chained").exists()
    assert (hooks / "post-commit.indexer-set-aside").read_text().endswith("echo first\n")
    proc = run_cli("hooks", "install", "--json", cwd=sample_repo)
    assert proc.returncode == 0, proc.stderr
    assert {c["hook"]: c["action"] for c in json.loads(proc.stdout)}["post-commit"] == "chained"
    # A stale chained hook left by an older version is set aside too, never overwritten.
    (hooks / "post-merge").write_text("#!/bin/sh\necho merge hook\n")
    (hooks / "post-merge.indexer-chained").write_text("#!/bin/sh\necho stale\n")
    assert run_cli("hooks", "install", cwd=sample_repo).returncode == 0
    assert (hooks / "post-merge.indexer-chained").read_text().endswith("merge hook\n")
    assert (hooks / "post-merge.indexer-set-aside").read_text().endswith("stale\n")


def test_hooks_path_on_a_tracked_folder_is_refused(sample_repo: Path) -> None:
    write_files(sample_repo, {".githooks/post-commit": "#!/bin/sh\necho shared hook\n"})
    git(sample_repo, "add", ".githooks")
    git(sample_repo, "commit", "-q", "-m", "shared hooks")
    git(sample_repo, "config", "core.hooksPath", ".githooks")
    proc = run_cli("hooks", "install", cwd=sample_repo)
    assert_clean_error(proc, "tracked by git")
    assert (
        sample_repo / ".githooks" / "post-commit"
    ).read_text() == "#!/bin/sh\necho shared hook\n"
    assert sorted(p.name for p in (sample_repo / ".githooks").iterdir()) == ["post-commit"]
    assert ".githooks" not in git(sample_repo, "status", "--porcelain").stdout


@pytest.mark.parametrize(
    ("python", "why"),
    [("/nonexistent/venv/bin/python", "is gone"), ("/bin/false", "could not run")],
)
def test_a_hook_whose_python_is_gone_says_why_in_status(
    sample_repo: Path, python: str, why: str
) -> None:
    assert run_cli("build", cwd=sample_repo).returncode == 0
    assert run_cli("hooks", "install", cwd=sample_repo).returncode == 0
    hook = sample_repo / ".git" / "hooks" / "post-commit"
    # What a moved or deleted virtualenv leaves behind: the hook names a Python that is gone.
    lines = [
        f"python={python}" if line.startswith("python=") else line
        for line in hook.read_text().splitlines()
    ]
    hook.write_text("\n".join(lines) + "\n")
    write_files(sample_repo, {"late.py": "def late():\n    return 1\n"})
    git(sample_repo, "add", "late.py")
    git(sample_repo, "commit", "-q", "-m", "after the venv moved")
    failure = sample_repo / ".git" / "indexer" / "last_failure.json"
    deadline = time.monotonic() + 30
    while not failure.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert why in json.loads(failure.read_text())["error"]
    proc = run_cli("status", cwd=sample_repo)
    assert "last failure" in proc.stdout and why in proc.stdout and "behind by 1" in proc.stdout
    assert (
        head(sample_repo)
        != json.loads(run_cli("status", "--json", cwd=sample_repo).stdout)["commit"]
    )


# -- MCP input -------------------------------------------------------------------------------


def test_mcp_answers_a_query_with_a_lone_surrogate(sample_repo: Path) -> None:
    """The official Python client cannot even encode a lone surrogate (UTF-8 has none), so this
    sends what a client in another language sends: the JSON escape `\\ud800`, which is valid
    JSON. Every request must get a response, and the server keeps serving."""
    build_index(sample_repo, progress=False)
    server = subprocess.Popen(
        [sys.executable, "-m", "indexer", "mcp", "--repo", str(sample_repo)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert server.stdin is not None and server.stdout is not None

    def call(line: str) -> dict[str, object]:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(line.encode() + b"\n")
        server.stdin.flush()
        ready, _, _ = select.select([server.stdout], [], [], 60)
        assert ready, f"no response to {line}"
        response: dict[str, object] = json.loads(server.stdout.readline())
        return response

    try:
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        call(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
        server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        for request_id, arguments in (
            (2, '{"query":"\\ud800 session"}'),
            (3, '{"query":"retry \\udfff backoff \\ud83d\\ude00"}'),
        ):
            response = call(
                f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call",'
                f'"params":{{"name":"search","arguments":{arguments}}}}}'
            )
            assert response["id"] == request_id and ("result" in response or "error" in response)
        response = call(
            '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"show",'
            '"arguments":{"chunk_id":"\\udc80"}}}'
        )
        assert response["id"] == 4 and response["result"]["isError"] is True  # type: ignore[index]
        response = call(
            '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search",'
            '"arguments":{"query":"retry with backoff"}}}'
        )
        assert "net/retry.py" in json.dumps(response)
    finally:
        server.stdin.close()
        server.wait(timeout=30)
