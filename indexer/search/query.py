"""Query analysis: what a query asks for, read the way a developer reads it.

A short query is a symbol or a question. An issue-sized one is a report: its paths, dotted names,
`Class.method`, stack-trace frames, code blocks and error lines are the evidence a developer
follows, the prose around them much less. `parse_query` separates the two so that BM25 weighs
salient terms higher, the definition boost and the path match see only names the report
actually writes as code, and the test/doc demotion is switched off only by the report's title.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass, field
from functools import cached_property

from ..index.tokens import STOPWORDS, code_terms, identifiers, stem, text_terms

LONG_QUERY_WORDS = 40  # the same threshold the fusion settings use by default


@dataclass(frozen=True)
class Query:
    text: str
    lexical: list[str]
    dense: list[str]
    identifiers: set[str]  # lowercased identifier-like words
    terms: set[str]  # unstemmed code terms
    symbol_like: bool
    words: int
    # Issue-sized queries: the stemmed BM25 terms and the unstemmed terms of code-like evidence
    # (paths, dotted names, frames, code), and the title's terms.
    salient_lexical: frozenset[str] = frozenset()
    salient: set[str] = field(default_factory=set)
    salient_dense: list[str] = field(default_factory=list)  # the title and the evidence
    title_terms: set[str] = field(default_factory=set)
    title_lexical: list[str] = field(default_factory=list)  # the title's BM25 terms
    paths: tuple[str, ...] = ()
    # Dotted names split into lowercased parts: `std.fs.cwd` may name the module `std/fs`.
    dotted: tuple[tuple[str, ...], ...] = ()

    def kind(self, long_words: int) -> str:
        if self.symbol_like:
            return "symbol"
        return "long" if self.words >= long_words else "natural"

    @property
    def issue_sized(self) -> bool:
        return not self.symbol_like and self.words >= LONG_QUERY_WORDS

    def term_weights(self, salient: float, prose: float) -> dict[str, float]:
        """BM25 weight per query term: code-like evidence `salient`, the rest `prose` (issue-sized
        queries only; others weigh every term 1)."""
        if not self.salient_lexical:
            return {}
        return {t: salient if t in self.salient_lexical else prose for t in set(self.lexical)}

    @property
    def ask_terms(self) -> set[str]:
        """Words that may switch the demotion of tests/docs off: a long report's title only."""
        return self.title_terms if self.issue_sized else self.terms

    @cached_property
    def path_match_terms(self) -> frozenset[str]:
        """The match terms stemmed, plus each pair of adjacent query words joined (a compound
        file stem: "test client" names `testclient.py`)."""
        terms = self.match_terms
        words = self.dense  # code_terms(self.text), as parse_query made them
        joined = {a + b for a, b in itertools.pairwise(words) if a in terms and b in terms}
        return frozenset({*terms, *joined, *(_stem(t) for t in terms | joined)})

    @cached_property
    def compounds(self) -> dict[str, tuple[str, str]]:
        """A file stem written as two adjacent query words ("test client" -> `testclient`, also
        stemmed), mapped to the two words."""
        words = self.dense  # code_terms(self.text): lowercased already
        out: dict[str, tuple[str, str]] = {}
        for a, b in itertools.pairwise(words):
            out[a + b] = out[_stem(a) + _stem(b)] = (a, b)
        return out

    @cached_property
    def path_match_prefixes(self) -> tuple[str, ...]:
        return tuple(t for t in self.match_terms if len(t) >= 6)

    @property
    def match_terms(self) -> set[str]:
        """Terms the path match reads: a long report's title and code-like evidence, else every
        term."""
        if self.issue_sized and self.salient:
            return self.salient | self.title_terms
        return self.terms


# Compiled on first use (`compiled`): a new process searching a short question compiles none
# of a report's patterns (~1 ms of a cold `indexer search`). Flags are inline.
_IDENT_SHAPE = r"[a-z][A-Z]|_|\.|::|\(\)|^[A-Z][a-z]+[A-Z]"
_CODE_SPAN = r"(?s)```.*?```|`[^`\n]+`"
# `File "pkg/mod.py", line 12, in func` (Python), `at pkg.Cls.method(File.java:12)` (JVM),
# `    at fn (pkg/file.js:12:3)` (JS).
_FRAME = r'File "([^"]+)", line \d+, in (\S+)|\bat ([\w$.<>]+)\s*\(([^)\s]*)\)'
_PATH = (
    r"(?<![\w/.-])/?(?:[\w.-]+/)+[\w.-]+\.[A-Za-z]{1,5}\b|\b[\w-]+\.(?:py|pyi|js|ts|"
    r"tsx|jsx|go|rs|java|c|h|cc|cpp|hpp|cs|rb|php|kt|swift|scala|ex|exs|hs|ml)\b"
)
_DOTTED = r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?"
_ERROR_LINE = r"(?m)^\s*(?:\w+\.)*\w*(?:Error|Exception|Warning|Exit)\b.*$"
_INDENTED = r"(?m)^(?: {4,}|\t|>>> |\.\.\. |\$ ).*\S.*$"


@functools.cache
def compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_NOT_DOTTED = frozenset({"e.g", "i.e", "etc", "vs", "a.k.a"})


