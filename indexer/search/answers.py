"""What an answer says about itself: whether anything credible was found, and result slots
that are not wasted on the one-line tail of a split definition.

Confidence of the best result below LOW_CONFIDENCE means nothing closely matches (measured on
flask and requests: real questions and symbols scored 0.53-0.92, concepts absent from the
repository 0.16-0.33; 3.3 % of the 183 devset-short questions fall below it; see
docs/agents.md). A symbol-shaped query naming no indexed identifier
(`KafkaConsumerGroupRebalance` in flask) is never credible, and its results' confidence is
halved so no number suggests otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..index.row_columns import symbol_key
from ..index.tokens import stem

LOW_CONFIDENCE = 0.33
MISSING_SYMBOL_FACTOR = 0.5
SPLIT_MARK = "\n    ...\n"  # a later part repeats the signature, then this line (chunker)
TAIL_LINES = 5  # a split definition's later part with this few lines is folded into its first
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_IDENTIFIER = re.compile(r"[a-z][A-Z]|_|\.|::|^[A-Z][a-z]+[A-Z]")


@dataclass(frozen=True)
class Verdict:
    credible: bool
    best_confidence: float
    missing_symbols: tuple[str, ...]
    message: str  # one line; empty when credible

    def to_dict(self) -> dict[str, Any]:
        return {
            "credible": self.credible,
            "best_confidence": self.best_confidence,
            "missing_symbols": list(self.missing_symbols),
            "message": self.message,
        }


def missing_symbols(lexical: Any, query: str) -> tuple[str, ...]:
    """Identifier-shaped words of the query (camelCase, snake_case, dotted) that name no term
    of the index, when the query is only such words (a symbol lookup)."""
    words = query.split()
    shaped = [w for w in words if _IDENTIFIER.search(w)]
    if not shaped or len(words) > 3 or len(shaped) != len(words):
        return ()
    missing = []
    for word in shaped:
        parts = _NAME.findall(word)  # `Flask.url_for` -> Flask, url_for; punctuation dropped
        if parts and all(lexical.term_idf(stem(p.lower().strip("_"))) is None for p in parts):
            missing.append(word)
    return tuple(missing) if len(missing) == len(shaped) else ()


def _confidence(result: Any) -> float:
    return float(result["confidence"] if isinstance(result, dict) else result.confidence)


def judge(query: str, results: Sequence[Any], missing: Sequence[str]) -> Verdict:
    """`results`: SearchResult objects or their dicts (budgeted items)."""
    best = max((_confidence(r) for r in results), default=0.0)
    if missing:
        names = ", ".join(missing)
        return Verdict(
            False,
            best,
            tuple(missing),
            f"low confidence: no symbol named {names} "
            "in this repository; the results below only share parts of the name",
        )
    if not results:
        return Verdict(False, 0.0, (), f"low confidence: nothing matches {_quote(query)}")
    if best < LOW_CONFIDENCE:
        return Verdict(
            False,
            best,
            (),
            f"low confidence: nothing closely matches {_quote(query)} "
            f"(best confidence {best:.2f}); the results below are weak guesses",
        )
    return Verdict(True, best, (), "")


def _quote(query: str, limit: int = 60) -> str:
    one_line = " ".join(query.split())
    return repr(one_line if len(one_line) <= limit else one_line[: limit - 3] + "...")


def confidence_label(confidence: float) -> str:
    if confidence >= 0.7:
        return "high"
    return "medium" if confidence >= LOW_CONFIDENCE else "low"


def with_confidence(block: str, confidence: float) -> str:
    """The block with `[confidence 0.71]` on its first (header) line."""
    head, sep, rest = block.partition("\n")
    return f"{head}  [confidence {confidence:.2f}]{sep}{rest}"


def fold_split_tails(
    index: Any, rows: list[int], make: Callable[[int, int], Any]
) -> list[tuple[int, Any]]:
    """(row, result) pairs where a short last part of a split definition (`return rv`) is
    replaced by the definition's first part, or dropped when that part is already listed.
    `make(row, from_row)` builds the result for `row` with the scores of `from_row`."""
    out: list[tuple[int, Any]] = []
    seen: set[int] = set()
    for row in rows:
        target = _first_part_if_tail(index, row)
        if target in seen:
            continue
        seen.add(target)
        out.append((target, make(target, row)))
    return out


def _first_part_if_tail(index: Any, row: int) -> int:
    columns = index.row_columns
    if columns.kind_of(row) not in ("function", "method") or columns.alone(row):
        return row  # the kept columns answer without decoding the chunk's record
    chunk = index.chunk_at(row, with_text=False)
    if (
        chunk.kind not in ("function", "method")
        or chunk.end_line - chunk.start_line > 2 * TAIL_LINES
    ):
        return row
    # The earlier part first, by the metadata alone: most short functions have none, and then
    # the text (a whole file's block to decompress) is not needed. Parts of one definition
    # share its qualname, hence its symbol: the symbols column narrows the rows to decode.
    file = int(index._chunk_file[row])
    starts = index.space.file_starts
    same_file = np.arange(int(starts[file]), int(starts[file + 1]), dtype=np.int64)
    same_kind = same_file[columns.kind_codes(same_file) == columns.code(chunk.kind)]
    keys = columns.symbol_keys(same_kind)
    if keys is not None:  # parts of one definition share its symbol: read only the key hits
        same_kind = same_kind[keys == symbol_key(chunk.symbol.lower())]
        others = same_kind.tolist()  # (nearly all have the symbol: their records decide)
    else:  # a one-shot process: the file's symbols narrow the records to decode
        symbols = columns.symbols.take(same_kind)
        others = [o for o, s in zip(same_kind.tolist(), symbols, strict=True) if s == chunk.symbol]
    first = row
    first_start = chunk.start_line
    for other in others:
        if other == row:
            continue
        c = index.chunk_at(other, with_text=False)
        if c.symbol == chunk.symbol and c.qualname == chunk.qualname and c.start_line < first_start:
            first, first_start = int(other), c.start_line
    if first == row:
        return row
    _, mark, own = index.chunk_at(row).text.partition(SPLIT_MARK)
    if not mark or sum(1 for line in own.splitlines() if line.strip()) > TAIL_LINES:
        return row  # not a later part of a split definition, or not a short one
    return first
