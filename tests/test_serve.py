"""`indexer serve`: a real background server process, real sockets, real CLI processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import MakeRepo, commit_all, write_files


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A private runtime directory per test, so servers of other tests are never reached."""
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    return dict(os.environ, XDG_RUNTIME_DIR=str(run), INDEXER_SAVINGS="0")


def cli(env: dict[str, str], *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "indexer", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(env, **extra),
    )


def server_status(env: dict[str, str], repo: Path) -> dict[str, object]:
    proc = cli(env, "serve", "--status", "--json", "--repo", str(repo))
    assert proc.returncode == 0, proc.stderr
    data: dict[str, object] = json.loads(proc.stdout)
    return data


@pytest.fixture
def served(sample_repo: Path, env: dict[str, str]):  # type: ignore[no-untyped-def]
    assert cli(env, "build", "--repo", str(sample_repo)).returncode == 0
    started = cli(env, "serve", "--background", "--idle-timeout", "120", "--repo", str(sample_repo))
    assert started.returncode == 0, started.stderr
    yield sample_repo
    cli(env, "serve", "--stop", "--repo", str(sample_repo))


def test_forwarded_commands_answer_exactly_as_local_ones(served: Path, env: dict[str, str]) -> None:
    args = ("search", "retry with exponential backoff", "--repo", str(served), "--json")
    local = cli(env, *args, INDEXER_SERVE="0")
    forwarded = cli(env, *args)
    assert forwarded.returncode == local.returncode == 0
    assert forwarded.stdout == local.stdout
    assert json.loads(forwarded.stdout)[0]["symbol"] == "retry_with_backoff"
    status = server_status(env, served)
    assert status["requests"] == 1  # its own warm-up searches are not requests
    assert status["warmed_up"] is True  # it searched before it listened: nothing left to load

    chunk_id = json.loads(forwarded.stdout)[0]["id"]
    show = cli(env, "show", chunk_id, "--repo", str(served))
    assert show.returncode == 0 and "def retry_with_backoff" in show.stdout
    assert server_status(env, served)["requests"] == 2

    # Errors travel too: the same one line and exit code as a local run.
    bad = cli(env, "show", "0123456789abcdef", "--repo", str(served))
    assert bad.returncode == 2 and bad.stderr.startswith("indexer: error:")
    assert server_status(env, served)["requests"] == 3


def test_a_query_on_standard_input_is_read_by_the_client(served: Path, env: dict[str, str]) -> None:
    args = [sys.executable, "-m", "indexer", "search", "-", "--repo", str(served), "--json"]
    outputs = []
    for mode in ("0", "on"):
        proc = subprocess.run(
            args,
            input="format money\n",
            capture_output=True,
            text=True,
            timeout=300,
            env=dict(env, INDEXER_SERVE=mode),
        )
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[1])[0]["symbol"] == "format_money"
    assert server_status(env, served)["requests"] == 1
    dashed = subprocess.run(
        args, input="-x format money", capture_output=True, text=True, timeout=300, env=env
    )
    assert dashed.returncode in (0, 1) and dashed.stdout.startswith("[")


def test_a_server_never_answers_from_a_stale_snapshot(served: Path, env: dict[str, str]) -> None:
    query = ("search", "reconcile ledger balances", "--repo", str(served), "--json")
    before = json.loads(cli(env, *query).stdout)
    assert all(r["symbol"] != "reconcile_ledger_balances" for r in before)
    write_files(served, {"ledger.py": "def reconcile_ledger_balances(a, b):\n    return a - b\n"})
    commit_all(served, "ledger")
    assert cli(env, "update", "--repo", str(served)).returncode == 0
    after = json.loads(cli(env, *query).stdout)
    assert after[0]["symbol"] == "reconcile_ledger_balances"
    assert server_status(env, served)["requests"] == 2


