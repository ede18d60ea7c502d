"""Nothing forged, nothing damaged is served: shared indexes are checked against git on pull,
local damage is a clean one-line error, and `indexer verify` checks everything."""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import random
import zlib
from pathlib import Path

import numpy as np
import pygit2
import pytest

from indexer import Index
from indexer.errors import CorruptIndexError, IndexerError
from indexer.fresh.share import publish
from indexer.index import integrity
from indexer.index.build import update_index
from indexer.index.integrity import chunk_sums, meta_sum
from indexer.index.segment_format import TEXT_BLOCKS, TEXTS, compress_texts, decompress_texts
from indexer.index.store import current_generation

from .conftest import SAMPLE_FILES, MakeRepo, commit_all, live_segment, run_cli, write_files
from .test_errors import assert_clean_error
from .test_share import _republish_with, clone_with_index


def _published(repo_path: Path, ref: str) -> dict[str, bytes]:
    """manifest.json and, as `segment:<file>`, the files of the one published segment."""
    repo = pygit2.Repository(str(repo_path))
    tree = repo.references[ref].peel(pygit2.Commit).tree
    out = {"manifest.json": bytes(tree["manifest.json"].data)}  # type: ignore[attr-defined]
    (segment,) = list(tree["segments"])  # type: ignore[call-overload]
    for e in repo[segment.id]:  # type: ignore[attr-defined]
        out[f"segment:{e.name}"] = bytes(repo[e.id].data)  # type: ignore[attr-defined]
    return out


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _flip(path: Path, marker: bytes = b"") -> None:
    """Change one byte in the middle of a file (same size: only a checksum notices)."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _forge(published: dict[str, bytes], name: str, old: bytes, new: bytes) -> dict[str, bytes]:
    """What an attacker with push access does: change a file, then fix every checksum."""
    files = {k.split(":", 1)[1]: v for k, v in published.items() if k.startswith("segment:")}
    files["manifest.json"] = published["manifest.json"]
    load = lambda n: np.load(io.BytesIO(forged[n]), allow_pickle=False)  # noqa: E731
    forged = dict(files)
    texts = decompress_texts(forged[TEXTS], load(TEXT_BLOCKS))  # "texts.bin": the plain texts
    if name == "texts.bin":
        assert len(old) == len(new) and old in texts
        texts = texts.replace(old, new)
        n_files = len(forged["file_paths.txt"].decode().split("\n"))
        blocks, forged[TEXTS] = compress_texts(
            texts, load("text_offsets.npy"), load("chunk_file.npy"), n_files
        )
        forged[TEXT_BLOCKS] = _npy(blocks)
    else:
        assert len(old) == len(new) and old in files[name]
        forged[name] = files[name].replace(old, new)
    sums = chunk_sums(
        forged["chunks.jsonl"], load("chunk_offsets.npy"), texts, load("text_offsets.npy")
    )
    forged["chunk_sums.npy"] = _npy(sums)
    lines = forged["chunks.jsonl"].splitlines(keepends=True)
    forged["meta_sums.npy"] = _npy(np.asarray([meta_sum(line) for line in lines], dtype=np.int64))
    segment = json.loads(forged["segment.json"])
    for file_name, info in segment["artifacts"].items():
        info.update(
            bytes=len(forged[file_name]), sha256=hashlib.sha256(forged[file_name]).hexdigest()
        )
    forged["segment.json"] = json.dumps(segment).encode()
    manifest = json.loads(forged["manifest.json"])
    for key, info in manifest["files"].items():
        data = forged[key.split("/", 1)[1]]
        info.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    forged["manifest.json"] = json.dumps(manifest).encode()
    return {n if n == "manifest.json" else f"segment:{n}": data for n, data in forged.items()}


@pytest.mark.parametrize(
    ("name", "old", "new", "why"),
    [
        (
            "texts.bin",
            b"base_delay * 2 ** attempt",
            b"base_delay * 0 ** attempt",
            "not in its file",
        ),
        ("chunks.jsonl", b'"path": "net/retry.py"', b'"path": "net/retrx.py"', "does not belong"),
        ("file_paths.txt", b"net/retry.py", b"net/retrx.py", "not a file of commit"),
        ("chunks.jsonl", b"attempts=5, base_delay", b"attempts=9, base_delay", "signature"),
    ],
)
def test_a_forged_shared_index_is_refused(
    sample_repo: Path, tmp_path: Path, name: str, old: bytes, new: bytes, why: str
) -> None:
    assert run_cli("build", cwd=sample_repo).returncode == 0
    ref = publish(str(sample_repo))["ref"]
    forged = _forge(_published(sample_repo, ref), name, old, new)
    written = (TEXTS, TEXT_BLOCKS) if name == "texts.bin" else (name,)
    sums = ("chunk_sums.npy", "meta_sums.npy", "segment.json")
    changed = tuple(f"segment:{n}" for n in (*written, *sums))
    _republish_with(sample_repo, ref, {n: forged[n] for n in (*changed, "manifest.json")})
    clone = clone_with_index(sample_repo, tmp_path / "clone")
    proc = run_cli("pull", cwd=clone)
    assert_clean_error(proc, "rejected the index published at")
    assert why in proc.stderr and "nothing was adopted" in proc.stderr
    assert not (clone / ".git" / "indexer" / "CURRENT").exists()
    assert "no index" in run_cli("search", "retry", cwd=clone).stderr


def test_a_forged_line_table_is_refused(sample_repo: Path, tmp_path: Path) -> None:
    """A text column's line starts (read instead of scanning the column) must be the column's:
    moved ones would make the ranking read other symbols than those verified."""
    assert run_cli("build", cwd=sample_repo).returncode == 0
    ref = publish(str(sample_repo))["ref"]
    published = _published(sample_repo, ref)
    starts = np.load(io.BytesIO(published["segment:symbols_lines.npy"]), allow_pickle=False)
    old = starts[:3].tobytes()
    moved = starts.copy()
    moved[1] += 1  # the first symbol now ends one byte later, the second starts later
    forged = _forge(published, "symbols_lines.npy", old, moved[:3].tobytes())
    changed = ("segment:symbols_lines.npy", "segment:segment.json")
    _republish_with(sample_repo, ref, {n: forged[n] for n in (*changed, "manifest.json")})
    clone = clone_with_index(sample_repo, tmp_path / "clone")
    proc = run_cli("pull", cwd=clone)
    assert_clean_error(proc, "rejected the index published at")
    assert "line table does not match" in proc.stderr
    assert not (clone / ".git" / "indexer" / "CURRENT").exists()


@pytest.mark.parametrize("forgery", ["foreign symbol", "not zlib"])
def test_forged_graph_facts_are_refused(sample_repo: Path, tmp_path: Path, forgery: str) -> None:
    """Graph facts are stored as one zlib block per file: a block that claims another file's
    chunk as its symbol, or that does not inflate, is refused on pull like any other forgery."""
    assert run_cli("build", cwd=sample_repo).returncode == 0
    ref = publish(str(sample_repo))["ref"]
    published = _published(sample_repo, ref)
    blob = published["segment:graph_facts_z.bin"]
    offsets = np.load(io.BytesIO(published["segment:graph_facts_offsets.npy"])).tolist()
    blocks = [blob[a:b] for a, b in itertools.pairwise(offsets)]
    paths = json.loads(published["segment:graph_facts.json"])["paths"]
    row = next(i for i, b in enumerate(blocks) if b'"symbols":[[' in zlib.decompress(b))
    if forgery == "not zlib":
        blocks[row] = b"\x00" * len(blocks[row])
    else:
        head, _, calls = zlib.decompress(blocks[row]).partition(b"\t")
        facts = json.loads(head)
        records = [json.loads(line) for line in published["segment:chunks.jsonl"].splitlines()]
        stranger = next(r["id"] for r in records if r["path"] != paths[row])
        facts["symbols"][0][5] = [stranger]
        blocks[row] = zlib.compress(json.dumps(facts).encode() + b"\t" + calls)
    published["segment:graph_facts_z.bin"] = b"".join(blocks)
    published["segment:graph_facts_offsets.npy"] = _npy(
        np.cumsum([0, *map(len, blocks)]).astype(np.int64)
    )
    forged = _forge(published, "graph_facts.json", b"{", b"{")  # checksums made to match
    changed = ("graph_facts_z.bin", "graph_facts_offsets.npy", "segment.json")
    _republish_with(
        sample_repo,
        ref,
        {n: forged[n] for n in (*(f"segment:{c}" for c in changed), "manifest.json")},
    )
    clone = clone_with_index(sample_repo, tmp_path / "clone")
    proc = run_cli("pull", cwd=clone)
    assert_clean_error(proc, "rejected the index published at")
    why = "that is no chunk" if forgery == "foreign symbol" else "cannot be inflated"
    assert why in proc.stderr
    assert not (clone / ".git" / "indexer" / "CURRENT").exists()


def test_an_honest_shared_index_is_verified_and_adopted(sample_repo: Path, tmp_path: Path) -> None:
    assert run_cli("build", cwd=sample_repo).returncode == 0
    publish(str(sample_repo))
    clone = clone_with_index(sample_repo, tmp_path / "clone")
    assert run_cli("pull", cwd=clone).returncode == 0
    proc = run_cli("verify", "--json", cwd=clone)
    assert proc.returncode == 0 and json.loads(proc.stdout)["chunks_checked"] > 5


LONG_SIGNATURE = (
    "@decorator\ndef configure(\n"
    + "".join(f"    option_{i}: int = {i},\n" for i in range(150))
    + ") -> int:\n"
    + "".join(f"    total_{i} = option_{i} * 2\n" for i in range(150))
    + "    return 0\n"
)
# A doctest's `...` line deep in a long method lands inside a split piece (sympy's Polyhedron).
DOCTEST_ELLIPSIS = (
    'class Shape:\n    def build(self, corners):\n        """Build it.\n\n'
    + "".join(f"        step {i} of the construction\n" for i in range(150))
    + "        >>> Shape().build([1, 2])  # doctest: +ELLIPSIS\n"
    + "        ...\n"
    + '        """\n        return corners\n'
)
JS_COMMENTED = (
    "function merge(/* obj1, obj2, ... */) {\n  return Object.assign({}, ...arguments);\n}\n"
)


