"""`indexer mcp`: the index over the Model Context Protocol (official `mcp` SDK, stdio).

Strictly read-only: tools search, show, retrieve, related and status answer from the current
snapshot and the indexed commit's blobs; nothing is built, written (except the savings log) or
read from outside the repository. Bad requests (unknown ids, paths outside the repository,
oversized requests) come back as tool errors the agent can read.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..errors import IndexerError
from .mcp_tools import MAX_K, MAX_QUERY_CHARS, MAX_RELATED_DEPTH, MAX_RETRIEVE_LINES

MAX_WEAK_RESULTS = 5  # references listed under a "low confidence" line

INSTRUCTIONS = """\
Code index of this git repository (hybrid BM25 + semantic search over functions, classes and
module code, plus a call graph). Use it BEFORE reading or grepping files whenever you need to
find where something is implemented, defined, configured or called: `search` answers in a few
hundred tokens with file paths, line ranges and chunk ids; `show` returns one chunk whole;
`retrieve` returns exact lines of a file; `related` lists callers and callees. Each result shows
its confidence; an answer starting with `low confidence:` means the repository has nothing close:
stop searching for that concept. Read whole files only when the compact answers are not enough."""


class Service:
    """The tools' logic, independent of the protocol (tests and the server share it). A bad
    `--repo` does not stop the server: every tool answers with that error instead."""

    def __init__(self, repo: str | None, index_dir: str | None) -> None:
        from ..index.gitdir import git_dir as _git_dir
        from ..index.store import default_index_dir
        from ..search.savings import new_session

        self.session = new_session()  # one server process is one agent session
        self.error: IndexerError | None = None
        self.index_dir = Path(index_dir or ".")
        try:
            self.index_dir = Path(index_dir) if index_dir else default_index_dir(_git_dir(repo))
        except IndexerError as exc:
            self.error = exc
        self._index: Any = None
        from ..index.gitdir import worktree_root

        # The working tree the agent edits: every answer overlays its uncommitted files.
        self.worktree = worktree_root(repo) if self.error is None else None

    @property
    def index(self) -> Any:
        """The current snapshot (reopened when a build published a newer one) with the
        working tree's uncommitted files overlaid as they are now."""
        from ..api import Index
        from ..index.store import current_snapshot

        if self.error is not None:
            raise self.error
        snapshot = current_snapshot(self.index_dir)
        if self._index is None or self._index.snapshot != snapshot:
            self._index = Index(snapshot)
            if self.worktree is not None:
                from ..index.overlay import kept_overlay

                self._index.follow(kept_overlay(self.worktree, watch=True, keep=True))
        return self._index.current()

    def search(
        self,
        query: str,
        k: int,
        budget: int | None,
        compress: bool,
        filters: dict[str, Any] | None = None,
    ) -> str:
        if len(query) > MAX_QUERY_CHARS:
            raise IndexerError(f"the query is too long (over {MAX_QUERY_CHARS} characters)")
        if not 1 <= k <= MAX_K:
            raise IndexerError(f"k must be between 1 and {MAX_K}")
        index = self.index
        filters = filters or {}
        from ..search.savings import record

        if budget is not None:
            packed = index.search_budget(query, budget, k=k, **filters)
            verdict = index.verdict(query, packed.items)
            text = packed.text or "no results"
            text += f"\n({packed.tokens} tokens of {budget}; {packed.omitted} results omitted)"
            text = _first_line(verdict.message, text)
            record(index, packed.items, text, "mcp", self.session)
            return text
        results = index.search(query, k=k, compress=compress, **filters)
        verdict = index.verdict(query, results)
        if not results:
            text = "no results"
        elif compress and verdict.credible:
            text = "\n".join(r.text or "" for r in results)
        else:  # references only: weak guesses are not worth a compressed body each
            from ..search.answers import with_confidence
            from ..search.compress import reference

            shown = results if verdict.credible else results[:MAX_WEAK_RESULTS]
            lines = []
            for r in shown:
                lines.append(with_confidence(reference(index.show(r.id)), r.confidence))
                if r.signature and verdict.credible:
                    lines.append(f"    {r.signature}")
            text = "\n".join(lines)
        text = _first_line(verdict.message, text)
        record(index, results, text, "mcp", self.session)
        return text

    def show(self, chunk_id: str) -> str:
        from ..search.compress import full

        return full(self.index.show(chunk_id.strip()))

    def retrieve(self, path: str, start_line: int, end_line: int | None) -> str:
        from ..search.excerpt import clean_path, file_lines

        index = self.index
        lines = file_lines(index, path, start_line, end_line, limit=MAX_RETRIEVE_LINES)
        file_path, _, cell = path.strip().partition("#cell=")  # a notebook cell's lines
        record = next(f for f in index.files if f["path"] == clean_path(file_path))
        if cell:
            total = len(file_lines(index, path, 1, None, limit=10**9))
            where = f"{clean_path(file_path)}#cell={cell}"
        else:
            total, where = _line_count(index, record), clean_path(path)
        end = start_line + len(lines) - 1
        return f"## {where}:{start_line}-{end} (of {total} lines)\n" + "\n".join(lines)

    def related(self, target: str, direction: str, depth: int) -> str:
        if not 1 <= depth <= MAX_RELATED_DEPTH:
            raise IndexerError(f"depth must be between 1 and {MAX_RELATED_DEPTH}")
        found = self.index.related(target, direction=direction, depth=depth, limit=30)
        return json.dumps([entry.to_dict() for entry in found], ensure_ascii=False)

    def status(self) -> str:
        s = self.index.status()
        s.pop("files", None)
        return json.dumps(s)


