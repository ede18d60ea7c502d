"""Cut one file into chunks: definitions via tree-sitter, everything else by bounded windows.

A chunk is a function/method, a class summary (header, docstring, member signatures), a block of
module-level code outside any definition, or a window of a text file. Oversized definitions are
split at statement boundaries with their signature repeated as context. Notebooks
(indexer/source/notebook.py) and large data files (indexer/source/datafiles.py) are dispatched
to their modules.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from .chunks import Chunk, chunk_id, materialize
from .datafiles import DATA_LANGUAGES, data_records
from .generic import collect_generic
from .languages import grammar_of
from .notebook import notebook_records
from .specs import SPECS, LanguageSpec
from .treenodes import (
    Definition,
    docstring_of,
    go_receiver,
    line_span,
    node_name,
    parser,
    qualify,
    signature_end_line,
    signature_of,
    zig_classify,
)
from .windows import LineChunker

__all__ = ["CHUNKER_VERSION", "Chunk", "chunk_file", "chunk_id", "chunk_records", "materialize"]

# Bump when chunks or per-chunk build columns change. 3: secrets redacted (source/secrets.py),
# so no cached or kept chunk from before redaction is ever reused; 4: every grammar of the pack,
# plain-text fallback, test flags from content; 5: both; 6: notebooks by cell and large data
# files by shape (indexer/source/notebook.py, indexer/source/datafiles.py).
CHUNKER_VERSION = 6
MAX_CHUNK_LINES = 120  # a definition longer than this is split


class _FileChunker(LineChunker):
    """Chunks one file's bytes: definitions by tree-sitter, the rest by lines (LineChunker)."""

    def __init__(self, stem: str, data: bytes) -> None:
        super().__init__(stem, data)
        self.tree: Any = None  # the tree-sitter tree of `data` when a language spec parsed it

    # -- code ------------------------------------------------------------------------------------
    def code_file(self, spec: LanguageSpec, generic: bool = False) -> None:
        tree = parser(spec.grammar).parse(self.data)
        root = tree.root_node
        if not generic:
            self.tree = tree
        if generic:
            defs = collect_generic(spec.name, root, self.data, [])
        else:
            defs = self.collect(spec, root, [])
        covered = [False] * len(self.lines)
        for d in defs:
            self.emit_def(d, spec)
            for line in range(d.start_line, min(d.end_line, len(self.lines) - 1) + 1):
                covered[line] = True
        self.module_code(covered)

    def collect(self, spec: LanguageSpec, node: Any, scope: list[str]) -> list[Definition]:
        found: list[Definition] = []
        pending_comments: list[Any] = []
        for child in node.named_children:
            if child.type in spec.comment_types:
                if (
                    pending_comments
                    and child.start_point[0] > pending_comments[-1].end_point[0] + 1
                ):
                    pending_comments = []
                pending_comments.append(child)
                continue
            comments = pending_comments
            if comments and child.start_point[0] > comments[-1].end_point[0] + 1:
                comments = []
            pending_comments = []
            definition = self.as_definition(spec, child, scope, comments)
            if definition is not None:
                found.append(definition)
            elif child.type in spec.transparent or child.type == "ERROR":
                # ERROR: tree-sitter's recovery wraps valid definitions after a syntax error.
                found.extend(self.collect(spec, child, scope))
        return found

    def as_definition(
        self, spec: LanguageSpec, node: Any, scope: list[str], comments: list[Any]
    ) -> Definition | None:
        outer = node
        inner = node
        # Unwrap decorators/export/template, possibly nested (export default class ...).
        for _ in range(3):
            if inner.type not in spec.wrappers:
                break
            candidates = [
                c
                for c in inner.named_children
                if c.type in spec.functions
                or c.type in spec.containers
                or c.type in spec.wrappers
                or (
                    spec.function_values
                    and c.type in ("lexical_declaration", "variable_declaration")
                )
            ]
            if not candidates:
                return None
            inner = candidates[-1]
        kind, body = self.classify(spec, inner)
        if kind is None:
            return None
        name = node_name(inner, self.data) or "<anonymous>"
        if spec.name == "go" and inner.type == "method_declaration":
            receiver = go_receiver(inner, self.data)
            if receiver:
                scope = [*scope, receiver]
        qualified, qualname, name = qualify(name, scope)
        start_node = comments[0] if comments else outer
        start_line, end_line = line_span(start_node, outer)
        sig_end = signature_end_line(inner, body)
        sig_end = max(inner.start_point[0], min(sig_end, end_line))
        signature = signature_of(inner, body, self.data)
        docstring = docstring_of(spec, body, comments, self.data)
        is_container = kind == "class"
        if kind == "function" and scope:
            kind = "method"
        members: list[Definition] = []
        if is_container and body is not None:
            members = self.collect(spec, body, [*scope, qualified])
        return Definition(
            kind=kind,
            name=name,
            qualname=qualname,
            start_byte=start_node.start_byte,
            end_byte=outer.end_byte,
            start_line=start_line,
            end_line=end_line,
            sig_end_line=sig_end,
            signature=signature,
            docstring=docstring,
            body=body,
            members=members,
        )

    def classify(self, spec: LanguageSpec, node: Any) -> tuple[str | None, Any]:
        """('function'|'class'|None, body node)."""
        t = node.type
        if spec.name == "zig":
            return zig_classify(node)
        if t in spec.containers:
            body = node.child_by_field_name("body")
            if body is None:
                for c in node.named_children:
                    if c.type.endswith(
                        (
                            "body",
                            "declaration_list",
                            "field_declaration_list",
                            "enumerator_list",
                            "block",
                            "template_body",
                        )
                    ):
                        body = c
            if t == "type_declaration":  # go: type X struct {...}
                return "class", None
            return "class", body
        if t in spec.functions:
            return "function", node.child_by_field_name("body")
        if t in ("lexical_declaration", "variable_declaration") and spec.function_values:
            declarators = [c for c in node.named_children if c.type == "variable_declarator"]
            if len(declarators) == 1:
                value = declarators[0].child_by_field_name("value")
                if value is not None and value.type in spec.function_values:
                    return "function", value.child_by_field_name("body")
        return None, None

    def emit_def(self, d: Definition, spec: LanguageSpec) -> None:
        if d.kind == "class":
            self.emit_class(d, spec)
            return
        length = d.end_line - d.start_line + 1
        if length <= MAX_CHUNK_LINES or d.body is None:
            self.emit(
                d.kind,
                d.name,
                d.qualname,
                d.start_line,
                d.end_line,
                self.line_text(d.start_line, d.end_line),
                d.signature,
                d.docstring,
            )
            return
        self.split_def(d)

    def split_def(self, d: Definition) -> None:
        """Split a long definition at statement boundaries, repeating the signature."""
        header = self.line_text(d.start_line, d.sig_end_line)
        statements = [c for c in d.body.named_children]
        groups: list[tuple[int, int]] = []
        cur_start = d.start_line
        cur_end = d.sig_end_line
        for st in statements:
            s, e = st.start_point[0], st.end_point[0]
            if e < cur_end:
                continue
            if (
                cur_end - cur_start + 1 > 0
                and e - cur_start + 1 > MAX_CHUNK_LINES
                and cur_end >= cur_start
            ):
                groups.append((cur_start, cur_end))
                cur_start = max(s, cur_end + 1)
            cur_end = max(cur_end, e)
        cur_end = max(cur_end, d.end_line)
        groups.append((cur_start, cur_end))
        for i, (s, e) in enumerate(groups):
            # Very long single statements still get windowed.
            for ws in range(s, e + 1, MAX_CHUNK_LINES):
                we = min(e, ws + MAX_CHUNK_LINES - 1)
                text = self.line_text(ws, we)
                if i > 0 or ws > s:
                    text = f"{header}\n    ...\n{text}"
                self.emit(
                    d.kind,
                    d.name,
                    d.qualname,
                    ws,
                    we,
                    text,
                    d.signature,
                    d.docstring if i == 0 else "",
                )

    def emit_class(self, d: Definition, spec: LanguageSpec) -> None:
        """Class chunk = its lines with member bodies elided to their signatures."""
        skip: set[int] = set()
        for m in d.members:
            keep_until = m.sig_end_line
            if spec.python_docstrings and m.docstring and m.body is not None:
                first = m.body.named_children[0] if m.body.named_children else None
                if first is not None:
                    keep_until = max(keep_until, first.end_point[0])
            skip.update(range(keep_until + 1, m.end_line + 1))
        kept = [n for n in range(d.start_line, d.end_line + 1) if n not in skip]
        out: list[str] = []
        last = None
        for n in kept:
            if last is not None and n != last + 1:
                indent = (
                    len(self.lines[last]) - len(self.lines[last].lstrip())
                    if last < len(self.lines)
                    else 0
                )
                out.append(" " * (indent + 4) + "...")
            if n < len(self.lines):
                out.append(self.lines[n])
            last = n
        text = "\n".join(out)
        if len(out) > MAX_CHUNK_LINES * 2:
            text = "\n".join(out[: MAX_CHUNK_LINES * 2]) + "\n    ..."
        self.emit(
            "class", d.name, d.qualname, d.start_line, d.end_line, text, d.signature, d.docstring
        )
        for m in d.members:
            self.emit_def(m, spec)


