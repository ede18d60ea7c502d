"""The whole resolved graph in memory: every file's facts resolved at once (graph signals in
ranking, networkx export, tests). Nothing of it is stored: an index keeps only per-file facts,
and `related` resolves what a question touches (indexer/index/graph/related.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .fact_view import FactsView, FilesSource
from .imports import FactSource
from .model import EDGE_TYPES, HOW, SYMBOL_KINDS, FileGraph, walk
from .resolve import Resolver

_NODE_COLUMNS = ("kind", "path", "qualname", "start_line", "end_line")


@dataclass
class Resolved:
    """Nodes and typed edges; node ids: chunk id (symbol), `file:PATH`, `module:SPEC`,
    `name:NAME` (an unresolved call target)."""

    nodes: dict[str, dict[str, Any]]
    edges: list[tuple[str, str, str, str]]  # (src, dst, type, how it was resolved)


def resolve(source: FactSource) -> Resolved:
    """Bind names across all files and produce typed edges (no parsing), files in path order."""
    r = Resolver(source)
    nodes: dict[str, dict[str, Any]] = {}
    edges: list[tuple[str, str, str, str]] = []
    for path in source.paths:
        fg = source.file(path)
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
    for path in source.paths:
        fg = source.file(path)
        for spec, _, _ in fg.imports:
            target = r.import_target(fg, spec)
            module = f"file:{target}" if target else f"module:{spec}"
            edges.append((f"file:{path}", module, "IMPORTS", "import"))
    for path in source.paths:
        for cls, target, base in r.base_rows(path):
            if target:
                edges.append((cls, target, "INHERITS", "resolved"))
            else:
                edges.append((cls, f"name:{base}", "INHERITS", "unresolved"))
    for path in source.paths:
        for caller, name, recv, _line in source.file(path).calls:
            src, dst, how = r.call_edge(path, caller, name, recv)
            if dst != src:
                edges.append((src, dst, "CALLS", how))
    for src, dst, _, _ in edges:
        for node in (src, dst):
            if node not in nodes:
                kind, _, label = node.partition(":")
                nodes[node] = {"kind": kind, "name": label}
    return Resolved(nodes, list(dict.fromkeys(edges)))


class CodeGraph:
    """The resolved graph: node columns plus an int32 edge array (src, dst, type, how) with
    CSR-style lookups by source and by destination."""

    def __init__(
        self,
        ids: list[str],
        columns: dict[str, list[Any]],
        edges: np.ndarray,
        alias: dict[str, str],
    ) -> None:
        self.ids = ids
        self.columns = columns
        self.edges = edges
        self.index = {n: i for i, n in enumerate(ids)}
        self._by_src = np.argsort(edges[:, 0], kind="stable")
        self._by_dst = np.argsort(edges[:, 1], kind="stable")
        self._src_sorted = edges[self._by_src, 0]
        self._dst_sorted = edges[self._by_dst, 1]
        self.chunk_node = alias  # chunk id of a definition's later part -> its node

    @classmethod
    def from_source(cls, source: FactSource) -> CodeGraph:
        resolved = resolve(source)
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
        alias = {
            cid: sym[0]
            for path in source.paths
            for sym in source.file(path).symbols
            for cid in sym[5][1:]
        }
        edges = np.asarray(
            [
                (index[a], index[b], EDGE_TYPES.index(t), HOW.index(h))
                for a, b, t, h in resolved.edges
            ],
            dtype=np.int32,
        ).reshape(-1, 4)
        return cls(ids, columns, edges, alias)

    @classmethod
    def from_files(cls, files: dict[str, FileGraph]) -> CodeGraph:
        return cls.from_source(FilesSource(files))

    @classmethod
    def from_view(cls, view: FactsView) -> CodeGraph:
        return cls.from_source(view)

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
        if key in self.index and kinds[self.index[key]] in SYMBOL_KINDS:
            return [key]
        if f"file:{key}" in self.index:
            return [f"file:{key}"]
        symbols = [i for i, k in enumerate(kinds) if k in SYMBOL_KINDS]
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

        def step(current: str) -> list[tuple[str, str]]:
            edges = self._edges(current, outgoing).tolist()
            return [(self.ids[d if outgoing else s], HOW[h]) for s, d, t, h in edges if t in wanted]

        return walk(node, depth, step)
