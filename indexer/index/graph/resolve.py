"""Name resolution over per-file facts, lazily: a file's imports, tables and class bases are
worked out the first time something asks for them, so answering one question costs what that
question touches, not what the repository holds.

It binds imported names to repository files and symbols (relative and aliased imports, re-exports
and `*` imports included), resolves call sites through local definitions, imports, class scope,
`self.`/`this.` and base classes, Go packages and Java packages, and falls back to a name defined
exactly once in the repository. Python, JavaScript/TypeScript, Go and Java get that resolution; the
other chunked languages resolve call names by name only. The same code serves the query-time
answers (`related`) and the whole resolved graph (ranking, export), so the two always agree.
"""

from __future__ import annotations

import posixpath
from typing import Any

from .imports import Binding, FactSource, Imports
from .model import RESOLVED_LANGUAGES, short_name
from .names import distinctive as is_distinctive
from .names import stem


class Resolver:
    def __init__(self, source: FactSource) -> None:
        self.source = source
        self.imports = Imports(source)
        self.paths, self.dirs = self.imports.paths, self.imports.dirs
        self.bindings, self.stars = self.imports.bindings, self.imports.stars
        self.import_target = self.imports.target
        self.kind: dict[str, str] = {}  # symbol node -> kind, for the files loaded so far
        self.sym_path: dict[str, str] = {}
        self.sym_qual: dict[str, str] = {}
        self.sym_row: dict[str, list[Any]] = {}
        self._top: dict[str, dict[str, str]] = {}  # path -> top-level name -> node
        self._qual: dict[str, dict[str, str]] = {}  # path -> qualname -> node
        self._bases: dict[str, list[str]] = {}  # class node -> base class nodes
        self._base_rows: dict[str, list[tuple[str, str | None, str]]] = {}
        # Bases are resolved without following bases (so the result does not depend on the order
        # files are visited); everything else follows them. Caches are kept per mode.
        self._follow_bases = True
        self._symbol_cache: dict[tuple[bool, str, str], str | None] = {}
        self._unique: dict[tuple[str, bool], str | None] = {}

    # -- per-file tables (loaded on first use) ---------------------------------------------------
    def _load(self, path: str) -> None:
        top: dict[str, str] = {}
        qual: dict[str, str] = {}
        for sym in self.source.head(path).symbols:
            node, qualname = sym[0], sym[1]
            qual[qualname] = node
            self.kind[node] = sym[2]
            self.sym_path[node] = path
            self.sym_qual[node] = qualname
            self.sym_row[node] = sym
            if "." not in qualname:
                top[qualname] = node
        self._top[path] = top
        self._qual[path] = qual

    def top(self, path: str) -> dict[str, str]:
        if path not in self._top:
            self._load(path)
        return self._top[path]

    def qual(self, path: str) -> dict[str, str]:
        if path not in self._qual:
            self._load(path)
        return self._qual[path]

    # -- names -----------------------------------------------------------------------------------
    def symbol_in(self, target: str, name: str, depth: int = 0) -> str | None:
        """Top-level `name` defined in file `target`, following re-exports a few hops."""
        key = (self._follow_bases, target, name)
        if key not in self._symbol_cache:
            self._symbol_cache[key] = self._symbol_in(target, name, depth)
        return self._symbol_cache[key]

    def _symbol_in(self, target: str, name: str, depth: int) -> str | None:
        if target in self.paths:
            node = self.top(target).get(name)
            if node:
                return node
            binding = self.bindings(target).get(name)
            if binding and depth < 3:
                return self.binding_node(binding, depth + 1)
            for star in self.stars(target):
                if depth < 3:
                    node = self.symbol_in(star, name, depth + 1)
                    if node:
                        return node
            return None
        for path in self.dirs.get(target, []):  # Go/Java: a directory (package)
            node = self.top(path).get(name)
            if node:
                return node
        return None

    def binding_node(self, binding: Binding, depth: int = 0) -> str | None:
        kind, value = binding
        if kind == "symbol":
            target, _, name = value.partition("\0")
            if target in self.paths or target in self.dirs:
                top = self.top(target) if target in self.paths else {}
                if target.endswith(".java") and name not in top:
                    return self.method_in_class(top.get(stem(target)), name)
                return self.symbol_in(target, name, depth)
        if kind == "default":
            top = self.top(value) if value in self.paths else {}
            name = self.source.head(value).default or stem(value)
            return top.get(name) or (next(iter(top.values())) if len(top) == 1 else None)
        return None

    def method_in_class(self, cls: str | None, name: str, depth: int = 0) -> str | None:
        if cls is None or depth > 6:
            return None
        node = self.qual(self.sym_path[cls]).get(f"{self.sym_qual[cls]}.{name}")
        if node:
            return node
        if not self._follow_bases:
            return None
        for base in self.bases_of(cls):
            node = self.method_in_class(base, name, depth + 1)
            if node:
                return node
        return None

    def resolve_name(self, path: str, name: str, caller: str) -> tuple[str | None, str]:
        """A bare name used in `path`: (node, how) or (None, '')."""
        language = self.source.language(path)
        if language == "java" and caller:
            cls = self.enclosing_class(path, caller)
            node = self.method_in_class(cls, name) if cls else None
            if node:
                return node, "class"
        node = self.top(path).get(name)
        if node:
            return node, "local"
        binding = self.bindings(path).get(name)
        if binding:
            if binding[0] == "module":
                return f"file:{binding[1]}", "import"
            node = self.binding_node(binding)
            return (node, "import") if node else (None, "")
        if language in ("go", "java"):
            for other in self.dirs.get(posixpath.dirname(path), []):
                node = self.top(other).get(name)
                if node:
                    return node, "package"
        for star in self.stars(path):
            node = self.symbol_in(star, name)
            if node:
                return node, "import"
        return None, ""

    def enclosing_class(self, path: str, caller: str) -> str | None:
        qual = self.qual(path)
        parts = caller.split(".")
        for i in range(len(parts) - 1, 0, -1):
            node = qual.get(".".join(parts[:i]))
            if node and self.kind.get(node) == "class":
                return node
        return None

    def resolve_call(self, path: str, caller: str, name: str, recv: str) -> tuple[str | None, str]:
        language = self.source.language(path)
        if language not in RESOLVED_LANGUAGES:
            return self.unique(name)
        if recv in ("self", "super"):
            cls = self.enclosing_class(path, caller)
            if cls:
                if recv == "self":
                    node = self.method_in_class(cls, name)
                else:
                    found = (self.method_in_class(b, name) for b in self.bases_of(cls))
                    node = next((n for n in found if n), None)
                if node:
                    return node, recv
            return self.unique(name, methods_only=True)
        if recv == "":
            node, how = self.resolve_name(path, name, caller)
            return (node, how) if node else self.unique(name)
        if recv == "?":
            return self.unique(name, methods_only=True, distinctive=True)
        bindings = self.bindings(path)
        binding = bindings.get(recv)
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
            cls = self.top(path).get(recv)
            if cls is None and language in ("java", "go"):
                cls, _ = self.resolve_name(path, recv, caller)
            if cls and self.kind.get(cls) == "class":
                node = self.method_in_class(cls, name)
                if node:
                    return node, "local"
        elif head in bindings and bindings[head][0] == "external":
            return None, ""
        return self.unique(name, methods_only=True, distinctive=True)

    def caller_node(self, path: str, caller: str) -> str:
        """The node a call site in `path` made by `caller` (a qualname, "" = module) leaves."""
        return self.qual(path).get(caller, f"file:{path}") if caller else f"file:{path}"

    def call_edge(self, path: str, caller: str, name: str, recv: str) -> tuple[str, str, str]:
        """(source node, destination node, how) of one call site; an unresolved call points at
        `name:NAME`."""
        src = self.caller_node(path, caller)
        dst, how = self.resolve_call(path, caller, name, recv)
        if dst is None:
            return src, f"name:{name}", "unresolved"
        return src, dst, how

    def unique(
        self, name: str, methods_only: bool = False, distinctive: bool = False
    ) -> tuple[str | None, str]:
        """Resolve by name when exactly one definition in the repository has it. On an object
        of unknown type (`distinctive`), only names no builtin type or common library uses."""
        if distinctive and not is_distinctive(name):
            return None, ""
        key = (name, methods_only)
        if key not in self._unique:
            self._unique[key] = self._unique_node(name, methods_only)
        node = self._unique[key]
        return (node, "name") if node else (None, "")

    def _unique_node(self, name: str, methods_only: bool) -> str | None:
        defs = self.source.definitions(name)
        if methods_only:
            defs = [d for d in defs if d[1] != "class"]
        if len(defs) != 1:
            return None
        path = defs[0][0]
        for qualname, node in self.qual(path).items():
            if short_name(qualname) == name and not (methods_only and self.kind[node] == "class"):
                return node
        return None

    # -- inheritance -----------------------------------------------------------------------------
    def bases_of(self, cls: str) -> list[str]:
        self.base_rows(self.sym_path[cls])
        return self._bases.get(cls, [])

    def base_rows(self, path: str) -> list[tuple[str, str | None, str]]:
        """(class node, base class node or None, base as written) for the classes of `path`."""
        rows = self._base_rows.get(path)
        if rows is not None:
            return rows
        rows = []
        follow, self._follow_bases = self._follow_bases, False
        try:
            for cls_qual, base in self.source.head(path).bases:
                cls = self.qual(path).get(cls_qual)
                if not cls:
                    continue
                target = self.resolve_base(path, base)
                if target and target != cls:
                    self._bases.setdefault(cls, []).append(target)
                    rows.append((cls, target, base))
                else:
                    rows.append((cls, None, base))
        finally:
            self._follow_bases = follow
        self._base_rows[path] = rows
        return rows

    def resolve_base(self, path: str, base: str) -> str | None:
        base = base.split("<", 1)[0].split("[", 1)[0]
        if "." in base:
            head, _, name = base.rpartition(".")
            binding = self.bindings(path).get(head)
            if binding and binding[0] in ("module", "package"):
                return self.symbol_in(binding[1], name)
            return None
        node, _ = self.resolve_name(path, base, "")
        if node and self.kind.get(node) == "class":
            return node
        node, _ = self.unique(base)
        return node if node and self.kind.get(node) == "class" else None
