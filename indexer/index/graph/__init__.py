"""Code graph: files, modules and symbols with DEFINES, IMPORTS, CALLS and INHERITS edges.

An index stores per-file facts only (extract*.py -> facts.py, one set per segment, read as one
repository by fact_view.py); names are resolved when a question is asked (resolve.py, imports.py;
`related.related` answers `indexer related`), so an update's graph work is the changed files'
extraction. codegraph.py resolves everything at once for ranking (rank.py)
and export. Names load on first use: a segment reader imports facts.py alone (no tree-sitter, no
resolver), and networkx is imported only by `CodeGraph.to_networkx`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below, for type checkers (at run time: __getattr__)
    from .codegraph import CodeGraph as CodeGraph
    from .extract import extract_file as extract_file
    from .fact_view import FactsView as FactsView
    from .facts import FactsSegment as FactsSegment
    from .facts import read_facts as read_facts
    from .facts import write_facts as write_facts
    from .model import EDGE_TYPES as EDGE_TYPES
    from .model import HOW as HOW
    from .model import SYMBOL_KINDS as SYMBOL_KINDS
    from .model import FileGraph as FileGraph
    from .related import MAX_DEPTH as MAX_DEPTH
    from .related import GraphQuery as GraphQuery

_HOME = {
    "CodeGraph": "codegraph",
    "extract_file": "extract",
    "FactsSegment": "facts",
    "FactsView": "fact_view",
    "read_facts": "facts",
    "write_facts": "facts",
    "EDGE_TYPES": "model",
    "HOW": "model",
    "SYMBOL_KINDS": "model",
    "FileGraph": "model",
    "MAX_DEPTH": "related",
    "GraphQuery": "related",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
