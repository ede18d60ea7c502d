"""Turn a format-2 snapshot (one directory per commit) into a one-segment format-3 index.

    python benchmarks/convert_v2.py SNAPSHOT_DIR INDEX_DIR

For benchmarks on corpora whose full build takes long on a shared machine: the chunks, texts,
postings, vectors and graph facts of a snapshot made by the same chunker version are exactly
what a full build writes into a segment (only the BM25 scores are recomputed, and texts are
compressed). Refuses a snapshot of another chunker version.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from indexer.index.dense import DenseIndex  # noqa: E402
from indexer.index.generation_summary import summary  # noqa: E402
from indexer.index.integrity import meta_sum  # noqa: E402
from indexer.index.segment_data import SegmentData  # noqa: E402
from indexer.index.segment_postings import own_scores  # noqa: E402
from indexer.index.store import SegmentWriter, new_name, publish_generation  # noqa: E402
from indexer.source.chunker import CHUNKER_VERSION  # noqa: E402


def convert(snapshot: Path, index_dir: Path) -> Path:
    manifest = json.loads((snapshot / "manifest.json").read_text())
    if manifest["chunker_version"] != CHUNKER_VERSION:
        raise SystemExit("the snapshot was made by another chunker version: build instead")
    files = json.loads((snapshot / "files.json").read_text())
    columns = json.loads((snapshot / "columns.json").read_text())
    vocab = json.loads((snapshot / "bm25_vocab.json").read_text())["terms"]

    def load(name: str) -> np.ndarray:
        array: np.ndarray = np.load(snapshot / name, allow_pickle=False)
        return array

    indptr, docs = load("bm25_indptr.npy"), load("bm25_docs.npy").astype(np.int32)
    tfs = np.minimum(load("bm25_tfs.npy"), 65535).astype(np.uint16)
    lengths = load("bm25_doclen.npy").astype(np.float32)
    facts = json.loads((snapshot / "graph_files.json").read_text())
    data = SegmentData(
        paths=[f["path"] for f in files],
        blobs=[f["blob"] for f in files],
        languages=[f.get("language", "text") for f in files],
        times=np.asarray([f["time"] for f in files], dtype=np.int64),
        extras={
            f["path"]: {k: f[k] for k in ("redacted", "fallback") if f.get(k)}
            for f in files
            if f.get("redacted") or f.get("fallback")
        },
        chunk_file=load("chunk_file.npy"),
        flags=load("chunk_flags.npy"),
        fids=load("chunk_fids.npy"),
        sums=load("chunk_sums.npy"),
        meta_sums=np.asarray(
            [meta_sum(line) for line in (snapshot / "chunks.jsonl").read_bytes().splitlines(True)],
            dtype=np.int64,
        ),
        meta=(snapshot / "chunks.jsonl").read_bytes(),
        meta_offsets=load("chunk_offsets.npy"),
        texts=(snapshot / "texts.bin").read_bytes(),
        text_offsets=load("text_offsets.npy"),
        symbols=columns["symbols"],
        kinds=columns["kinds"],
        defines=columns["defines"],
        terms=vocab,
        indptr=indptr,
        docs=docs,
        tfs=tfs,
        doc_lengths=lengths,
        scores=own_scores(indptr, docs, tfs, lengths),
        dense=old_dense(snapshot),
        graph_facts=facts,
    )
    writer = SegmentWriter(index_dir)
    data.save(writer.path)
    name = new_name(manifest["commit"])
    writer.finish(name)
    entries = [{"name": name, "deleted": []}]
    skipped = json.loads((snapshot / "skipped.json").read_text())
    keep = ("commit", "commit_time", "chunker_version", "repo_root", "vectors")
    generation = {k: manifest[k] for k in keep if k in manifest}
    return publish_generation(
        index_dir, {**generation, "segments": entries, **summary(index_dir, entries, skipped)}
    )


def old_dense(snapshot: Path) -> DenseIndex:
    """The vectors of a v1 snapshot's FAISS file as v4 codes (the same codes)."""
    import faiss

    index = faiss.read_index(str(snapshot / "dense.faiss"))
    inner = faiss.downcast_index(index.index)
    trained = faiss.vector_to_array(inner.sq.trained)
    codes = faiss.vector_to_array(inner.codes).reshape(index.ntotal, -1)
    return DenseIndex(codes, np.asarray(-trained[: inner.d], dtype=np.float32))


if __name__ == "__main__":
    print(convert(Path(sys.argv[1]), Path(sys.argv[2])))
