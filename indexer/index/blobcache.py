"""Chunks cached by blob id: renames, reverts, cherry-picks and branch switches cost nothing.

An entry holds what chunking and tokenizing one file produced, minus everything that depends on
its path (ids and paths are derived again when the entry is used). The key is the blob id, the
language, the file's stem (module chunks are named after it) and the chunker version. Entries are
JSON (no pickle), written atomically; the cache is bounded by size and trimmed oldest-first.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..source.chunker import CHUNKER_VERSION

DEFAULT_MAX_BYTES = 512 * 1024 * 1024


@dataclass
class CachedFile:
    skip_reason: str | None
    records: list[dict[str, Any]]  # Chunk fields except id/path/blob/language
    lexical: list[dict[str, int]]  # path-independent BM25 term counts per chunk
    dense: list[dict[str, int]]  # path-independent dense term counts per chunk
    redacted: dict[str, int] = field(default_factory=dict)  # secrets replaced, by kind
    fallback: str | None = None  # indexed as text because its format did not parse

    def to_json(self) -> str:
        return json.dumps(
            {
                "skip": self.skip_reason,
                "records": self.records,
                "lexical": self.lexical,
                "dense": self.dense,
                "redacted": self.redacted,
                "fallback": self.fallback,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> CachedFile:
        raw = json.loads(text)
        return cls(
            raw["skip"],
            raw["records"],
            raw["lexical"],
            raw["dense"],
            raw["redacted"],
            raw.get("fallback"),
        )


class BlobCache:
    def __init__(self, directory: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.directory = directory
        self.max_bytes = max_bytes

    def _path(self, blob: str, language: str, stem: str) -> Path:
        safe_stem = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in stem)[:60]
        return self.directory / blob[:2] / f"{blob}.{language}.{safe_stem}.c{CHUNKER_VERSION}.json"

    def get(self, blob: str, language: str, stem: str) -> CachedFile | None:
        path = self._path(blob, language, stem)
        try:
            entry = CachedFile.from_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing or damaged: chunk again
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used entries survive trimming
        return entry

    def put(self, blob: str, language: str, stem: str, entry: CachedFile) -> None:
        path = self._path(blob, language, stem)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".tmp-{os.getpid()}-")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(entry.to_json())
            os.replace(tmp, path)
        except OSError:
            pass  # a cache that cannot be written only costs speed

    def trim(self) -> int:
        """Delete least recently used entries until the cache fits; returns bytes removed."""
        if not self.directory.exists():
            return 0
        from .store import remove_stale_temporaries

        for folder in self.directory.iterdir():
            if folder.is_dir():
                remove_stale_temporaries(folder)  # entries a killed build was writing
        entries = []
        total = 0
        for path in self.directory.glob("*/*.json"):
            try:
                st = path.stat()
            except OSError:
                continue
            entries.append((st.st_mtime, st.st_size, path))
            total += st.st_size
        removed = 0
        for _, size, path in sorted(entries):
            if total - removed <= self.max_bytes:
                break
            path.unlink(missing_ok=True)
            removed += size
        return removed
