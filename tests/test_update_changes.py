"""An update reads only what changed (the commits since the indexed one, the files they touch)
and a merge that ran while updates landed publishes on top of them: either way the index
answers exactly like a full build of the same commit."""

import os
import shutil
from pathlib import Path

import pygit2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexer import Index
from indexer.errors import IndexerError
from indexer.index.build import build_index, update_index
from indexer.index.merge import PreparedMerge, commit, prepare
from indexer.index.store import SEGMENTS, current_generation, read_generation

from .conftest import JS_CART, PYTHON_NET, commit_all, write_files
from .test_incremental import PIECES, assert_equivalent, assert_same_view

step = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(sorted(PIECES)), st.integers(0, 2)),
    st.tuples(st.just("delete"), st.sampled_from(sorted(PIECES)), st.just(0)),
    st.tuples(st.just("revert"), st.sampled_from(sorted(PIECES)), st.just(0)),
    st.tuples(st.just("checkout"), st.just(""), st.integers(0, 10)),
)


def _stage_all(root: Path) -> None:
    repo = pygit2.Repository(str(root))
    repo.index.read()
    repo.index.add_all()
    for entry in list(repo.index):
        if not (root / entry.path).exists():
            repo.index.remove(entry.path)
    repo.index.write()


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.tuples(step, st.booleans()), min_size=1, max_size=7))
def test_several_commits_between_updates_match_full_rebuilds(tmp_path_factory, steps) -> None:  # type: ignore[no-untyped-def]
    """Commits an hour apart, updates after some of them only: a file changed and changed back
    in between keeps its blob but takes the newer change time, as a full build's walk finds."""
    tmp = tmp_path_factory.mktemp("batched")
    root = tmp / "repo"
    root.mkdir()
    pygit2.init_repository(str(root))
    when = 1_700_000_000
    write_files(root, {"a.py": PIECES["a.py"][0], "web/c.js": JS_CART, "pkg/b.py": PYTHON_NET})
    commits = [commit_all(root, "start", when=when)]
    index_dir = tmp / "inc"
    update_index(root, index_dir=index_dir, progress=False)
    originals = {name: (root / name).read_text() for name in ("a.py", "web/c.js", "pkg/b.py")}
    rev = None
    for (kind, name, n), update_now in steps:
        when += 3600
        if kind == "checkout":
            rev = commits[n % len(commits)]  # another branch's commit: not on the chain
        else:
            rev = None
            if kind == "write":
                write_files(root, {name: PIECES[name][n % len(PIECES[name])]})
            elif kind == "delete" and (root / name).exists():
                (root / name).unlink()
            elif kind == "revert" and name in originals:
                write_files(root, {name: originals[name]})
            _stage_all(root)
            commits.append(commit_all(root, f"{kind} {name}", when=when))
        if update_now:
            update_index(root, rev=rev, index_dir=index_dir, progress=False)
    update_index(root, rev=rev, index_dir=index_dir, progress=False)
    if rev is None:
        assert_equivalent(root, index_dir, tmp)
    else:
        full_dir = tmp / "full-rev"
        shutil.rmtree(full_dir, ignore_errors=True)
        build_index(root, rev=rev, index_dir=full_dir, progress=False)
        assert_same_view(Index(current_generation(index_dir)), Index(current_generation(full_dir)))


def _segments_of(index_dir: Path) -> list[str]:
    return [s["name"] for s in read_generation(current_generation(index_dir))["segments"]]


def _several_segments(make_repo, tmp_path: Path) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    files = {"a.py": PIECES["a.py"][0], "web/c.js": JS_CART, "docs/d.md": PIECES["docs/d.md"][0]}
    repo = make_repo({**files, "pkg/b.py": PYTHON_NET})
    index_dir = tmp_path / "inc"
    update_index(repo, index_dir=index_dir, progress=False)
    for i, (name, text) in enumerate(
        [("a.py", PIECES["a.py"][1]), ("docs/d.md", PIECES["docs/d.md"][1])]
    ):
        write_files(repo, {name: text})
        commit_all(repo, f"change {i}", when=1_700_000_000 + 60 * (i + 1))
        update_index(repo, index_dir=index_dir, progress=False)
    assert len(_segments_of(index_dir)) == 3
    return repo, index_dir


