"""Which body lines of a chunk answer a query (for compressed results).

A query term weighs its inverse document frequency in the index (rare terms such as
`scheme` or `external` outweigh common ones such as `url`); stop words and question words
weigh nothing, and the words of the chunk's own name, which its signature already shows, a
quarter. A line scores the summed weight of the distinct query terms it contains (comments
count half: code answers first, and a kept comment brings the code line it describes); the
best lines are kept, in file order, as many as the line and character budget allows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..index.tokens import STOPWORDS, split_identifier, stem

MAX_ANSWER_LINES = 4  # body lines kept besides signature and docstring
MAX_ANSWER_CHARS = 320  # and at most this many characters of them
MIN_RELATIVE_SCORE = 0.34  # a kept line scores at least this fraction of the best line
OWN_NAME_WEIGHT = 0.25
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
            idf = lexical.term_idf(term)
            weight = idf if idf is not None else 0.0
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
    own = _terms(own_name)
    useful = {t: w * OWN_NAME_WEIGHT if t in own else w for t, w in weights.items()}
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
        picks = [i]
        if _COMMENT.match(lines[i]):
            picks += _described_line(lines, i)
        for j in picks:
            size = len(lines[j].strip())
            if j in kept or len(kept) >= max_lines or (kept and chars + size > max_chars):
                continue
            kept.append(j)
            chars += size
    return sorted(kept)


def _described_line(lines: list[str], comment: int) -> list[int]:
    """The code line a comment describes: the next line that is neither blank nor comment."""
    for j in range(comment + 1, min(len(lines), comment + 4)):
        if lines[j].strip() and not _COMMENT.match(lines[j]):
            return [j]
    return []
