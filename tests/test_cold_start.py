"""A one-shot `indexer search` loads only what a search needs, and answers as a long-lived
process does (the numpy scan of indexer/index/code_scan.py against FAISS's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from indexer.api import Index

from .conftest import SAMPLE_FILES, MakeRepo, commit_all, run_cli, write_files

# Modules a search of a clean working tree never needs: FAISS (numpy scans the codes),
# pygit2 (git status runs as a subprocess), tree-sitter (nothing to chunk), the MCP server,
# the build's process pools, OpenSSL's hashlib, argparse's shutil, numpy's masked arrays.
NOT_NEEDED = (
    "faiss",
    "pygit2",
    "tree_sitter",
    "tree_sitter_language_pack",
    "mcp",
    "joblib",
    "dask",
    "hashlib",
    "shutil",
    "numpy.ma",
)

PROBE = """
import json, runpy, sys
sys.argv = ["indexer", *sys.argv[1:]]
try:
    runpy.run_module("indexer", run_name="__main__")
except SystemExit as done:
    code = done.code
loaded = sorted(m for m in json.loads(sys.stdin.read()) if m in sys.modules)
print("PROBE " + json.dumps({"code": code, "loaded": loaded}), file=sys.stderr)
"""


# ...and what a search of the commit alone (a bare repository, `--no-worktree`) never needs:
# the working tree's scan and its subprocesses, the segment writer, the code graph, the filters
# of a search without any, the index writer's BM25, the savings log's queue and session ids.
COMMIT_ONLY_NOT_NEEDED = (
    "indexer.source.worktree",
    "subprocess",
    "indexer.index.segment_data",
    "indexer.index.graph.facts",
    "indexer.index.graph.model",
    "indexer.search.filters",
    "indexer.index.lexical",
    "queue",
    "uuid",
)


def probe(
    repo: Path,
    *args: str,
    env: dict[str, str] | None = None,
    not_needed: tuple[str, ...] = NOT_NEEDED,
) -> dict[str, object]:
    """Run `indexer ARGS` in a fresh interpreter; its exit code and the `not_needed` it loaded."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        input=json.dumps(not_needed),
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("PROBE "))
    result: dict[str, object] = json.loads(line[len("PROBE ") :])
    return result


def test_a_search_loads_nothing_it_does_not_need(make_repo: MakeRepo) -> None:
    repo = make_repo(SAMPLE_FILES)
    assert run_cli("build", "--json", cwd=repo).returncode == 0
    for env in ({"INDEXER_SERVE": "0"}, {}):  # in-process; and after asking for a server
        found = probe(repo, "search", "invoice tax", "--json", env=env)
        assert found == {"code": 0, "loaded": []}
    found = probe(repo, "search", "InvoiceCalculator", "--no-log", env={"INDEXER_SERVE": "0"})
    assert found == {"code": 0, "loaded": []}  # the human-readable output too


