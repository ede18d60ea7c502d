"""The dense side: 8-bit codes written with numpy alone, scanned by FAISS at query time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import faiss
import numpy as np
import pytest

from indexer import Index, build_index
from indexer.index import dense
from indexer.index.build import update_index
from indexer.index.dense import CodeScan, DenseIndex, decode, encode
from indexer.index.store import current_generation
from indexer.index.vectors import StaticVectors

from .conftest import PYTHON_BILLING, PYTHON_NET, MakeRepo, commit_all, write_files


def unit_vectors(n: int, dim: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def faiss_sq8(ranges: np.ndarray) -> faiss.IndexScalarQuantizer:
    index = faiss.IndexScalarQuantizer(
        len(ranges), faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
    )
    faiss.copy_array_to_vector(np.concatenate([-ranges, 2 * ranges]), index.sq.trained)
    index.is_trained = True
    return index


def test_codes_are_faiss_scalar_quantizer_codes_bit_for_bit() -> None:
    """numpy's encoding is FAISS QT_8bit's with the same ranges (clipping included), and
    decoding gives FAISS's reconstruction."""
    x = unit_vectors(3000, 64)
    ranges = (np.abs(x).max(axis=0) * 0.8).astype(np.float32)  # some values clip
    reference = faiss_sq8(ranges)
    np.testing.assert_array_equal(encode(x, ranges), reference.sa_encode(x))
    codes = encode(x, ranges)
    np.testing.assert_allclose(decode(codes, ranges), reference.sa_decode(codes), atol=1e-6)


def test_scan_returns_the_exact_nearest_codes() -> None:
    """The FAISS scan over the codes ranks rows exactly as inner products of the decoded
    vectors do, and `DenseIndex` round-trips through its files."""
    x = unit_vectors(5000, 32, seed=1)
    ranges = np.abs(x).max(axis=0).astype(np.float32)
    dense = DenseIndex.build(x, ranges)
    scan = CodeScan(dense.ntotal, ranges, ((slice(a, a + len(c)), c) for a, c in dense.blocks(700)))
    query = unit_vectors(1, 32, seed=2)[0]
    sims, rows = scan.search(query, 50)
    exact = decode(dense.codes, ranges) @ query
    np.testing.assert_array_equal(rows, np.argsort(-exact, kind="stable")[:50])
    np.testing.assert_allclose(sims, exact[rows], rtol=1e-4, atol=1e-5)


def test_saved_codes_load_memory_mapped(tmp_path: Path) -> None:
    x = unit_vectors(100, 16, seed=3)
    ranges = np.abs(x).max(axis=0).astype(np.float32)
    DenseIndex.build(x, ranges).save(tmp_path)
    loaded = DenseIndex.load(tmp_path, 100)
    assert isinstance(loaded.codes, np.memmap)
    np.testing.assert_array_equal(loaded.codes, encode(x, ranges))
    blocks = [c for _, c in loaded.blocks(30)]
    np.testing.assert_array_equal(np.concatenate(blocks), loaded.codes)


def test_writing_a_segment_does_not_import_faiss(tmp_path: Path) -> None:
    """An update's process writes codes with numpy alone (importing FAISS costs ~100 ms)."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "import numpy as np\n"
        "from indexer.index.dense import DenseIndex\n"
        "from indexer.index import writer, update\n"
        "x = np.eye(8, dtype=np.float32)\n"
        "DenseIndex.build(x, np.ones(8, dtype=np.float32)).save(Path(sys.argv[1]))\n"
        "assert 'faiss' not in sys.modules, 'faiss was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)


def test_search_over_segments_equals_the_merged_index(make_repo: MakeRepo, tmp_path: Path) -> None:
    """Several segments (an update, deleted rows) are scanned as one table in row order: the
    same neighbours and similarities as a full build of the same commit."""
    repo = make_repo({"billing.py": PYTHON_BILLING, "docs/notes.md": "# Notes\n\nBilling.\n"})
    build_index(repo, index_dir=tmp_path / "inc", progress=False)
    changed = "def total(items):\n    return sum(items)\n"
    write_files(repo, {"net.py": PYTHON_NET, "billing.py": changed})
    commit_all(repo, "two")
    update_index(repo, index_dir=tmp_path / "inc", progress=False)
    build_index(repo, index_dir=tmp_path / "full", progress=False)
    inc = Index(current_generation(tmp_path / "inc"))
    full = Index(current_generation(tmp_path / "full"))
    assert len(inc.manifest["segments"]) == 2
    table = StaticVectors.load()
    for text in ("open a tcp connection with retries", "invoice total", "sum of items"):
        query = table.embed(text)
        for a, b in zip(inc.dense.search(query, 5), full.dense.search(query, 5), strict=True):
            np.testing.assert_array_equal(a, b)


def test_coarse_scan_ranks_its_candidates_by_the_full_codes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Above COARSE_ROWS, candidates come from the leading dimensions and are ranked by their
    full codes: best first by (similarity, row), the similarities those of the full codes."""
    monkeypatch.setattr(dense, "COARSE_ROWS", 1000)
    x = unit_vectors(4000, 128, seed=4)
    ranges = np.abs(x).max(axis=0).astype(np.float32)
    codes = encode(x, ranges)
    scan = CodeScan(len(codes), ranges, iter([(slice(0, len(codes)), codes)]))
    assert scan.coarse is not None
    query = x[7] + 0.1 * unit_vectors(1, 128, seed=5)[0]
    sims, rows = scan.search(query, 20)
    full = decode(codes, ranges) @ query
    np.testing.assert_allclose(sims, full[rows], rtol=1e-5, atol=1e-6)
    assert list(rows) == sorted(rows.tolist(), key=lambda r: (-full[r], r))
    assert rows[0] == 7  # the query's own vector is found
    exact = np.argsort(-full, kind="stable")[:20]
    assert len(np.intersect1d(rows, exact)) >= 10  # isotropic data: the worst case
    # Asked for as many as the coarse pass would return, the scan is exact.
    sims, rows = scan.search(query, len(codes))
    np.testing.assert_array_equal(np.sort(rows), np.arange(len(codes)))
