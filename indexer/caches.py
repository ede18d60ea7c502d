"""A bounded cache for the build's hot lookups of strings that repeat (words, graph names)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

_Value = TypeVar("_Value")

# Words and names follow Zipf's law: 16k entries (emptied when full) miss 1 lookup in 20 on a
# large corpus and keep a build worker's caches near 10 MiB instead of growing to ~130 MiB.
ENTRIES = 1 << 14


class ClearingCache(dict[str, _Value]):
    """key -> make(key): a hit is one dict lookup in C (an lru_cache also moves the entry in
    its list); full, it is emptied (the frequent keys come back at once)."""

    def __init__(self, make: Callable[[str], _Value], entries: int = ENTRIES) -> None:
        super().__init__()
        self.make = make
        self.entries = entries

    def __missing__(self, key: str) -> _Value:
        if len(self) >= self.entries:
            self.clear()
        value = self[key] = self.make(key)
        return value
