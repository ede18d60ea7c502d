"""The MCP tools' declarations: descriptions, typed and bounded parameters, unknown arguments
rejected. Their logic is indexer/serve/mcp_server.py's Service."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from ..errors import IndexerError
from ..search.budget import MAX_BUDGET, MIN_BUDGET
from ..search.filters import KINDS

MAX_K = 50
MAX_QUERY_CHARS = 4000
MAX_RETRIEVE_LINES = 400
MAX_RELATED_DEPTH = 3

Kind = Literal["function", "method", "class", "module", "section", "text"]
assert set(KINDS) == set(Kind.__args__)  # type: ignore[attr-defined]


def build_tools(service: Any) -> list[Any]:
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.mcpserver.tools import Tool
    from mcp_types import ToolAnnotations

    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

    def guard(call: Callable[[], str]) -> str:
        try:
            return call()
        except IndexerError as exc:
            raise ToolError(str(exc)) from None

    def search(
        query: Annotated[
            str,
            Field(
                description="What to find: an identifier, an error message, or behaviour in "
                "plain words",
                min_length=1,
                max_length=MAX_QUERY_CHARS,
            ),
        ],
        k: Annotated[int, Field(description="How many results", ge=1, le=MAX_K)] = 10,
        budget: Annotated[
            int | None,
            Field(
                description="Pack the answer into at most this many tokens (o200k)",
                ge=MIN_BUDGET,
                le=MAX_BUDGET,
            ),
        ] = None,
        compress: Annotated[
            bool,
            Field(description="Signature, docstring and the lines that matter per result"),
        ] = True,
        paths: Annotated[
            list[str] | None,
            Field(
                description="Only files matching these globs (`src/*`, `*.py`); `!glob` excludes",
                max_length=20,
            ),
        ] = None,
        language: Annotated[
            str | None, Field(description="Only this language (python, go, ...)")
        ] = None,
        kind: Annotated[Kind | None, Field(description="Only this kind of chunk")] = None,
    ) -> str:
        filters = {"paths": paths, "languages": language, "kinds": kind}
        return guard(lambda: service.search(query, k, budget, compress, filters))

    def show(
        chunk_id: Annotated[
            str,
            Field(
                description="A `path:start-end` location as `search` prints it, or a "
                "16-hex-digit chunk id",
                min_length=1,
            ),
        ],
    ) -> str:
        return guard(lambda: service.show(chunk_id))

    def retrieve(
        path: Annotated[str, Field(description="Repository-relative file path", min_length=1)],
        start_line: Annotated[int, Field(description="First line (1-based)", ge=1)] = 1,
        end_line: Annotated[
            int | None,
            Field(description=f"Last line, inclusive (at most {MAX_RETRIEVE_LINES} lines)", ge=1),
        ] = None,
    ) -> str:
        return guard(lambda: service.retrieve(path, start_line, end_line))

    def related(
        target: Annotated[
            str,
            Field(
                description="A symbol name, qualname (Class.method), path::qualname or chunk id",
                min_length=1,
            ),
        ],
        direction: Annotated[
            Literal["callers", "callees", "both"],
            Field(description="Who calls it, what it calls, or both"),
        ] = "both",
        depth: Annotated[int, Field(description="Hops to follow", ge=1, le=MAX_RELATED_DEPTH)] = 1,
    ) -> str:
        return guard(lambda: service.related(target, direction, depth))

    def status() -> str:
        return guard(service.status)

    descriptions: dict[Callable[..., str], str] = {
        search: (
            "Search this repository's code by meaning and keywords. Use it first for any "
            "question about where or how something is implemented, defined, configured or "
            "called. Returns ranked chunks under `## path:start-end name [confidence c]` "
            "headers; with compress (default) each shows its signature, docstring and the "
            "lines that matter, with `...Lx-y` where lines x-y were elided (fetch them with "
            "`show` or `retrieve`). When nothing matches well the first line starts with "
            "`low confidence:` and only references follow: stop searching for that concept. "
            "Uncommitted edits are searched as they are on disk."
        ),
        show: "The full text of one chunk (function, class, module block) by the "
        "`path:start-end` location `search` prints or a chunk id from `related`.",
        retrieve: "Exact lines of a file as search sees it (on disk when it has uncommitted "
        "edits, else at the indexed commit), by repository-relative path "
        f"(at most {MAX_RETRIEVE_LINES} lines per call). Use after `search` to see the lines "
        "around a result.",
        related: "Callers and/or callees of a function, method or class from the code graph "
        "(imports, self/this calls and inheritance resolved). Unresolved calls are listed by "
        "name.",
        status: "What is indexed: commit, build time, file and chunk counts, languages, and "
        "whether the index is behind HEAD, and how many uncommitted files are overlaid.",
    }
    tools = []
    for fn, description in descriptions.items():
        tool = Tool.from_function(
            fn, description=description, annotations=read_only, structured_output=False
        )
        tools.append(_reject_unknown_arguments(tool))
    return tools


def _reject_unknown_arguments(tool: Any) -> Any:
    """The SDK ignores arguments a tool does not declare; a misspelt `dept` would silently
    fall back to the default. Forbid them, and say so in the schema."""
    base = tool.fn_metadata.arg_model
    strict: Any = type(
        base.__name__,
        (base,),
        {"model_config": ConfigDict(extra="forbid", arbitrary_types_allowed=True)},
    )
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)
    return tool
