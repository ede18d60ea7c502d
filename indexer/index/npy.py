"""Reading `.npy` files, one thread at a time.

np.load parses each file's header with ast.literal_eval, and CPython 3.11's AST conversion
keeps its recursion depth in state that every thread shares: two threads parsing at once can
fail with "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905). It
was seen here when a query's dense search ran in a background thread while its BM25 loaded
arrays (an experiment, dropped: docs/benchmarks.md, eleventh pass); a process that searches one
index from several threads lazily loads arrays the same way. Every array the index reads goes
through `load`, which holds a lock for the header and the read.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np

_LOCK = threading.Lock()


def load(file: Path | str | IO[bytes], mmap_mode: Literal["r"] | None = None) -> Any:
    """np.load(file, mmap_mode, allow_pickle=False): no pickle is ever read."""
    with _LOCK:
        return np.load(file, mmap_mode=mmap_mode, allow_pickle=False)