def test_verify_accepts_every_chunk_shape(make_repo: MakeRepo) -> None:
    """Split definitions whose repeated header reaches into a window, class summaries, comments
    inside signatures: real shapes that a too-strict check would call forged."""
    root = make_repo(
        {
            **SAMPLE_FILES,
            "cli/main.py": LONG_SIGNATURE,
            "lib/merge.js": JS_COMMENTED,
            "geometry/shape.py": DOCTEST_ELLIPSIS,
        }
    )
    assert run_cli("build", cwd=root).returncode == 0
    proc = run_cli("verify", "--json", cwd=root)
    assert proc.returncode == 0, proc.stderr
    index = Index.open(root)
    chunks = [index.chunk_at(row) for row in range(len(index))]
    repeated = [c for c in chunks if c.qualname == "configure" and c.start_line > 1]
    assert repeated and all(c.text.startswith("@decorator\ndef configure(") for c in repeated)
    assert any(c.kind == "class" and "    ..." in c.text for c in chunks)  # a class summary
    pieces = [c for c in chunks if c.qualname == "Shape.build" and c.start_line > 2]
    assert any("\n        ...\n" in c.text.partition("\n    ...\n")[2] for c in pieces)


def test_verify_finds_same_size_changes_and_forged_checksums(sample_repo: Path) -> None:
    assert run_cli("build", cwd=sample_repo).returncode == 0
    assert "ok:" in run_cli("verify", cwd=sample_repo).stdout
    snapshot = live_segment(sample_repo)
    texts = snapshot / TEXTS
    original = texts.read_bytes()
    _flip(texts)
    assert_clean_error(run_cli("verify", cwd=sample_repo), "fails its checksum")
    # Served text is checked per chunk, so `show` refuses instead of printing altered code.
    assert_clean_error(run_cli("show", "net/retry.py:5-12", cwd=sample_repo), "indexer build")
    # Someone who also fixes every checksum is caught by the check against git.
    files = {f"segment:{p.name}": p.read_bytes() for p in snapshot.iterdir()}
    files[f"segment:{TEXTS}"] = original
    generation = current_generation(sample_repo / ".git" / "indexer")
    listed = {f"s/{p.name}": {} for p in snapshot.iterdir() if p.name != "segment.json"}
    files["manifest.json"] = json.dumps({"files": listed}).encode()
    forged = _forge(files, "texts.bin", b"base_delay * 2", b"base_delay * 0")
    for file_name, data in forged.items():
        if file_name.startswith("segment:"):
            (snapshot / file_name.split(":", 1)[1]).write_bytes(data)
    assert generation.is_file()
    assert_clean_error(run_cli("verify", cwd=sample_repo), "does not match the repository")


