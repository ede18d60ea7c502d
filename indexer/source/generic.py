"""Definitions in any tree-sitter grammar without a hand-written spec (indexer/source/specs.py).

Read from the node types a grammar names: a named node whose type says function, method, class,
module, struct, ... (and not call, expression, parameter, ...) and that carries a name is a
definition. Lisp-like and macro languages define with calls (`defmodule`, `defn`, `defun`):
a call whose head is a defining word is a definition too, named by its first argument. A value
bound to a nameless function (`f <- function(x)` in R) takes the binding's name.
"""

from __future__ import annotations

import re
from typing import Any

from .treenodes import (
    Definition,
    clean_name,
    comment_docstring,
    line_span,
    node_name,
    node_text,
    qualify,
    signature_end_line,
    signature_of,
)

_FUNCTION_WORDS = (
    r"function|method|def|defn|defun|subroutine|procedure|proc|func|fn|macro|constructor"
)
_CONTAINER_WORDS = (
    r"class|module|struct|interface|trait|impl|enum|protocol|object|instance|contract|"
    r"library|namespace|record|union|package|service|message|mixin|extension"
)
_DEFINITION_TYPE = re.compile(rf"(^|_)({_FUNCTION_WORDS}|{_CONTAINER_WORDS})(_|$)")
_CONTAINER_TYPE = re.compile(rf"(^|_)({_CONTAINER_WORDS})(_|$)")
# Types that mention a defining word but are uses, parts or types of definitions.
_NOT_DEFINITION = re.compile(
    r"call|invocation|expression|expr|parameter|argument|reference|name|identifier|body|"
    r"modifier|literal|pattern|type$|^type|list|clause|access|keyword|import|export|operator|"
    r"specifier$|declarator|signature|header|_head|_left|attribute|qualifier|path|"
    r"field|member|variant|value$|constraint|application|selector|anonymous|arrow|lambda|"
    r"^end_|_end$|^object$|_id$|_lit$|annotation|directive|include|variable"
)
# Definitions named by a grammar without a defining word in their type.
_EXTRA_DEFINITIONS = {
    "value_declaration": "function",  # elm
    "value_definition": "function",  # ocaml
    "fun_decl": "function",  # erlang
    "rule": "function",  # make
    "type_definition": "class",  # gleam, graphql
    "data_type": "class",  # haskell
    "type_alias_declaration": "class",  # elm
    "message": "class",  # protobuf
    "service": "class",  # protobuf
    "resource": "class",  # solidity
    "block": "class",  # hcl / terraform: resource "x" "y" { }
    "create_table": "class",  # sql
    "create_view": "class",
    "create_function": "function",
}
_EXTRA_IN = {"block": frozenset({"hcl", "terraform"})}
# Heads of defining calls (Elixir, Clojure, Lisps, Scheme, Janet, Fennel, CMake).
_DEFINING_HEADS = {
    "def": "function",
    "defp": "function",
    "defn": "function",
    "defn-": "function",
    "defmacro": "function",
    "defmacrop": "function",
    "defguard": "function",
    "defdelegate": "function",
    "defmulti": "function",
    "defmethod": "function",
    "defun": "function",
    "defgeneric": "function",
    "define": "function",
    "fn": "function",
    "defmodule": "class",
    "defprotocol": "class",
    "defimpl": "class",
    "defrecord": "class",
    "deftype": "class",
    "defstruct": "class",
    "defclass": "class",
    "defpackage": "class",
}
_CALL_TYPES = frozenset({"call", "list_lit", "list", "sexp", "s_expression", "function_def"})
_NAME_TYPE = re.compile(
    r"identifier|^name$|_name$|^word$|^atom$|^variable$|^constant$|^alias$|^sym_lit$|"
    r"^symbol$|^module_id$|^simple_identifier$|^value_name$|^module_name$|^string$|"
    r"^unquoted_argument$"
)
_NO_DESCENT = re.compile(
    r"comment|string|signature|annotation|import|parameters|arguments|type_expression"
)
_COMMENT = re.compile(r"comment|haddock")
# Dart: `function_signature` and its `function_body` are siblings.
_SPLIT_SIGNATURE = re.compile(r"^(function|method|getter|setter|constructor)_signature$")
MAX_DEPTH = 12


def collect_generic(language: str, node: Any, data: bytes, scope: list[str]) -> list[Definition]:
    """Definitions under `node` (not inside function bodies: nested helpers stay with them)."""
    return _collect(language, node, data, scope, 0)


def _collect(
    language: str, node: Any, data: bytes, scope: list[str], depth: int
) -> list[Definition]:
    found: list[Definition] = []
    comments: list[Any] = []
    for child in node.named_children:
        if _COMMENT.search(child.type):
            if comments and child.start_point[0] > comments[-1].end_point[0] + 1:
                comments = []
            comments.append(child)
            continue
        if comments and child.start_point[0] > comments[-1].end_point[0] + 1:
            comments = []
        body = child.next_named_sibling
        if _SPLIT_SIGNATURE.search(child.type) and body is not None and "body" in body.type:
            definition = _as_definition(language, child, data, scope, comments, depth, body)
        else:
            definition = _as_definition(language, child, data, scope, comments, depth)
        comments = []
        if definition is not None:
            found.append(definition)
        elif depth < MAX_DEPTH and child.named_child_count and not _NO_DESCENT.search(child.type):
            found.extend(_collect(language, child, data, scope, depth + 1))
    return found


