"""Reading tree-sitter nodes: names, signatures, doc comments, and the definition record that
the hand-written specs (indexer/source/chunker.py) and the generic extractor
(indexer/source/generic.py) share."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from .specs import LanguageSpec

MAX_SIGNATURE_CHARS = 300
MAX_DOCSTRING_CHARS = 600


@cache
def parser(grammar: str) -> Any:
    from tree_sitter_language_pack import get_parser

    return get_parser(grammar)  # type: ignore[arg-type]


@dataclass
class Definition:
    kind: str
    name: str
    qualname: str
    start_byte: int  # including wrappers and leading doc comments
    end_byte: int
    start_line: int  # 0-based
    end_line: int
    sig_end_line: int  # last line of the signature (0-based)
    signature: str
    docstring: str
    body: Any  # tree-sitter node of the body, or None
    members: list[Definition]


def qualify(name: str, scope: list[str]) -> tuple[str, str, str]:
    """(qualified name, qualname within `scope`, symbol): `C::method` (C++), `M.h` / `M:i`
    (Lua) qualify with dots, and the symbol is the last part."""
    qualified = re.sub(r"::|:(?=\w)", ".", name)
    return qualified, ".".join([*scope, qualified]), qualified.rsplit(".", 1)[-1] or qualified


def line_span(start_node: Any, end_node: Any) -> tuple[int, int]:
    """0-based first and last line from `start_node` to `end_node` (a node that ends at the start
    of a line does not own that line)."""
    start_line = int(start_node.start_point[0])
    end_line = int(end_node.end_point[0])
    if end_node.end_point[1] == 0 and end_line > start_line:
        end_line -= 1
    return start_line, end_line


NAME_TYPES = (
    "identifier",
    "field_identifier",
    "type_identifier",
    "property_identifier",
    "constant",
    "name",
    "word",
    "simple_identifier",
    "namespace_identifier",
    "IDENTIFIER",
    "qualified_identifier",
    "destructor_name",
    "operator_name",
    "private_property_identifier",
    "scoped_identifier",
    "dot_index_expression",
    "method_index_expression",
)


def node_text(node: Any, data: bytes) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", errors="replace")


def node_name(node: Any, data: bytes) -> str:
    name = node.child_by_field_name("name")
    if name is None and node.type == "impl_item":  # rust: impl<T> Trait for Type<T>
        name = node.child_by_field_name("type")
    if name is not None:
        return clean_name(node_text(name, data))
    # C/C++: the name hides in the declarator chain.
    decl = node.child_by_field_name("declarator")
    depth = 0
    while decl is not None and depth < 8:
        if decl.type in NAME_TYPES:
            return clean_name(node_text(decl, data))
        inner = decl.child_by_field_name("declarator")
        if inner is None:
            inner = next((c for c in decl.named_children if c.type in NAME_TYPES), None)
        decl = inner
        depth += 1
    for child in node.named_children:
        if child.type in ("variable_declarator", "type_spec", "FnProto", "VarDecl"):
            return node_name(child, data)
        if child.type in NAME_TYPES:
            return clean_name(node_text(child, data))
        if child.type in ("user_type", "string", "STRINGLITERALSINGLE"):
            return clean_name(node_text(child, data).strip("\"'"))
    return ""


def clean_name(name: str) -> str:
    name = " ".join(name.split())
    if "<" in name and not name.startswith("operator"):
        name = name.split("<", 1)[0]  # generics: RingBuffer<T> -> RingBuffer
    return name[:120]


def go_receiver(node: Any, data: bytes) -> str:
    receiver = node.child_by_field_name("receiver")
    if receiver is None:
        return ""
    match = re.search(
        r"([A-Za-z_][A-Za-z0-9_]*)\s*(\[[^\]]*\])?\s*\)\s*$", node_text(receiver, data)
    )
    return match.group(1) if match else ""


def signature_end_line(node: Any, body: Any) -> int:
    """Last line of a definition's header: the line with `{` when the body opens on it,
    else the line before the body (Python's block starts at its first statement)."""
    if body is None:
        return int(node.start_point[0])
    header = body.prev_sibling
    header_end = int(header.end_point[0]) if header is not None else int(node.start_point[0])
    body_start = int(body.start_point[0])
    return body_start if body_start == header_end else min(header_end, body_start)


def signature_of(node: Any, body: Any, data: bytes) -> str:
    end = body.start_byte if body is not None and body.start_byte > node.start_byte else None
    if end is None:
        text = node_text(node, data).split("\n", 1)[0]
    else:
        text = data[node.start_byte : end].decode("utf-8", errors="replace")
    text = " ".join(text.split()).rstrip("{:= ").strip()
    return text[:MAX_SIGNATURE_CHARS]


_COMMENT_MARKERS = re.compile(r"^\s*(/\*\*?|\*/|\*|///?|#+|--|;+)\s?", re.MULTILINE)


def docstring_of(spec: LanguageSpec, body: Any, comments: list[Any], data: bytes) -> str:
    if spec.python_docstrings:
        if body is None or not body.named_children:
            return ""
        first = body.named_children[0]
        if first.type == "expression_statement" and first.named_children:
            first = first.named_children[0]
        if first.type != "string":
            return ""
        raw = node_text(first, data)
        raw = re.sub(r'^[rRbBuUfF]*("""|\'\'\'|"|\')', "", raw)
        raw = re.sub(r'("""|\'\'\'|"|\')$', "", raw)
        return squeeze(raw)
    return comment_docstring(comments, data)


def comment_docstring(comments: list[Any], data: bytes) -> str:
    """The text of the comments just above a definition, without comment markers."""
    if not comments:
        return ""
    raw = "\n".join(node_text(c, data) for c in comments)
    raw = _COMMENT_MARKERS.sub("", raw).replace("*/", "")
    return squeeze(raw)


def squeeze(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines()]
    out = "\n".join(line for line in lines if line)
    return out[:MAX_DOCSTRING_CHARS]


def zig_classify(node: Any) -> tuple[str | None, Any]:
    if node.type == "TestDecl":
        return "function", None
    if node.type != "Decl":
        return None, None
    children = {c.type: c for c in node.named_children}
    if "FnProto" in children:
        return "function", children.get("Block")
    var = children.get("VarDecl")
    container = _find_type(var, "ContainerDecl", 4) if var is not None else None
    if container is not None:
        return "class", container
    return None, None


def _find_type(node: Any, node_type: str, depth: int) -> Any:
    if node.type == node_type:
        return node
    if depth == 0:
        return None
    for child in node.named_children:
        found = _find_type(child, node_type, depth - 1)
        if found is not None:
            return found
    return None
