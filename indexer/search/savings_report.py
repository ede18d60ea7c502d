"""The savings report (`indexer savings`): the log of indexer/search/savings.py read back, with
the whole-file baselines counted from git (and cached) and priced."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import tempfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import IndexerError
from ..source.notebook import sources_text
from .savings import (
    BASELINE,
    CACHE_NAME,
    DEFAULT_PRICES,
    LOG_NAME,
    SESSION_BASELINE,
    SESSION_GAP_S,
    enabled,
    flush,
    path_hash,
)


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
    session_baseline_tokens: int = 0  # the honest baseline (SESSION_BASELINE)
    sessions: int = 0

    @property
    def saved_tokens(self) -> int:
        return self.baseline_tokens - self.sent_tokens

    @property
    def saved_tokens_session(self) -> int:
        return self.session_baseline_tokens - self.sent_tokens

    def to_dict(self) -> dict[str, Any]:
        saved = self.saved_tokens
        per_m = 1e-6
        return {
            "queries": self.queries,
            "by_source": self.by_source,
            "tokens_sent": self.sent_tokens,
            "tokens_baseline": self.baseline_tokens,
            "tokens_saved": saved,
            "saved_percent": _percent(saved, self.baseline_tokens),
            "baseline": BASELINE,
            "sessions": self.sessions,
            "tokens_baseline_session": self.session_baseline_tokens,
            "tokens_saved_session": self.saved_tokens_session,
            "saved_percent_session": _percent(
                self.saved_tokens_session, self.session_baseline_tokens
            ),
            "baseline_session": SESSION_BASELINE,
            "tokenizer": "o200k_base (bpe-openai)",
            "prices_usd_per_million": self.prices,
            "usd": {
                "sent_as_input": round(self.sent_tokens * self.prices["input"] * per_m, 4),
                "baseline_as_input": round(self.baseline_tokens * self.prices["input"] * per_m, 4),
                "saved_as_input": round(saved * self.prices["input"] * per_m, 4),
                "saved_as_cached_input": round(saved * self.prices["cached_input"] * per_m, 4),
                "saved_session_as_input": round(
                    self.saved_tokens_session * self.prices["input"] * per_m, 4
                ),
                "saved_on_output": 0.0,
            },
            "unavailable_files": self.unavailable_files,
            "log": self.log,
            "enabled": self.enabled,
        }


def _percent(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 2) if whole else 0.0


def session_baseline(
    searches: Iterable[tuple[str, float, list[tuple[str, int]]]],
) -> tuple[int, int]:
    """(tokens, sessions) of the honest baseline. `searches` are (session, time, files) in log
    order, each file an identity (path or path hash) and its token count; an empty session
    groups a source's searches that come less than SESSION_GAP_S apart."""
    seen: dict[str, set[tuple[str, int]]] = {}
    last_at: dict[str, tuple[str, float]] = {}  # source -> (its current session, last time)
    tokens = 0
    for session, ts, files in searches:
        if session.startswith("~"):  # no session id: "~source"
            current, last = last_at.get(session, ("", float("-inf")))
            if ts - last >= SESSION_GAP_S:
                current = f"{session}#{ts}"
            last_at[session] = (current, ts)
            session = current
        files_seen = seen.setdefault(session, set())
        for identity in files:
            if identity not in files_seen:
                files_seen.add(identity)
                tokens += identity[1]
    return tokens, len(seen)


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
    cache: dict[str, dict[str, int]] = {"blobs": {}}
    try:
        loaded = json.loads(cache_path.read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            cache["blobs"].update(loaded.get("blobs", {}))
    except (OSError, ValueError):
        pass
    queries = sent = baseline = unavailable = 0
    searches: list[tuple[str, float, list[tuple[str, int]]]] = []
    by_source: dict[str, int] = {}
    repos: dict[str, Any] = {}
    flush()
    raw_lines = _without_text(log)
    for raw in raw_lines:
        try:
            entry = json.loads(raw)
        except ValueError:
            continue  # a torn line (a crash mid-write) is skipped
        queries += 1
        by_source[entry.get("source", "?")] = by_source.get(entry.get("source", "?"), 0) + 1
        sent += int(entry.get("sent_tokens", 0))
        files: list[tuple[str, int]] = []
        for path, blob in entry.get("files", []):
            if blob not in cache["blobs"]:
                content = _blob_text(repos, entry.get("repo", ""), blob)
                if content is None:
                    unavailable += 1
                    continue
                cache["blobs"][blob] = count_tokens(content)
            baseline += cache["blobs"][blob]
            files.append((path, cache["blobs"][blob]))
        session = entry.get("session") or "~" + str(entry.get("source", "?"))
        searches.append((session, float(entry.get("ts", 0)), files))
    if raw_lines:
        with contextlib.suppress(OSError):  # an unwritable cache only costs a recount
            cache_path.write_text(json.dumps(cache), encoding="utf-8")
    session_tokens, sessions = session_baseline(searches)
    return SavingsReport(
        queries,
        by_source,
        sent,
        baseline,
        merged,
        unavailable,
        str(log),
        enabled(index_dir),
        session_baseline_tokens=session_tokens,
        sessions=sessions,
    )


def _without_text(log: Path) -> list[bytes]:
    """The log's lines; version-1 lines (which held the text sent) are counted and the log is
    rewritten without any text, atomically and 0600."""
    try:
        raw_lines = log.read_bytes().splitlines(keepends=True)
    except (FileNotFoundError, IsADirectoryError):
        return []
    if not any(b'"sent":' in raw for raw in raw_lines):
        return raw_lines
    from .budget import count_tokens

    out = []
    for raw in raw_lines:
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if isinstance(entry, dict) and "sent" in entry:
            text = zlib.decompress(base64.b64decode(entry.pop("sent"))).decode("utf-8")
            entry.update(
                v=2,
                sent_tokens=count_tokens(text),
                sent_sha256=hashlib.sha256(text.encode("utf-8", "replace")).hexdigest(),
                sent_chars=len(text),
                files=[(path_hash(p), blob) for p, blob in entry.get("files", [])],
            )
        out.append((json.dumps(entry, separators=(",", ":")) + "\n").encode("utf-8"))
    with contextlib.suppress(OSError):  # read-only: report from memory, rewrite next time
        fd, tmp = tempfile.mkstemp(dir=log.parent, prefix=".savings-")
        with os.fdopen(fd, "wb") as fh:  # mkstemp creates it 0600
            fh.write(b"".join(out))
        os.replace(tmp, log)
    return out


def _blob_text(repos: dict[str, Any], repo_path: str, blob: str) -> str | None:
    try:
        if repo_path not in repos:
            import pygit2

            repos[repo_path] = pygit2.Repository(repo_path)
        data: bytes = repos[repo_path][blob].data
        if data.lstrip()[:1] == b"{":  # a notebook read whole is at least its cells' sources,
            return sources_text(data)  # not its JSON and base64 outputs (other JSON: as is)
        return data.decode("utf-8", errors="replace")
    except Exception:  # repository moved or object pruned: reported as unavailable
        return None
