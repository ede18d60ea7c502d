"""`indexer mcp`: the index over the Model Context Protocol (official `mcp` SDK, stdio).

Strictly read-only: tools search, show, retrieve, related and status answer from the current
snapshot and the indexed commit's blobs; nothing is built, written (except the savings log) or
read from outside the repository. Bad requests (unknown ids, paths outside the repository,
oversized requests) come back as tool errors the agent can read.
"""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path
from typing import Any

from .errors import IndexerError

MAX_K = 50
MAX_QUERY_CHARS = 4000
MAX_RETRIEVE_LINES = 400
MAX_RELATED_DEPTH = 3

INSTRUCTIONS = """\
Code index of this git repository (hybrid BM25 + semantic search over functions, classes and
module code, plus a call graph). Use it BEFORE reading or grepping files whenever you need to
find where something is implemented, defined, configured or called: `search` answers in a few
hundred tokens with file paths, line ranges and chunk ids; `show` returns one chunk whole;
`retrieve` returns exact lines of a file; `related` lists callers and callees. Read whole files
only when the compact answers are not enough."""


class Service:
    """The tools' logic, independent of the protocol (tests and the server share it)."""

    def __init__(self, repo: str | None, index_dir: str | None) -> None:
        from .api import _git_dir
        from .store import default_index_dir

        self.index_dir = Path(index_dir) if index_dir else default_index_dir(_git_dir(repo))
        self._index: Any = None

    @property
    def index(self) -> Any:
        """The current snapshot, reopened when a build published a newer one."""
        from .api import Index
        from .store import current_snapshot

        snapshot = current_snapshot(self.index_dir)
        if self._index is None or self._index.snapshot != snapshot:
            self._index = Index(snapshot)
        return self._index

    def search(self, query: str, k: int, budget: int | None, compress: bool) -> str:
        if len(query) > MAX_QUERY_CHARS:
            raise IndexerError(f"the query is too long (over {MAX_QUERY_CHARS} characters)")
        if not 1 <= k <= MAX_K:
            raise IndexerError(f"k must be between 1 and {MAX_K}")
        index = self.index
        from .savings import record

        if budget is not None:
            packed = index.search_budget(query, budget, k=k, log=False)
            text = packed.text or "no credible results"
            text += f"\n({packed.tokens} tokens of {budget}; {packed.omitted} results omitted)"
            record(index, packed.items, text, "mcp")
            return text
        results = index.search(query, k=k, compress=compress, log=False)
        if not results:
            text = "no credible results"
        elif compress:
            text = "\n".join(r.text or "" for r in results)
        else:
            from .compress import reference

            lines = []
            for r in results:
                lines.append(reference(index.show(r.id)))
                if r.signature:
                    lines.append(f"    {r.signature}")
            text = "\n".join(lines)
        record(index, results, text, "mcp")
        return text

    def show(self, chunk_id: str) -> str:
        from .compress import full

        return full(self.index.show(chunk_id.strip()))

    def retrieve(self, path: str, start_line: int, end_line: int | None) -> str:
        index = self.index
        path, _, cell = path.strip().partition("#cell=")  # a notebook cell's lines
        if cell and not cell.isdigit():
            raise IndexerError(f"not a notebook cell: #cell={cell} (expected #cell=N)")
        clean = posixpath.normpath(path.strip().replace("\\", "/"))
        if path.strip().startswith("/") or clean == ".." or clean.startswith("../"):
            raise IndexerError(f"{path!r} is outside the repository; give a path relative to it")
        record = next((f for f in index.files if f["path"] == clean), None)
        if record is None:
            raise IndexerError(f"{clean!r} is not an indexed file of this repository")
        end = start_line + MAX_RETRIEVE_LINES - 1 if end_line is None else end_line
        if start_line < 1 or end < start_line:
            raise IndexerError("start_line must be >= 1 and end_line >= start_line")
        if end - start_line + 1 > MAX_RETRIEVE_LINES:
            raise IndexerError(
                f"at most {MAX_RETRIEVE_LINES} lines per request; use `search` or `show` "
                "for the part you need"
            )
        import pygit2

        repo: Any = pygit2.Repository(index.manifest["repo_root"])
        from .secrets import redact

        data, _ = redact(bytes(repo[record["blob"]].data))  # what the index holds, no secrets
        if cell:
            from .notebook import cell_source

            source = cell_source(data, int(cell))
            if source is None:
                raise IndexerError(f"{clean} has no code or markdown cell {cell}")
            clean, data = f"{clean}#cell={cell}", source.encode("utf-8")
        lines = data.decode("utf-8", "replace").splitlines()
        if start_line > len(lines):
            raise IndexerError(f"{clean} has only {len(lines)} lines")
        end = min(end, len(lines))
        body = "\n".join(lines[start_line - 1 : end])
        return f"## {clean}:{start_line}-{end} (of {len(lines)} lines)\n{body}"

    def related(self, target: str, direction: str, depth: int) -> str:
        if not 1 <= depth <= MAX_RELATED_DEPTH:
            raise IndexerError(f"depth must be between 1 and {MAX_RELATED_DEPTH}")
        found = self.index.related(target, direction=direction, depth=depth, limit=30)
        return json.dumps(found, ensure_ascii=False)

    def status(self) -> str:
        s = self.index.status()
        s.pop("files", None)
        return json.dumps(s)


