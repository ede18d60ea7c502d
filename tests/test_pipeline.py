"""The build's one-pass worker gives exactly what chunking, tokenising twice, embedding and the
graph's own extraction give file by file."""

from __future__ import annotations

import json
import zlib
from collections import Counter
from pathlib import Path

import numpy as np
import pygit2
from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.index.graph.extract import extract_file
from indexer.index.graph.facts import encode_facts
from indexer.index.pipeline import BuildContext, index_batch
from indexer.index.segment_format import TEXT_LEVEL
from indexer.index.tokens import (
    STOPWORDS,
    code_terms,
    iter_words,
    lexical_terms,
    path_terms,
    split_identifier,
    stem,
    text_counts,
    text_terms,
)
from indexer.index.vectors import StaticVectors, default_table_dir
from indexer.source.chunker import chunk_file
from indexer.source.gitsource import list_tree, resolve_commit
from indexer.source.secrets import redact

from .conftest import MakeRepo

FILES: dict[str, str | bytes] = {
    "billing/invoice.py": "class InvoiceCalculator:\n    def total(self, lines):\n"
    "        return sum(line.amount for line in lines)\n\nTAX_RATE = 0.2\n",
    "web/cartView.js": "export function addToCart(cart, item) {\n  return cart.push(item);\n}\n",
    "docs/README.md": "# Storefront\n\nParsing HTTPResponse objects, retrying connections.\n",
    "config/settings.json": '{"retryCount": 3, "baseURL": "https://example.com"}\n',
    "keys/settings.py": 'API_TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"\n',
    "assets/blob.txt": b"\x00\x01binary\x00" * 50,
}


def _reference_code_terms(text: str) -> list[str]:
    """code_terms as it was written before the build tokenised once (word by word)."""
    from indexer.index.tokens import iter_words

    out: list[str] = []
    for word in iter_words(text):
        parts = split_identifier(word)
        lower = word.lower().strip("_")
        if len(parts) > 1 and lower:
            out.append(lower)
        for part in parts:
            if part not in STOPWORDS and (len(part) > 1 or part.isdigit()):
                out.append(part)
        if len(parts) == 1 and parts[0] != lower and lower and lower not in STOPWORDS:
            out.append(lower)
    return out


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([*"aAbZz_09 .-\n(", "ing", "sed", "HTTP", "The", "x" * 70])).map(
        "".join
    )
)
def test_one_pass_terms_equal_the_two_passes(text: str) -> None:
    dense, lexical = text_terms(text)
    assert dense == code_terms(text) == _reference_code_terms(text)
    assert lexical == lexical_terms(text) == [stem(t) for t in _reference_code_terms(text)]


@given(st.lists(st.sampled_from([*"aZ_09 .-\n(é", "ǅ", "x" * 70])).map("".join))
def test_words_are_the_runs_of_the_three_word_shapes(text: str) -> None:
    """The tokeniser's one-class word pattern finds what identifier | digits + identifier |
    digits found (ASCII only: `é` splits a word as before)."""
    import re

    three = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
    assert list(iter_words(text)) == [w for w in three.findall(text) if len(w) <= 64]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from([*"aAbZz_09 .-\n(", "ing", "sed", "HTTP", "The", "fooBar", "x" * 70])
    ).map("".join)
)
def test_terms_counted_per_word_equal_the_counted_term_lists(text: str) -> None:
    """Postings and embeddings depend on the counts and on their order (first seen), both
    exactly those of the term lists counted."""
    dense, lexical = text_counts(text)
    assert list(dense.items()) == list(Counter(code_terms(text)).items())
    assert list(lexical.items()) == list(Counter(lexical_terms(text)).items())


def test_worker_results_equal_the_stages_run_one_by_one(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    root = make_repo(FILES)
    repo = pygit2.Repository(str(root))
    listing = list_tree(repo, resolve_commit(repo, None))
    assert not listing.skipped
    items = [(f.path, f.blob, f.language or "text") for f in listing.files]
    assert sorted(p for p, _, _ in items) == sorted(FILES)
    context = BuildContext(repo.path, str(default_table_dir()))
    table = StaticVectors.load(default_table_dir())
    for _ in range(2):  # a worker process runs many batches: its caches change nothing
        results = index_batch(context, items)
        assert [r.path for r in results if r.skip_reason] == ["assets/blob.txt"]
        assert [r.redacted for r in results if r.redacted] == [{"github_token": 1}]
        for result, (path, blob, language) in zip(results, items, strict=True):
            if result.skip_reason:
                continue
            data = bytes(repo[blob].data)
            chunks = chunk_file(path, language, blob, redact(data)[0])
            lines = [c.to_dict() for c in chunks]
            for line in lines:
                line.pop("text")
            expected_meta = b"".join(
                json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in lines
            )
            assert zlib.decompress(result.meta_z) == expected_meta
            texts = b"".join(c.text.encode() for c in chunks)
            assert result.texts_z == zlib.compress(texts, TEXT_LEVEL)  # the segment's block
            assert result.text_lengths.tolist() == [len(c.text.encode()) for c in chunks]
            path_lexical = [stem(t) for t in path_terms(path)]
            lexical = [
                lexical_terms(c.text) + lexical_terms(f"{c.qualname} {c.symbol}") * 2 + path_lexical
                for c in chunks
            ]
            posting_chunks = np.repeat(np.arange(len(chunks)), result.term_counts)
            got = Counter(
                (int(i), result.terms[j], float(tf))
                for i, j, tf in zip(
                    posting_chunks, result.posting_terms, result.posting_tfs, strict=True
                )
            )
            want = Counter(
                (i, t, float(n)) for i, doc in enumerate(lexical) for t, n in Counter(doc).items()
            )
            assert got == want
            assert result.doc_lengths.tolist() == [float(len(d)) for d in lexical]
            dense = [
                code_terms(c.text) + code_terms(f"{c.qualname} {c.symbol}") * 2 + path_terms(path)
                for c in chunks
            ]
            assert result.vectors is not None
            assert np.array_equal(result.vectors, table.embed_many(dense).astype(np.float16))
            facts = extract_file(path, language, data, chunks)
            assert result.graph is not None
            facts.blob = blob
            want_facts = encode_facts(facts)
            assert (result.graph.path, result.graph.language) == (path, facts.language)
            assert result.graph.line == want_facts.line  # the stored zlib block
            assert result.graph.keys.tolist() == want_facts.keys.tolist()
            assert result.graph.kinds.tolist() == want_facts.kinds.tolist()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["def", "total", "invoice", "cart", "zzz_unknown", "line"])),
        max_size=6,
    )
)
def test_a_document_embeds_the_same_alone_and_among_a_files_chunks(docs: list[list[str]]) -> None:
    """A file's chunks are embedded together in a build and one at a time in an update: each
    row must be a function of its own terms only, and the embedding's weighted mean."""
    table = StaticVectors.load(default_table_dir())
    together = table.embed_many(docs)
    assert together.shape == (len(docs), table.dim)
    for row, doc in zip(together, docs, strict=True):
        assert np.array_equal(row, table.embed_many([doc])[0])
        np.testing.assert_allclose(row, table.embed_terms(doc), atol=1e-6)
