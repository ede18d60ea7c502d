"""grep's habits for `indexer search`/`show`, and the Python API they mirror."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from indexer import Index, build_index
from indexer.errors import IndexerError
from indexer.index.tokens import stem
from indexer.search.compress import compress, query_terms
from indexer.search.line_scoring import query_weights

from .conftest import SAMPLE_FILES, MakeRepo, run_cli, write_files
from .test_hooks import git

URL_FOR = '''def url_for(endpoint, _scheme=None, _external=False, **values):
    """Generate a URL to the given endpoint."""
    # url_for is the helper for building url_for urls for an endpoint
    url = endpoint
    for key, value in values.items():
        url = f"{url}/{key}/{value}"
    if _scheme is not None and not _external:
        raise ValueError("When specifying _scheme, _external must be True.")
    rv = url
    return rv
'''
LONG_BODY = "\n".join(f"    rv = rv + {i}" for i in range(119))
LONG_DEF = f"def long_builder(x):\n    rv = x\n{LONG_BODY}\n    return rv_tail_marker_value\n"


@pytest.fixture
def repo(make_repo: MakeRepo) -> Path:
    root = make_repo({**SAMPLE_FILES, "web/urls.py": URL_FOR, "gen/long.py": LONG_DEF})
    build_index(root, progress=False)
    return root


def test_filters_in_the_api_and_the_cli(repo: Path) -> None:
    with Index.open(repo) as index:
        everything = {r.path for r in index.search("cart invoice retry health", k=20)}
        assert {"web/cart.js", "billing/invoice.py", "net/retry.py"} <= everything
        py = {r.path for r in index.search("cart invoice retry health", k=20, paths="*.py")}
        assert py and all(p.endswith(".py") for p in py)
        no_net = index.search("retry backoff", k=20, paths=["*.py", "!net"])
        assert all(not r.path.startswith("net/") for r in no_net)
        go = index.search("health ready", k=5, languages="go")
        assert go and {r.language for r in go} == {"go"}
        classes = index.search("cart invoice", k=10, kinds=["class"])
        assert classes and {r.kind for r in classes} == {"class"}
        with pytest.raises(IndexerError, match="unknown kind"):
            index.search("x", kinds="lambda")
    proc = run_cli("search", "retry", "--path", "net/*", "--kind", "function", "--jsonl", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert records and all(r["path"].startswith("net/") for r in records)
    assert all(r["kind"] == "function" for r in records)


def test_exit_status_follows_grep(repo: Path) -> None:
    found = run_cli("search", "retry_with_backoff", "--no-log", cwd=repo)
    assert found.returncode == 0
    lines = found.stdout.splitlines()
    assert lines[0].startswith(" 1. net/retry.py:") and "confidence 0." in lines[0]
    assert "(high)" in lines[0] or "(medium)" in lines[0]
    ranks = [line.split(".")[0].strip() for line in lines if line[:3].strip().isdigit()]
    assert ranks == [str(i) for i in range(1, len(ranks) + 1)]  # rank order
    absent = run_cli("search", "KafkaConsumerGroupRebalance", "--no-log", cwd=repo)
    assert absent.returncode == 1
    assert absent.stdout.startswith("low confidence: no symbol named KafkaConsumerGroupRebalance")
    bad = run_cli("search", "x", "--kind", "lambda", cwd=repo)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_a_dash_reads_the_query_from_stdin(repo: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "indexer", "search", "-", "--json", "--no-log"],
        input="invoice total with tax\n",
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["path"] == "billing/invoice.py"


def test_show_prints_exactly_the_lines_asked_for(repo: Path) -> None:
    proc = run_cli("show", "net/retry.py:5-7", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    expected = "".join(SAMPLE_FILES["net/retry.py"].splitlines(keepends=True)[4:7])  # type: ignore[union-attr]
    assert proc.stdout == expected
    data = json.loads(run_cli("show", "net/retry.py:2", "--json", cwd=repo).stdout)
    assert data == {
        "path": "net/retry.py",
        "start_line": 2,
        "end_line": 2,
        "lines": ["import time"],
    }
    assert run_cli("show", "../secret:1-2", cwd=repo).returncode == 2


def test_a_split_definitions_short_tail_never_takes_a_result_slot(repo: Path) -> None:
    index = Index.open(repo)
    parts = [
        r
        for r in index.search("long_builder rv_tail_marker_value", k=10)
        if r.path == "gen/long.py"
    ]
    assert [r.start_line for r in parts] == [1]  # the definition's first part stands for it


def test_the_kept_columns_tell_a_row_alone_in_its_file_by_kind_and_symbol(repo: Path) -> None:
    # (a result alone so needs no look at its file's rows: no split definition holds it)
    index = Index.open(repo)
    columns, files = index.row_columns, index._chunk_file
    key = [(int(files[r]), columns.kinds[r], columns.symbols[r].lower()) for r in range(len(index))]
    told = [columns.alone(r) for r in range(len(index))]
    assert told == [key.count(k) == 1 for k in key]
    assert not all(told) and any(told)  # (the split definition's parts share theirs)
    shot = Index.open(repo, one_shot=True)  # nothing kept: never told
    assert not any(shot.row_columns.alone(r) for r in range(len(shot)))


def test_compression_keeps_the_line_that_answers(repo: Path) -> None:
    index = Index.open(repo)
    query = "how does url_for build an external URL with a scheme"
    r = index.search(query, k=1, compress=True, paths="web/*")[0]
    assert "if _scheme is not None and not _external:" in (r.text or "")
    # The unweighted scoring counted filler words and the chunk's own name: a comment won.
    chunk = index.show(r.id)
    legacy = compress(chunk, query_terms(query))
    assert "# url_for is the helper" in legacy and "_external:" not in legacy
    weights = query_weights(query, index.lexical)
    assert "how" not in weights and "with" not in weights
    assert weights[stem("scheme")] > weights[stem("url")]  # rarer terms weigh more


def test_api_argument_errors_are_indexer_errors(repo: Path) -> None:
    index = Index.open(repo)
    for bad in ({"k": "3"}, {"k": True}, {"compress": "yes"}, {"paths": 5}, {"log": 1}):
        with pytest.raises(IndexerError):
            index.search("retry", **bad)  # type: ignore[arg-type]
    with pytest.raises(IndexerError, match="query must be a string"):
        index.search(42)  # type: ignore[arg-type]
    with pytest.raises(IndexerError):
        index.related("clamp", depth="2")  # type: ignore[arg-type]
    with pytest.raises(IndexerError, match="repo must be a path"):
        Index.open(42)  # type: ignore[arg-type]


def test_index_is_a_context_manager_and_status_matches_the_cli(repo: Path) -> None:
    with Index.open(repo) as index:
        assert index.search("retry")
        status = index.status()
    assert "_stores" not in index.__dict__  # closed
    assert index.search("retry")  # and reopens what it needs
    cli = json.loads(run_cli("status", "--json", cwd=repo).stdout)
    assert set(cli) == set(status)
    assert status["freshness"]["state"] == "fresh"
    write_files(repo, {"later.py": "x = 1\n"})
    git(repo, "add", "later.py")
    git(repo, "commit", "-q", "-m", "later")
    assert Index.open(repo).status()["freshness"]["state"] == "behind by 1 commit"
    assert "behind by 1 commit" in run_cli("status", cwd=repo).stdout


def test_dispatch_in_process(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from indexer.serve.cli import main

    args = ["--repo", str(repo), "--no-log"]
    assert main(["search", "retry_with_backoff", *args, "--jsonl", "-k", "2"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0])["symbol"] == "retry_with_backoff"
    assert main(["search", "KafkaConsumerGroupRebalance", *args]) == 1
    assert capsys.readouterr().out.startswith("low confidence:")
    assert main(["search", "x", "--kind", "lambda", *args]) == 2
    assert capsys.readouterr().err.startswith("indexer: error: unknown kind")


def test_in_process_callers_keep_their_collector(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only a process started for one command turns collection off and freezes its objects; a
    program that calls main() again and again (numpy already loaded) keeps its collector."""
    import gc

    from indexer.serve.cli import main

    frozen = gc.get_freeze_count()
    assert main(["search", "retry_with_backoff", "--repo", str(repo), "--no-log", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["symbol"] == "retry_with_backoff"
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen  # nothing of this process was frozen


ONE_SEARCH = """
import atexit, gc, json, sys
import indexer.serve.cli as cli

running, collections = [False], []
gc.callbacks.append(lambda phase, info: collections.append(running[0]) if phase == "start" else 0)
command = cli._command
def timed(*args):
    running[0] = True
    try:
        return command(*args)
    finally:
        running[0] = False
cli._command = timed
# atexit runs its handlers last registered first: this one runs after the CLI's own
atexit.register(lambda: print(json.dumps({"unfrozen_at_exit": len(gc.get_objects())})))
code = cli.main(sys.argv[1:])
frozen = gc.get_freeze_count()
print(json.dumps({"code": code, "during": sum(collections), "enabled": gc.isenabled()}))
print(json.dumps({"frozen_after": frozen}))
"""


def test_a_one_shot_search_runs_and_exits_without_cyclic_collection(repo: Path) -> None:
    """A process answering one search neither collects while it imports and searches nor
    traverses its objects at exit (indexer/serve/one_command.py); the collector is on again
    after the command, and its objects are frozen before the interpreter's last collections."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("INDEXER_")}
    proc = subprocess.run(
        [sys.executable, "-c", ONE_SEARCH, "search", "retry_with_backoff", "--repo", str(repo)],
        capture_output=True,
        text=True,
        env={**env, "INDEXER_SERVE": "0", "INDEXER_SAVINGS": "0"},
        timeout=120,
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines[0] == {"code": 0, "during": 0, "enabled": True}, proc.stderr
    assert lines[1]["frozen_after"] > 1000  # the modules' objects and the search's
    assert lines[2]["unfrozen_at_exit"] < 100  # what the last collections would traverse
    assert "retry_with_backoff" in proc.stdout