def create_server(repo: str | None = None, index_dir: str | None = None) -> Any:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations

    service = Service(repo, index_dir)
    server = MCPServer("indexer", instructions=INSTRUCTIONS)
    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

    def guard(call: Any) -> str:
        try:
            return str(call())
        except IndexerError as exc:
            raise ToolError(str(exc)) from None

    @server.tool(
        description=(
            "Search this repository's code by meaning and keywords. Use it first for any "
            "question about where or how something is implemented, defined, configured or "
            "called. Returns ranked chunks under `## path:start-end name` headers; "
            "with compress (default) each shows its signature, docstring and the lines that "
            "matter, with `...Lx-y` where lines x-y were elided (fetch it with `show` or "
            "`retrieve`). `budget` packs the answer into at most that many tokens. "
            f"k: 1-{MAX_K} results (default 10)."
        ),
        annotations=read_only,
        structured_output=False,
    )
    def search(query: str, k: int = 10, budget: int | None = None, compress: bool = True) -> str:
        return guard(lambda: service.search(query, k, budget, compress))

    @server.tool(
        description="The full text of one chunk (function, class, module block) by the "
        "`path:start-end` location `search` prints or a 16-hex-digit chunk id from `related`.",
        annotations=read_only,
        structured_output=False,
    )
    def show(chunk_id: str) -> str:
        return guard(lambda: service.show(chunk_id))

    @server.tool(
        description="Exact lines of a file at the indexed commit, by repository-relative path "
        f"(at most {MAX_RETRIEVE_LINES} lines per call). Use after `search` to see the lines "
        "around a result. In a notebook, `path#cell=N` reads the lines of cell N.",
        annotations=read_only,
        structured_output=False,
    )
    def retrieve(path: str, start_line: int = 1, end_line: int | None = None) -> str:
        return guard(lambda: service.retrieve(path, start_line, end_line))

    @server.tool(
        description="Callers and/or callees of a function, method or class from the code graph "
        "(imports, self/this calls and inheritance resolved). target: a symbol name, "
        "qualname (Class.method), path::qualname or chunk id; direction: callers, callees "
        f"or both; depth 1-{MAX_RELATED_DEPTH}. Unresolved calls are listed by name.",
        annotations=read_only,
        structured_output=False,
    )
    def related(target: str, direction: str = "both", depth: int = 1) -> str:
        return guard(lambda: service.related(target, direction, depth))

    @server.tool(
        description="What is indexed: commit, build time, file and chunk counts, languages.",
        annotations=read_only,
        structured_output=False,
    )
    def status() -> str:
        return guard(service.status)

    return server


def serve(repo: str | None = None, index_dir: str | None = None) -> None:
    """Run over stdio until the client disconnects."""
    server = create_server(repo, index_dir)
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
