"""Tree-sitter helpers shared by the per-language extractors."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cache
from typing import Any

from ...source.specs import SPECS
from .model import FileGraph


def matches(query: Any, node: Any) -> list[dict[str, list[Any]]]:
    from tree_sitter import QueryCursor

    return [m for _, m in QueryCursor(query).matches(node)]


def matches_by_child(query: Any, node: Any) -> Iterator[dict[str, list[Any]]]:
    """The matches of `query` under `node`, one top-level child at a time, in order: a huge
    generated file never holds all its matches (Python objects per captured node) at once.
    For patterns that match inside one statement (calls, imports, class bases)."""
    from tree_sitter import QueryCursor

    cursor = QueryCursor(query)
    for child in node.children:
        for _, m in cursor.matches(child):
            yield m


def text(node: Any, data: bytes) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", errors="replace")


@cache
def query(language: str, pattern: str) -> Any:
    from tree_sitter import Query
    from tree_sitter_language_pack import get_language

    return Query(get_language(SPECS[language].grammar), pattern)  # type: ignore[arg-type]


def string_value(node: Any, data: bytes) -> str:
    return text(node, data).strip("'\"`")


def descendants(node: Any, types: tuple[str, ...], depth: int) -> Iterable[Any]:
    """Nodes of the given types within `depth` levels (imports sit at or near the top)."""
    for child in node.named_children:
        if child.type in types:
            yield child
        elif depth > 0 and child.named_child_count:
            yield from descendants(child, types, depth - 1)


def all_of_types(node: Any, types: tuple[str, ...], depth: int = 6) -> Iterable[Any]:
    """Definitions nest in few levels (module > namespace > class); bodies are not searched."""
    for child in node.named_children:
        if child.type in types:
            yield child
            body = child.child_by_field_name("body")
            if body is not None and depth > 0:
                yield from all_of_types(body, types, depth - 1)
        elif depth > 0 and child.type not in ("statement_block", "block", "function_body"):
            yield from all_of_types(child, types, depth - 1)


def class_at(fg: FileGraph, owner: list[str], name_node: Any, data: bytes) -> str:
    """The qualname of the class whose name is `name_node`."""
    line = name_node.start_point[0] + 1
    name = text(name_node, data)
    for sym in fg.symbols:
        if sym[2] == "class" and sym[1].rsplit(".", 1)[-1] == name and sym[3] <= line <= sym[4]:
            return str(sym[1])
    return owner[line] if line < len(owner) else ""