def test_a_merge_publishes_on_top_of_the_updates_that_landed_meanwhile(
    make_repo, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    repo, index_dir = _several_segments(make_repo, tmp_path)
    merged = _segments_of(index_dir)
    prepared = prepare(index_dir, everything=True)
    assert isinstance(prepared, PreparedMerge)
    # While the merge is unpublished: updates change a merged file, delete one, add one.
    write_files(repo, {"a.py": PIECES["a.py"][2], "new.py": "def fresh_name():\n    return 1\n"})
    (repo / "docs" / "d.md").unlink()
    _stage_all(repo)
    commit_all(repo, "meanwhile", when=1_700_001_000)
    assert update_index(repo, index_dir=index_dir, progress=False).mode == "incremental"
    result = commit(prepared)
    assert result["merged"] == 3 and result["rebased"]
    now = _segments_of(index_dir)
    assert len(now) == 2 and not set(now) & set(merged)  # the merged one, the update's one
    deleted = read_generation(current_generation(index_dir))["segments"][0]["deleted"]
    assert deleted == ["a.py", "docs/d.md"]  # what the update took from the merged segments
    assert_equivalent(repo, index_dir, tmp_path)


def test_a_merge_is_dropped_when_the_index_was_rebuilt_under_it(make_repo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    repo, index_dir = _several_segments(make_repo, tmp_path)
    prepared = prepare(index_dir, everything=True)
    assert isinstance(prepared, PreparedMerge)
    build_index(repo, index_dir=index_dir, progress=False)  # new segments, none of the merged
    rebuilt = current_generation(index_dir)
    result = commit(prepared)
    assert result["merged"] == 0 and current_generation(index_dir) == rebuilt
    assert not prepared.writer.path.exists()  # its temporary segment is gone
    names = {p.name for p in (index_dir / SEGMENTS).iterdir()}
    assert not any(n.startswith(".") for n in names)
    assert_equivalent(repo, index_dir, tmp_path)


@pytest.mark.parametrize("name", ["file_paths.txt", "file_blobs.txt", "chunk_file.npy"])
def test_an_update_over_a_damaged_base_builds_again(make_repo, tmp_path: Path, name: str) -> None:  # type: ignore[no-untyped-def]
    """The base's segments are opened without hashing their small files; each is hashed when
    the update first reads it: a damaged one is noticed, and the update builds from scratch."""
    repo, index_dir = _several_segments(make_repo, tmp_path)
    damaged = index_dir / SEGMENTS / _segments_of(index_dir)[0] / name
    data = bytearray(damaged.read_bytes())
    data[-2] ^= 0x01  # same size: only the checksum notices
    damaged.write_bytes(bytes(data))
    write_files(repo, {"pkg/b.py": PYTHON_NET + "\n\ndef later():\n    return 2\n"})
    commit_all(repo, "later", when=1_700_002_000)
    assert update_index(repo, index_dir=index_dir, progress=False).mode == "full"
    assert_equivalent(repo, index_dir, tmp_path)


def test_a_segment_opened_for_an_update_hashes_a_file_when_it_is_read(
    make_repo, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    from indexer.errors import CorruptIndexError
    from indexer.index.segment import Segment

    _, index_dir = _several_segments(make_repo, tmp_path)
    directory = index_dir / SEGMENTS / _segments_of(index_dir)[0]
    damaged = directory / "symbols.txt"
    data = bytearray(damaged.read_bytes())
    data[0] ^= 0x01
    damaged.write_bytes(bytes(data))
    with pytest.raises(CorruptIndexError):
        Segment.open(directory)  # a search's open hashes every small file
    segment = Segment.open(directory, hash_small=False)
    assert segment.paths[0] == "a.py"  # an intact file, hashed now, reads
    with pytest.raises(CorruptIndexError, match=r"symbols\.txt fails its checksum"):
        segment.symbols  # noqa: B018


def test_the_update_reads_git_without_pygit2(make_repo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`indexer update` as a process: the commits, trees and blobs come from `git cat-file`."""
    import subprocess
    import sys

    repo, index_dir = _several_segments(make_repo, tmp_path)
    write_files(repo, {"pkg/b.py": PYTHON_NET + "\n\ndef later():\n    return 2\n"})
    commit_all(repo, "later", when=1_700_002_000)
    code = (
        "import sys, runpy; sys.argv = ['indexer', 'update', '--index-dir', sys.argv[1]]\n"
        "try:\n    runpy.run_module('indexer', run_name='__main__')\n"
        "except SystemExit as e:\n    assert not e.code, e.code\n"
        "assert 'pygit2' not in sys.modules, 'pygit2 was imported'\n"
    )
    env = {**os.environ, "INDEXER_SAVINGS": "0"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(index_dir)], cwd=repo, env=env, capture_output=True
    )
    assert done.returncode == 0, done.stderr.decode()
    assert Index(current_generation(index_dir)).search("later")[0].symbol == "later"
    try:
        update_index(repo, rev="no-such-rev", index_dir=index_dir, progress=False)
    except IndexerError as exc:
        assert "unknown revision" in str(exc)
    else:
        raise AssertionError("an unknown revision must be refused")


def test_a_file_changed_and_changed_back_between_updates_takes_the_newer_time(
    make_repo, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    repo, index_dir = _several_segments(make_repo, tmp_path)
    original = (repo / "pkg" / "b.py").read_text()
    write_files(repo, {"pkg/b.py": original + "\nEXTRA = 1\n"})
    commit_all(repo, "touch b", when=1_700_005_000)
    write_files(repo, {"pkg/b.py": original, "a.py": PIECES["a.py"][0]})
    commit_all(repo, "back", when=1_700_006_000)
    report = update_index(repo, index_dir=index_dir, progress=False)
    assert report.chunked_files == 0 and report.cached_files == 1  # a.py: a revert, copied
    index = Index(current_generation(index_dir))
    times = {record["path"]: record["time"] for record in index.files}
    assert times["pkg/b.py"] == times["a.py"] == 1_700_006_000
    assert_equivalent(repo, index_dir, tmp_path)


def test_publishing_waits_for_the_publish_lock(make_repo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Segments go into place and generations are published (and garbage collected) under one
    short lock: another writer's collection never sees a segment in place but unlisted."""
    import subprocess
    import sys
    import time

    from indexer.index.store import publish_lock

    repo, index_dir = _several_segments(make_repo, tmp_path)
    before = current_generation(index_dir)
    write_files(repo, {"pkg/b.py": PYTHON_NET + "\n\ndef locked_out():\n    return 2\n"})
    commit_all(repo, "later", when=1_700_002_000)
    with publish_lock(index_dir), publish_lock(index_dir):  # re-entrant in one process
        proc = subprocess.Popen(
            [sys.executable, "-m", "indexer", "update", "--index-dir", str(index_dir)],
            cwd=repo,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 120
        while not any(p.name.startswith(".") for p in (index_dir / SEGMENTS).iterdir()):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)  # until its new segment is written, as a temporary directory
        time.sleep(1.0)
        assert proc.poll() is None and current_generation(index_dir) == before
    assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    assert current_generation(index_dir) != before
    assert Index(current_generation(index_dir)).search("locked_out")[0].symbol == "locked_out"


def test_an_update_that_lists_the_whole_tree_keeps_the_times_it_knows(
    make_repo, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """A changed `.indexerignore` makes the update list every file: kept files take their
    stored times (no history walk for them), a file touched since takes the newer time."""
    repo, index_dir = _several_segments(make_repo, tmp_path)
    write_files(repo, {"pkg/b.py": PYTHON_NET + "\nEXTRA = 1\n"})
    commit_all(repo, "touch b", when=1_700_005_000)
    write_files(repo, {"pkg/b.py": PYTHON_NET, ".indexerignore": "docs/\n"})
    commit_all(repo, "ignore docs", when=1_700_006_000)
    report = update_index(repo, index_dir=index_dir, progress=False)
    assert report.mode == "incremental" and report.chunked_files == 1  # .indexerignore itself
    times = {r["path"]: r["time"] for r in Index(current_generation(index_dir)).files}
    assert "docs/d.md" not in times and times["pkg/b.py"] == 1_700_006_000
    assert_equivalent(repo, index_dir, tmp_path)