@pytest.mark.parametrize(
    "name",
    [
        "bm25_terms.txt",
        "symbols.txt",
        "file_paths.txt",
        "chunk_fids.npy",
        "chunk_offsets.npy",
        "dense_codes.npy",
        "dense_pq.npy",
        "dense_pq_centroids.npy",
    ],
)
def test_damaged_files_are_one_line_errors(sample_repo: Path, name: str) -> None:
    assert run_cli("build", cwd=sample_repo).returncode == 0
    path = live_segment(sample_repo) / name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size: only a checksum or a decode notices
    path.write_bytes(bytes(data))
    for args in (["search", "retry with backoff"], ["show", "net/retry.py:5-12"], ["status"]):
        proc = run_cli(*args, cwd=sample_repo)
        assert proc.returncode in (0, 2), proc.stderr
        if proc.returncode == 2:
            assert_clean_error(proc, "indexer build")


def _served_text_is_from_the_repository(index: Index) -> None:
    sources = {path: str(text) for path, text in SAMPLE_FILES.items()}
    for query in ("retry with backoff", "InvoiceCalculator", "shopping cart"):
        for result in index.search(query, k=5, log=False):  # records alone (no text) first
            assert result.path in sources
        for result in index.search(query, k=5, with_text=True, log=False):
            assert result.path in sources
            lines = set(sources[result.path].splitlines())
            for line in (result.text or "").splitlines():
                assert line.strip() == "..." or line in lines, (result.path, line)
            chunk = index.show(result.id)
            assert chunk.text == result.text


