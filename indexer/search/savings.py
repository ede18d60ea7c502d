"""Savings log: what each search really sent versus reading the whole files it points to.

Every search (CLI, API, MCP) appends one JSON line to `<index-dir>/savings.jsonl` (beside the
snapshots, never inside one, mode 0600): the o200k_base token count of the text sent, its
sha256 and length, and a (path hash, blob) pair per file the results came from: counts and
hashes, never code. Tokens are counted off the search path (see `record`); `indexer savings`
counts the baseline (whole files, read from git) and caches those counts. Lines written by
version 1 (which held the text itself) are counted and rewritten without it on the next report.

Two baselines, both in every report and labelled: the honest one, an agent without the index
reads each distinct file a result came from once per session (a file is its path and its
token count, so a changed file counts again; a notebook counts its cells' sources, not its JSON
and outputs); and the upper bound, each such file read again
for every query. Saved = baseline tokens - sent tokens, priced as input tokens (and as cached
input tokens); output tokens are what the model writes and do not change. A session is one
MCP server process, one `Index` object, or INDEXER_SESSION when set; CLI searches without it
form a session while they come less than SESSION_GAP_S apart.

Off with INDEXER_SAVINGS=0, `indexer savings --off` (a marker file in the index dir) or
`log=False` / `--no-log` per search. A log that cannot be written never fails a search.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..digests import sha256

LOG_NAME = "savings.jsonl"
CACHE_NAME = "savings_counts.json"
OFF_MARKER = "savings.off"
BASELINE = (
    "whole files, every query (upper bound): every file a returned result came from, read in "
    "full again for each query"
)
SESSION_BASELINE = (
    "whole files, once per session (honest): each distinct file a returned result came from, "
    "read in full once per session (what an agent without the index would send)"
)
SESSION_GAP_S = 30 * 60
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


def new_session() -> str:
    """A session id: INDEXER_SESSION when set (an agent harness can pass its own), else new."""
    import uuid  # (not at import: a search with the log off never needs it)

    return os.environ.get("INDEXER_SESSION") or uuid.uuid4().hex[:16]


def record(
    index: Any, results: Iterable[Any], sent: str, source: str, session: str | None = None
) -> bool:
    """Append one search to the log; False when disabled or unwritable (never raises).
    `session`: the caller's session id; None groups by INDEXER_SESSION or by time.

    The line holds counts and hashes only, never the text sent: its o200k token count, its
    sha256, and (path hash, blob id) per file. Counting needs the tokenizer (~0.4 s to load):
    a CLI process hands it to a detached child so the command returns at once; long-lived
    processes (API, MCP) count on a background thread."""
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
            "v": 2,
            "ts": round(time.time(), 3),
            "source": source,
            "session": session or os.environ.get("INDEXER_SESSION"),
            "repo": index.manifest.get("repo_root", ""),
            "commit": index.manifest.get("commit", ""),
            "results": len(files),
            "sent_sha256": sha256(sent.encode("utf-8", "replace")).hexdigest(),
            "sent_chars": len(sent),
            "files": sorted((path_hash(p), blob) for p, blob in files.items()),
        }
        count_and_append(directory / LOG_NAME, line, sent, detach=source == "cli")
        return True
    except Exception:  # the log is a courtesy: a search never fails because of it
        return False


def path_hash(path: str) -> str:
    """A file's identity in the log: stable across searches, not its name."""
    return str(sha256(path.encode("utf-8", "replace")).hexdigest())[:16]


def append_line(log: Path, line: dict[str, Any]) -> None:
    """One write (concurrent searches do not interleave lines) to a log only the user reads."""
    data = (json.dumps(line, separators=(",", ":")) + "\n").encode("utf-8")
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)  # a log created by an older version was world-readable
        os.write(fd, data)
    finally:
        os.close(fd)


def _count(line: dict[str, Any], sent: str) -> dict[str, Any]:
    from .budget import count_tokens

    return {**line, "sent_tokens": count_tokens(sent)}


def count_and_append(log: Path, line: dict[str, Any], sent: str, detach: bool) -> None:
    from .budget import _tokenizer

    if detach and hasattr(os, "fork") and not _tokenizer.cache_info().currsize:
        _count_in_grandchild(log, line, sent)
    else:
        _background().put((log, line, sent))


def _count_in_grandchild(log: Path, line: dict[str, Any], sent: str) -> None:
    """Double fork: the grandchild is adopted by init, so the CLI neither waits nor leaves a
    zombie; it closes the caller's pipes first so a reader sees EOF when the CLI exits."""
    pid = os.fork()
    if pid:
        os.waitpid(pid, 0)
        return
    try:
        if os.fork() == 0:
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            append_line(log, _count(line, sent))
    finally:
        os._exit(0)


class _Counter(threading.Thread):
    """Counts and appends queued lines off the search path; drained at interpreter exit."""

    def __init__(self) -> None:
        import queue

        super().__init__(name="indexer-savings", daemon=True)
        self.queue: queue.Queue[tuple[Path, dict[str, Any], str]] = queue.Queue()

    def put(self, item: tuple[Path, dict[str, Any], str]) -> None:
        self.queue.put(item)

    def run(self) -> None:
        while True:
            log, line, sent = self.queue.get()
            with contextlib.suppress(Exception):
                append_line(log, _count(line, sent))
            self.queue.task_done()

    def drain(self) -> None:
        self.queue.join()


@functools.cache
def _background() -> _Counter:
    counter = _Counter()
    counter.start()
    atexit.register(counter.drain)
    return counter


def flush() -> None:
    """Wait until every queued search is in the log (tests, `indexer savings`)."""
    if _background.cache_info().currsize:
        _background().drain()
