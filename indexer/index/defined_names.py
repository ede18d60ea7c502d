"""The names each chunk defines, as a table its segment stores: identifier queries find their
exact definitions without reading every chunk's names.

A chunk defines its symbol and, for a module-level block, the names it assigns at top level
(the `defines` column), lowercased. A segment stores every (name, row) pair as two arrays
sorted by (key, row): `defined_keys.npy` (uint64 BLAKE2b of the name's UTF-8) and
`defined_rows.npy` (int32 row in the segment), 12 bytes a name, memory-mapped. The key is
stable across processes (Python's `hash` of a string is not). `segment.json` says whether
every key of the segment stands for one name (`defined_unique`; two names sharing a 64-bit
key are a ~1e-10 chance): then one row of a key, checked against its own names, tells whether
every row of that key defines the name asked for (`__init__`: 9,000 rows at 163k chunks, one
check per segment instead of one per row). Before, every search process built this table from
the columns on its first identifier query: 0.45 s at 163k chunks.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence

import numpy as np

from ..digests import blake2b

KEYS = "defined_keys.npy"
ROWS = "defined_rows.npy"
FILES = (KEYS, ROWS)
UNIQUE = "defined_unique"  # the segment.json field


def names_of(symbol: str, defines: str) -> set[str]:
    """The lowercased names a row with this symbol and `defines` value defines."""
    return {symbol.lower(), *defines.lower().split()} - {""}


def key(name: str) -> int:
    digest = blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def table(symbols: Sequence[str], defines: Sequence[str]) -> tuple[np.ndarray, np.ndarray, bool]:
    """(keys, rows) of every name of every row, sorted by (key, row), and whether each key
    stands for one name."""
    keys, rows = array("Q"), array("i")
    assert keys.itemsize == 8
    named: dict[str, int] = {}  # each distinct name's key, computed once
    for row, (symbol, assigned) in enumerate(zip(symbols, defines, strict=True)):
        names = names_of(symbol, assigned) if assigned else ((symbol.lower(),) if symbol else ())
        for name in names:
            k = named.get(name)
            if k is None:
                k = named[name] = key(name)
            keys.append(k)
            rows.append(row)
    unique = len(set(named.values())) == len(named)
    k_arr = np.frombuffer(keys, dtype=np.uint64)
    r_arr = np.frombuffer(rows, dtype=np.int32)
    order = np.lexsort((r_arr, k_arr))
    return k_arr[order], r_arr[order], unique


def valid(keys: np.ndarray, rows: np.ndarray) -> bool:
    """The arrays' types and shapes (each row found is checked against the segment's size)."""
    return (
        keys.dtype == np.uint64
        and rows.dtype == np.int32
        and keys.ndim == rows.ndim == 1
        and len(keys) == len(rows)
    )


def wanted(names: Iterable[str]) -> np.ndarray:
    """The distinct keys of `names`, sorted (computed once for every segment looked in)."""
    return np.asarray(sorted({key(n) for n in names if n}), dtype=np.uint64)


def keyed(keys: np.ndarray, rows: np.ndarray, sought: np.ndarray) -> list[np.ndarray]:
    """For each of the `sought` keys (`wanted`), the segment's rows with that key (ascending):
    a superset of the rows that define the names."""
    lo = np.searchsorted(keys, sought).tolist()
    hi = np.searchsorted(keys, sought, side="right").tolist()
    return [rows[a:b] for a, b in zip(lo, hi, strict=True) if b > a]
