"""Query analysis: what a query asks for, read the way a developer reads it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .tokens import code_terms, identifiers, lexical_terms


@dataclass(frozen=True)
class Query:
    text: str
    lexical: list[str]
    dense: list[str]
    identifiers: set[str]  # lowercased identifier-like words
    terms: set[str]  # unstemmed code terms
    symbol_like: bool
    words: int

    def kind(self, long_words: int) -> str:
        if self.symbol_like:
            return "symbol"
        return "long" if self.words >= long_words else "natural"


_IDENT_SHAPE = re.compile(r"[a-z][A-Z]|_|\.|::|\(\)|^[A-Z][a-z]+[A-Z]")


_CODE_SPAN = re.compile(r"```.*?```|`[^`\n]+`", re.DOTALL)


def parse_query(text: str) -> Query:
    words = text.split()
    shaped = [w for w in words if _IDENT_SHAPE.search(w)]
    symbol_like = (len(words) <= 3 and bool(shaped)) or len(words) == 1
    if symbol_like:
        idents = identifiers(text)
    else:
        # In prose, a plain word ("rank", "result") naming a symbol is weak evidence: only
        # identifier-shaped words and code spans name symbols.
        code = " ".join(shaped) + " " + " ".join(_CODE_SPAN.findall(text))
        idents = identifiers(code)
    lowered = {w.lower() for w in idents}
    return Query(
        text=text,
        lexical=lexical_terms(text),
        dense=code_terms(text),
        identifiers=lowered,
        terms=set(code_terms(text)),
        symbol_like=symbol_like,
        words=len(words),
    )
