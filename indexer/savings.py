"""Savings log: what each search really sent versus reading the whole files it points to.

Every search (CLI, API, MCP) appends one JSON line to `<index-dir>/savings.jsonl` (beside the
snapshots, never inside one): the exact text sent (zlib + base64) and the (path, blob) of each
file the results came from. Nothing is tokenized while searching, so a search stays fast;
`indexer savings` counts both sides with the o200k_base BPE tokenizer and caches the counts.

Baseline, stated in every report: an agent without the index reads each file a result came
from, whole, once per query (a notebook: its cells' sources, not its JSON and outputs). Saved =
baseline tokens - sent tokens, priced as input tokens (and as cached input tokens); output tokens
are what the model writes and do not change.

Off with INDEXER_SAVINGS=0, `indexer savings --off` (a marker file in the index dir) or
`log=False` / `--no-log` per search. A log that cannot be written never fails a search.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import IndexerError
from .notebook import is_notebook, sources_text

LOG_NAME = "savings.jsonl"
CACHE_NAME = "savings_counts.json"
OFF_MARKER = "savings.off"
BASELINE = (
    "whole files: every file a returned result came from, read in full once per query "
    "(what an agent without the index would send)"
)
# USD per million tokens; defaults are Claude Sonnet 4 list prices (input, cache read, output).
DEFAULT_PRICES = {"input": 3.0, "cached_input": 0.30, "output": 15.0}


def index_dir_of(snapshot: Path) -> Path:
    return snapshot.parent.parent  # <index-dir>/snapshots/<name>


def enabled(index_dir: Path) -> bool:
    if os.environ.get("INDEXER_SAVINGS", "1").strip().lower() in ("0", "off", "false", "no"):
        return False
    return not (index_dir / OFF_MARKER).exists()


def set_enabled(index_dir: Path, on: bool) -> None:
    marker = index_dir / OFF_MARKER
    if on:
        marker.unlink(missing_ok=True)
    else:
        marker.write_text("savings log disabled by `indexer savings --off`\n", encoding="utf-8")


def record(index: Any, results: Iterable[Any], sent: str, source: str) -> bool:
    """Append one search to the log; False when disabled or unwritable (never raises)."""
    try:
        directory = index_dir_of(index.snapshot)
        if not enabled(directory):
            return False
        files: dict[str, str] = {}
        blob_of = index.blob_of
        for r in results:
            path = r["path"] if isinstance(r, dict) else r.path
            if path in blob_of:
                files[path] = blob_of[path]
        line = {
            "v": 1,
            "ts": round(time.time(), 3),
            "source": source,
            "repo": index.manifest.get("repo_root", ""),
            "commit": index.manifest.get("commit", ""),
            "results": len(files),
            "sent": base64.b64encode(zlib.compress(sent.encode("utf-8"), 6)).decode("ascii"),
            "files": sorted(files.items()),
        }
        data = (json.dumps(line, separators=(",", ":")) + "\n").encode("utf-8")
        fd = os.open(directory / LOG_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)  # one write: concurrent searches do not interleave lines
        finally:
            os.close(fd)
        return True
    except Exception:  # the log is a courtesy: a search never fails because of it
        return False


@dataclass
class SavingsReport:
    queries: int
    by_source: dict[str, int]
    sent_tokens: int
    baseline_tokens: int
    prices: dict[str, float]
    unavailable_files: int
    log: str
    enabled: bool

    @property
    def saved_tokens(self) -> int:
        return self.baseline_tokens - self.sent_tokens

    def to_dict(self) -> dict[str, Any]:
        saved = self.saved_tokens
        per_m = 1e-6
        return {
            "queries": self.queries,
            "by_source": self.by_source,
            "tokens_sent": self.sent_tokens,
            "tokens_baseline": self.baseline_tokens,
            "tokens_saved": saved,
            "saved_percent": round(100.0 * saved / self.baseline_tokens, 2)
            if self.baseline_tokens
            else 0.0,
            "baseline": BASELINE,
            "tokenizer": "o200k_base (bpe-openai)",
            "prices_usd_per_million": self.prices,
            "usd": {
                "sent_as_input": round(self.sent_tokens * self.prices["input"] * per_m, 4),
                "baseline_as_input": round(self.baseline_tokens * self.prices["input"] * per_m, 4),
                "saved_as_input": round(saved * self.prices["input"] * per_m, 4),
                "saved_as_cached_input": round(saved * self.prices["cached_input"] * per_m, 4),
                "saved_on_output": 0.0,
            },
            "unavailable_files": self.unavailable_files,
            "log": self.log,
            "enabled": self.enabled,
        }


def report(index_dir: Path, prices: dict[str, float] | None = None) -> SavingsReport:
    """Count the log with the real tokenizer (counts cached beside the log)."""
    from .budget import count_tokens

    merged = dict(DEFAULT_PRICES)
    for key, value in (prices or {}).items():
        if key not in merged:
            raise IndexerError(f"unknown price {key!r}; use input, cached_input or output")
        if value is None:
            continue
        if not isinstance(value, int | float) or value < 0 or value > 10_000:
            raise IndexerError(f"price {key} must be a number of USD per million tokens >= 0")
        merged[key] = float(value)
    log = index_dir / LOG_NAME
    cache_path = index_dir / CACHE_NAME
    cache: dict[str, dict[str, int]] = {"lines": {}, "blobs": {}}
    try:
        loaded = json.loads(cache_path.read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            cache["lines"].update(loaded.get("lines", {}))
            cache["blobs"].update(loaded.get("blobs", {}))
    except (OSError, ValueError):
        pass
    queries = sent = baseline = unavailable = 0
    by_source: dict[str, int] = {}
    repos: dict[str, Any] = {}
    offset = 0
    try:
        raw_lines = log.read_bytes().splitlines(keepends=True)
    except FileNotFoundError:
        raw_lines = []
    for raw in raw_lines:
        key = str(offset)
        offset += len(raw)
        try:
            entry = json.loads(raw)
        except ValueError:
            continue  # a torn line (a crash mid-write) is skipped
        queries += 1
        by_source[entry.get("source", "?")] = by_source.get(entry.get("source", "?"), 0) + 1
        if key not in cache["lines"]:
            text = zlib.decompress(base64.b64decode(entry["sent"])).decode("utf-8")
            cache["lines"][key] = count_tokens(text)
        sent += cache["lines"][key]
        for path, blob in entry.get("files", []):
            if blob not in cache["blobs"]:
                content = _blob_text(repos, entry.get("repo", ""), blob, path)
                if content is None:
                    unavailable += 1
                    continue
                cache["blobs"][blob] = count_tokens(content)
            baseline += cache["blobs"][blob]
    if raw_lines:
        with contextlib.suppress(OSError):  # an unwritable cache only costs a recount
            cache_path.write_text(json.dumps(cache), encoding="utf-8")
    return SavingsReport(
        queries, by_source, sent, baseline, merged, unavailable, str(log), enabled(index_dir)
    )


def _blob_text(repos: dict[str, Any], repo_path: str, blob: str, path: str) -> str | None:
    try:
        if repo_path not in repos:
            import pygit2

            repos[repo_path] = pygit2.Repository(repo_path)
        data: bytes = repos[repo_path][blob].data
        if is_notebook(path):  # a notebook read whole is at least its cells' sources, not
            return sources_text(data)  # its JSON with base64 outputs: the saving stays honest
        return data.decode("utf-8", errors="replace")
    except Exception:  # repository moved or object pruned: reported as unavailable
        return None
