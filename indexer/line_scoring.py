"""Which body lines of a chunk answer a query (for compressed results).

A query term weighs its inverse document frequency in the index (rare terms such as
`scheme` or `external` outweigh common ones such as `url`); stop words and question words
weigh nothing, and neither do the words of the chunk's own name, which its signature already
shows. A line scores the summed weight of the distinct query terms it contains (comments
count half: code answers first); the best lines are kept, in file order, as many as the line
and character budget allows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .tokens import STOPWORDS, split_identifier, stem

MAX_ANSWER_LINES = 4  # body lines kept besides signature and docstring
MAX_ANSWER_CHARS = 320  # and at most this many characters of them
MIN_RELATIVE_SCORE = 0.34  # a kept line scores at least this fraction of the best line
QUESTION_WORDS = frozenset(
    {
        "how",
        "what",
        "which",
        "why",
        "when",
        "where",
        "who",
        "does",
        "doing",
        "with",
        "without",
        "for",
        "use",
        "used",
        "uses",
        "using",
        "get",
        "gets",
        "set",
        "sets",
        "find",
        "make",
        "happen",
        "happens",
        "handle",
        "handled",
        "work",
        "works",
        "code",
        "function",
        "method",
        "implemented",
        "implementation",
        "should",
        "would",
        "there",
        "any",
        "all",
        "some",
    }
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_COMMENT = re.compile(r"^\s*(#|//|/\*|\*|--|;)")
_OUTCOME = re.compile(r"^\s*(return|raise|throw|yield|panic\(|assert)\b")


def _terms(text: str) -> set[str]:
    out: set[str] = set()
    for word in _WORD.findall(text):
        lower = word.lower().strip("_")
        if lower:
            out.add(stem(lower))
        out.update(stem(p) for p in split_identifier(word))
    return out


def query_weights(query: str, lexical: Any = None) -> dict[str, float]:
    """Stemmed query term -> weight (idf in `lexical` when given, else 1)."""
    weights: dict[str, float] = {}
    for term in _terms(query):
        if len(term) < 2 or term in STOPWORDS or term in QUESTION_WORDS:
            continue
        weight = 1.0
        if lexical is not None:
            term_id = lexical.term_id(term)
            weight = float(lexical.idf[term_id]) if term_id is not None else 0.0
        if weight > 0:
            weights[term] = weight
    return weights


def answer_lines(
    lines: list[str],
    start: int,
    weights: Mapping[str, float],
    own_name: str = "",
    max_lines: int = MAX_ANSWER_LINES,
    max_chars: int = MAX_ANSWER_CHARS,
) -> list[int]:
    """Indices (into `lines`, from `start`) of the lines that answer best, in file order."""
    useful = {t: w for t, w in weights.items() if t not in _terms(own_name)} or dict(weights)
    scored: list[tuple[float, int]] = []
    for i in range(start, len(lines)):
        stripped = lines[i].strip()
        if not stripped or stripped in ("...", "}", "{", ")", "end"):
            continue
        score = sum(w for t, w in useful.items() if t in _terms(lines[i]))
        if score <= 0:
            continue
        if _COMMENT.match(lines[i]):
            score *= 0.5
        elif _OUTCOME.match(lines[i]):
            score *= 1.1  # among equals, outcomes first
        scored.append((score, i))
    scored.sort(key=lambda s: (-s[0], s[1]))
    kept: list[int] = []
    chars = 0
    best = scored[0][0] if scored else 0.0
    for score, i in scored:
        if len(kept) >= max_lines or score < MIN_RELATIVE_SCORE * best:
            break
        if kept and chars + len(lines[i].strip()) > max_chars:
            continue
        kept.append(i)
        chars += len(lines[i].strip())
    return sorted(kept)