def test_no_server_or_a_dead_one_means_the_command_runs_locally(
    served: Path, env: dict[str, str]
) -> None:
    pid = int(str(server_status(env, served)["pid"]))
    os.kill(pid, signal.SIGKILL)  # leaves its socket file behind
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    proc = cli(env, "search", "format money", "--repo", str(served), "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)[0]["symbol"] == "format_money"
    assert cli(env, "serve", "--status", "--repo", str(served)).stdout.startswith("no server")


def test_stop_and_idle_timeout_end_the_server(sample_repo: Path, env: dict[str, str]) -> None:
    assert cli(env, "build", "--repo", str(sample_repo)).returncode == 0
    repo = str(sample_repo)
    assert cli(env, "serve", "--background", "--repo", repo).returncode == 0
    assert cli(env, "serve", "--stop", "--repo", repo).stdout.startswith("server stopped")
    assert server_status(env, sample_repo) == {"running": False}

    assert cli(env, "serve", "--background", "--idle-timeout", "1", "--repo", repo).returncode == 0
    deadline = time.monotonic() + 30
    while server_status(env, sample_repo) != {"running": False}:
        assert time.monotonic() < deadline, "the idle server did not exit"
        time.sleep(0.5)


def test_a_runtime_directory_others_can_enter_is_never_used(
    sample_repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    shared = tmp_path / "shared-run"
    (shared / f"indexer-{os.getuid()}").mkdir(parents=True, mode=0o777)
    os.chmod(shared / f"indexer-{os.getuid()}", 0o777)
    env = dict(env, XDG_RUNTIME_DIR=str(shared))
    assert cli(env, "build", "--repo", str(sample_repo)).returncode == 0
    refused = cli(env, "serve", "--repo", str(sample_repo))
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "runtime directory" in refused.stderr
    proc = cli(env, "search", "format money", "--repo", str(sample_repo), "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)


def wait_for_server(env: dict[str, str], repo: Path) -> dict[str, object]:
    deadline = time.monotonic() + 60
    while not (status := server_status(env, repo)).get("running"):
        assert time.monotonic() < deadline, "no server started"
        time.sleep(0.1)
    return status


def test_by_default_a_search_starts_a_server_for_the_next(
    sample_repo: Path, make_repo: MakeRepo, env: dict[str, str]
) -> None:
    repo = str(sample_repo)
    assert cli(env, "build", "--repo", repo).returncode == 0
    default = {k: v for k, v in env.items() if k != "INDEXER_SERVE"}
    query = ("search", "format money", "--repo", repo, "--json")
    on = cli(env, *query, INDEXER_SERVE="on")  # forwards only: starts nothing
    assert on.returncode == 0 and server_status(env, sample_repo) == {"running": False}

    first = subprocess.run(  # answered here, then a detached server starts for the next
        [sys.executable, "-m", "indexer", *query], capture_output=True, text=True, env=default
    )
    assert first.returncode == 0 and first.stdout == on.stdout
    try:
        assert wait_for_server(env, sample_repo)["requests"] == 0
        second = subprocess.run(
            [sys.executable, "-m", "indexer", *query], capture_output=True, text=True, env=default
        )
        assert second.stdout == first.stdout
        assert server_status(env, sample_repo)["requests"] == 1
    finally:
        cli(env, "serve", "--stop", "--repo", repo)

    # No index (an error): nothing to serve, no server started.
    bare = make_repo({"a.py": "def f():\n    return 1\n"})
    failed = subprocess.run(
        [sys.executable, "-m", "indexer", "search", "f", "--repo", str(bare)],
        capture_output=True,
        text=True,
        env=default,
    )
    assert failed.returncode == 2 and failed.stderr.startswith("indexer: error:")
    time.sleep(0.5)
    assert server_status(env, bare) == {"running": False}


def test_a_server_whose_code_changed_hands_the_command_back_and_exits(
    served: Path, env: dict[str, str]
) -> None:
    import indexer.search.answers as module

    query = ("search", "format money", "--repo", str(served), "--json")
    expected = cli(env, *query, INDEXER_SERVE="0").stdout
    source = Path(module.__file__)
    before = source.stat()
    os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))  # as an upgrade does
    try:
        proc = cli(env, *query)  # answered here, with the code on disk
        assert proc.returncode == 0 and proc.stdout == expected
        deadline = time.monotonic() + 30
        while server_status(env, served) != {"running": False}:
            assert time.monotonic() < deadline, "the outdated server did not exit"
            time.sleep(0.1)
    finally:
        os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_one_server_per_index_even_when_two_start_at_once(
    sample_repo: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    from indexer.index.gitdir import index_dir_of
    from indexer.serve.serve_client import socket_path

    assert cli(env, "build", "--repo", str(sample_repo)).returncode == 0
    monkeypatch.setenv("XDG_RUNTIME_DIR", env["XDG_RUNTIME_DIR"])
    path = socket_path(index_dir_of(str(sample_repo), None))
    assert path is not None
    with open(path.with_suffix(".lock"), "w") as held:  # a server still warming up holds it
        fcntl.flock(held, fcntl.LOCK_EX)
        refused = cli(env, "serve", "--repo", str(sample_repo))
    assert refused.returncode == 2 and "already starting" in refused.stderr
    assert refused.stderr.count("\n") == 1


def test_servers_are_started_at_most_every_few_seconds(
    sample_repo: Path, env: dict[str, str]
) -> None:
    repo = str(sample_repo)
    assert cli(env, "build", "--repo", repo).returncode == 0
    default = {k: v for k, v in env.items() if k != "INDEXER_SERVE"}
    query = [sys.executable, "-m", "indexer", "search", "format money", "--repo", repo]
    assert subprocess.run(query, capture_output=True, env=default).returncode == 0
    wait_for_server(env, sample_repo)
    cli(env, "serve", "--stop", "--repo", repo)  # as a server that died at once
    assert subprocess.run(query, capture_output=True, env=default).returncode == 0
    time.sleep(1.0)
    assert server_status(env, sample_repo) == {"running": False}  # not started again so soon
