"""Code-aware tokenization shared by the lexical and the dense retrievers.

Identifiers are split at snake_case, kebab-case, camelCase/PascalCase and digit boundaries;
the whole identifier is kept next to its parts, everything is lowercased, and BM25 terms
get a light stemmer.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from itertools import chain

from ..caches import ClearingCache

# An identifier-like run: letters, digits, underscores (kebab-case is split by the regex itself).
# It was three alternatives (identifier, digits + identifier, digits); their union is every
# maximal run of these characters, which one class finds ~35 % faster.
_WORD = re.compile(r"[A-Za-z0-9_]+")
# Boundaries inside one identifier: lower→Upper, ACRONYMWord, letter↔digit.
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)

_MAX_WORD = 64


def split_identifier(word: str) -> list[str]:
    """`parseHTTPResponse_v2` → ['parse', 'http', 'response', 'v', '2']."""
    return list(_split_cached(word))


def split_parts(word: str) -> tuple[str, ...]:
    """`split_identifier` uncached (a value met once)."""
    return _split(word)


def _split(word: str) -> tuple[str, ...]:
    parts: list[str] = []
    for piece in word.split("_"):
        if piece:
            parts.extend(p.lower() for p in _PART.findall(piece))
    return tuple(parts)


def iter_words(text: str) -> Iterator[str]:
    for match in _WORD.finditer(text):
        word = match.group()
        if len(word) <= _MAX_WORD:
            yield word


def _terms_of(word: str) -> tuple[str, ...]:
    """The code terms one word contributes (cached: a build meets few distinct words)."""
    if len(word) > _MAX_WORD:
        return ()
    out: list[str] = []
    parts = _split(word)  # this result is cached: caching the split too would double memory
    lower = word.lower().strip("_")
    if len(parts) > 1 and lower:
        out.append(lower)
    for part in parts:
        if part not in STOPWORDS and (len(part) > 1 or part.isdigit()):
            out.append(part)
    if len(parts) == 1 and parts[0] != lower and lower and lower not in STOPWORDS:
        out.append(lower)
    return tuple(out)


# A long-lived search process splits its candidates' symbols query after query (the ranking
# and the answers; a build splits with _split, uncached): bounded, where an lru_cache of 131k
# entries held 5 MB after 355 queries at 163k chunks and would have grown to ~45 MB.
_split_cached = ClearingCache(_split).__getitem__
_WORD_TERMS = ClearingCache(_terms_of)
_word_terms = _WORD_TERMS.__getitem__
_WORD_LEXICAL = ClearingCache(lambda word: tuple(stem(t) for t in _word_terms(word)))
_word_lexical = _WORD_LEXICAL.__getitem__


def _both_of(word: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    code = _terms_of(word)
    return code, tuple(stem(t) for t in code)


# A build's tokeniser (`text_counts`): both term tuples of a word from one lookup (64k entries
# measured no faster than 16k in a worker).
_word_both = ClearingCache(_both_of)


def bound_query_caches(entries: int) -> None:
    """A long-lived search process's caches of query words hold at most `entries` words each:
    queries bring new words without end (reports: ~8.6k distinct words in 700 varied queries,
    2.3 MB). The symbols' split cache keeps its size: identifier queries split hundreds of
    candidates' symbols each (4,096 entries made them ~18 % slower)."""
    _WORD_TERMS.entries = _WORD_LEXICAL.entries = entries


def code_terms(text: str) -> list[str]:
    """Lowercased identifier parts plus whole compound identifiers, minus stopwords (unstemmed)."""
    return list(chain.from_iterable(map(_word_terms, _WORD.findall(text))))


def text_terms(text: str) -> tuple[list[str], list[str]]:
    """(code terms, lexical terms) of a text in one pass: equal to `code_terms(text)` and
    `lexical_terms(text)`, without tokenising twice."""
    words = _WORD.findall(text)
    return (
        list(chain.from_iterable(map(_word_terms, words))),
        list(chain.from_iterable(map(_word_lexical, words))),
    )


def text_counts(text: str) -> tuple[dict[str, int], dict[str, int]]:
    """(code term counts, lexical term counts) of a text: `Counter(code_terms(text))` and
    `Counter(lexical_terms(text))`, the same terms in the same (first-seen) order, counted per
    distinct word: a text repeats its words, so a build expands each word once per chunk."""
    code: dict[str, int] = {}
    lexical: dict[str, int] = {}
    both = _word_both
    for word, n in Counter(_WORD.findall(text)).items():
        # a term's first word is the first word that holds it: the lists' first-seen order
        word_code, word_lexical = both[word]
        for term in word_code:
            code[term] = code.get(term, 0) + n
        for term in word_lexical:
            lexical[term] = lexical.get(term, 0) + n
    return code, lexical


def add_counts(into: dict[str, int], counts: dict[str, int], times: int = 1) -> None:
    """`into` += `times` x `counts`, new terms appended in `counts`' order (Counter's `update`
    of the concatenated lists)."""
    for term, n in counts.items():
        into[term] = into.get(term, 0) + times * n


def plus_terms(counts: dict[str, int], terms: Iterable[str]) -> dict[str, int]:
    """A copy of `counts` that counts `terms` too, new ones appended in their order."""
    out = dict(counts)
    for term in terms:
        out[term] = out.get(term, 0) + 1
    return out


def stem(term: str) -> str:
    """A deliberately light English stemmer: plural and common verb endings, final e.

    Heavier stemmers (Porter) conflate identifiers that mean different things in code.
    `parse`, `parses`, `parsed`, `parsing` all become `pars`.
    """
    if len(term) <= 3 or not term.isalpha():
        return term
    if term.endswith("ies") and len(term) > 4:
        term = term[:-3] + "y"
    elif term.endswith(("sses", "xes", "ches", "shes")):
        term = term[:-2]
    elif term.endswith("s") and not term.endswith(("ss", "us", "is")):
        term = term[:-1]
    elif term.endswith("ing") and len(term) > 5:
        term = _undouble(term[:-3])
    elif term.endswith("ed") and len(term) > 4 and not term.endswith("eed"):
        term = _undouble(term[:-2])
    if term.endswith("e") and len(term) > 3:
        term = term[:-1]
    return term


def _undouble(term: str) -> str:
    if len(term) > 2 and term[-1] == term[-2] and term[-1] not in "lsz":
        return term[:-1]
    return term


def lexical_terms(text: str) -> list[str]:
    """Terms for BM25: code terms, stemmed."""
    return list(chain.from_iterable(map(_word_lexical, _WORD.findall(text))))


def path_terms(path: str) -> list[str]:
    """Terms of a repository path: `security/oauth2.py` → security, oauth2, oauth, 2, py."""
    return code_terms(path.replace("/", " ").replace(".", " ").replace("-", " "))


def identifiers(text: str) -> list[str]:
    """Identifier-looking words of a query (snake_case, camelCase, dotted parts, or any word)."""
    return [w for w in iter_words(text) if not w.isdigit()]


def dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
