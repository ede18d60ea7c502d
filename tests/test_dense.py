"""The dense side: 8-bit and 4-bit compact codes written with numpy alone; candidates found by
the compact codes (FAISS's fast scan in a long-lived process, numpy in a one-shot one, the
same rows either way) and ranked by the 8-bit codes read from the segment files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import faiss
import numpy as np
import pytest

from indexer import Index, build_index
from indexer.errors import CorruptIndexError, IndexerError
from indexer.index import dense_pq, dense_view, writer
from indexer.index.build import update_index
from indexer.index.code_scan import candidates
from indexer.index.dense import Codec, DenseIndex, decode, encode, similarities
from indexer.index.dense_view import FastScan
from indexer.index.store import current_generation
from indexer.index.vectors import StaticVectors

from .conftest import (
    PYTHON_BILLING,
    PYTHON_NET,
    MakeRepo,
    commit_all,
    live_segment,
    run_cli,
    write_files,
)


def unit_vectors(n: int, dim: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def chunk_like(table: StaticVectors, n: int, seed: int, words: int = 6) -> np.ndarray:
    """Unit vectors made as chunk vectors are: weighted means of a few table rows."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, len(table.scales), (n, words))
    rows = table.vectors[ids.ravel()].astype(np.float32) * table.scales[ids.ravel(), None]
    x = (rows.reshape(n, words, -1) * rng.random((n, words, 1), dtype=np.float32)).sum(axis=1)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def table() -> StaticVectors:
    return StaticVectors.load()


def faiss_sq8(ranges: np.ndarray) -> faiss.IndexScalarQuantizer:
    index = faiss.IndexScalarQuantizer(
        len(ranges), faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
    )
    faiss.copy_array_to_vector(np.concatenate([-ranges, 2 * ranges]), index.sq.trained)
    index.is_trained = True
    return index


def test_codes_are_faiss_scalar_quantizer_codes_bit_for_bit() -> None:
    """numpy's encoding is FAISS QT_8bit's with the same ranges (clipping included), decoding
    gives FAISS's reconstruction, and the similarities are FAISS's scan's."""
    x = unit_vectors(3000, 64)
    ranges = (np.abs(x).max(axis=0) * 0.8).astype(np.float32)  # some values clip
    reference = faiss_sq8(ranges)
    np.testing.assert_array_equal(encode(x, ranges), reference.sa_encode(x))
    codes = encode(x, ranges)
    np.testing.assert_allclose(decode(codes, ranges), reference.sa_decode(codes), atol=1e-6)
    reference.add(x)
    query = unit_vectors(1, 64, seed=9)
    sims, rows = reference.search(query, 3000)
    np.testing.assert_allclose(similarities(codes, ranges, query)[rows[0]], sims[0], atol=1e-5)


