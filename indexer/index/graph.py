"""Code graph: files, modules and symbols with DEFINES, IMPORTS, CALLS and INHERITS edges.

Two stages, so that an incremental update can replace one file's part:

1. `extract_file` (per file, tree-sitter): the file's symbols (taken from its chunks, so symbol
   nodes are chunk ids), its imports as written, its call sites as name references with their
   receiver (`self`, `super`, an identifier, ...) and the bases of its classes. Plain data.
2. `resolve` (global, cheap, no parsing): binds imported names to repository files and symbols
   (relative and aliased imports included), resolves call sites through local definitions,
   imports, class scope, `self.`/`this.` and base classes, Go packages and Java packages, and
   keeps what it cannot resolve as a reference to a bare name.

Python, JavaScript/TypeScript, Go and Java get that resolution; the other chunked languages get
definitions and call-name references resolved by name only. `graph.json` in the snapshot holds
the per-file data and the resolved node/edge arrays; no pickle. networkx is imported only by
`to_networkx` (PageRank, export), never by a plain search.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CorruptIndexError, IndexerError
from ..source.chunker import Chunk
from ..source.languages import SPECS
from ..source.notebook import is_notebook
from ..source.notebook import script as notebook_script
from ..source.treenodes import parser as _parser

GRAPH_FILE = "graph.json"  # node ids and columns
GRAPH_EDGES = "graph_edges.npy"  # int32 (src, dst, type, how)
GRAPH_FILES = "graph_files.json"  # per-file contributions (replaced by incremental updates)
GRAPH_VERSION = 1
RESOLVER_VERSION = 2  # bump when resolution changes (benchmarks recompute cached graphs)
EDGE_TYPES = ("DEFINES", "IMPORTS", "CALLS", "INHERITS")
RESOLVED_LANGUAGES = frozenset({"python", "javascript", "typescript", "tsx", "go", "java"})
_SELF_NAMES = frozenset({"self", "this", "cls", "@"})
_SYMBOL_KINDS = frozenset({"function", "method", "class"})
_JS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".d.ts")


@dataclass
class FileGraph:
    """One file's contribution. Lists of plain lists keep graph.json compact."""

    path: str
    language: str
    blob: str = ""  # the git blob it was extracted from: an update reuses it when unchanged
    package: str = ""  # Java package / Go package name
    default: str = ""  # JS/TS: the name of the `export default` definition
    # [node id (first chunk id), qualname, kind, start_line, end_line, [all chunk ids]], and in a
    # notebook the cell (lines count within it)
    symbols: list[list[Any]] = field(default_factory=list)
    # [spec as written (Python keeps its leading dots), imported name or "", bound alias or ""]
    imports: list[list[str]] = field(default_factory=list)
    # [caller qualname ("" = module level), called name, receiver, line]
    calls: list[list[Any]] = field(default_factory=list)
    # [class qualname, base as written]
    bases: list[list[str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "language": self.language,
            "blob": self.blob,
            "package": self.package,
            "default": self.default,
            "symbols": self.symbols,
            "imports": self.imports,
            "calls": self.calls,
            "bases": self.bases,
        }

    @classmethod
    def from_dict(cls, path: str, raw: dict[str, Any]) -> FileGraph:
        return cls(
            path,
            raw["language"],
            raw.get("blob", ""),
            raw.get("package", ""),
            raw.get("default", ""),
            raw["symbols"],
            raw["imports"],
            raw["calls"],
            raw["bases"],
        )


# -- per-file extraction -------------------------------------------------------------------------

_CALL_PATTERNS: dict[str, list[str]] = {
    "python": [
        "(call function: (identifier) @name) @call",
        "(call function: (attribute object: (_) @recv attribute: (identifier) @name)) @call",
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
    valid = []
    for pattern in _CALL_PATTERNS.get(language, _GENERIC_CALL_PATTERNS) + _EXTRA_PATTERNS.get(
        language, []
    ):
        try:
            Query(lang, pattern)
        except Exception:  # the grammar has no such node or field
            continue
        valid.append(pattern)
    return Query(lang, "\n".join(valid)) if valid else None


def _matches(query: Any, node: Any) -> list[dict[str, list[Any]]]:
    from tree_sitter import QueryCursor

    return [m for _, m in QueryCursor(query).matches(node)]


def _text(node: Any, data: bytes) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", errors="replace")


def _symbols_from_chunks(chunks: Sequence[Chunk]) -> list[list[Any]]:
    by_name: dict[str, list[Any]] = {}
    for c in chunks:
        if c.kind not in _SYMBOL_KINDS or not c.qualname:
            continue
        entry = by_name.get(c.qualname)
        if entry is None:
            cell = [c.cell] if c.cell is not None else []  # notebook: lines within that cell
            by_name[c.qualname] = [c.id, c.qualname, c.kind, c.start_line, c.end_line, [c.id]]
            by_name[c.qualname].extend(cell)
        elif c.cell is not None and entry[6:] != [c.cell]:
            entry[5].append(c.id)  # redefined in a later cell: the first definition stays
        else:
            entry[3] = min(entry[3], c.start_line)
            entry[4] = max(entry[4], c.end_line)
            entry[5].append(c.id)
    return list(by_name.values())


def _owners(symbols: list[list[Any]], n_lines: int) -> list[str]:
    """Innermost symbol of each line (1-based index), '' outside every definition."""
    owner = [""] * (n_lines + 2)
    for sym in sorted(symbols, key=lambda s: s[3] - s[4]):  # largest range first
        for line in range(max(1, sym[3]), min(sym[4], n_lines) + 1):
            owner[line] = sym[1]
    return owner


def _receiver(node: Any, data: bytes, self_name: str) -> str:
    text = _text(node, data)
    if node.type in ("this", "self") or text in _SELF_NAMES or (self_name and text == self_name):
        return "self"
    if node.type == "super" or text == "super" or text == "super()":
        return "super"
    if re.fullmatch(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*", text):
        return text
    return "?"  # an expression (call result, subscript, ...): unknown type


def extract_file(path: str, language: str, data: bytes, chunks: Sequence[Chunk]) -> FileGraph:
    """The file's symbols, imports, call sites and class bases. Never raises on bad syntax."""
    return _extract(path, language, data, _symbols_from_chunks(chunks))


def _extract(path: str, language: str, data: bytes, symbols: list[list[Any]]) -> FileGraph:
    fg = FileGraph(path, language, symbols=symbols)
    if language not in SPECS:
        return fg
    placed = fg.symbols
    if is_notebook(path):  # the code cells as one script; symbols moved to its lines
        data, placed = notebook_script(data, fg.symbols)
    tree = _parser(SPECS[language].grammar).parse(data)
    root = tree.root_node
    owner = _owners(placed, data.count(b"\n") + 1)
    self_names: dict[str, str] = {}
    if language in ("javascript", "typescript", "tsx"):
        _js_imports(root, data, fg)
        _js_bases(root, data, fg, owner)
    elif language == "go":
        _go_file(root, data, fg, owner, self_names)
    elif language == "java":
        _java_file(root, data, fg, owner)
    query = _call_query(language)
    matches = _matches(query, root) if query is not None else []
    seen: set[tuple[str, str, str, int]] = set()
    imports: list[Any] = []
    for m in matches:
        if "imp" in m:
            imports.append(m["imp"][0])
            continue
        if "bases" in m:
            cls = _class_at(fg, owner, m["cls"][0], data)
            for arg in m["bases"][0].named_children:
                if arg.type in ("identifier", "attribute"):
                    fg.bases.append([cls, _text(arg, data)])
            continue
        name_nodes = m.get("name")
        if not name_nodes:
            continue
        line = name_nodes[0].start_point[0] + 1
        caller = owner[line] if line < len(owner) else ""
        name = _text(name_nodes[0], data)
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
                    fg.imports.append([_text(name, data), "", _text(alias, data)])
                else:
                    fg.imports.append([_text(item, data), "", ""])
            continue
        module = node.child_by_field_name("module_name")
        spec = "".join(_text(module, data).split()) if module is not None else ""
        if any(c.type == "wildcard_import" for c in node.named_children):
            fg.imports.append([spec, "*", ""])
        for item in node.children_by_field_name("name"):
            if item.type == "aliased_import":
                name = _text(item.child_by_field_name("name"), data)
                alias = _text(item.child_by_field_name("alias"), data)
            else:
                name = alias = _text(item, data)
            fg.imports.append([spec, name, alias])


def _descendants(node: Any, types: tuple[str, ...], depth: int) -> Iterable[Any]:
    """Nodes of the given types within `depth` levels (imports sit at or near the top)."""
    for child in node.named_children:
        if child.type in types:
            yield child
        elif depth > 0 and child.named_child_count:
            yield from _descendants(child, types, depth - 1)


def _class_at(fg: FileGraph, owner: list[str], name_node: Any, data: bytes) -> str:
    line = name_node.start_point[0] + 1
    name = _text(name_node, data)
    for sym in fg.symbols:
        if sym[2] == "class" and sym[1].rsplit(".", 1)[-1] == name and sym[3] <= line <= sym[4]:
            return str(sym[1])
    return owner[line] if line < len(owner) else ""


@cache
def _query(language: str, pattern: str) -> Any:
    from tree_sitter import Query
    from tree_sitter_language_pack import get_language

    return Query(get_language(SPECS[language].grammar), pattern)  # type: ignore[arg-type]


def _string_value(node: Any, data: bytes) -> str:
    return _text(node, data).strip("'\"`")


def _js_imports(root: Any, data: bytes, fg: FileGraph) -> None:
    for node in _descendants(root, ("import_statement", "export_statement"), 1):
        source = node.child_by_field_name("source")
        if source is None:
            if node.type == "export_statement" and any(c.type == "default" for c in node.children):
                declaration = node.child_by_field_name("declaration") or node.child_by_field_name(
                    "value"
                )
                if declaration is not None:
                    named = declaration.child_by_field_name("name")
                    target = named if named is not None else declaration
                    if target.type in ("identifier", "type_identifier"):
                        fg.default = _text(target, data)
            continue
        spec = _string_value(source, data)
        bound = False
        for clause in node.named_children:
            if clause.type == "import_clause":
                for part in clause.named_children:
                    if part.type == "identifier":  # default import
                        fg.imports.append([spec, "default", _text(part, data)])
                        bound = True
                    elif part.type == "namespace_import":
                        ident = part.named_children[-1] if part.named_children else None
                        if ident is not None:
                            fg.imports.append([spec, "", _text(ident, data)])
                            bound = True
                    elif part.type == "named_imports":
                        for spec_node in part.named_children:
                            if spec_node.type != "import_specifier":
                                continue
                            name = _text(spec_node.child_by_field_name("name"), data)
                            alias_node = spec_node.child_by_field_name("alias")
                            alias = _text(alias_node, data) if alias_node is not None else name
                            fg.imports.append([spec, name, alias])
                            bound = True
            elif clause.type == "export_clause":  # export { x as y } from "./z"
                for spec_node in clause.named_children:
                    name = _text(spec_node.child_by_field_name("name"), data)
                    alias_node = spec_node.child_by_field_name("alias")
                    alias = _text(alias_node, data) if alias_node is not None else name
                    fg.imports.append([spec, name, alias])
                    bound = True
        if not bound:
            fg.imports.append([spec, "*" if node.type == "export_statement" else "", ""])
    query = _query(
        fg.language,
        "(variable_declarator name: (_) @lhs value: (call_expression function: (identifier) @fn"
        ' arguments: (arguments . (string) @src)) (#eq? @fn "require"))',
    )
    for m in _matches(query, root):
        spec = _string_value(m["src"][0], data)
        lhs = m["lhs"][0]
        if lhs.type == "identifier":
            fg.imports.append([spec, "", _text(lhs, data)])
        elif lhs.type == "object_pattern":
            for part in lhs.named_children:
                if part.type == "shorthand_property_identifier_pattern":
                    fg.imports.append([spec, _text(part, data), _text(part, data)])
                elif part.type == "pair_pattern":
                    key, value = part.child_by_field_name("key"), part.child_by_field_name("value")
                    if key is not None and value is not None:
                        fg.imports.append([spec, _text(key, data), _text(value, data)])


def _js_bases(root: Any, data: bytes, fg: FileGraph, owner: list[str]) -> None:
    for node in _all_of_types(
        root,
        ("class_declaration", "abstract_class_declaration", "class", "interface_declaration"),
    ):
        name = node.child_by_field_name("name")
        if name is None:
            continue
        cls = _class_at(fg, owner, name, data)
        for part in node.named_children:
            if part.type not in ("class_heritage", "extends_type_clause"):
                continue
            for clause in [part, *part.named_children]:
                for base in clause.named_children:
                    if base.type in (
                        "identifier",
                        "type_identifier",
                        "member_expression",
                        "nested_type_identifier",
                    ):
                        fg.bases.append([cls, _text(base, data)])
                    elif base.type == "generic_type" and base.named_children:
                        fg.bases.append([cls, _text(base.named_children[0], data)])


def _all_of_types(node: Any, types: tuple[str, ...], depth: int = 6) -> Iterable[Any]:
    """Definitions nest in few levels (module > namespace > class); bodies are not searched."""
    for child in node.named_children:
        if child.type in types:
            yield child
            body = child.child_by_field_name("body")
            if body is not None and depth > 0:
                yield from _all_of_types(body, types, depth - 1)
        elif depth > 0 and child.type not in ("statement_block", "block", "function_body"):
            yield from _all_of_types(child, types, depth - 1)


def _go_file(
    root: Any, data: bytes, fg: FileGraph, owner: list[str], self_names: dict[str, str]
) -> None:
    for child in root.named_children:
        if child.type == "package_clause" and child.named_children:
            fg.package = _text(child.named_children[0], data)
    for spec_node in _all_of_types(root, ("import_spec",), 3):
        path_node = spec_node.child_by_field_name("path")
        if path_node is None:
            continue
        alias_node = spec_node.child_by_field_name("name")
        spec = _string_value(path_node, data)
        alias = _text(alias_node, data) if alias_node is not None else spec.rsplit("/", 1)[-1]
        fg.imports.append([spec, "", alias])
    query = _query(
        "go",
        "(method_declaration receiver: (parameter_list (parameter_declaration"
        " name: (identifier) @rv)) name: (field_identifier) @m)",
    )
    for m in _matches(query, root):
        line = m["m"][0].start_point[0] + 1
        if line < len(owner) and owner[line]:
            self_names[owner[line]] = _text(m["rv"][0], data)
    query = _query(
        "go",
        "(type_spec name: (type_identifier) @cls type: (struct_type (field_declaration_list"
        " (field_declaration !name type: (_) @base))))",
    )
    for m in _matches(query, root):
        base = _text(m["base"][0], data).lstrip("*")
        fg.bases.append([_class_at(fg, owner, m["cls"][0], data), base])
    query = _query(
        "go",
        "(type_spec name: (type_identifier) @cls type: (interface_type"
        " (type_elem (type_identifier) @base)))",
    )
    for m in _matches(query, root):
        fg.bases.append([_class_at(fg, owner, m["cls"][0], data), _text(m["base"][0], data)])


def _java_file(root: Any, data: bytes, fg: FileGraph, owner: list[str]) -> None:
    for child in root.named_children:
        if child.type == "package_declaration" and child.named_children:
            fg.package = _text(child.named_children[0], data)
        elif child.type == "import_declaration":
            text = " ".join(_text(child, data).split())
            m = re.match(r"import\s+(static\s+)?([\w.]+)(\.\*)?\s*;", text)
            if not m:
                continue
            target = m.group(2)
            if m.group(3):
                fg.imports.append([target, "*", ""])
            else:
                module, _, name = target.rpartition(".")
                fg.imports.append([module, name, name])
    for node in _all_of_types(
        root, ("class_declaration", "interface_declaration", "enum_declaration")
    ):
        name = node.child_by_field_name("name")
        if name is None:
            continue
        cls = _class_at(fg, owner, name, data)
        for part in node.named_children:
            if part.type in ("superclass", "super_interfaces", "extends_interfaces"):
                for base in _all_of_types(part, ("type_identifier", "scoped_type_identifier"), 2):
                    fg.bases.append([cls, _text(base, data)])


# -- global resolution ---------------------------------------------------------------------------


@dataclass
class Resolved:
    """Nodes and typed edges; node ids: chunk id (symbol), `file:PATH`, `module:SPEC`,
    `name:NAME` (an unresolved call target)."""

    nodes: dict[str, dict[str, Any]]
    edges: list[tuple[str, str, str, str]]  # (src, dst, type, how it was resolved)


class _Resolver:
    def __init__(self, files: dict[str, FileGraph]) -> None:
        self.files = files
        self.top: dict[str, dict[str, str]] = {}  # path -> top-level name -> node id
        self.qual: dict[str, dict[str, str]] = {}  # path -> qualname -> node id
        self.kind: dict[str, str] = {}
        self.sym_path: dict[str, str] = {}
        self.sym_qual: dict[str, str] = {}
        self.by_name: dict[str, list[str]] = defaultdict(list)
        self.py_modules: dict[str, str] = {}
        self.dirs: dict[str, list[str]] = defaultdict(list)
        self.paths = set(files)
        for path, fg in files.items():
            self.dirs[posixpath.dirname(path)].append(path)
            top: dict[str, str] = {}
            qual: dict[str, str] = {}
            for sym in fg.symbols:
                node, qualname, kind = sym[0], sym[1], sym[2]
                qual[qualname] = node
                self.kind[node] = kind
                self.sym_path[node] = path
                self.sym_qual[node] = qualname
                self.by_name[qualname.rsplit(".", 1)[-1]].append(node)
                if "." not in qualname:
                    top[qualname] = node
            self.top[path] = top
            self.qual[path] = qual
            if fg.language == "python":
                for name in _python_module_names(path):
                    self.py_modules.setdefault(name, path)
        self.bindings: dict[str, dict[str, tuple[str, str]]] = {}
        self.stars: dict[str, list[str]] = defaultdict(list)  # path -> files imported with *
        self.bases: dict[str, list[str]] = defaultdict(list)  # class node -> base class nodes
        self._symbol_cache: dict[tuple[str, str], str | None] = {}

    # -- imports ---------------------------------------------------------------------------------
    def bind_imports(self, edges: list[tuple[str, str, str, str]]) -> None:
        for path, fg in self.files.items():
            table: dict[str, tuple[str, str]] = {}
            for spec, name, alias in fg.imports:
                target = self.import_target(fg, spec)
                module_node = f"file:{target}" if target else f"module:{spec}"
                edges.append((f"file:{path}", module_node, "IMPORTS", "import"))
                if fg.language == "python":
                    self._bind_python(fg, spec, name, alias, target, table)
                elif fg.language == "go":
                    if target:
                        table[alias] = ("package", target)
                elif name == "*":
                    if target:
                        if fg.language == "java":
                            self.stars[path].extend(self.dirs.get(target, []))
                        else:
                            self.stars[path].append(target)
                elif target:
                    if name in ("", "default") and fg.language != "java":
                        kind = "module" if name == "" else "default"
                        table[alias] = (kind, target)
                    else:
                        table[alias or name] = ("symbol", f"{target}\0{name}")
                elif alias:
                    table[alias] = ("external", spec)
            self.bindings[path] = table

    def _bind_python(
        self,
        fg: FileGraph,
        spec: str,
        name: str,
        alias: str,
        target: str | None,
        table: dict[str, tuple[str, str]],
    ) -> None:
        if name == "":  # import a.b.c [as x]
            if alias:
                table[alias] = ("module", target) if target else ("external", spec)
            else:
                top = spec.split(".", 1)[0]
                top_target = self.py_modules.get(top)
                table.setdefault(top, ("module", top_target) if top_target else ("external", top))
                if target:
                    table[spec] = ("module", target)  # dotted receivers: a.b.c.f()
            return
        if name == "*":
            if target:
                self.stars[fg.path].append(target)
            return
        absolute = _absolute_module(fg.path, spec)
        submodule = self.py_modules.get(f"{absolute}.{name}" if absolute else name)
        if submodule:
            table[alias] = ("module", submodule)
        elif target:
            table[alias] = ("symbol", f"{target}\0{name}")
        else:
            table[alias] = ("external", f"{spec}.{name}")

    def import_target(self, fg: FileGraph, spec: str) -> str | None:
        """The repository file (Go/Java: directory) an import names, or None."""
        if fg.language == "python":
            return self.py_modules.get(_absolute_module(fg.path, spec))
        if fg.language in ("javascript", "typescript", "tsx"):
            if not spec.startswith("."):
                return None
            base = posixpath.normpath(posixpath.join(posixpath.dirname(fg.path), spec))
            candidates = [base] + [base + ext for ext in _JS_EXTENSIONS]
            candidates += [f"{base}/index{ext}" for ext in _JS_EXTENSIONS]
            if base.endswith(".js"):  # TS sources import their compiled name
                candidates += [base[:-3] + ".ts", base[:-3] + ".tsx"]
            return next((c for c in candidates if c in self.paths), None)
        if fg.language == "go":
            best = None
            for directory in self.dirs:
                matches = directory and (spec == directory or spec.endswith("/" + directory))
                if matches and (best is None or len(directory) > len(best)):
                    best = directory
            return best
        if fg.language == "java":
            suffix = spec.replace(".", "/")
            for directory in self.dirs:
                if directory == suffix or directory.endswith("/" + suffix):
                    return directory  # a package (for `*`) or the directory of a class
            # spec is a class (import a.b.C.method): the class file
            for path in self.paths:
                if path.endswith("/" + suffix + ".java") or path == suffix + ".java":
                    return path
        return None

    # -- names -------------------------------------------------------------------------------------
    def symbol_in(self, target: str, name: str, depth: int = 0) -> str | None:
        """Top-level `name` defined in file `target`, following re-exports a few hops."""
        key = (target, name)
        if key not in self._symbol_cache:
            self._symbol_cache[key] = self._symbol_in(target, name, depth)
        return self._symbol_cache[key]

    def _symbol_in(self, target: str, name: str, depth: int) -> str | None:
        if target in self.top:
            node = self.top[target].get(name)
            if node:
                return node
            binding = self.bindings.get(target, {}).get(name)
            if binding and depth < 3:
                return self.binding_node(binding, depth + 1)
            for star in self.stars.get(target, []):
                if depth < 3:
                    node = self.symbol_in(star, name, depth + 1)
                    if node:
                        return node
            return None
        # Go/Java: a directory (package)
        for path in self.dirs.get(target, []):
            node = self.top[path].get(name)
            if node:
                return node
        return None

    def binding_node(self, binding: tuple[str, str], depth: int = 0) -> str | None:
        kind, value = binding
        if kind == "symbol":
            target, _, name = value.partition("\0")
            if target in self.top or target in self.dirs:
                if target.endswith(".java") and name not in self.top.get(target, {}):
                    return self.method_in_class(self.top[target].get(_stem(target)), name)
                return self.symbol_in(target, name, depth)
        if kind == "default":
            top = self.top.get(value, {})
            name = self.files[value].default or _stem(value)
            return top.get(name) or (next(iter(top.values())) if len(top) == 1 else None)
        return None

    def method_in_class(self, cls: str | None, name: str, depth: int = 0) -> str | None:
        if cls is None or depth > 6:
            return None
        qual = self.sym_qual[cls]
        node = self.qual[self.sym_path[cls]].get(f"{qual}.{name}")
        if node:
            return node
        for base in self.bases.get(cls, []):
            node = self.method_in_class(base, name, depth + 1)
            if node:
                return node
        return None

    def resolve_name(self, path: str, name: str, caller: str) -> tuple[str | None, str]:
        """A bare name used in `path`: (node, how) or (None, '')."""
        fg = self.files[path]
        if fg.language == "java" and caller:
            cls = self.enclosing_class(path, caller)
            node = self.method_in_class(cls, name) if cls else None
            if node:
                return node, "class"
        node = self.top[path].get(name)
        if node:
            return node, "local"
        binding = self.bindings[path].get(name)
        if binding:
            if binding[0] == "module":
                return f"file:{binding[1]}", "import"
            node = self.binding_node(binding)
            if node:
                return node, "import"
            return None, ""
        if fg.language in ("go", "java"):
            for other in self.dirs.get(posixpath.dirname(path), []):
                node = self.top[other].get(name)
                if node:
                    return node, "package"
        for star in self.stars.get(path, []):
            node = self.symbol_in(star, name)
            if node:
                return node, "import"
        return None, ""

    def enclosing_class(self, path: str, caller: str) -> str | None:
        qual = self.qual[path]
        parts = caller.split(".")
        for i in range(len(parts) - 1, 0, -1):
            node = qual.get(".".join(parts[:i]))
            if node and self.kind.get(node) == "class":
                return node
        return None

    def resolve_call(self, path: str, caller: str, name: str, recv: str) -> tuple[str | None, str]:
        fg = self.files[path]
        if fg.language not in RESOLVED_LANGUAGES:
            return self.unique(name)
        if recv in ("self", "super"):
            cls = self.enclosing_class(path, caller)
            if cls:
                if recv == "self":
                    node = self.method_in_class(cls, name)
                else:
                    node = next(
                        (
                            n
                            for b in self.bases.get(cls, [])
                            if (n := self.method_in_class(b, name))
                        ),
                        None,
                    )
                if node:
                    return node, recv
            return self.unique(name, methods_only=True)
        if recv == "":
            node, how = self.resolve_name(path, name, caller)
            if node:
                return node, how
            return self.unique(name)
        if recv == "?":
            return self.unique(name, methods_only=True, distinctive=True)
        binding = self.bindings[path].get(recv)
        if binding:
            kind, value = binding
            if kind in ("module", "package"):
                node = self.symbol_in(value, name)
                return (node, "import") if node else (None, "")
            if kind == "external":
                return None, ""
            cls = self.binding_node(binding)
            if cls and self.kind.get(cls) == "class":
                node = self.method_in_class(cls, name)
                if node:
                    return node, "import"
        head = recv.split(".", 1)[0]
        if "." not in recv:
            cls = self.top[path].get(recv)
            if cls is None and fg.language in ("java", "go"):
                cls, _ = self.resolve_name(path, recv, caller)
            if cls and self.kind.get(cls) == "class":
                node = self.method_in_class(cls, name)
                if node:
                    return node, "local"
        elif head in self.bindings[path] and self.bindings[path][head][0] == "external":
            return None, ""
        return self.unique(name, methods_only=True, distinctive=True)

    def unique(
        self, name: str, methods_only: bool = False, distinctive: bool = False
    ) -> tuple[str | None, str]:
        """Resolve by name when exactly one definition in the repository has it. On an object
        of unknown type (`distinctive`), only names no builtin type or common library uses:
        `d.get()` is far more often dict.get than the repository's only `get` method."""
        if distinctive and not _distinctive(name):
            return None, ""
        nodes = self.by_name.get(name, [])
        if methods_only:
            nodes = [n for n in nodes if self.kind[n] != "class"]
        if len(nodes) == 1:
            return nodes[0], "name"
        return None, ""

    def resolve_base(self, path: str, base: str) -> str | None:
        base = base.split("<", 1)[0].split("[", 1)[0]
        if "." in base:
            head, _, name = base.rpartition(".")
            binding = self.bindings[path].get(head)
            if binding and binding[0] in ("module", "package"):
                return self.symbol_in(binding[1], name)
            return None
        node, _ = self.resolve_name(path, base, "")
        if node and self.kind.get(node) == "class":
            return node
        node, _ = self.unique(base)
        return node if node and self.kind.get(node) == "class" else None


_COMMON_METHODS = frozenset(
    [
        "get",
        "set",
        "items",
        "keys",
        "values",
        "append",
        "extend",
        "insert",
        "pop",
        "remove",
        "clear",
        "update",
        "add",
        "discard",
        "copy",
        "index",
        "count",
        "sort",
        "reverse",
        "join",
        "split",
        "rsplit",
        "strip",
        "lstrip",
        "rstrip",
        "replace",
        "format",
        "lower",
        "upper",
        "startswith",
        "endswith",
        "encode",
        "decode",
        "find",
        "search",
        "match",
        "sub",
        "group",
        "groups",
        "read",
        "write",
        "close",
        "open",
        "flush",
        "seek",
        "readline",
        "readlines",
        "send",
        "recv",
        "run",
        "start",
        "stop",
        "put",
        "wait",
        "next",
        "iter",
        "apply",
        "map",
        "filter",
        "reduce",
        "load",
        "loads",
        "dump",
        "dumps",
        "exists",
        "mkdir",
        "resolve",
        "parse",
        "render",
        "emit",
        "call",
        "then",
        "catch",
        "push",
        "shift",
        "slice",
        "splice",
        "toString",
        "valueOf",
        "forEach",
        "reduce",
        "length",
        "size",
        "equals",
        "hashCode",
        "compareTo",
        "Println",
        "Printf",
        "Sprintf",
        "Errorf",
        "String",
        "Error",
        "Close",
        "Read",
        "Write",
        "Len",
    ]
)


def _distinctive(name: str) -> bool:
    if name in _COMMON_METHODS or name.startswith("__"):
        return False
    return len(name) >= 8 or "_" in name.strip("_") or any(c.isupper() for c in name[1:])


def resolve(files: dict[str, FileGraph]) -> Resolved:
    """Bind names across files and produce typed edges (cheap: no parsing)."""
    r = _Resolver(files)
    nodes: dict[str, dict[str, Any]] = {}
    edges: list[tuple[str, str, str, str]] = []
    for path, fg in files.items():
        nodes[f"file:{path}"] = {"kind": "file", "path": path, "language": fg.language}
        for sym in fg.symbols:
            node, qualname, kind, start, end = sym[0], sym[1], sym[2], sym[3], sym[4]
            nodes[node] = {
                "kind": kind,
                "path": path,
                "qualname": qualname,
                "start_line": start,
                "end_line": end,
            }
            parent = r.enclosing_class(path, qualname) if "." in qualname else None
            edges.append((parent or f"file:{path}", node, "DEFINES", "scope"))
    r.bind_imports(edges)
    for path, fg in files.items():
        for cls_qual, base in fg.bases:
            cls = r.qual[path].get(cls_qual)
            if not cls:
                continue
            target = r.resolve_base(path, base)
            if target and target != cls:
                r.bases[cls].append(target)
                edges.append((cls, target, "INHERITS", "resolved"))
            else:
                edges.append((cls, f"name:{base}", "INHERITS", "unresolved"))
    for path, fg in files.items():
        qual = r.qual[path]
        for caller_qual, name, recv, _line in fg.calls:
            src = qual.get(caller_qual, f"file:{path}") if caller_qual else f"file:{path}"
            dst, how = r.resolve_call(path, caller_qual, name, recv)
            if dst is None:
                dst, how = f"name:{name}", "unresolved"
            if dst != src:
                edges.append((src, dst, "CALLS", how))
    for src, dst, _, _ in edges:
        for node in (src, dst):
            if node not in nodes:
                kind, _, label = node.partition(":")
                nodes[node] = {"kind": kind, "name": label}
    return Resolved(nodes, list(dict.fromkeys(edges)))


def _python_module_names(path: str) -> list[str]:
    if not path.endswith((".py", ".pyi")):
        return []
    parts = path.rsplit(".", 1)[0].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts:
        return []
    names = [".".join(parts)]
    for i in range(1, min(len(parts), 3)):  # src/ layouts and sdist roots: a/src/pkg/mod.py
        names.append(".".join(parts[i:]))
    return names


def _absolute_module(path: str, spec: str) -> str:
    level = len(spec) - len(spec.lstrip("."))
    if level == 0:
        return spec
    package = path.rsplit(".", 1)[0].split("/")[:-1]  # a/b/c.py and a/b/__init__.py -> a.b
    if level > 1:
        package = package[: len(package) - (level - 1)]
    rest = spec[level:]
    return ".".join([*package, rest] if rest else package)


def _stem(path: str) -> str:
    return posixpath.basename(path).split(".", 1)[0]


# -- the stored graph ------------------------------------------------------------------------------


HOW = (
    "scope",
    "import",
    "self",
    "super",
    "class",
    "local",
    "package",
    "name",
    "resolved",
    "unresolved",
)
_NODE_COLUMNS = ("kind", "path", "qualname", "start_line", "end_line")


class CodeGraph:
    """The resolved graph: node columns plus an int32 edge array (src, dst, type, how) with
    CSR-style lookups by source and by destination. Loading it parses no per-file data;
    `files` (what an incremental update replaces) is read on first use."""

    def __init__(
        self,
        ids: list[str],
        columns: dict[str, list[Any]],
        edges: np.ndarray,
        files: dict[str, FileGraph] | None = None,
        files_path: Path | None = None,
    ) -> None:
        self.ids = ids
        self.columns = columns
        self.edges = edges
        self._files = files
        self._files_path = files_path
        self.index = {n: i for i, n in enumerate(ids)}
        self._by_src = np.argsort(edges[:, 0], kind="stable")
        self._by_dst = np.argsort(edges[:, 1], kind="stable")
        self._src_sorted = edges[self._by_src, 0]
        self._dst_sorted = edges[self._by_dst, 1]
        self.chunk_node: dict[str, str] = dict(columns.get("alias", {}))

    @classmethod
    def from_files(cls, files: dict[str, FileGraph]) -> CodeGraph:
        resolved = resolve(files)
        ids = list(resolved.nodes)
        index = {n: i for i, n in enumerate(ids)}
        nodes = [resolved.nodes[n] for n in ids]
        columns: dict[str, Any] = {
            "kind": [a["kind"] for a in nodes],
            "path": [a.get("path", "") for a in nodes],
            # name and module nodes keep their name where symbols keep their qualname
            "qualname": [a.get("qualname", a.get("name", "")) for a in nodes],
            "start_line": [a.get("start_line", 0) for a in nodes],
            "end_line": [a.get("end_line", 0) for a in nodes],
        }
        columns["alias"] = {
            cid: sym[0] for fg in files.values() for sym in fg.symbols for cid in sym[5][1:]
        }
        edges = np.asarray(
            [
                (index[a], index[b], EDGE_TYPES.index(t), HOW.index(h))
                for a, b, t, h in resolved.edges
            ],
            dtype=np.int32,
        ).reshape(-1, 4)
        return cls(ids, columns, edges, files)

    # -- persistence -------------------------------------------------------------------------------
    def save(self, directory: Path) -> None:
        meta = {"version": GRAPH_VERSION, "edge_types": EDGE_TYPES, "how": HOW, "ids": self.ids}
        meta.update(self.columns)
        (directory / GRAPH_FILE).write_text(
            json.dumps(meta, ensure_ascii=False, separators=(",", ":")), encoding="utf-8"
        )
        np.save(directory / GRAPH_EDGES, self.edges)
        (directory / GRAPH_FILES).write_text(
            json.dumps(
                {p: fg.to_dict() for p, fg in sorted(self.files.items())},
                ensure_ascii=False,
                separators=(",", ":"),
            ),
            encoding="utf-8",
        )

    @classmethod
    def load(cls, snapshot: Path) -> CodeGraph:
        path = snapshot / GRAPH_FILE
        if not path.is_file():
            raise IndexerError("this index has no code graph; run `indexer build` to add it")
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
            edges = np.load(snapshot / GRAPH_EDGES, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise CorruptIndexError(f"unreadable code graph {path}; run `indexer build`") from exc
        if not isinstance(meta, dict) or meta.get("version") != GRAPH_VERSION:
            raise CorruptIndexError("the code graph has an unknown format; run `indexer build`")
        if edges.ndim != 2 or edges.shape[1] != 4:
            raise CorruptIndexError("the code graph edges are malformed; run `indexer build`")
        columns = {c: meta[c] for c in (*_NODE_COLUMNS, "alias")}
        return cls(meta["ids"], columns, edges, files_path=snapshot / GRAPH_FILES)

    @property
    def files(self) -> dict[str, FileGraph]:
        if self._files is None:
            assert self._files_path is not None
            raw = json.loads(self._files_path.read_text(encoding="utf-8"))
            self._files = {p: FileGraph.from_dict(p, d) for p, d in raw.items()}
        return self._files

    def replace_files(self, changed: dict[str, FileGraph | None]) -> CodeGraph:
        """A new graph with some files' contributions replaced (None: the file was deleted);
        the global resolution reruns, no other file is parsed again."""
        files = dict(self.files)
        for path, fg in changed.items():
            if fg is None:
                files.pop(path, None)
            else:
                files[path] = fg
        return CodeGraph.from_files(files)

    def to_networkx(self) -> Any:
        """A networkx MultiDiGraph (node attributes and typed edges) for graph algorithms."""
        import networkx as nx

        g = nx.MultiDiGraph()
        for i, node in enumerate(self.ids):
            g.add_node(node, **self.node(node), index=i)
        for src, dst, etype, how in self.edges.tolist():
            g.add_edge(self.ids[src], self.ids[dst], type=EDGE_TYPES[etype], how=HOW[how])
        return g

    # -- queries -----------------------------------------------------------------------------------
    def node(self, node: str) -> dict[str, Any]:
        i = self.index[node]
        return {c: self.columns[c][i] for c in _NODE_COLUMNS}

    def _edges(self, node: str, outgoing: bool) -> np.ndarray:
        i = self.index.get(node)
        if i is None:
            return np.zeros((0, 4), dtype=np.int32)
        keys, order = (
            (self._src_sorted, self._by_src) if outgoing else (self._dst_sorted, self._by_dst)
        )
        lo, hi = np.searchsorted(keys, i, "left"), np.searchsorted(keys, i, "right")
        result: np.ndarray = self.edges[order[lo:hi]]
        return result

    def out_edges(self, node: str) -> list[tuple[str, str, str]]:
        """(destination, edge type, how it was resolved) of the edges leaving `node`."""
        return [
            (self.ids[d], EDGE_TYPES[t], HOW[h]) for _, d, t, h in self._edges(node, True).tolist()
        ]

    def in_edges(self, node: str) -> list[tuple[str, str, str]]:
        """(source, edge type, how it was resolved) of the edges reaching `node`."""
        return [
            (self.ids[s], EDGE_TYPES[t], HOW[h]) for s, _, t, h in self._edges(node, False).tolist()
        ]

    def find(self, key: str) -> list[str]:
        """Nodes for a chunk id, `path::qualname`, a qualname, a symbol name or a file path."""
        if key in self.chunk_node:
            return [self.chunk_node[key]]
        kinds, quals, paths = self.columns["kind"], self.columns["qualname"], self.columns["path"]
        if key in self.index and kinds[self.index[key]] in _SYMBOL_KINDS:
            return [key]
        if f"file:{key}" in self.index:
            return [f"file:{key}"]
        symbols = [i for i, k in enumerate(kinds) if k in _SYMBOL_KINDS]
        if "::" in key:
            path, _, qualname = key.partition("::")
            return [self.ids[i] for i in symbols if paths[i] == path and quals[i] == qualname]
        exact = [self.ids[i] for i in symbols if quals[i] == key]
        if exact:
            return exact
        return [self.ids[i] for i in symbols if quals[i].rsplit(".", 1)[-1] == key]

    def neighbours(
        self, node: str, direction: str, depth: int = 1, edge_types: tuple[str, ...] = ("CALLS",)
    ) -> list[tuple[str, int, str]]:
        """(node, distance, how) reached by following edges out (callees) or in (callers)."""
        wanted = {EDGE_TYPES.index(t) for t in edge_types}
        outgoing = direction == "callees"
        seen = {node: 0}
        found: list[tuple[str, int, str]] = []
        queue = deque([node])
        while queue:
            current = queue.popleft()
            dist = seen[current]
            if dist >= depth:
                continue
            for s, d, t, h in self._edges(current, outgoing).tolist():
                other = self.ids[d if outgoing else s]
                if t not in wanted or other in seen:
                    continue
                seen[other] = dist + 1
                found.append((other, dist + 1, HOW[h]))
                if not other.startswith(("name:", "module:")):
                    queue.append(other)
        return found


def build_graph(items: Iterable[tuple[str, str, bytes, Sequence[Chunk]]]) -> CodeGraph:
    """(path, language, data, chunks of that file) for every indexed file -> the graph."""
    files: dict[str, FileGraph] = {}
    for path, language, data, chunks in items:
        files[path] = _safe_extract(path, language, data, _symbols_from_chunks(chunks))
    return CodeGraph.from_files(files)


def _safe_extract(path: str, language: str, data: bytes, symbols: list[list[Any]]) -> FileGraph:
    try:
        return _extract(path, language, data, symbols)
    except Exception:  # a grammar edge case must not break the build: keep the definitions
        return FileGraph(path, language, symbols=symbols)


@cache
def _repo(path: str) -> Any:
    import pygit2

    return pygit2.Repository(path)


def _extract_batch(repo_path: str, batch: list[tuple[str, str, str, list[list[Any]]]]) -> list[Any]:
    """Worker: read blobs from git and extract (parsing dominates a build's graph time)."""
    repo = _repo(repo_path)
    out = []
    for path, language, blob, symbols in batch:
        data = bytes(repo[blob].data) if language in SPECS else b""
        fg = _safe_extract(path, language, data, symbols)
        fg.blob = blob
        out.append(fg)
    return out


def write_graph(
    directory: Path,
    repo_path: str,
    files: Sequence[str],
    blob_of: dict[str, str],
    chunks: Sequence[Chunk],
    jobs: int | None = None,
    base: Path | None = None,
) -> CodeGraph:
    """Build the graph of the indexed files (blobs read from git, in `jobs` processes) and
    write graph.json, graph_edges.npy and graph_files.json into `directory`.

    With `base` (a previous snapshot directory), a file whose path and blob are unchanged
    reuses its stored contribution: only changed files are parsed, then names are resolved
    again globally (cheap)."""
    import os

    from ..source.languages import detect_language

    previous: dict[str, FileGraph] = {}
    if base is not None and (base / GRAPH_FILES).is_file():
        try:
            raw = json.loads((base / GRAPH_FILES).read_text(encoding="utf-8"))
            previous = {p: FileGraph.from_dict(p, d) for p, d in raw.items()}
        except (OSError, ValueError, KeyError):
            previous = {}  # unusable: parse everything
    by_path: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_path.setdefault(c.path, []).append(c)
    items = []
    results: list[FileGraph] = []
    for path in files:  # every indexed file, even an empty __init__.py (a package)
        old = previous.get(path)
        if old is not None and old.blob and old.blob == blob_of[path]:
            results.append(old)
            continue
        file_chunks = by_path.get(path, [])
        # A notebook's first chunk may be markdown: its code cells' language is the file's.
        languages = [c.language for c in file_chunks if c.language in SPECS] or [
            c.language for c in file_chunks
        ]
        language = languages[0] if languages else detect_language(path) or ""
        items.append((path, language, blob_of[path], _symbols_from_chunks(file_chunks)))
    jobs = jobs or min(os.cpu_count() or 1, 8)
    batches = [items[i : i + 32] for i in range(0, len(items), 32)]
    if jobs <= 1 or len(items) < 200:
        for batch in batches:
            results.extend(_extract_batch(repo_path, batch))
    else:
        from joblib import delayed

        from .workers import parallel

        for part in parallel(jobs, batch_size=1)(
            delayed(_extract_batch)(repo_path, b) for b in batches
        ):
            results.extend(part)
    results.sort(key=lambda fg: fg.path)
    graph = CodeGraph.from_files({fg.path: fg for fg in results})
    graph.save(directory)
    save_rank_arrays(directory, graph, chunks)  # `chunks` come in snapshot row order
    return graph


MAX_DEPTH = 5
MAX_MATCHES = 10


def related(
    index: Any, key: str, direction: str = "both", depth: int = 1, limit: int = 50
) -> list[dict[str, Any]]:
    """For each symbol `key` names (at most 10): its callers and/or callees up to `depth`,
    as records with chunk ids `show` accepts; unresolved callees appear as bare names."""
    if direction not in ("callers", "callees", "both"):
        raise IndexerError(f"direction must be callers, callees or both, not {direction!r}")
    if not 1 <= depth <= MAX_DEPTH:
        raise IndexerError(f"depth must be between 1 and {MAX_DEPTH}")
    if limit < 1:
        raise IndexerError("limit must be at least 1")
    key = key.strip()
    if not key:
        raise IndexerError("name a symbol or a chunk id")
    graph: CodeGraph = index.graph
    matches = graph.find(key)
    if not matches:
        raise IndexerError(f"no symbol or chunk named {key!r} in the code graph")
    out: list[dict[str, Any]] = []
    for node in matches[:MAX_MATCHES]:
        entry: dict[str, Any] = {"symbol": _record(index, graph, node)}
        for way in ("callers", "callees"):
            if direction in (way, "both"):
                found = graph.neighbours(node, way, depth)
                entry[way] = [
                    {**_record(index, graph, other), "depth": dist, "how": how}
                    for other, dist, how in found[:limit]
                ]
                if len(found) > limit:
                    entry[f"{way}_omitted"] = len(found) - limit
        out.append(entry)
    return out


def _record(index: Any, graph: CodeGraph, node: str) -> dict[str, Any]:
    attrs = graph.node(node)
    kind = attrs["kind"]
    if kind in _SYMBOL_KINDS:
        record = {"id": node, **attrs}
        try:
            chunk = index.show(node)
        except IndexerError:  # graph and chunks always agree, but never fail a lookup on it
            record["signature"] = ""
            return record
        record["signature"] = chunk.signature
        if chunk.cell is not None:
            record["cell"] = chunk.cell  # notebook: start_line/end_line are within the cell
        return record
    if kind == "file":
        return {"id": node, "kind": "file", "path": attrs["path"], "name": attrs["path"]}
    return {"id": node, "kind": kind, "name": attrs["qualname"], "resolved": False}


def graph_for_index(index: Any, jobs: int = 1) -> CodeGraph:
    """The graph of an index built before graph.json existed (benchmarks, old snapshots)."""
    import tempfile

    chunks: list[Chunk] = []
    with (index.snapshot / "chunks.jsonl").open("rb") as fh:
        chunks = [Chunk(**json.loads(line), text="") for line in fh]
    files = [f["path"] for f in index.files]
    blob_of = {f["path"]: f["blob"] for f in index.files}
    with tempfile.TemporaryDirectory() as tmp:
        return write_graph(Path(tmp), index.manifest["repo_root"], files, blob_of, chunks, jobs)


# -- graph in ranking (off by default: see docs/agents.md for the measurements) -----------------

_RANK_EDGES = ("CALLS", "IMPORTS", "INHERITS", "DEFINES")


GRAPH_ROWS = "graph_rows.npy"  # int32 node of each chunk row (its symbol, else its file)
GRAPH_ADJ = ("graph_adj_indptr.npy", "graph_adj_indices.npy")  # CSR, undirected, ranking edges


def rank_arrays(graph: CodeGraph, chunks: Sequence[Chunk]) -> tuple[np.ndarray, ...]:
    """What ranking needs, precomputed at build time so a search never parses graph.json:
    the node of every chunk row and the symmetric adjacency (CSR) between repository nodes
    (name:/module: hubs would link everything that calls `len`)."""
    kinds = graph.columns["kind"]
    rows = np.full(len(chunks), -1, dtype=np.int32)
    for i, c in enumerate(chunks):
        node = graph.chunk_node.get(c.id, c.id)
        j = graph.index.get(node)
        if j is None or kinds[j] not in _SYMBOL_KINDS:
            j = graph.index.get(f"file:{c.path}", -1)
        rows[i] = j
    return (rows, *_adjacency(graph))


def rows_from_snapshot(graph: CodeGraph, directory: Path) -> np.ndarray | None:
    """The node of every row from the snapshot's own chunk_fids.npy, chunk_file.npy and
    files.json (an update hands write_graph only its fresh chunks); None if not written."""
    from .dense import faiss_id

    try:
        fids = np.load(directory / "chunk_fids.npy", allow_pickle=False)
        chunk_file = np.load(directory / "chunk_file.npy", allow_pickle=False)
        files = json.loads((directory / "files.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    kinds = graph.columns["kind"]
    pairs = [(nid, i) for i, nid in enumerate(graph.ids) if kinds[i] in _SYMBOL_KINDS]
    pairs += [(cid, graph.index[nid]) for cid, nid in graph.chunk_node.items()]
    keys = np.asarray([faiss_id(c) for c, _ in pairs], dtype=np.int64)
    values = np.asarray([i for _, i in pairs], dtype=np.int64)
    order = np.argsort(keys)
    keys, values = keys[order], values[order]
    file_nodes = np.asarray(
        [graph.index.get(f"file:{f['path']}", -1) for f in files], dtype=np.int64
    )
    rows = file_nodes[chunk_file] if len(chunk_file) else np.zeros(0, dtype=np.int64)
    if len(keys) and len(fids):
        pos = np.clip(np.searchsorted(keys, fids), 0, len(keys) - 1)
        hit = keys[pos] == fids
        rows = np.where(hit, values[pos], rows)
    return rows.astype(np.int32)


def _adjacency(graph: CodeGraph) -> tuple[np.ndarray, np.ndarray]:
    from scipy import sparse

    kinds = graph.columns["kind"]
    n = len(graph.ids)
    e = graph.edges
    real = np.asarray([k in _SYMBOL_KINDS or k == "file" for k in kinds], dtype=bool)
    wanted = np.isin(e[:, 2], [EDGE_TYPES.index(t) for t in _RANK_EDGES])
    keep = wanted & real[e[:, 0]] & real[e[:, 1]] if len(e) else wanted
    src, dst = e[keep, 0], e[keep, 1]
    adj = sparse.coo_matrix(
        (np.ones(2 * len(src), dtype=np.float32), (np.r_[src, dst], np.r_[dst, src])),
        shape=(n, n),
    ).tocsr()
    adj.sum_duplicates()
    return adj.indptr.astype(np.int64), adj.indices.astype(np.int32)


def save_rank_arrays(directory: Path, graph: CodeGraph, chunks: Sequence[Chunk]) -> None:
    """Rows from the snapshot being written when its chunk store is there (builds), else
    from `chunks` in row order (a standalone graph)."""
    rows = rows_from_snapshot(graph, directory)
    if rows is None:
        rows = rank_arrays(graph, chunks)[0]
    indptr, indices = _adjacency(graph)
    np.save(directory / GRAPH_ROWS, rows)
    np.save(directory / GRAPH_ADJ[0], indptr)
    np.save(directory / GRAPH_ADJ[1], indices)


class GraphRanker:
    """Row -> node map and the transition matrix for PageRank (from the build's arrays, or
    computed from the graph for older snapshots); the graph itself only for expand/file_boost."""

    def __init__(self, index: Any, from_graph: bool = False) -> None:
        """`from_graph`: compute the arrays from `index.graph` even if the snapshot has them
        (benchmarks attach graphs from a newer resolver)."""
        self.index = index
        n_rows = len(index)
        snapshot: Path = index.snapshot
        stored = all((snapshot / f).is_file() for f in (GRAPH_ROWS, *GRAPH_ADJ))
        if stored and not from_graph:
            row_node = np.load(snapshot / GRAPH_ROWS, allow_pickle=False)
            indptr = np.load(snapshot / GRAPH_ADJ[0], allow_pickle=False)
            indices = np.load(snapshot / GRAPH_ADJ[1], allow_pickle=False)
        else:
            chunks = [index.chunk_at(i, with_text=False) for i in range(n_rows)]
            row_node, indptr, indices = rank_arrays(index.graph, chunks)
        if len(row_node) != n_rows:
            raise CorruptIndexError("the code graph does not match the chunks; run `indexer build`")
        self.row_node = row_node.astype(np.int64)
        # Plain numpy (scipy.sparse alone costs ~50-90 ms of import on a cold search).
        self.n_nodes = len(indptr) - 1
        degree = np.diff(indptr)
        self.inv_degree = 1.0 / np.maximum(degree, 1).astype(np.float64)
        self.neighbours = indices.astype(np.int64)
        self.owner = np.repeat(np.arange(self.n_nodes), degree)

    @cached_property
    def graph(self) -> CodeGraph:
        graph: CodeGraph = self.index.graph
        return graph

    @cached_property
    def node_rows(self) -> dict[int, list[int]]:
        kinds = self.graph.columns["kind"]
        out: dict[int, list[int]] = {}
        for row, node in enumerate(self.row_node.tolist()):
            if node >= 0 and kinds[node] != "file":
                out.setdefault(node, []).append(row)
        return out

    @cached_property
    def file_of_node(self) -> np.ndarray:
        g = self.graph
        return np.asarray(
            [g.index.get(f"file:{p}", -1) if p else -1 for p in g.columns["path"]],
            dtype=np.int64,
        )

    def ppr(self, seeds: dict[int, float], alpha: float = 0.5, iterations: int = 12) -> np.ndarray:
        """Personalised PageRank (restart probability 1 - alpha) from weighted seed nodes."""
        s = np.zeros(self.n_nodes, dtype=np.float64)
        for node, w in seeds.items():
            s[node] += w
        total = s.sum()
        if total <= 0:
            return s
        s /= total
        p = s.copy()
        for _ in range(iterations):
            # (A D^-1 p)[i] = sum over neighbours j of p[j] / degree[j]; A is symmetric.
            spread = np.bincount(
                self.owner,
                weights=(p * self.inv_degree)[self.neighbours],
                minlength=self.n_nodes,
            )
            p = (1 - alpha) * s + alpha * spread
        return p


def graph_rerank(
    index: Any,
    rows: np.ndarray,
    scores: np.ndarray,
    similarity: np.ndarray,
    cfg: dict[str, float],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Apply the enabled graph signals to a ranked candidate list (sorted by score):

    expand      callers/callees of the top `seeds` results join at expand x the seed's score
    ppr         score x (1 + ppr x PageRank from the top results, normalised to [0, 1])
    file_boost  score x (1 + file_boost x log1p(edges from the top results into the file))
    """
    ranker: GraphRanker | bool | None = getattr(index, "_graph_ranker", None)
    if ranker is None:
        try:
            ranker = GraphRanker(index)
        except IndexerError:  # a snapshot without a graph ranks as before, never fails
            ranker = False
        index._graph_ranker = ranker
    if not isinstance(ranker, GraphRanker):
        return rows, scores, similarity
    n_seeds = max(1, int(cfg.get("seeds", 5)))
    rows = rows.copy()
    scores = scores.astype(np.float64).copy()
    seed_nodes = {
        int(ranker.row_node[r]): float(s)
        for r, s in zip(rows[:n_seeds].tolist(), scores[:n_seeds].tolist(), strict=True)
        if ranker.row_node[r] >= 0
    }
    if cfg.get("file_boost", 0) > 0 and seed_nodes:
        pointed: dict[int, int] = {}
        for node in list(seed_nodes)[: 2 * n_seeds]:
            out = ranker.graph._edges(ranker.graph.ids[node], True)
            for dst, etype in out[:, [1, 2]].tolist():
                if etype in (EDGE_TYPES.index("CALLS"), EDGE_TYPES.index("IMPORTS")):
                    f = int(ranker.file_of_node[dst])
                    if f >= 0:
                        pointed[f] = pointed.get(f, 0) + 1
        if pointed:
            files = ranker.file_of_node[np.maximum(ranker.row_node[rows], 0)]
            boost = np.asarray([pointed.get(int(f), 0) for f in files.tolist()], dtype=np.float64)
            boost[ranker.row_node[rows] < 0] = 0
            scores *= 1.0 + float(cfg["file_boost"]) * np.log1p(boost)
    if cfg.get("ppr", 0) > 0 and seed_nodes:
        p = ranker.ppr(seed_nodes)
        nodes = ranker.row_node[rows]
        values = np.where(nodes >= 0, p[np.maximum(nodes, 0)], 0.0)
        top = values.max(initial=0.0)
        if top > 0:
            scores *= 1.0 + float(cfg["ppr"]) * values / top
    if cfg.get("expand", 0) > 0 and seed_nodes:
        present = set(rows.tolist())
        added: dict[int, float] = {}
        for node, seed_score in seed_nodes.items():
            if ranker.graph.columns["kind"][node] == "file":
                continue
            node_id = ranker.graph.ids[node]
            for way in ("callers", "callees"):
                for other, _, _ in ranker.graph.neighbours(node_id, way, 1):
                    for r in ranker.node_rows.get(ranker.graph.index[other], [])[:1]:
                        if r not in present:
                            added[r] = max(added.get(r, 0.0), float(cfg["expand"]) * seed_score)
        if added:
            rows = np.r_[rows, np.fromiter(added, dtype=np.int64, count=len(added))]
            scores = np.r_[scores, np.fromiter(added.values(), dtype=np.float64)]
            similarity = np.r_[similarity, np.zeros(len(added), dtype=similarity.dtype)]
    order = np.argsort(-scores, kind="stable")
    return rows[order], scores[order], similarity[order]
