"""Reading .npy files: numpy's own plain headers without np.load's parser, anything else by
np.load, never a pickle."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from indexer.index import npy

ARRAYS = {
    "float32": np.arange(7, dtype=np.float32),
    "int64 2-d": np.arange(12, dtype=np.int64).reshape(3, 4),
    "uint8": np.arange(256, dtype=np.uint8),
    "bool": np.array([True, False, True]),
    "empty": np.zeros(0, dtype=np.int32),
    "empty 2-d": np.zeros((0, 5), dtype=np.uint16),
    "scalar": np.array(2.5),
    "big-endian": np.arange(3, dtype=">i4"),
    "fortran": np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3)),
    "unicode": np.array(["a", "bc"]),
}


@pytest.mark.parametrize("name", list(ARRAYS))
@pytest.mark.parametrize("mmap_mode", ["r", None])
def test_every_array_reads_as_np_load_reads_it(
    tmp_path: Path, name: str, mmap_mode: str | None
) -> None:
    path = tmp_path / "a.npy"
    np.save(path, ARRAYS[name])
    mine = npy.load(path, mmap_mode)  # type: ignore[arg-type]
    theirs = np.load(path, mmap_mode=mmap_mode, allow_pickle=False)  # type: ignore[call-overload]
    assert type(mine) is type(theirs)
    assert mine.dtype == theirs.dtype and mine.shape == theirs.shape
    np.testing.assert_array_equal(mine, theirs)
    if isinstance(theirs, np.memmap):  # pread of postings needs the file and the offset
        assert (mine.filename, mine.offset) == (theirs.filename, theirs.offset)


def test_plain_headers_take_the_fast_path_and_others_do_not(tmp_path: Path) -> None:
    taken = {}
    for name, array in ARRAYS.items():
        path = tmp_path / f"{len(taken)}.npy"
        np.save(path, array)
        taken[name] = npy._load_plain(path, "r") is not None
    assert [n for n, fast in taken.items() if not fast] == ["big-endian", "fortran", "unicode"]


def test_a_pickled_array_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "objects.npy"
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="pickle"):
        npy.load(path)


@pytest.mark.parametrize("mmap_mode", ["r", None])
def test_a_truncated_file_is_an_error(tmp_path: Path, mmap_mode: str | None) -> None:
    path = tmp_path / "short.npy"
    np.save(path, np.arange(1000, dtype=np.int64))
    path.write_bytes(path.read_bytes()[:-8])
    with pytest.raises(ValueError):
        npy.load(path, mmap_mode)  # type: ignore[arg-type]
