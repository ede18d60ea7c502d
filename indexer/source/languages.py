"""Which files are which language: a tree-sitter grammar, a text format, or plain text.

Every text file is indexed: a file whose name matches nothing here is chunked as plain text
windows ("text"); only known binary formats are left out by name (binary content is caught later
by `gitsource.content_skip_reason`). Secret-looking files are deliberately not named here.
"""

from __future__ import annotations

from functools import cache

from .filetypes import (
    BINARY_EXTENSIONS,
    EXTENSIONS,
    GRAMMAR_EXTENSIONS,
    GRAMMAR_FILENAMES,
    TEXT_EXTENSIONS,
    TEXT_FILENAMES,
    UNUSED_GRAMMARS,
)

__all__ = [
    "PLAIN_TEXT",
    "UNUSED_GRAMMARS",
    "detect_language",
    "grammar_of",
    "is_code",
    "pack_grammars",
]

# Plain-text fallback: any other name. Ranked like documentation (indexer/source/pathclass.py).
PLAIN_TEXT = "text"


def detect_language(path: str) -> str | None:
    """Language of a path: a tree-sitter language, a text format, plain text, or None for a
    known binary format."""
    # As PurePosixPath's name and suffix for a git path, without the object: the reranker asks
    # for every candidate file, and pathlib interns each part of each path it parses.
    name = path.rpartition("/")[2]
    if name in GRAMMAR_FILENAMES:
        return GRAMMAR_FILENAMES[name]
    if name in TEXT_FILENAMES:
        return TEXT_FILENAMES[name]
    dot = name.rfind(".")
    suffix = name[dot:].lower() if 0 < dot < len(name) - 1 else ""
    if suffix in BINARY_EXTENSIONS:
        return None
    known = EXTENSIONS.get(suffix) or GRAMMAR_EXTENSIONS.get(suffix) or TEXT_EXTENSIONS.get(suffix)
    if known:
        return known
    if name.startswith("Dockerfile") or name.endswith(".dockerfile"):
        return "dockerfile"
    return PLAIN_TEXT


@cache
def pack_grammars() -> frozenset[str]:
    """Every grammar tree-sitter-language-pack ships."""
    import typing

    from tree_sitter_language_pack import SupportedLanguage

    return frozenset(typing.get_args(SupportedLanguage))


def grammar_of(language: str) -> str | None:
    """The grammar that parses `language`, or None for text formats."""
    from .specs import SPECS  # the chunker's specs: a search process never needs them

    spec = SPECS.get(language)
    if spec is not None:
        return spec.grammar
    if language in GRAMMAR_LANGUAGES:
        return language
    return None


def is_code(language: str) -> bool:
    return grammar_of(language) is not None


GRAMMAR_LANGUAGES = frozenset(GRAMMAR_EXTENSIONS.values()) | frozenset(GRAMMAR_FILENAMES.values())
