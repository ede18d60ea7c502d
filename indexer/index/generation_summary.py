"""A generation's summary: its file, chunk, language, redaction and fallback counts, its
skipped files and coverage warnings, counted from its segments (or from the base generation's
counts, corrected by what an update changed)."""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import Any

from ..source.gitsource import coverage_warnings
from .segment import Segment
from .update_base import Base


def summary(
    index_dir: Path,
    entries: list[dict[str, Any]],
    skipped: dict[str, list[str]],
    base: Base | None = None,
) -> dict[str, Any]:
    """The generation's counts, languages, skipped files and warnings, from its segments."""
    from .store import SEGMENTS

    totals = _Totals.of_base(base, entries) if base is not None else None
    if totals is None:  # every live file of every segment
        totals = _Totals()
        opened = {s.name: s for s, _ in base.parts} if base is not None else {}
        for entry in entries:
            segment = opened.get(entry["name"]) or Segment.open(
                index_dir / SEGMENTS / entry["name"]
            )
            gone = set(entry["deleted"])
            for i, path in enumerate(segment.paths):
                if path not in gone:
                    totals.add(segment, i, 1)
    else:  # the base's totals, less the files gone since, plus the new segments' files
        known = {s.name for s, _ in base.parts}  # type: ignore[union-attr]
        for entry in entries:
            if entry["name"] not in known:
                segment = Segment.open(index_dir / SEGMENTS / entry["name"])
                for i in range(segment.n_files):
                    totals.add(segment, i, 1)
    if not totals.consistent():
        return summary(index_dir, entries, skipped)  # a count that fell to zero: recount
    n_files, n_chunks = totals.files, totals.chunks
    languages, redactions, fallbacks = totals.languages, totals.redacted, totals.fallback
    skip_counts: dict[str, int] = {}
    examples: dict[str, list[str]] = {}
    for path, (_, reason) in sorted(skipped.items()):
        skip_counts[reason] = skip_counts.get(reason, 0) + 1
        if len(examples.setdefault(reason, [])) < 5:
            examples[reason].append(path)
    return {
        "counts": {
            "files": n_files,
            "chunks": n_chunks,
            "skipped": dict(sorted(skip_counts.items())),
            "redacted": dict(sorted(redactions.items())),
            "fallback": dict(sorted(fallbacks.items())),
        },
        "languages": dict(sorted(languages.items())),
        "skipped": dict(sorted(skipped.items())),
        "skipped_examples": examples,
        "warnings": coverage_warnings(n_files, skip_counts),
    }


class _Totals:
    """Files, chunks, chunks per language, redactions and fallbacks of a generation's live
    files, added file by file (or taken from the base generation and corrected)."""

    def __init__(self) -> None:
        self.files = self.chunks = 0
        self.languages: dict[str, int] = {}
        self.redacted: dict[str, int] = {}
        self.fallback: dict[str, int] = {}
        self.touched: list[tuple[dict[str, int], str]] = []

    def add(self, segment: Segment, i: int, sign: int) -> None:
        rows = segment.file_rows
        n = int(rows[i + 1]) - int(rows[i])
        self.files += sign
        self.chunks += sign * n
        self._bump(self.languages, segment.languages[i], sign * n)
        extra = segment.extras.get(segment.paths[i], {})
        for kind, count in extra.get("redacted", {}).items():
            self._bump(self.redacted, kind, sign * count)
        if extra.get("fallback"):
            self._bump(self.fallback, extra["fallback"], sign)

    def _bump(self, table: dict[str, int], key: str, by: int) -> None:
        table[key] = table.get(key, 0) + by
        if by < 0:
            self.touched.append((table, key))

    def consistent(self) -> bool:
        """False when a subtraction left a count at zero or below: whether the key stays
        (a live file with no chunks) is for a recount to say."""
        return all(table[key] > 0 for table, key in self.touched)

    @classmethod
    def of_base(cls, base: Base, entries: list[dict[str, Any]]) -> _Totals | None:
        """The base generation's totals less its files that `entries` no longer serve (an
        update's cost follows its change, not the number of files); None: recount."""
        counts = base.manifest.get("counts", {})
        keys = ("files", "chunks", "redacted", "fallback")
        if not all(k in counts for k in keys) or "languages" not in base.manifest:
            return None
        totals = cls()
        totals.files, totals.chunks = int(counts["files"]), int(counts["chunks"])
        totals.languages = dict(base.manifest["languages"])
        totals.redacted, totals.fallback = dict(counts["redacted"]), dict(counts["fallback"])
        now = {e["name"]: set(e["deleted"]) for e in entries}
        for segment, dead in base.parts:
            before = set(dead)
            after = now.get(segment.name)
            if after is None:  # every file it served is gone
                gone = [p for p in segment.paths if p not in before]
            else:
                gone = sorted(after - before)
            for path in gone:
                i = bisect.bisect_left(segment.paths, path)
                if i < segment.n_files and segment.paths[i] == path:
                    totals.add(segment, i, -1)
        return totals