def chunk_records(stem: str, language: str, data: bytes) -> list[dict[str, Any]]:
    """Path-independent chunk records of one file. Never raises on bad syntax."""
    return parse_and_chunk(stem, language, data)[0]


def parse_and_chunk(stem: str, language: str, data: bytes) -> tuple[list[dict[str, Any]], Any]:
    """The records and the tree-sitter tree of `data` when the language's spec parsed it (None
    otherwise), so a caller that needs the syntax tree too (the code graph) parses once."""
    chunker = _FileChunker(stem, data)
    if not chunker.lines:
        return [], None
    if language == "notebook":
        records = notebook_records(stem, data, chunk_records)
        if records is not None:
            return records, None
        language = "json"  # not a notebook: text windows (build.py counts the fallback)
    elif language in DATA_LANGUAGES and (records := data_records(stem, language, data)):
        return records, None
    spec = SPECS.get(language)
    if spec is not None:
        chunker.code_file(spec)
    elif grammar_of(language) is not None:
        chunker.code_file(generic_spec(language), generic=True)
    else:
        chunker.text_file(language)
    return chunker.records, chunker.tree


@cache
def generic_spec(language: str) -> LanguageSpec:
    """A spec with no definition types: the generic extractor reads the grammar's own."""
    return LanguageSpec(language, language, frozenset(), frozenset())


def chunk_file(path: str, language: str, blob: str, data: bytes) -> list[Chunk]:
    """All chunks of one file. Never raises on bad syntax: tree-sitter recovers."""
    return materialize(chunk_records(path_stem(path), language, data), path, language, blob)


# -- helpers -------------------------------------------------------------------------------------


def path_stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name.split(".", 1)[0] or name