def _classify(language: str, node: Any, data: bytes) -> tuple[str | None, str]:
    """(kind, name) of a definition node, or (None, "")."""
    t = node.type
    if t in _CALL_TYPES and node.named_child_count >= 2:
        head = node.named_children[0]
        word = node_text(head, data).strip()
        kind = _DEFINING_HEADS.get(word) or _DEFINING_HEADS.get(word.lower())
        named = node.named_children[1]
        if kind is None and t == "function_def":  # cmake: function(name ...) ... endfunction()
            kind, named = "function", head
        if kind is not None:
            name = _first_name(named, data, 3)
            return (kind, name) if name else (None, "")
    extra = _EXTRA_DEFINITIONS.get(t)
    if extra is not None and language in _EXTRA_IN.get(t, frozenset({language})):
        name = _definition_name(node, data)
        return (extra, name) if name else (None, "")
    if _DEFINITION_TYPE.search(t) and not _NOT_DEFINITION.search(t):
        name = _definition_name(node, data)
        if name:
            return ("class" if _CONTAINER_TYPE.search(t) else "function"), name
        return None, ""
    # A nameless function bound to a name: `f <- function(x) ...`, `local f = function() end`.
    children = node.named_children
    if len(children) >= 2 and _NAME_TYPE.search(children[0].type):
        last = children[-1]
        function = _DEFINITION_TYPE.search(last.type) and not _CONTAINER_TYPE.search(last.type)
        if function and not _definition_name(last, data):
            return "function", clean_name(node_text(children[0], data))
    return None, ""


def _definition_name(node: Any, data: bytes) -> str:
    name = _named_by(node, data)
    return "" if name.lower() in _KEYWORDS else name


_KEYWORDS = frozenset({"function", "fn", "func", "def", "lambda", "proc", "sub", "end"})


def _named_by(node: Any, data: bytes) -> str:
    if node.type == "block":  # hcl / terraform: `resource "aws_s3_bucket" "logs" {`
        labels = [
            node_text(c, data).strip('"')
            for c in node.named_children[:3]
            if c.type in ("string_lit", "identifier")
        ]
        return clean_name(".".join(labels))
    field = node.child_by_field_name("name")
    if field is not None:
        return _tidy(node_text(field, data).strip("\"'"))
    if node.child_by_field_name("declarator") is not None:  # C-like: in the declarator chain
        return _tidy(node_name(node, data))
    for child in node.named_children[:3]:
        if _NAME_TYPE.search(child.type) and child.type != "string":
            return _tidy(node_text(child, data))
    for child in node.named_children[:4]:
        if child.named_child_count and not re.search(r"body|block", child.type):
            name = _first_name(child, data, 2)
            if name:
                return name
    return ""


def _tidy(name: str) -> str:
    """`put*` (Nim's export mark) -> put; `Cache(v)` (type parameters) -> Cache."""
    return clean_name(name).split("(", 1)[0].rstrip("*")


def _first_name(node: Any, data: bytes, depth: int) -> str:
    if _NAME_TYPE.search(node.type) and not node.named_child_count:
        return _tidy(node_text(node, data).strip("\"'"))
    if _NAME_TYPE.search(node.type) and node.type in ("sym_lit", "alias", "scoped_identifier"):
        return clean_name(node_text(node, data))
    if depth == 0:
        return ""
    for child in node.named_children[:2]:
        name = _first_name(child, data, depth - 1)
        if name:
            return name
    return ""


def _body(node: Any) -> Any:
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    for child in reversed(node.named_children):
        if re.search(r"body|block|do_block|declarations|internal_procedures", child.type):
            return child
    return None


def _as_definition(
    language: str,
    node: Any,
    data: bytes,
    scope: list[str],
    comments: list[Any],
    depth: int,
    split_body: Any = None,
) -> Definition | None:
    kind: str | None = "function"
    if split_body is not None:
        name = _named_by(node, data)
    else:
        kind, name = _classify(language, node, data)
    if kind is None or not name:
        return None
    qualified, qualname, symbol = qualify(name, scope)
    start_node = comments[0] if comments else node
    last = split_body if split_body is not None else node
    start_line, end_line = line_span(start_node, last)
    body = split_body if split_body is not None else _body(node)
    sig_end = max(node.start_point[0], min(signature_end_line(node, body), end_line))
    members: list[Definition] = []
    if kind == "class":
        inner = body if body is not None else node
        members = _collect(language, inner, data, [*scope, qualified], depth + 1)
        # A header node (`module_statement`) or a wrapped twin (`type_definition` around
        # `object_type_definition`) is the container itself, not a member.
        members = [m for m in members if m.start_byte != node.start_byte]
        if len(members) == 1 and members[0].end_byte == node.end_byte:
            members = members[0].members  # `module M = struct ... end`: the binding is M
        if not members and body is None:
            twins = _collect(language, node, data, scope, depth + 1)
            members = [m for t in twins if t.start_byte == node.start_byte for m in t.members]
    elif scope:
        kind = "method"
    return Definition(
        kind=kind,
        name=symbol,
        qualname=qualname,
        start_byte=start_node.start_byte,
        end_byte=last.end_byte,
        start_line=start_line,
        end_line=end_line,
        sig_end_line=sig_end,
        signature=signature_of(node, body, data),
        docstring=comment_docstring(comments, data),
        body=body,
        members=members,
    )