def _first_line(message: str, text: str) -> str:
    return f"{message}\n{text}" if message else text


def _line_count(index: Any, record: dict[str, Any]) -> int:
    from ..search.excerpt import file_data

    return len(file_data(index, record).decode("utf-8", "replace").splitlines())


def create_server(repo: str | None = None, index_dir: str | None = None) -> Any:
    return _server(Service(repo, index_dir))


def _server(service: Service) -> Any:
    from mcp.server.mcpserver import MCPServer

    from .mcp_tools import build_tools

    return MCPServer("indexer", instructions=INSTRUCTIONS, tools=build_tools(service))


def serve(repo: str | None = None, index_dir: str | None = None) -> None:
    """Run over stdio until the client disconnects. A bad --repo is reported on stderr in one
    line and by every tool call, after the handshake, instead of ending the server."""
    import logging
    import sys

    # faiss announces its loader on INFO; an MCP server's stderr is shown to users as errors.
    logging.getLogger("faiss").setLevel(logging.WARNING)
    service = Service(repo, index_dir)
    if service.error is not None:
        print(f"indexer: error: {service.error}", file=sys.stderr)
    server = _server(service)
    _replace_lone_surrogates_on_stdin()
    server.run("stdio")


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def clean_request(line: bytes) -> bytes:
    """A JSON-RPC line with lone UTF-16 surrogates (`"\\ud800"`, valid JSON but not
    encodable as UTF-8) replaced by U+FFFD. The SDK cannot parse such a request and drops it
    without a response, leaving the client waiting forever; cleaned, it gets an answer."""
    if not _SURROGATE_ESCAPE.search(line):
        return line
    try:
        message = json.loads(line)
    except ValueError:
        return line  # not JSON: the SDK answers with a parse error as usual
    return json.dumps(_without_surrogates(message), ensure_ascii=False).encode("utf-8") + b"\n"


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    return value


def _replace_lone_surrogates_on_stdin() -> None:
    """Put a pipe on fd 0 fed by a thread that passes each client line through
    `clean_request` (the SDK reads fd 0 itself, below any Python-level wrapper)."""
    import os
    import threading

    client = os.dup(0)
    read_end, write_end = os.pipe()
    os.dup2(read_end, 0)
    os.close(read_end)

    def pump() -> None:
        with os.fdopen(client, "rb") as source, os.fdopen(write_end, "wb") as sink:
            for line in source:
                sink.write(clean_request(line))
                sink.flush()

    threading.Thread(target=pump, name="indexer-mcp-stdin", daemon=True).start()
