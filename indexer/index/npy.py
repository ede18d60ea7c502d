"""Reading `.npy` files, one thread at a time, and the common ones without np.load's parser.

np.load parses each file's header with ast.literal_eval, and CPython 3.11's AST conversion
keeps its recursion depth in state that every thread shares: two threads parsing at once can
fail with "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905). It
was seen here when a query's dense search ran in a background thread while its BM25 loaded
arrays (an experiment, dropped: docs/benchmarks.md, eleventh pass); a process that searches one
index from several threads lazily loads arrays the same way. Every array the index reads goes
through `load`, which holds a lock for the header and the read.

The header numpy itself writes for a plain little-endian or byte array (`{'descr': '<f4',
'fortran_order': False, 'shape': (n,), }`) is matched by a regular expression instead: a
one-shot search opens ~60 arrays, each 46 us this way against 82-98 us through np.load
(docs/benchmarks.md, fourteenth pass). Any other header (object or structured dtypes,
Fortran order, another layout) goes to np.load unchanged, without pickle.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np

_LOCK = threading.Lock()
# Only fixed-size numeric dtypes: an object dtype (pickle) can never take this path.
_PLAIN = re.compile(
    rb"\{'descr': '([<|][biuf][1248])', 'fortran_order': False, "
    rb"'shape': \(((?:\d+, )*\d+,?|)\), \} *\n"
)
_HEAD = 128  # numpy pads its headers to a multiple of 64 bytes: one or two dims fit in 128


def load(file: Path | str | IO[bytes], mmap_mode: Literal["r"] | None = None) -> Any:
    """np.load(file, mmap_mode, allow_pickle=False): no pickle is ever read."""
    with _LOCK:
        if isinstance(file, (str, Path)):
            array = _load_plain(file, mmap_mode)
            if array is not None:
                return array
        return np.load(file, mmap_mode=mmap_mode, allow_pickle=False)


def _load_plain(path: Path | str, mmap_mode: Literal["r"] | None) -> np.ndarray | None:
    """The array of a file whose header is numpy's own for a plain dtype, else None (np.load
    then reads it, and reports what is wrong with it)."""
    with open(path, "rb") as f:
        head = f.read(_HEAD)
        if head[:8] != b"\x93NUMPY\x01\x00":
            return None
        end = 10 + int.from_bytes(head[8:10], "little")
        match = _PLAIN.fullmatch(head[10:end]) if end <= len(head) else None
        if match is None:
            return None
        shape = tuple(int(d) for d in match.group(2).split(b",") if d.strip())
        dtype = np.dtype(match.group(1).decode())
        count = int(np.prod(shape, dtype=np.int64))
        if os.fstat(f.fileno()).st_size < end + count * dtype.itemsize:
            return None  # truncated: np.load says so
        if mmap_mode is None:
            f.seek(end)
            return np.fromfile(f, dtype=dtype, count=count).reshape(shape)
    return np.memmap(path, dtype=dtype, mode="r", offset=end, shape=shape)
