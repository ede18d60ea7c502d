"""Incremental updates answer exactly like a full rebuild at the same commit."""

import filecmp
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pygit2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexer import Index
from indexer.index.build import build_index, update_index
from indexer.index.merge import merge
from indexer.index.store import current_generation, current_snapshot

from .conftest import JS_CART, PYTHON_BILLING, PYTHON_NET, commit_all, write_files

QUERIES = [
    "InvoiceCalculator",
    "retry after failure",
    "shopping cart items",
    "format money",
    "open tcp connection",
    "helper number",
]


def assert_same_view(ia: Index, ib: Index) -> None:
    """The reader's row space of an incremental index (several segments, deletes) equals a
    full build's: every array ranking reads, every chunk, every score of every query."""
    assert ia.commit == ib.commit
    assert ia.manifest["counts"] == ib.manifest["counts"]
    assert ia.files == ib.files
    assert len(ia) == len(ib)
    np.testing.assert_array_equal(ia._fids, ib._fids)
    np.testing.assert_array_equal(ia._chunk_file, ib._chunk_file)
    np.testing.assert_array_equal(ia._chunk_flags, ib._chunk_flags)
    np.testing.assert_array_equal(ia.lexical.doc_lengths, ib.lexical.doc_lengths)
    for name in ("symbols", "kinds", "defines"):
        assert list(getattr(ia.row_columns, name)) == list(getattr(ib.row_columns, name)), name
    every = np.arange(len(ia))
    for view in (ia, ib):  # the coded kinds read back as the kinds column
        cols = view.row_columns
        codes = cols.kind_codes(every).tolist()
        names = {code: kind for kind, code in cols._codes.items()}
        assert [names[c] for c in codes] == list(cols.kinds)
    assert [ia.chunk_at(r) for r in range(len(ia))] == [ib.chunk_at(r) for r in range(len(ib))]
    if len(ia):
        np.testing.assert_array_equal(
            ia.dense.reconstruct(np.arange(len(ia))), ib.dense.reconstruct(np.arange(len(ib)))
        )
        # One scan over every live row's codes: the same neighbours whatever the segments.
        qvec = ia.vectors.embed("retry the invoice after a failure")
        for x, y in zip(ia.dense.search(qvec, 7), ib.dense.search(qvec, 7), strict=True):
            np.testing.assert_array_equal(x, y)
    assert ia.space.graph_facts() == ib.space.graph_facts()
    for q in QUERIES:
        ra, rb = ia.search(q), ib.search(q)
        assert [(r.id, r.score, r.confidence) for r in ra] == [
            (r.id, r.score, r.confidence) for r in rb
        ], q
        for terms in (q.lower().split(), ["def", "return"]):
            for x, y in zip(ia.lexical.score(terms), ib.lexical.score(terms), strict=True):
                np.testing.assert_array_equal(x, y)


def assert_equivalent(repo: Path, incremental_dir: Path, tmp: Path) -> None:
    """Same rows, chunks, scores and answers as a full build; merged, the same bytes too."""
    full_dir = tmp / "full"
    shutil.rmtree(full_dir, ignore_errors=True)
    build_index(repo, index_dir=full_dir, progress=False)
    assert_same_view(
        Index(current_generation(incremental_dir)), Index(current_generation(full_dir))
    )
    # Merged into one segment, the incremental index is the full build's segment, byte for byte.
    merged_dir = tmp / "merged"
    shutil.rmtree(merged_dir, ignore_errors=True)
    shutil.copytree(incremental_dir, merged_dir)
    merge(merged_dir, everything=True)
    a, b = _segments(merged_dir), _segments(full_dir)
    assert len(a) == len(b) <= 1
    for x, y in zip(a, b, strict=True):
        names = sorted(p.name for p in y.iterdir())
        assert names == sorted(p.name for p in x.iterdir())
        for name in names:
            assert filecmp.cmp(x / name, y / name, shallow=False), name


def _segments(index_dir: Path) -> list[Path]:
    generation = json.loads(current_generation(index_dir).read_text())
    return [index_dir / "segments" / s["name"] for s in generation["segments"]]