def test_compact_codes_are_the_nearest_centroids(table: StaticVectors) -> None:
    """The compact code of a row is the nearest centroid of each group of its decoded vector
    (a float64 brute force and FAISS's ProductQuantizer agree), whatever the rows it is
    encoded with: an update encodes a file's rows alone, a full build with thousands."""
    x = chunk_like(table, 4000, seed=1)
    ranges = table.quantizer_ranges()
    assert table.pq_centroids is not None
    centroids = table.pq_centroids
    codes = encode(x, ranges)
    packed = dense_pq.encode(codes, ranges, centroids)
    assert packed.shape == (table.dim // 8, len(x)) and packed.dtype == np.uint8

    order = dense_pq.subspace_order(table.dim)
    grouped = decode(codes, ranges)[:, order].astype(np.float64).reshape(len(x), -1, 1, 4)
    nearest = ((grouped - centroids.astype(np.float64)[None]) ** 2).sum(axis=3).argmin(axis=2)
    np.testing.assert_array_equal(packed[:, :].T, nearest[:, 0::2] | (nearest[:, 1::2] << 4))

    pq = faiss.ProductQuantizer(table.dim, table.dim // 4, 4)
    faiss.copy_array_to_vector(centroids.ravel(), pq.centroids)
    reference = pq.compute_codes(np.ascontiguousarray(decode(codes, ranges)[:, order]))
    assert (reference != packed.T).mean() < 1e-4  # float32 near-ties at most

    pieces = [dense_pq.encode(codes[a : a + 37], ranges, centroids) for a in range(0, 4000, 37)]
    np.testing.assert_array_equal(np.concatenate(pieces, axis=1), packed)


def test_compact_scores_are_quantized_inner_products_with_the_centroids(
    table: StaticVectors,
) -> None:
    """A row's score is the sum of its groups' levels: the query's inner product with the
    centroids its code names (what FAISS's IndexPQ computes) to within the quantization, and
    it does not depend on which other rows are scored."""
    assert table.pq_centroids is not None
    x = chunk_like(table, 500, seed=2)
    packed = dense_pq.encode(
        encode(x, table.quantizer_ranges()), table.quantizer_ranges(), table.pq_centroids
    )
    query = chunk_like(table, 1, seed=3)[0]
    tables = dense_pq.tables(query, table.pq_centroids)
    scores = dense_pq.scores(packed, tables.lut)
    assert scores.dtype == np.uint16 and scores.max() <= 255 * len(tables.levels)
    expected = dense_pq.decode(packed, table.pq_centroids) @ query
    # each group's level is its value rounded: half a level each at most
    limit = 0.5 * len(tables.levels) / tables.scale + 1e-5
    bias = float(tables.least.astype(np.float64).sum())
    assert np.abs(bias + scores / tables.scale - expected).max() <= limit
    some = np.array([7, 3, 499, 3])
    np.testing.assert_array_equal(dense_pq.scores(packed[:, some], tables.lut), scores[some])


def test_query_levels_are_faiss_quantized_lookup_tables(table: StaticVectors) -> None:
    """The levels are the lookup table FAISS's fast scan quantizes from the same inner products
    (the long-lived process reads its scores back from FAISS's distances)."""
    assert table.pq_centroids is not None
    groups = table.pq_centroids.shape[0]
    fast = FastScan(0, table.pq_centroids, iter(()))
    for query in chunk_like(table, 20, seed=9):
        tables = dense_pq.tables(query, table.pq_centroids)
        faiss.copy_array_to_vector(tables.groups.ravel(), fast.index.pq.centroids)
        lut = np.zeros(fast.index.M2 * 16, dtype=np.uint8)
        bounds = np.zeros(2, dtype=np.float32)
        ones = np.ones((1, groups), dtype=np.float32)
        pointers = (1, faiss.swig_ptr(ones), faiss.swig_ptr(lut), faiss.swig_ptr(bounds))
        if hasattr(faiss, "FastScanDistancePostProcessing"):  # newer FAISS: a context argument too
            fast.index.compute_quantized_LUT(*pointers, faiss.FastScanDistancePostProcessing())
        else:
            fast.index.compute_quantized_LUT(*pointers)
        np.testing.assert_array_equal(lut[: groups * 16].reshape(groups, 16), tables.levels)
        bias = np.cumsum(tables.least)[-1]  # float32, group after group, as FAISS adds them
        assert bounds.tolist() == [tables.scale, float(bias)]


def test_top_breaks_ties_by_row() -> None:
    values = np.array([1.0, 3.0, 2.0, 3.0, 2.0, 2.0], dtype=np.float32)
    rows = np.array([10, 11, 15, 9, 12, 14])
    kept, kept_rows = dense_pq.top(values, rows, 3)
    pairs = sorted(zip(kept_rows.tolist(), kept.tolist(), strict=True))
    assert pairs == [(9, 3.0), (11, 3.0), (12, 2.0)]


@pytest.mark.parametrize("count", [1, 7, 1200, 19_999])
def test_top_of_many_scores_counts_them_and_keeps_the_same_rows(count: int) -> None:
    # compact-code scores of 20k rows (a histogram picks the cut), many tied, rows shuffled
    rng = np.random.default_rng(count)
    values = rng.integers(0, 40, 20_000).astype(np.uint16)
    rows = rng.permutation(20_000).astype(np.int64)
    kept, kept_rows = dense_pq.top(values, rows, count)
    # the reference: every (value, -row) pair ordered, the first `count` taken
    best = sorted(zip(values.tolist(), (-rows).tolist(), strict=True), reverse=True)[:count]
    assert sorted(zip(kept.tolist(), (-kept_rows).tolist(), strict=True), reverse=True) == best


def test_saved_codes_load_memory_mapped_and_read_by_rows(
    tmp_path: Path, table: StaticVectors
) -> None:
    x = chunk_like(table, 3000, seed=4)
    codec = Codec(table.quantizer_ranges(), table.pq_centroids)
    built = DenseIndex.build(x, codec)
    built.save(tmp_path)
    loaded = DenseIndex.load(tmp_path, 3000)
    assert isinstance(loaded.compact, np.memmap)
    # the codes: a plain array over the map (no np.memmap subclass steps per gather)
    assert type(loaded.codes) is np.ndarray and isinstance(loaded._mapped, np.memmap)
    assert np.shares_memory(loaded.codes, loaded._mapped)
    np.testing.assert_array_equal(loaded.codes, built.codes)
    for size in (3000, 1024, 7):  # the blocks a long-lived process copies, read from the file
        blocks = list(loaded.compact_blocks(size))
        assert [start for start, _ in blocks] == list(range(0, 3000, size))
        np.testing.assert_array_equal(np.hstack([b for _, b in blocks]), built.compact)
    rows = np.sort(np.random.default_rng(5).choice(3000, 700))  # runs, gaps, duplicates
    for some in (rows, rows[:1], rows[-5:], np.arange(3000)):
        np.testing.assert_array_equal(loaded.rows(some), built.codes[some])
    np.testing.assert_array_equal(
        loaded.reconstruct(rows[::-1]), decode(built.codes[rows[::-1]], codec.ranges)
    )
    with pytest.raises(IndexerError, match="damaged"):
        _ = DenseIndex.load(tmp_path, 2999).codes
    # a file cut after it was opened: a clean error, not short codes
    compact_file = loaded.compact.filename
    with open(compact_file, "r+b") as fh:
        fh.truncate(fh.seek(0, 2) - 100)
    with pytest.raises(CorruptIndexError, match="truncated"):
        list(loaded.compact_blocks(1024))


def test_a_merge_copies_codes_that_encoding_their_vectors_would_give_back(
    tmp_path: Path, table: StaticVectors
) -> None:
    """A merge copies a stored segment's 8-bit and compact codes where the codec is the same:
    every code value of every dimension decodes (fp16, as stored vectors are) and encodes back
    to itself. Rows of a segment with another codec are decoded and encoded again."""
    codec = Codec(table.quantizer_ranges(), table.pq_centroids)
    every = np.repeat(np.arange(256, dtype=np.uint8)[:, None], len(codec.ranges), axis=1)
    codes = np.concatenate([every, DenseIndex.build(chunk_like(table, 500, seed=7), codec).codes])
    vectors = decode(codes, codec.ranges).astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(encode(vectors, codec.ranges), codes)
    stored = DenseIndex.of_codes(codes, codec)
    stored.save(tmp_path)
    loaded = DenseIndex.load(tmp_path, len(codes))

    parts = writer._Parts()
    parts.vectors = [writer.StoredRows(loaded, 3, 300), vectors[300:].astype(np.float16)]
    merged = writer._dense(parts, table, len(codes) - 3, codec)
    np.testing.assert_array_equal(merged.codes, codes[3:])
    np.testing.assert_array_equal(merged.compact, stored.compact[:, 3:])  # type: ignore[index]

    other = Codec(codec.ranges * np.float32(1.5), codec.centroids)  # another table's ranges
    parts.vectors = [writer.StoredRows(loaded, 0, len(codes))]
    again = writer._dense(parts, table, len(codes), other)
    expected = DenseIndex.of_codes(encode(vectors, other.ranges), other)
    np.testing.assert_array_equal(again.codes, expected.codes)
    np.testing.assert_array_equal(again.compact, expected.compact)  # type: ignore[arg-type]


def test_writing_a_segment_does_not_import_faiss(tmp_path: Path) -> None:
    """An update's process writes both codes with numpy alone (importing FAISS costs ~100 ms)."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "import numpy as np\n"
        "from indexer.index.dense import Codec, DenseIndex\n"
        "from indexer.index.vectors import StaticVectors\n"
        "from indexer.index import writer, update\n"
        "t = StaticVectors.load()\n"
        "x = np.eye(t.dim, dtype=np.float32)\n"
        "DenseIndex.build(x, Codec(t.quantizer_ranges(), t.pq_centroids)).save(Path(sys.argv[1]))\n"
        "assert 'faiss' not in sys.modules, 'faiss was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)


def test_fast_scan_and_numpy_scan_choose_the_same_candidates(table: StaticVectors) -> None:
    """The long-lived process's candidates (FAISS fast scan, its scores read back) are the
    one-shot numpy scan's, and ranked by their 8-bit codes they hold nearly all of the exact
    top rows."""
    assert table.pq_centroids is not None
    n, count, k = 40000, 1000, 200
    x = chunk_like(table, n, seed=6)
    codec = Codec(table.quantizer_ranges(), table.pq_centroids)
    dense = DenseIndex.build(x, codec)
    assert dense.compact is not None
    halves = [
        (slice(0, 12345), dense.compact[:, :12345]),
        (slice(12345, n), dense.compact[:, 12345:]),
    ]
    fast = FastScan(n, codec.centroids, iter(halves))
    recall = []
    for query in chunk_like(table, 12, seed=7):
        tables = dense_pq.tables(query, table.pq_centroids)
        mine = candidates([(dense, 0)], tables.lut, count)
        assert len(mine) == count
        whole = dense_pq.scores(dense.compact, tables.lut)
        assert set(mine.tolist()) == set(dense_pq.top(whole, np.arange(n), count)[1].tolist())
        found = fast.candidates(tables, count)
        assert found is not None
        np.testing.assert_array_equal(np.sort(found), np.sort(mine))
        exact = similarities(dense.codes, codec.ranges, query)
        best = mine[np.argsort(-exact[mine], kind="stable")[:k]]
        recall.append(len(np.intersect1d(best, np.argsort(-exact, kind="stable")[:k])) / k)
    assert np.mean(recall) > 0.8, recall  # random bags of words: harder than real chunks


def test_fast_scan_asks_again_when_ties_run_past_its_margin(table: StaticVectors) -> None:
    """Rows tied with the last candidate, more than FAISS was asked for beyond the count: the
    candidates are still the lowest tied rows, as the numpy scan picks them; with every row
    tied FAISS cannot tell them, and says so (the view then scores every row)."""
    assert table.pq_centroids is not None
    codec = Codec(table.quantizer_ranges(), table.pq_centroids)
    distinct = DenseIndex.build(chunk_like(table, 40, seed=10), codec).compact
    assert distinct is not None
    for codes, copies in ((distinct, 300), (distinct[:, :1], 5000)):
        compact = np.repeat(codes, copies, axis=1)  # each code `copies` times in a row
        n = compact.shape[1]
        fast = FastScan(n, codec.centroids, iter([(slice(0, n), compact)]))
        for query in chunk_like(table, 4, seed=11):
            tables = dense_pq.tables(query, table.pq_centroids)
            found = fast.candidates(tables, 1000)
            if copies == 5000:
                assert found is None
                continue
            whole = dense_pq.scores(compact, tables.lut)
            expected = np.sort(dense_pq.top(whole, np.arange(n), 1000)[1])
            assert found is not None
            np.testing.assert_array_equal(np.sort(found), expected)


def test_a_view_scores_every_row_where_fast_scan_cannot_tell(
    make_repo: MakeRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where FAISS's top rows cannot decide the candidates (here: fewer rows than FAISS would be
    asked for beyond them), a long-lived index scores every row of the segments' codes, as a
    one-shot process does: the same candidates, the same results."""
    monkeypatch.setenv("INDEXER_DENSE_CANDIDATES", "1")  # 400 candidates
    build_index(make_repo(many_functions(files=54)), index_dir=tmp_path / "idx", progress=False)
    served = Index(current_generation(tmp_path / "idx"))
    shot = Index(current_generation(tmp_path / "idx"))
    shot.one_shot = True
    assert 400 < len(served) <= 400 + dense_view.CANDIDATE_MARGIN
    for text in ("parse the configuration", "open a connection with retries"):
        query = served.vectors.embed(text)
        tables = dense_pq.tables(query, served.dense.codec.centroids)
        assert served.dense._fast.candidates(tables, 400) is None  # FAISS cannot tell
        np.testing.assert_array_equal(
            np.concatenate(served.dense.search(query, 400)),
            np.concatenate(shot.dense.search(query, 400)),
        )
        assert [r.to_dict() for r in served.search(text)] == [
            r.to_dict() for r in shot.search(text)
        ]
    assert "_fast" not in shot.dense.__dict__


def many_functions(files: int = 40, per_file: int = 8) -> dict[str, str | bytes]:
    """A repository of a few hundred chunks with varied words."""
    words = json.loads(
        (Path(__file__).resolve().parents[1] / "artifacts/static_vectors/vocab.json").read_text()
    )
    words = [w for w in words[:6000] if w.isalpha() and w.isascii()]
    rng = np.random.default_rng(8)
    out: dict[str, str | bytes] = {}
    for f in range(files):
        body = []
        for i in range(per_file):
            a, b, *doc = rng.choice(words, 8).tolist()
            body.append(f'def {a}_{b}_{i}(value):\n    """{" ".join(doc)}."""\n    return value\n')
        out[f"pkg/mod_{f:02d}.py"] = "\n\n".join(body)
    return out


def test_candidates_search_over_segments_equals_a_full_build(
    make_repo: MakeRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With fewer candidates than rows (the compact codes choose), an update's segments give
    the neighbours and similarities of a full build, the similarities are the 8-bit codes'
    own, and a one-shot process gives what the long-lived one does."""
    monkeypatch.setenv("INDEXER_DENSE_CANDIDATES", "2")
    repo = make_repo(many_functions())
    build_index(repo, index_dir=tmp_path / "inc", progress=False)
    write_files(
        repo, {"pkg/mod_03.py": "def total(items):\n    return sum(items)\n", "net.py": PYTHON_NET}
    )
    commit_all(repo, "two")
    update_index(repo, index_dir=tmp_path / "inc", progress=False)
    build_index(repo, index_dir=tmp_path / "full", progress=False)
    inc = Index(current_generation(tmp_path / "inc"))
    full = Index(current_generation(tmp_path / "full"))
    shot = Index(current_generation(tmp_path / "inc"))
    shot.one_shot = True  # as the CLI opens it: the numpy scan
    assert len(inc.manifest["segments"]) == 2 and len(full) > 4 * 10
    for text in ("open a tcp connection with retries", "sum of items", "value returned"):
        query = inc.vectors.embed(text)
        sims, rows = full.dense.search(query, 10)
        for other in (inc, shot):
            for a, b in zip(other.dense.search(query, 10), (sims, rows), strict=True):
                np.testing.assert_array_equal(a, b)
        (segment,) = full.space.segments
        exact = similarities(np.asarray(segment.dense.codes), full.dense.ranges, query)
        np.testing.assert_array_equal(sims, exact[rows])
        assert list(rows) == sorted(rows.tolist(), key=lambda r: (-exact[r], r))
    assert "faiss" in sys.modules and "_fast" not in shot.dense.__dict__


def _jumbled(n: int) -> np.ndarray:
    """Rows 0..n-1 out of order (as a reconstruct asks), the first and the last in place."""
    rows = np.arange(n, dtype=np.int64)
    rows[1:-1] = rows[-2:0:-1]
    return rows


def test_a_long_lived_process_keeps_no_codes_resident(
    make_repo: MakeRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long-lived process reads its candidates' 8-bit codes through the segments' maps a
    window of rows at a time and drops each window's pages once read, or, above
    $INDEXER_MAPPED_CODES_MB of codes, with pread: the same neighbours and similarities either
    way, and neither keeps the codes resident after a search."""
    monkeypatch.setenv("INDEXER_DENSE_CANDIDATES", "2")
    # several windows in a small index, and rows across two of them (read on their own)
    monkeypatch.setattr(dense_view, "_WINDOW_BYTES", 64 * 256)
    monkeypatch.setattr(dense_view, "_RESIDENT_BYTES", 0)  # (small codes stay mapped: below)
    repo = make_repo(many_functions())
    build_index(repo, index_dir=tmp_path / "idx", progress=False)
    mapped = Index(current_generation(tmp_path / "idx"))
    texts = ("open a tcp connection with retries", "sum of items", "value returned")
    queries = [mapped.vectors.embed(text) for text in texts]
    expected = [mapped.dense.search(query, 10) for query in queries]
    monkeypatch.setenv("INDEXER_MAPPED_CODES_MB", "0")
    read = Index(current_generation(tmp_path / "idx"))
    for query, (sims, rows) in zip(queries, expected, strict=True):
        got_sims, got_rows = read.dense.search(query, 10)
        np.testing.assert_array_equal(got_sims, sims)
        np.testing.assert_array_equal(got_rows, rows)
    assert "_fast" in read.dense.__dict__  # the long-lived scan, not the one-shot one
    every = np.arange(len(mapped), dtype=np.int64)  # rows across windows included
    assert len(every) > 4 * 64
    np.testing.assert_array_equal(mapped.dense._codes(every), read.dense._codes(every))
    jumbled = _jumbled(len(mapped))  # each row lands in its own place
    np.testing.assert_array_equal(mapped.dense._codes(jumbled), read.dense._codes(every)[jumbled])
    if Path("/proc/self/smaps").exists():
        assert [resident_kb(s.dense.codes) for s in read.space.segments] == [0]
        codes = mapped.space.segments[0].dense.codes
        assert resident_kb(codes) == 0
        codes.take([0], axis=0)  # a read through the map stays resident...
        assert resident_kb(codes) > 0
        mapped.dense.search(queries[0], 10)
        assert resident_kb(codes) == 0  # ...until a search has read its rows through it


def test_small_codes_stay_mapped_with_the_same_neighbours(
    make_repo: MakeRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Up to _RESIDENT_BYTES of 8-bit codes in all, a long-lived process keeps the pages its
    searches read (no window dropped, none faulted back): the neighbours and similarities of
    a process that drops them, and of a one-shot one."""
    repo = make_repo(many_functions())
    build_index(repo, index_dir=tmp_path / "idx", progress=False)
    kept = Index(current_generation(tmp_path / "idx"))
    monkeypatch.setattr(dense_view, "_RESIDENT_BYTES", 0)
    dropped = Index(current_generation(tmp_path / "idx"))
    shot = Index(current_generation(tmp_path / "idx"))
    shot.one_shot = True
    texts = ("open a tcp connection with retries", "sum of items", "value returned")
    for text in texts:
        query = kept.vectors.embed(text)
        monkeypatch.setattr(dense_view, "_RESIDENT_BYTES", 16 << 20)
        sims, rows = kept.dense.search(query, 10)
        monkeypatch.setattr(dense_view, "_RESIDENT_BYTES", 0)
        for other in (dropped, shot):
            got_sims, got_rows = other.dense.search(query, 10)
            np.testing.assert_array_equal(got_sims, sims)
            np.testing.assert_array_equal(got_rows, rows)
    every = np.arange(len(kept), dtype=np.int64)
    jumbled = _jumbled(len(kept))
    monkeypatch.setattr(dense_view, "_RESIDENT_BYTES", 16 << 20)
    np.testing.assert_array_equal(kept.dense._codes(jumbled), shot.dense._codes(every)[jumbled])
    if Path("/proc/self/smaps").exists():
        assert resident_kb(kept.space.segments[0].dense.codes) > 0
        assert resident_kb(dropped.space.segments[0].dense.codes) == 0
        # a one-shot process reads its rows through the map too, advised for random reads
        # (smaps flag `rr`: a row read from disk reads its page, not the 128 KB around it)
        assert "rr" in _smaps_field(shot.space.segments[0].dense.codes, "VmFlags:").split()
        assert "rr" not in _smaps_field(kept.space.segments[0].dense.codes, "VmFlags:").split()


def test_bad_dense_settings_are_one_line_errors(
    make_repo: MakeRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dense setting that is not a number stops a search with one line naming it (exit 2),
    in the CLI and in the API; the index stays usable once it is fixed."""
    repo = make_repo({"billing.py": PYTHON_BILLING})
    build_index(repo, index_dir=tmp_path / "idx", progress=False)
    search = ("search", "tax rate", "--repo", str(repo), "--index-dir", str(tmp_path / "idx"))
    for value in ("three", "0", "1.5"):
        monkeypatch.setenv("INDEXER_DENSE_CANDIDATES", value)
        result = run_cli(*search)
        assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
        assert "INDEXER_DENSE_CANDIDATES" in result.stderr and "Traceback" not in result.stderr
    monkeypatch.delenv("INDEXER_DENSE_CANDIDATES")
    monkeypatch.setenv("INDEXER_MAPPED_CODES_MB", "lots")
    index = Index(current_generation(tmp_path / "idx"))
    with pytest.raises(IndexerError, match="INDEXER_MAPPED_CODES_MB must be a number"):
        index.search("tax rate")
    monkeypatch.setenv("INDEXER_MAPPED_CODES_MB", "0.5")
    assert index.search("tax rate")[0].path == "billing.py"
    assert run_cli(*search).returncode == 0


def resident_kb(array: np.ndarray) -> int:
    """Resident kB of the memory mapping that holds `array` (/proc/self/smaps)."""
    return int(_smaps_field(array, "Rss:").split()[0])


def _smaps_field(array: np.ndarray, field: str) -> str:
    """The value of `field` for the memory mapping that holds `array` (/proc/self/smaps)."""
    address, inside = array.ctypes.data, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split(" ", 1)[0]
        if "-" in head and all(c in "0123456789abcdef-" for c in head):
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo <= address < hi
        elif inside and line.startswith(field):
            return line[len(field) :].strip()
    raise AssertionError("no mapping holds the array")


@pytest.mark.skipif(
    not Path("/sys/kernel/mm/transparent_hugepage/enabled").exists(),
    reason="no transparent huge pages on this system",
)
def test_the_codes_are_mapped_for_huge_pages(make_repo: MakeRepo, tmp_path: Path) -> None:
    """A long-lived process maps each segment's 8-bit codes with MADV_HUGEPAGE (smaps flag
    `hg`) and reads them back from disk in 2 MB folios, mapped by one fault each; the answers
    are a one-shot process's. The other maps keep the kernel's default (a 2 MB fault for
    a vocabulary lookup would keep 2 MB resident), nor a one-shot process's (advised for
    random reads)."""
    repo = make_repo(many_functions())
    build_index(repo, index_dir=tmp_path / "idx", progress=False)
    index = Index(current_generation(tmp_path / "idx"))
    query = index.vectors.embed("open a tcp connection with retries")
    sims, rows = index.dense.search(query, 10)
    assert len(rows) == 10
    one_shot = Index(current_generation(tmp_path / "idx"))
    one_shot.one_shot = True
    got_sims, got_rows = one_shot.dense.search(query, 10)
    np.testing.assert_array_equal(got_rows, rows)
    np.testing.assert_array_equal(got_sims, sims)
    segment = index.space.segments[0]
    assert "hg" in _smaps_field(segment.dense.codes, "VmFlags:").split()
    assert "hg" not in _smaps_field(segment.postings[0], "VmFlags:").split()
    assert "hg" not in _smaps_field(one_shot.space.segments[0].dense.codes, "VmFlags:").split()


def test_search_over_segments_equals_the_merged_index(make_repo: MakeRepo, tmp_path: Path) -> None:
    """Several segments (an update, deleted rows), every row a candidate: the same neighbours
    and similarities as a full build of the same commit."""
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


def test_a_table_without_centroids_builds_nothing_and_scans_exactly_in_memory(
    make_repo: MakeRepo, tmp_path: Path, table: StaticVectors
) -> None:
    bare = StaticVectors(table.vocab, table.vectors, table.scales, table.weights, table.card)
    bare.save(tmp_path / "bare")
    assert not (tmp_path / "bare" / dense_pq.CENTROIDS_FILE).exists()
    repo = make_repo({"billing.py": PYTHON_BILLING})
    env = {"INDEXER_VECTORS": str(tmp_path / "bare")}
    done = subprocess.run(
        [sys.executable, "-m", "indexer", "build"],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )
    assert done.returncode == 2 and "train_dense_codebook" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    exact = DenseIndex.build(chunk_like(table, 50, seed=9), Codec(table.quantizer_ranges(), None))
    assert exact.compact is None and exact.codec().centroids is None


def test_a_format_4_index_asks_for_a_rebuild(sample_repo: Path) -> None:
    """A segment written before the compact codes (format 4) is refused with how to rebuild."""
    assert run_cli("build", cwd=sample_repo).returncode == 0
    segment = live_segment(sample_repo)
    manifest = json.loads((segment / "segment.json").read_text())
    manifest["format"] = 4
    for name in ("dense_pq.npy", "dense_pq_centroids.npy"):
        del manifest["artifacts"][name]
        (segment / name).unlink()
    (segment / "segment.json").write_text(json.dumps(manifest))
    done = run_cli("search", "invoice", cwd=sample_repo)
    assert (
        done.returncode == 2 and "indexer build" in done.stderr and "Traceback" not in done.stderr
    )
    assert run_cli("build", cwd=sample_repo).returncode == 0
    assert run_cli("search", "format_money", cwd=sample_repo).returncode == 0