def test_a_search_of_the_commit_alone_loads_no_working_tree_or_writer_code(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo(SAMPLE_FILES)
    assert run_cli("build", "--json", cwd=repo).returncode == 0
    env = {"INDEXER_SERVE": "0", "INDEXER_SAVINGS": "0"}
    modules = NOT_NEEDED + COMMIT_ONLY_NOT_NEEDED
    for query in ("invoice tax", "InvoiceCalculator"):
        found = probe(repo, "search", query, "--no-worktree", "--json", env=env, not_needed=modules)
        assert found == {"code": 0, "loaded": []}


def test_a_dirty_tree_is_still_overlaid_by_a_one_shot_search(make_repo: MakeRepo) -> None:
    repo = make_repo(SAMPLE_FILES)
    assert run_cli("build", "--json", cwd=repo).returncode == 0
    write_files(repo, {"billing/refunds.py": "def refund_everything_now():\n    return 0\n"})
    done = run_cli("search", "refund_everything_now", "--json", cwd=repo)
    assert done.returncode == 0, done.stderr
    top = json.loads(done.stdout)[0]
    assert (top["path"], top["source"]) == ("billing/refunds.py", "worktree")


def test_a_one_shot_search_answers_as_a_long_lived_process(make_repo: MakeRepo) -> None:
    """The numpy scan and FAISS's give the same results, scores included, over several
    segments (an update) as over one."""
    repo = make_repo(SAMPLE_FILES)
    assert run_cli("build", "--json", cwd=repo).returncode == 0
    queries = ["invoice tax", "InvoiceCalculator", "retry with backoff", "health check server"]

    def compare() -> None:
        index = Index.open(repo, worktree=False)
        for query in queries:
            expected = [r.to_dict() for r in index.search(query, k=10)]
            done = run_cli("search", query, "--json", "--no-log", "--no-worktree", cwd=repo)
            assert json.loads(done.stdout) == expected, query

    compare()
    write_files(repo, {"billing/tax.py": "def tax_rate_for(country):\n    return 0.2\n"})
    commit_all(repo, "tax")
    assert run_cli("update", "--json", cwd=repo).returncode == 0
    compare()


def test_the_vocabulary_read_in_place_maps_terms_as_a_dict_does() -> None:
    """The shipped vocabulary looked up in its JSON bytes: the row a dict gives, for every
    term; None for terms it lacks, including ones JSON would have escaped."""
    from indexer.index.vectors import JsonVocab, default_table_dir

    data = (default_table_dir() / "vocab.json").read_bytes()
    terms = json.loads(data)
    table = {t: i for i, t in enumerate(terms)}
    vocab = JsonVocab(data)
    vocab.MAX_SCANS = len(terms) + 100  # search every time: no dict behind it
    assert len(vocab) == len(terms)
    for term in [*terms[::7], "not-a-term-at-all", ", ", '"he', "h\u00e9", ""]:
        assert (term in vocab, vocab.get(term)) == (term in table, table.get(term)), term
    assert JsonVocab.of(b'["a", "b\\\\u00e9", "a"]') == {"a": 2, "b\\u00e9": 1}
    hashed = JsonVocab(data)
    hashed.MAX_SCANS = 0  # the sorted hashes from the first lookup on
    probes = [*terms[::7], "not-a-term-at-all", ", ", '"he', "h\u00e9", ""]
    want = [table.get(t, -1) for t in probes]
    assert hashed.rows_of(probes).tolist() == want
    assert [hashed.get(t) for t in probes] == [table.get(t) for t in probes]
    twice = JsonVocab(b'["a", "b", "a"]')
    twice.MAX_SCANS = 0
    assert twice.rows_of(["a", "b", "c"]).tolist() == [2, 1, -1]
    scanned = JsonVocab(b'["ab", "b", "ab", "", "abc", "ac"]')  # repeats: the last row wins
    scanned.MAX_SCANS = 100
    probes = ["ab", "b", "", "abc", "ac", "a", "abd", "zz"]
    assert scanned.rows_of(probes).tolist() == [2, 1, 3, 4, 5, -1, -1, -1]


def test_a_query_embeds_the_same_through_the_lazy_vocabulary_and_a_dict() -> None:
    """The long-lived process's hashed lookups give the vectors a plain dict gives."""
    from dataclasses import replace

    from indexer.index.vectors import JsonVocab, StaticVectors

    table = StaticVectors.load()
    assert isinstance(table.vocab, JsonVocab)
    table.vocab.MAX_SCANS = 0
    plain = replace(table, vocab=dict(table.vocab.as_dict()))
    hashed = replace(table, vocab=JsonVocab(table.vocab.data))
    hashed.vocab.MAX_SCANS = 0  # type: ignore[attr-defined]
    words = ["parse", "the", "matrix", "parse", "determinant", "zzqx_unknown", "sparse"]
    words += ["matrix", "of", "of"]
    for terms in (words, words[::-1], [], ["zzqx_unknown"]):
        assert np.array_equal(hashed.embed_terms(terms), plain.embed_terms(terms))


def test_a_querys_table_rows_are_read_from_the_file_as_the_map_holds_them() -> None:
    """`table_rows` reads a memory-mapped table's rows with pread: the same bytes, in order."""
    from indexer.index.vectors import StaticVectors

    table = StaticVectors.load()
    assert table._file is not None  # the shipped table is memory-mapped
    ids = np.asarray([len(table.vocab) - 1, 0, 7, 7, 123], dtype=np.int64)
    got = table.table_rows(ids)
    assert got.dtype == np.int8 and np.array_equal(got, np.asarray(table.vectors[ids]))
    assert table.table_rows(ids[:0]).shape == (0, table.dim)


def test_a_long_lived_index_hashes_its_vocabulary_at_once_a_one_shot_one_scans(
    make_repo: MakeRepo,
) -> None:
    """A process that searches more than once sorts the vocabulary's hashes at its first
    lookup (a scan of the bytes costs 0.3-0.6 ms a term); a one-shot command scans, with the
    same results either way."""
    from indexer.api import Index
    from indexer.index.vectors import JsonVocab

    repo = make_repo(SAMPLE_FILES)
    assert run_cli("build", "--json", cwd=repo).returncode == 0
    answers = []
    for one_shot in (False, True):
        index = Index.open(str(repo), worktree=False, one_shot=one_shot)
        answers.append([r.id for r in index.search("invoice tax", k=5, log=False)])
        vocab = index.vectors.vocab
        assert isinstance(vocab, JsonVocab)
        assert (vocab._keys is not None) == (not one_shot)
    assert answers[0] == answers[1] and answers[0]