def test_update_reuses_kept_files_and_matches_full_build(make_repo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    repo = make_repo(
        {"billing/invoice.py": PYTHON_BILLING, "net/retry.py": PYTHON_NET, "web/cart.js": JS_CART}
    )
    index_dir = tmp_path / "inc"
    first = update_index(repo, index_dir=index_dir, progress=False)
    assert first.mode == "full" and first.chunked_files == 3

    write_files(repo, {"net/retry.py": PYTHON_NET + "\n\ndef helper_number():\n    return 7\n"})
    commit_all(repo, "edit retry")
    second = update_index(repo, index_dir=index_dir, progress=False)
    assert second.mode == "incremental"
    assert second.reused_files == 2 and second.chunked_files == 1
    assert_equivalent(repo, index_dir, tmp_path)
    assert Index(current_snapshot(index_dir)).search("helper_number")[0].symbol == "helper_number"

    again = update_index(repo, index_dir=index_dir, progress=False)
    assert again.mode == "unchanged"


def test_renames_reverts_and_branch_switches_reuse_the_blob_cache(
    make_repo, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    repo_path = make_repo({"billing/invoice.py": PYTHON_BILLING, "web/cart.js": JS_CART})
    repo = pygit2.Repository(str(repo_path))
    index_dir = tmp_path / "inc"
    update_index(repo_path, index_dir=index_dir, progress=False)
    first = str(repo.head.target)

    # Rename a directory: the file name (stem) is unchanged, so nothing is parsed again.
    (repo_path / "money").mkdir()
    os.rename(repo_path / "billing" / "invoice.py", repo_path / "money" / "invoice.py")
    repo.index.read()
    repo.index.remove("billing/invoice.py")
    commit_all(repo_path, "rename")
    renamed = update_index(repo_path, index_dir=index_dir, progress=False)
    assert renamed.chunked_files == 0 and renamed.cached_files == 1
    assert_equivalent(repo_path, index_dir, tmp_path)

    # Back to the first commit (a branch switch or a revert): everything comes from the cache.
    back = update_index(repo_path, rev=first, index_dir=index_dir, progress=False)
    assert back.chunked_files == 0
    assert Index(current_snapshot(index_dir)).commit == first


NOTEBOOK = (Path(__file__).parent / "data" / "notebooks" / "pricing.ipynb").read_text()

PIECES = {
    "a.py": [
        "def alpha():\n    return 1\n",
        "def alpha():\n    return 2\n\nCONST = 3\n",
        "class Alpha:\n    def run(self):\n        return 'x'\n",
    ],
    "pkg/b.py": [PYTHON_NET, "import os\n\ndef beta_helper_number(x):\n    return x\n"],
    "web/c.js": [JS_CART, "function gamma() { return 1 }\n"],
    "docs/d.md": ["# Title\n\nSome words about invoices.\n", "# Other\n\nText.\n"],
    # A notebook, and the same notebook cut off (indexed as text and counted as a fallback).
    "nb/e.ipynb": [NOTEBOOK, NOTEBOOK[: len(NOTEBOOK) // 2]],
}

operation = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(sorted(PIECES)), st.integers(0, 2)),
    st.tuples(st.just("delete"), st.sampled_from(sorted(PIECES)), st.just(0)),
    st.tuples(st.just("rename"), st.sampled_from(sorted(PIECES)), st.just(0)),
    st.tuples(st.just("checkout"), st.just(""), st.integers(0, 10)),
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(operation, min_size=1, max_size=5))
def test_random_histories_match_full_rebuilds(tmp_path_factory, ops) -> None:  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("hist")
    root = tmp / "repo"
    root.mkdir()
    pygit2.init_repository(str(root))
    write_files(root, {"a.py": PIECES["a.py"][0], "web/c.js": JS_CART})
    commits = [commit_all(root, "start")]
    index_dir = tmp / "inc"
    update_index(root, index_dir=index_dir, progress=False)
    repo = pygit2.Repository(str(root))
    for kind, name, n in ops:
        rev = None
        if kind == "write":
            write_files(root, {name: PIECES[name][n % len(PIECES[name])]})
        elif kind == "delete" and (root / name).exists():
            (root / name).unlink()
        elif kind == "rename" and (root / name).exists():
            target = root / "moved" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(root / name, target)
        elif kind == "checkout":
            rev = commits[n % len(commits)]  # like switching to another branch's commit
        if rev is None:
            repo.index.read()
            repo.index.add_all()
            for entry in list(repo.index):
                if not (root / entry.path).exists():
                    repo.index.remove(entry.path)
            repo.index.write()
            commits.append(commit_all(root, f"{kind} {name}"))
        update_index(root, rev=rev, index_dir=index_dir, progress=False)
        if rev is not None:
            # Compare against a full build of that same commit.
            full_dir = tmp / "full-rev"
            shutil.rmtree(full_dir, ignore_errors=True)
            build_index(root, rev=rev, index_dir=full_dir, progress=False)
            assert_same_view(Index(current_snapshot(index_dir)), Index(current_snapshot(full_dir)))
        else:
            assert_equivalent(root, index_dir, tmp)


def test_switching_back_reuses_the_kept_snapshot(make_repo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    repo_path = make_repo({"a.py": PIECES["a.py"][0], "web/c.js": JS_CART})
    index_dir = tmp_path / "inc"
    first = update_index(repo_path, index_dir=index_dir, progress=False)
    first_snapshot = current_snapshot(index_dir)
    write_files(repo_path, {"a.py": PIECES["a.py"][2]})
    commit_all(repo_path, "change")
    assert update_index(repo_path, index_dir=index_dir, progress=False).mode == "incremental"
    back = update_index(repo_path, rev=first.commit, index_dir=index_dir, progress=False)
    assert back.mode == "reused" and back.chunked_files == 0
    assert current_snapshot(index_dir) == first_snapshot
    assert Index(first_snapshot).search("alpha")[0].symbol == "alpha"
    forward = update_index(repo_path, index_dir=index_dir, progress=False)
    assert forward.mode == "reused"
    assert Index(current_snapshot(index_dir)).search("Alpha")[0].symbol == "Alpha"


def test_tiered_merge_policy() -> None:
    from indexer.index.merge import MERGE_FACTOR, plan

    small = [(10, 0)] * (MERGE_FACTOR - 1)
    assert plan(small) == []  # a tier below the factor waits
    assert plan([*small, (12, 0)]) == list(range(MERGE_FACTOR))
    # A big segment stays out of a merge of small ones, unless it is mostly deleted rows.
    assert plan([(100_000, 0), *small, (12, 0)]) == list(range(1, MERGE_FACTOR + 1))
    assert plan([(100_000, 200_000), *small, (12, 0)]) == list(range(MERGE_FACTOR + 1))
    assert plan([(100_000, 0), (10, 0)]) == []
    # Segments of half the build's segment size or more (a streamed build's) are left alone.
    full = [(10_000, 0)] * (MERGE_FACTOR + 2)
    assert plan(full, max_rows=16_384) == [] and plan(full, max_rows=40_000) != []
    assert plan([*full, *small, (12, 0)], max_rows=16_384) == list(
        range(len(full), len(full) + MERGE_FACTOR)
    )
    # By default the bound is MERGE_MAX_ROWS, below a full build's segments (262,144 chunks).
    assert plan([(40_000, 0)] * (MERGE_FACTOR + 2)) == []
    assert plan([(30_000, 0)] * (MERGE_FACTOR + 2)) != []


def test_updates_add_segments_and_optimize_merges_them(make_repo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from .conftest import run_cli

    files = {"a.py": PIECES["a.py"][0], "web/c.js": JS_CART, "docs/d.md": PIECES["docs/d.md"][0]}
    repo = make_repo({**files, "pkg/b.py": PYTHON_NET})  # b.py keeps the first segment alive
    update_index(repo, progress=False)
    for i, (name, text) in enumerate(
        [
            ("a.py", PIECES["a.py"][1]),
            ("docs/d.md", PIECES["docs/d.md"][1]),
            ("web/c.js", PIECES["web/c.js"][1]),
        ]
    ):
        write_files(repo, {name: text})
        commit_all(repo, f"change {i}")
        report = update_index(repo, progress=False)
        assert report.segments == i + 2 and report.written_bytes < report.bytes
    before = Index.open(repo)
    answers = {q: [(r.id, r.score) for r in before.search(q)] for q in QUERIES}
    proc = run_cli("optimize", "--json", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["segments_after"] == 1
    after = Index.open(repo)
    assert after.status()["segments"] == 1 and after.snapshot != before.snapshot
    assert {q: [(r.id, r.score) for r in after.search(q)] for q in QUERIES} == answers
    # The generation the first Index opened is kept (with its segments): it still answers.
    assert [(r.id, r.score) for r in before.search("Alpha")] == [
        (r.id, r.score) for r in after.search("Alpha")
    ]