def salient_text(text: str) -> str:
    """The code-like parts of a report: frames, paths, dotted names, code, error lines."""
    words = text.split()
    return _salient(
        text,
        in_words(_PATH, words),
        in_words(_DOTTED, words),
        compiled(_CODE_SPAN).findall(text),
        shaped_words(words),
    )


def in_words(pattern: str, words: list[str]) -> list[str]:
    """`compiled(pattern).findall(text)` for _PATH or _DOTTED, from the text's
    whitespace-separated words (`text.split()`): their matches hold a dot and no space, and a
    word's edges are a match's edges in the text too (no \\w or path character there). Only
    words with a dot are scanned: the whole text cost 75 + 37 us a 1 KB report."""
    dotted = [w for w in words if "." in w]
    if not dotted:
        return []
    findall = compiled(pattern).findall
    return [m for w in dotted for m in findall(w)]


def shaped_words(words: list[str]) -> list[str]:
    """The identifier-shaped words (_IDENT_SHAPE): a word of letters with no capital after its
    first letter cannot be one, and needs no regex (most of a report's prose)."""
    maybe = [w for w in words if not (w.isalpha() and (w.islower() or w[1:].islower()))]
    if not maybe:
        return []
    search = compiled(_IDENT_SHAPE).search
    return [w for w in maybe if search(w)]


def _salient(
    text: str, paths: list[str], dotted: list[str], spans: list[str], shaped: list[str]
) -> str:
    """salient_text from the matches parse_query has already found."""
    parts: list[str] = []
    for match in compiled(_FRAME).finditer(text):
        parts.extend(g for g in match.groups() if g)
    parts.extend(paths)
    parts.extend(d for d in dotted if d.lower() not in _NOT_DOTTED)
    parts.extend(spans)
    parts.extend(compiled(_ERROR_LINE).findall(text))
    parts.extend(compiled(_INDENTED).findall(text))
    parts.extend(w for w in shaped if not w.startswith("http"))
    return "\n".join(parts)


def _title(text: str) -> str:
    first = text.strip().split("\n", 1)[0]
    return first[:300]


ACRONYM_MAX_WORDS = 12


def _acronyms(words: list[str]) -> set[str]:
    """A short question that spells out an acronym names it: `reciprocal rank fusion` names
    `rrf`. Initials of 3-4 consecutive content words; none for long texts (chance matches)."""
    content = []
    for w in words:
        if w[:1].isalpha() and w.lower() not in STOPWORDS:
            content.append(w)
            if len(content) > ACRONYM_MAX_WORDS:  # a long text: stop counting
                return set()
    initials = "".join(w[0].lower() for w in content)
    return {initials[i : i + n] for n in (3, 4) for i in range(len(initials) - n + 1)}


# A long-lived process's working vocabulary: 65,536 entries grew it by ~2.6 MB over 1,500 queries.
@functools.lru_cache(maxsize=1 << 12)
def _stem(term: str) -> str:
    return stem(term)


def parse_query(text: str) -> Query:
    words = text.split()
    shaped = shaped_words(words)
    symbol_like = (len(words) <= 3 and bool(shaped)) or len(words) == 1
    terms, lexical = text_terms(text)  # code_terms(text), lexical_terms(text): one pass
    dotted = in_words(_DOTTED, words)
    strong: frozenset[str] = frozenset()
    salient_dense: list[str] = []
    salient: set[str] = set()
    title_terms: set[str] = set()
    title_lexical: list[str] = []
    paths: tuple[str, ...] = ()
    if symbol_like:
        idents = identifiers(text)
    else:
        # In prose, a plain word ("rank", "result") naming a symbol is weak evidence: only
        # identifier-shaped words and code spans name symbols.
        spans = compiled(_CODE_SPAN).findall(text)
        code = " ".join(shaped) + " " + " ".join(spans)
        idents = identifiers(code)
        if len(words) >= LONG_QUERY_WORDS:
            found = in_words(_PATH, words)
            evidence = _salient(text, found, dotted, spans, shaped)
            evidence_terms = code_terms(evidence)
            salient = set(evidence_terms)
            # The title says what is wrong in the reporter's words: it weighs like code.
            heading = _title(text)
            title = code_terms(heading)
            strong = frozenset(_stem(t) for t in (*salient, *title))
            title_terms = set(title)
            title_lexical = [_stem(t) for t in title]
            salient_dense = title + evidence_terms  # code_terms(heading + "\n" + evidence)
            paths = tuple(dict.fromkeys(found))
    lowered = {w.lower() for w in idents} | _acronyms(words)
    return Query(
        text=text,
        lexical=lexical,
        dense=terms,
        identifiers=lowered,
        terms=set(terms),
        symbol_like=symbol_like,
        words=len(words),
        salient_lexical=strong,
        salient_dense=salient_dense,
        salient=salient,
        title_terms=title_terms,
        title_lexical=title_lexical,
        paths=paths,
        dotted=tuple(
            dict.fromkeys(
                tuple(d.removesuffix("()").lower().split("."))
                for d in dotted
                if d.lower() not in _NOT_DOTTED
            )
        ),
    )
