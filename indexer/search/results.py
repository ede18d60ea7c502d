"""`SearchResult`: one ranked chunk as `Index.search` returns it (and `--json` prints it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..source.chunks import Chunk


@dataclass
class SearchResult:
    id: str
    path: str
    start_line: int
    end_line: int
    symbol: str
    qualname: str
    kind: str
    language: str
    signature: str
    score: float
    confidence: float
    similarity: float
    keyword: float
    recency: float
    text: str | None = None
    cell: int | None = None  # notebook cell; lines are within it (indexer/source/notebook.py)
    source: str = "commit"  # "worktree": an uncommitted file read from disk (index/overlay.py)

    def to_dict(self) -> dict[str, Any]:
        # Flat fields only: a shallow copy (dataclasses.asdict deep-copies every value).
        data = dict(self.__dict__)
        for optional in ("text", "cell"):
            if data[optional] is None:
                del data[optional]
        return data

    @classmethod
    def of(cls, c: Chunk, s: dict[str, float], with_text: bool, source: str) -> SearchResult:
        """The result for chunk `c` with its scores `s` (rounded as every output shows them)."""
        return cls(
            id=c.id,
            path=c.path,
            start_line=c.start_line,
            end_line=c.end_line,
            symbol=c.symbol,
            qualname=c.qualname,
            kind=c.kind,
            language=c.language,
            signature=c.signature,
            score=round(s["score"], 6),
            confidence=round(s["confidence"], 4),
            similarity=round(s["similarity"], 4),
            keyword=round(s["keyword"], 4),
            recency=round(s["recency"], 4),
            text=c.text if with_text else None,
            cell=c.cell,
            source=source,
        )
