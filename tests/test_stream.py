"""A streamed full build (a segment every N chunks) answers exactly like a one-segment build."""

from __future__ import annotations

import filecmp
import shutil
from pathlib import Path

from indexer import Index
from indexer.index.build import build_index, update_index
from indexer.index.merge import merge
from indexer.index.segment import Segment
from indexer.index.store import current_generation

from .conftest import (
    JS_CART,
    PYTHON_BILLING,
    PYTHON_NET,
    MakeRepo,
    commit_all,
    run_cli,
    write_files,
)
from .test_incremental import _segments, assert_equivalent, assert_same_view

FILES: dict[str, str | bytes] = {
    "billing/invoice.py": PYTHON_BILLING,
    "net/retry.py": PYTHON_NET,
    "web/cart.js": JS_CART,
    **{f"pkg/mod_{i}.py": f"def helper_{i}(value):\n    return value * {i}\n" for i in range(12)},
}
SMALL = 5  # chunks per segment: every few files start a new one


def test_streamed_build_equals_one_segment_build(make_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_repo(FILES)
    streamed = build_index(repo, index_dir=tmp_path / "streamed", segment_chunks=SMALL)
    whole = build_index(repo, index_dir=tmp_path / "whole")
    assert whole.segments == 1 and streamed.segments > 2
    assert (streamed.files, streamed.chunks) == (whole.files, whole.chunks)
    ia, ib = (
        Index(current_generation(tmp_path / "streamed")),
        Index(current_generation(tmp_path / "whole")),
    )
    assert_same_view(ia, ib)
    # Each segment holds files in path order, at least SMALL chunks (the last: the rest), and
    # never more than SMALL plus its last file: that is the collector's memory bound.
    opened = [Segment.open(p) for p in _segments(tmp_path / "streamed")]
    paths = [p for s in opened for p in s.paths]
    assert paths == sorted(paths) == sorted(Segment.open(_segments(tmp_path / "whole")[0]).paths)
    for s in opened[:-1]:
        last_file = int(s.file_rows[-1] - s.file_rows[-2])
        assert SMALL <= s.n_rows < SMALL + last_file
    # Merged, the streamed segments are the one-segment build, byte for byte.
    merge(tmp_path / "streamed", everything=True)
    (a,), (b,) = _segments(tmp_path / "streamed"), _segments(tmp_path / "whole")
    names = sorted(p.name for p in b.iterdir())
    assert names == sorted(p.name for p in a.iterdir())
    for name in names:
        assert filecmp.cmp(a / name, b / name, shallow=False), name


def test_update_of_a_streamed_build_equals_a_full_build(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    repo = make_repo(FILES)
    index_dir = tmp_path / "inc"
    build_index(repo, index_dir=index_dir, segment_chunks=SMALL)
    write_files(repo, {"pkg/mod_3.py": "def helper_three(value):\n    return value + 3\n"})
    (repo / "web" / "cart.js").unlink()
    commit_all(repo, "edit one file, delete another")
    report = update_index(repo, index_dir=index_dir, progress=False)
    assert report.mode == "incremental" and report.chunked_files == 1
    assert_equivalent(repo, index_dir, tmp_path)
    hits = Index(current_generation(index_dir)).search("helper_three")
    assert hits[0].symbol == "helper_three"


def test_segment_size_from_the_environment_and_bad_sizes(
    make_repo: MakeRepo, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    repo = make_repo(FILES)
    monkeypatch.setenv("INDEXER_SEGMENT_CHUNKS", str(SMALL))
    assert build_index(repo, index_dir=tmp_path / "env", progress=False).segments > 2
    for bad in (["--segment-chunks", "0"], []):
        if not bad:
            monkeypatch.setenv("INDEXER_SEGMENT_CHUNKS", "many")
        result = run_cli("build", "--repo", str(repo), "--index-dir", str(tmp_path / "x"), *bad)
        assert result.returncode == 2 and result.stderr.strip().count("\n") == 0, result.stderr
        assert "segment" in result.stderr.lower() or "SEGMENT" in result.stderr
        assert not (tmp_path / "x" / "CURRENT").exists()
    shutil.rmtree(tmp_path / "env")
