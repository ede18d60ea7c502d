"""Per-file extraction: a file's facts (symbols, imports, call sites, class bases) from one parse.

`extract_file` depends on nothing but its arguments (no repository, no global state), so a build
worker that has already parsed the file passes its tree-sitter tree and gets the facts back.
JavaScript/TypeScript, Go and Java details live in extract_js, extract_go and extract_java.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import Any

from ...source.chunks import Chunk
from ...source.notebook import is_notebook
from ...source.notebook import script as notebook_script
from ...source.specs import SPECS
from ...source.treenodes import parser
from .extract_go import go_file
from .extract_java import java_file
from .extract_js import js_bases, js_imports
from .model import JS_LANGUAGES, FileGraph, symbols_from_chunks
from .syntax import class_at, matches_by_child, text

_SELF_NAMES = frozenset({"self", "this", "cls", "@"})
_DOTTED_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")

_CALL_PATTERNS: dict[str, list[str]] = {
    # One pattern with an alternation: the same matches, in the same order, as one pattern
    # per form (checked on every sympy file), for ~20 % less of the query's time.
    "python": [
        "(call function: [(identifier) @name"
        " (attribute object: (_) @recv attribute: (identifier) @name)])",
    ],
    "javascript": [
        "(call_expression function: (identifier) @name) @call",
        "(call_expression function: (member_expression object: (_) @recv"
        " property: (property_identifier) @name)) @call",
        "(new_expression constructor: (identifier) @name) @call",
    ],
    "go": [
        "(call_expression function: (identifier) @name) @call",
        "(call_expression function: (selector_expression operand: (_) @recv"
        " field: (field_identifier) @name)) @call",
    ],
    "java": [
        "(method_invocation object: (_) @recv name: (identifier) @name) @call",
        "(method_invocation !object name: (identifier) @name) @call",
        "(object_creation_expression type: (type_identifier) @name) @call",
    ],
}
_CALL_PATTERNS["typescript"] = _CALL_PATTERNS["javascript"]
_CALL_PATTERNS["tsx"] = _CALL_PATTERNS["javascript"]
# Other languages: every pattern that compiles for the grammar (name references only).
_GENERIC_CALL_PATTERNS = [
    "(call_expression function: (identifier) @name) @call",
    "(call_expression function: (field_expression field: (field_identifier) @name)) @call",
    "(call_expression function: (scoped_identifier name: (identifier) @name)) @call",
    "(call_expression function: (navigation_expression (navigation_suffix"
    " (simple_identifier) @name))) @call",
    "(call_expression (simple_identifier) @name) @call",
    "(call_expression function: (field_expression value: (_) @recv"
    " field: (field_identifier) @name)) @call",
    "(call method: (identifier) @name) @call",
    "(call receiver: (_) @recv method: (identifier) @name) @call",
    "(function_call_expression function: (name) @name) @call",
    "(member_call_expression object: (_) @recv name: (name) @name) @call",
    "(invocation_expression function: (identifier) @name) @call",
    "(invocation_expression function: (member_access_expression expression: (_) @recv"
    " name: (identifier) @name)) @call",
    "(function_call name: (identifier) @name) @call",
    "(command name: (command_name) @name) @call",
    "(SuffixExpr (IDENTIFIER) @name (FnCallArguments)) @call",
]


_EXTRA_PATTERNS: dict[str, list[str]] = {
    # Imports and class bases ride on the same traversal as the call sites.
    "python": [
        "(import_statement) @imp",
        "(import_from_statement) @imp",
        "(class_definition name: (identifier) @cls superclasses: (argument_list) @bases)",
    ],
}


@cache
def _call_query(language: str) -> Any:
    """One compiled query per language (call sites + extras; patterns a grammar lacks are
    skipped), so a file is traversed once."""
    from tree_sitter import Query
    from tree_sitter_language_pack import get_language

    grammar = SPECS[language].grammar
    lang = get_language(grammar)  # type: ignore[arg-type]
    patterns = _CALL_PATTERNS.get(language, _GENERIC_CALL_PATTERNS) + _EXTRA_PATTERNS.get(
        language, []
    )
    try:  # every pattern valid (the usual case): one compilation, not one per pattern more
        return Query(lang, "\n".join(patterns))
    except Exception:
        pass
    valid = []
    for pattern in patterns:
        try:
            Query(lang, pattern)
        except Exception:  # the grammar has no such node or field
            continue
        valid.append(pattern)
    return Query(lang, "\n".join(valid)) if valid else None


def _owners(symbols: list[list[Any]], n_lines: int) -> list[str]:
    """Innermost symbol of each line (1-based index), '' outside every definition."""
    owner = [""] * (n_lines + 2)
    for sym in sorted(symbols, key=lambda s: s[3] - s[4]):  # largest range first
        for line in range(max(1, sym[3]), min(sym[4], n_lines) + 1):
            owner[line] = sym[1]
    return owner


def _receiver(node: Any, data: bytes, self_name: str) -> str:
    written = text(node, data)
    if node.type in ("this", "self") or written in _SELF_NAMES or written == self_name != "":
        return "self"
    if node.type == "super" or written in ("super", "super()"):
        return "super"
    if _DOTTED_NAME.fullmatch(written):
        return written
    return "?"  # an expression (call result, subscript, ...): unknown type


def extract_file(
    path: str,
    language: str,
    data: bytes,
    chunks: Sequence[Chunk],
    tree: Any = None,
    blob: str = "",
) -> FileGraph:
    """The file's facts from its bytes and its chunks (the symbols are the chunks' definitions).

    `tree`: the tree-sitter tree of `data` when the caller has parsed it already (ignored for a
    notebook, whose code cells are parsed as one script). Never raises: a grammar edge case keeps
    the definitions and drops the rest."""
    symbols = symbols_from_chunks(chunks)
    try:
        fg = _extract(path, language, data, symbols, tree)
    except Exception:  # a grammar edge case must not break the build
        fg = FileGraph(path, language, symbols=symbols)
    fg.blob = blob
    return fg


def _extract(
    path: str, language: str, data: bytes, symbols: list[list[Any]], tree: Any
) -> FileGraph:
    fg = FileGraph(path, language, symbols=symbols)
    if language not in SPECS:
        return fg
    placed = fg.symbols
    if is_notebook(path):  # the code cells as one script; symbols moved to its lines
        data, placed = notebook_script(data, fg.symbols)
        tree = None
    if tree is None:
        tree = parser(SPECS[language].grammar).parse(data)
    root = tree.root_node
    owner = _owners(placed, data.count(b"\n") + 1)
    self_names: dict[str, str] = {}
    if language in JS_LANGUAGES:
        js_imports(root, data, fg)
        js_bases(root, data, fg, owner)
    elif language == "go":
        go_file(root, data, fg, owner, self_names)
    elif language == "java":
        java_file(root, data, fg, owner)
    calls_query = _call_query(language)
    found = matches_by_child(calls_query, root) if calls_query is not None else iter(())
    seen: set[tuple[str, str, str, int]] = set()
    imports: list[Any] = []
    for m in found:
        if "imp" in m:
            imports.append(m["imp"][0])
            continue
        if "bases" in m:
            cls = class_at(fg, owner, m["cls"][0], data)
            for arg in m["bases"][0].named_children:
                if arg.type in ("identifier", "attribute"):
                    fg.bases.append([cls, text(arg, data)])
            continue
        name_nodes = m.get("name")
        if not name_nodes:
            continue
        line = name_nodes[0].start_point[0] + 1
        caller = owner[line] if line < len(owner) else ""
        name = text(name_nodes[0], data)
        recv_nodes = m.get("recv")
        recv = _receiver(recv_nodes[0], data, self_names.get(caller, "")) if recv_nodes else ""
        key = (caller, name, recv, line)
        if key not in seen:
            seen.add(key)
            fg.calls.append([caller, name, recv, line])
    if imports:
        _python_imports(imports, data, fg)
    fg.calls.sort(key=lambda c: c[3])
    return fg


def _python_imports(nodes: list[Any], data: bytes, fg: FileGraph) -> None:
    for node in nodes:
        if node.type == "import_statement":
            for item in node.children_by_field_name("name"):
                if item.type == "aliased_import":
                    name = item.child_by_field_name("name")
                    alias = item.child_by_field_name("alias")
                    fg.imports.append([text(name, data), "", text(alias, data)])
                else:
                    fg.imports.append([text(item, data), "", ""])
            continue
        module = node.child_by_field_name("module_name")
        spec = "".join(text(module, data).split()) if module is not None else ""
        if any(c.type == "wildcard_import" for c in node.named_children):
            fg.imports.append([spec, "*", ""])
        for item in node.children_by_field_name("name"):
            if item.type == "aliased_import":
                name = text(item.child_by_field_name("name"), data)
                alias = text(item.child_by_field_name("alias"), data)
            else:
                name = alias = text(item, data)
            fg.imports.append([spec, name, alias])
