"""Terminal output shared by the CLI's command modules: colors, JSON, JSON lines."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any


def color_enabled(stream: Any) -> bool:
    return (
        bool(stream.isatty()) and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
    )


class Style:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.enabled else text


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def emit_jsonl(records: Iterable[Any]) -> None:
    """One compact JSON object per line, flushed as it goes (for streaming consumers)."""
    for record in records:
        sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def table(rows: Sequence[tuple[str, ...]], header: tuple[str, ...]) -> str:
    """A plain text table, columns padded to their widest cell (numbers right-aligned)."""
    all_rows = [header, *rows]
    widths = [max(len(r[i]) for r in all_rows) for i in range(len(header))]

    def cell(value: str, i: int) -> str:
        numeric = value.replace(",", "").replace(".", "").replace("%", "").lstrip("$-").isdigit()
        return value.rjust(widths[i]) if numeric and i > 0 else value.ljust(widths[i])

    lines = ["  ".join(cell(v, i) for i, v in enumerate(r)).rstrip() for r in all_rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
