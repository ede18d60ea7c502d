"""Token counts with a real BPE tokenizer (offline) and packing results into a token budget.

The tokenizer is bpe-openai's o200k_base (GPT-4o family), shipped inside the wheel. Its package
`__init__` builds every encoding's metadata on import (~0.7 s), so the compiled extension is
loaded directly (~50 ms); the public API is the fallback.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..errors import IndexerError

ENCODING = "o200k_base"
MAX_BUDGET = 100_000
MIN_BUDGET = 20
FULL_TOP = 3  # results that may be sent whole before the rest are compressed


@cache
def _tokenizer() -> Any:
    spec = importlib.util.find_spec("bpe_openai")  # locates the package without running it
    if spec is not None and spec.origin:
        folder = os.path.dirname(spec.origin)
        for name in sorted(os.listdir(folder)):
            if name.startswith("_bindings") and name.endswith((".so", ".pyd")):
                path = os.path.join(folder, name)
                loader = importlib.machinery.ExtensionFileLoader("bpe_openai._bindings", path)
                ext_spec = importlib.util.spec_from_file_location(
                    "bpe_openai._bindings", path, loader=loader
                )
                if ext_spec is None:
                    break
                try:
                    module = importlib.util.module_from_spec(ext_spec)
                    loader.exec_module(module)
                    return module.tokenizer_for_encoding(ENCODING)
                except (ImportError, AttributeError):
                    break
    from bpe_openai import get_encoding

    return get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    """o200k_base tokens of `text` (what an OpenAI-family model is billed for)."""
    if not text:
        return 0
    tok = _tokenizer()
    if hasattr(tok, "count"):
        return int(tok.count(text))
    return len(tok.encode(text))


@dataclass
class Packed:
    """What a budgeted search sends: the rendered text and how each result was included."""

    text: str
    tokens: int
    budget: int
    items: list[dict[str, Any]]  # result record + "form": full | compressed | reference
    omitted: int  # results that did not fit at all

    def to_dict(self) -> dict[str, Any]:
        return {
            "budget": self.budget,
            "tokens": self.tokens,
            "omitted": self.omitted,
            "results": self.items,
            "text": self.text,
        }


def check_budget(budget: int) -> None:
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise IndexerError("the token budget must be an integer")
    if not MIN_BUDGET <= budget <= MAX_BUDGET:
        raise IndexerError(f"the token budget must be between {MIN_BUDGET} and {MAX_BUDGET}")


def pack(
    entries: Sequence[tuple[dict[str, Any], str, str, str]],
    budget: int,
    count: Callable[[str], int] = count_tokens,
    full_top: int = FULL_TOP,
) -> Packed:
    """Greedy packing in rank order. `entries` are (record, full text, compressed text,
    one-line reference) per result. The top `full_top` results go whole when they fit, the
    rest compressed, then as references; the final text is re-counted and trimmed so the
    budget is never exceeded (BPE counts are not exactly additive)."""
    check_budget(budget)
    blocks: list[str] = []
    items: list[dict[str, Any]] = []
    used = 0
    for rank, (record, full, compressed, reference) in enumerate(entries):
        options = []
        if rank < full_top:
            options.append(("full", full))
        options += [("compressed", compressed), ("reference", reference)]
        for form, block in options:
            cost = count(block) + 1  # the newline between blocks
            if used + cost <= budget:
                blocks.append(block)
                items.append({**record, "form": form})
                used += cost
                break
    text = "\n".join(blocks)
    tokens = count(text)
    while blocks and tokens > budget:
        blocks.pop()
        items.pop()
        text = "\n".join(blocks)
        tokens = count(text)
    return Packed(text, tokens, budget, items, len(entries) - len(items))


def budget_search(index: Any, query: str, budget: int, k: int = 10, **filters: Any) -> Packed:
    """Search, then pack the results (full for the top ones, compressed, or references), each
    with its confidence on its first line."""
    from .answers import with_confidence
    from .compress import class_members, compress, full, reference
    from .line_scoring import query_weights

    check_budget(budget)
    results = index.search(query, k=k, log=False, **filters)
    terms = query_weights(query, index.lexical)
    entries = []
    for r in results:
        chunk = index.show(r.id)
        members = class_members(index, chunk) if chunk.kind == "class" else []
        forms = (full(chunk), compress(chunk, terms, members), reference(chunk))
        entries.append((r.to_dict(), *(with_confidence(f, r.confidence) for f in forms)))
    return pack(entries, budget)
