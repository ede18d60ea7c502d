"""What chunking and tokenising one blob produced (`CachedFile`), minus everything that depends
on its path (ids and paths are derived again when the entry is used, so the same blob at another
path with the same stem reuses it: indexer/index/update_base.py `stored_entry`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class CachedFile:
    skip_reason: str | None
    records: list[dict[str, Any]]  # Chunk fields except id/path/blob/language
    lexical: list[dict[str, int]]  # path-independent BM25 term counts per chunk
    dense: list[dict[str, int]]  # path-independent dense term counts per chunk
    redacted: dict[str, int] = field(default_factory=dict)  # secrets replaced, by kind
    fallback: str | None = None  # indexed as text because its format did not parse
