"""Code graph: files, modules and symbols with DEFINES, IMPORTS, CALLS and INHERITS edges.

An index stores per-file facts only (extract*.py -> facts.py, one set per segment); names are
resolved when a question is asked (resolve.py, related.py), so an update's graph work is the
changed files' extraction. codegraph.py resolves everything at once for ranking (rank.py) and
export. networkx is imported only by `CodeGraph.to_networkx`.
"""

from .codegraph import CodeGraph, resolve
from .extract import extract_file
from .facts import FactsSegment, FactsView, read_facts, write_facts
from .model import EDGE_TYPES, HOW, SYMBOL_KINDS, FileGraph
from .related import MAX_DEPTH, GraphQuery, related

__all__ = [
    "EDGE_TYPES",
    "HOW",
    "MAX_DEPTH",
    "SYMBOL_KINDS",
    "CodeGraph",
    "FactsSegment",
    "FactsView",
    "FileGraph",
    "GraphQuery",
    "extract_file",
    "read_facts",
    "related",
    "resolve",
    "write_facts",
]