@pytest.mark.parametrize(
    ("hashed_on_load", "one_shot"),
    [(0, False), (0, True), (integrity.SMALL_FILE_BYTES, False)],
)
def test_fuzzed_artifacts_give_correct_results_or_a_clean_error(
    sample_repo: Path, monkeypatch: pytest.MonkeyPatch, hashed_on_load: int, one_shot: bool
) -> None:
    # With nothing hashed on load, every flip reaches the decoders and the per-chunk sums.
    monkeypatch.setattr(integrity, "SMALL_FILE_BYTES", hashed_on_load)
    assert run_cli("build", cwd=sample_repo).returncode == 0
    snapshot = live_segment(sample_repo)
    generation = current_generation(sample_repo / ".git" / "indexer")
    rng = random.Random(10)
    outcomes = {"clean error": 0, "served": 0}
    for path in sorted(p for p in snapshot.iterdir() if p.is_file()):
        original = path.read_bytes()
        for attempt in range(6):
            data = bytearray(original)
            if attempt == 5 or not data:
                data = data[: rng.randrange(len(data) + 1)]  # truncation
            else:
                lo = 0 if attempt == 0 else len(data) // 2  # headers, then bodies
                for _ in range(1 + attempt % 3):
                    data[rng.randrange(lo, len(data))] ^= 1 << rng.randrange(8)
            path.write_bytes(bytes(data))
            try:
                index = Index(generation)
                index.one_shot = one_shot  # (a CLI's process: records read row by row)
                _served_text_is_from_the_repository(index)
                index.status()
                outcomes["served"] += 1
            except IndexerError as exc:  # a CorruptIndexError: one line, exit 2 in the CLI
                assert "\n" not in str(exc)
                outcomes["clean error"] += 1
            finally:
                path.write_bytes(original)
    assert outcomes["clean error"] > 0
    assert outcomes["served"] > 0 or hashed_on_load


def test_a_merge_never_copies_damaged_rows(sample_repo: Path) -> None:
    assert run_cli("build", cwd=sample_repo).returncode == 0
    write_files(sample_repo, {"later.py": "def later():\n    return 1\n"})
    commit_all(sample_repo, "later")
    assert update_index(sample_repo, progress=False).segments == 2
    _flip(live_segment(sample_repo) / TEXTS)
    before = current_generation(sample_repo / ".git" / "indexer")
    assert_clean_error(run_cli("optimize", cwd=sample_repo), "fails its checksum")
    assert current_generation(sample_repo / ".git" / "indexer") == before
    assert run_cli("build", cwd=sample_repo).returncode == 0  # a full build repairs
    assert run_cli("verify", cwd=sample_repo).returncode == 0


def test_a_decode_error_is_one_line_unless_debugging(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader's TypeError (damage, or a bug in the reader) is a one-line "damaged" error that
    says how to see it; with INDEXER_DEBUG set it is raised as it happened."""

    @integrity.corrupt_as_error
    def read(row: int) -> int:
        return [1, 2, 3][row]  # type: ignore[index]

    monkeypatch.delenv("INDEXER_DEBUG", raising=False)
    with pytest.raises(CorruptIndexError, match=r"damaged \(TypeError\).*INDEXER_DEBUG=1"):
        read("1")  # type: ignore[arg-type]
    monkeypatch.setenv("INDEXER_DEBUG", "1")
    with pytest.raises(TypeError):
        read("1")  # type: ignore[arg-type]
    assert read(2) == 3
