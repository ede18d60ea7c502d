"""`related`: callers and callees resolved at query time from per-file facts and the name index.

No resolved graph is stored. A symbol's callees are its own file's call sites, resolved; its
callers are the call sites whose name could reach it (its name and every alias an import chain
gives it, found in the name index), resolved and kept when they land on it. Answers (order
included) equal those of the whole resolved graph (codegraph.py): edges in file path order, then
call-site order, the first way an edge was resolved wins.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any

from ...errors import IndexerError
from .fact_view import FactsView
from .facts import module_tokens
from .model import JS_LANGUAGES, RESOLVED_LANGUAGES, SYMBOL_KINDS, FileGraph, short_name, walk
from .names import stem
from .resolve import Resolver

MAX_DEPTH = 5
MAX_MATCHES = 10
FAMILY_LIMIT = 64  # classes: a wider hierarchy costs more to find than the call sites it skips


class GraphQuery:
    """Graph questions over a FactsView; what it resolves is kept for the next question."""

    def __init__(self, view: FactsView) -> None:
        self.view = view
        self.r = Resolver(view)
        self._callers: dict[str, list[tuple[str, str]]] = {}
        self._callees: dict[str, list[tuple[str, str]]] = {}
        self._families: dict[str, set[str] | None] = {}

    # -- nodes -----------------------------------------------------------------------------------
    def find(self, key: str) -> list[str]:
        """Nodes for a chunk id, a file path, `path::qualname`, a qualname or a symbol name."""
        for path in self.view.files_with("k", [key]):
            for sym in self.view.head(path).symbols:
                if key in sym[5][1:]:
                    return [sym[0]]
        for path in self.view.files_with("k", [key]):
            if key in self.r.qual(path).values():
                return [key]
        if key in self.r.paths or self._is_package(key):
            return [f"file:{key}"]
        if "::" in key:
            path, _, qualname = key.partition("::")
            node = self.r.qual(path).get(qualname) if path in self.r.paths else None
            return [node] if node else []
        exact = self._symbols("q", key, lambda q: q == key)
        return exact or self._symbols("d", key, lambda q: short_name(q) == key)

    def _symbols(self, tag: str, name: str, keep: Any) -> list[str]:
        return [
            node
            for path in self.view.files_with(tag, [name])
            for qualname, node in self.r.qual(path).items()
            if keep(qualname)
        ]

    def _is_package(self, directory: str) -> bool:
        """A Go/Java import names this directory (so the whole graph has a node for it)."""
        if directory not in self.r.dirs:
            return False
        for path in self.view.files_with("g", [posixpath.basename(directory)]):
            fg = self.view.head(path)
            if any(self.r.import_target(fg, spec) == directory for spec, _, _ in fg.imports):
                return True
        return False

    def _is_symbol(self, node: str) -> bool:
        """Whether `node` is a definition (its file's tables are then loaded)."""
        if node not in self.r.sym_path and not node.startswith(("file:", "name:", "module:")):
            for path in self.view.files_with("k", [node]):
                self.r.qual(path)
        return node in self.r.sym_path

    def node(self, node: str) -> dict[str, Any]:
        """kind, path, qualname (a name or module node: its name), start_line, end_line."""
        kind, _, label = node.partition(":")
        if self._is_symbol(node):
            sym = self.r.sym_row[node]
            path = self.r.sym_path[node]
            return {"kind": sym[2], "path": path, "qualname": sym[1]} | {
                "start_line": sym[3],
                "end_line": sym[4],
            }
        if kind == "file" and label in self.r.paths:
            return {"kind": "file", "path": label, "qualname": "", "start_line": 0, "end_line": 0}
        return {"kind": kind, "path": "", "qualname": label, "start_line": 0, "end_line": 0}

    # -- edges -----------------------------------------------------------------------------------
    def callees(self, node: str) -> list[tuple[str, str]]:
        """(destination, how) of the CALLS edges leaving `node`, in edge order."""
        if node not in self._callees:
            self._callees[node] = self._find_callees(node)
        return self._callees[node]

    def _find_callees(self, node: str) -> list[tuple[str, str]]:
        if self._is_symbol(node):
            path = self.r.sym_path[node]
        elif node.startswith("file:") and node[5:] in self.r.paths:
            path = node[5:]
        else:
            return []
        out: dict[tuple[str, str], None] = {}
        for caller, name, recv, _ in self.view.file(path).calls:
            if self.r.caller_node(path, caller) == node:
                _, dst, how = self.r.call_edge(path, caller, name, recv)
                if dst != node:
                    out[(dst, how)] = None
        return list(out)

    def callers(self, node: str) -> list[tuple[str, str]]:
        """(source, how) of the CALLS edges reaching `node`, in edge order."""
        if node not in self._callers:
            self._callers[node] = self._find_callers(node)
        return self._callers[node]

    def _find_callers(self, node: str) -> list[tuple[str, str]]:
        if self._is_symbol(node):
            names = self._aliases(node)
            candidates = self.view.files_with("c", names)
            bare_only = False
        elif node.startswith("file:") and node[5:] in self.r.paths:
            # only a bare call of a name bound to the module itself reaches a file
            candidates = self.view.files_with("m", module_tokens(node[5:]))
            names, bare_only = set(), True
        else:
            return []
        out: dict[tuple[str, str], None] = {}
        method = not bare_only and "." in self.r.sym_qual[node]
        if method and not any(self._unique_anyhow(name) == node for name in names):
            candidates = self._method_callers_files(node, candidates)
        for path in candidates:
            fg = self.view.head(path)
            bound = _bound_names(fg) if method and fg.language != "java" else None
            calls = self.view.file(path).calls if bare_only else self.view.calls_named(path, names)
            for caller, name, recv, _ in calls:
                if bare_only and recv != "":
                    continue
                if bound is not None and not self._may_reach_method(
                    node, fg, bound, caller, name, recv
                ):
                    continue
                src, dst, how = self.r.call_edge(path, caller, name, recv)
                if dst == node and src != node:
                    out[(src, how)] = None
        return list(out)

    def _may_reach_method(
        self, node: str, fg: FileGraph, bound: set[str], caller: str, name: str, recv: str
    ) -> bool:
        """False when a call site outside Java cannot resolve to the method `node`, decided
        without resolving it. Outside Java a bare name, an import or a module member resolves to
        top-level definitions only (a JS import would have to name a `.java` file to reach a
        method); `self`/`super` and a class receiver reach `node` only from its class or a
        subclass; everything else only by `node`'s name being unique in the repository."""
        if fg.language not in RESOLVED_LANGUAGES or recv == "":
            return self.r.unique(name)[0] == node
        if recv == "?" or fg.language == "go":
            return fg.language == "go" or self._unique_method(name) == node
        if recv in ("self", "super"):
            cls = self.r.enclosing_class(fg.path, caller)
            family = self._family(node)
            if cls is not None and (family is None or cls in family):
                return True
            return self.r.unique(name, methods_only=True)[0] == node
        if recv in bound or recv.split(".", 1)[0] in bound:
            return True
        cls = self.r.top(fg.path).get(recv)
        if cls is not None and self.r.kind.get(cls) == "class":
            family = self._family(node)
            if family is None or cls in family:
                return True
        return self._unique_method(name) == node

    def _unique_anyhow(self, name: str) -> str | None:
        """The definition `name` resolves to by being unique, with or without classes."""
        return self.r.unique(name)[0] or self.r.unique(name, methods_only=True)[0]

    def _method_callers_files(self, method: str, candidates: list[str]) -> list[str]:
        """Of the files calling a method's name, those that can reach it when its name is not
        unique: Java and Go files, the files of its class and subclasses (`self`, `super`, a
        local class), and the files importing one of those classes (a class receiver)."""
        family = self._family(method)
        if family is None:
            return candidates
        allowed = {self.r.sym_path[c] for c in family}
        allowed.update(self.view.files_with("i", {n for c in family for n in self._aliases(c)}))
        return [p for p in candidates if p in allowed or self.view.language(p) in ("java", "go")]

    def _unique_method(self, name: str) -> str | None:
        return self.r.unique(name, methods_only=True, distinctive=True)[0]

    def _family(self, method: str) -> set[str] | None:
        """The class that defines `method` and every class inheriting from it, directly or not
        (their bases resolved exactly, found through the base names in the name index); None
        when it grows past FAMILY_LIMIT classes (then nothing is skipped on its account)."""
        if method in self._families:
            return self._families[method]
        parent = self.r.sym_qual[method].rsplit(".", 1)[0]
        owner = self.r.qual(self.r.sym_path[method]).get(parent)
        family: set[str] | None = set()
        if owner is not None and self.r.kind.get(owner) == "class":
            family = {owner}
            frontier = [owner]
            while frontier and family is not None:
                current = frontier.pop()
                for path in self.view.files_with("b", self._aliases(current)):
                    for sub, target, _ in self.r.base_rows(path):
                        if target == current and sub not in family:
                            family.add(sub)
                            frontier.append(sub)
                if len(family) > FAMILY_LIMIT:
                    family = None
        self._families[method] = family
        return family

    def _aliases(self, node: str) -> set[str]:
        """Every name a call can use to reach `node`: its own, and the names imports and
        re-exports bind it to (JS/TS: default imports, when it can be its file's default)."""
        names = {short_name(self.r.sym_qual[node])}
        if self._may_be_default(node):
            names.add("default")
        # Outside Java an imported name binds a top-level definition: a method is reached
        # through an import only by a Java static import.
        java_only = "." in self.r.sym_qual[node]
        frontier = set(names)
        while frontier:
            paths = self.view.files_with("a", frontier)  # an import that renames
            frontier = set()
            for path in paths:
                if java_only and self.view.language(path) != "java":
                    continue
                for _, name, alias in self.view.head(path).imports:
                    bound = alias or name
                    if name in names and bound not in names:
                        names.add(bound)
                        frontier.add(bound)
        return names

    def _may_be_default(self, node: str) -> bool:
        path = self.r.sym_path[node]
        if self.view.language(path) not in JS_LANGUAGES or "." in self.r.sym_qual[node]:
            return False
        top = self.r.top(path)
        name = self.view.head(path).default or stem(path)
        return top.get(name) == node or (name not in top and len(top) == 1)

    def neighbours(self, node: str, direction: str, depth: int = 1) -> list[tuple[str, int, str]]:
        """(node, distance, how) reached by following CALLS edges out (callees) or in (callers)."""
        return walk(node, depth, self.callees if direction == "callees" else self.callers)


def _bound_names(fg: FileGraph) -> set[str]:
    """Every name the file's imports may bind (a superset of its binding table's keys)."""
    out: set[str] = set()
    for spec, name, alias in fg.imports:
        out.update((alias, name, spec, spec.split(".", 1)[0]))
    return out


def graph_query(index: Any) -> GraphQuery:
    """The index's GraphQuery, made once per opened index (what it resolved stays cached)."""
    query = index.__dict__.get("_graph_query")
    if query is None:
        query = index.__dict__["_graph_query"] = GraphQuery(facts_view(index))
    return query  # type: ignore[no-any-return]


def facts_view(index: Any) -> FactsView:
    """The facts of an opened index: each live segment's directory (an in-memory segment: its
    facts) and the paths it no longer serves (`Index.graph_segments`)."""
    from .fact_files import FACTS_META

    segments = index.graph_segments()
    if not all(not isinstance(d, Path) or (d / FACTS_META).is_file() for d, _ in segments):
        raise IndexerError("this index has no code graph; run `indexer build` to add it")
    return FactsView(segments)


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
    query = graph_query(index)
    matches = query.find(key)
    if not matches:
        raise IndexerError(f"no symbol or chunk named {key!r} in the code graph")
    out: list[dict[str, Any]] = []
    for node in matches[:MAX_MATCHES]:
        entry: dict[str, Any] = {"symbol": _record(index, query, node)}
        for way in ("callers", "callees"):
            if direction in (way, "both"):
                found = query.neighbours(node, way, depth)
                entry[way] = [
                    {**_record(index, query, other), "depth": dist, "how": how}
                    for other, dist, how in found[:limit]
                ]
                if len(found) > limit:
                    entry[f"{way}_omitted"] = len(found) - limit
        out.append(entry)
    return out


def _record(index: Any, query: GraphQuery, node: str) -> dict[str, Any]:
    attrs = query.node(node)
    kind = attrs["kind"]
    if kind in SYMBOL_KINDS:
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
